#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Brings a database up to date with a manifest: each migration and seed exactly once, each completely or not at all.
///
/// ```swift
/// let manifest = try Manifest.load(path: "manifests/example.xml")
/// let db = try Database(path: "library.sqlite")
/// let report = try Migrator(manifest: manifest, database: db).migrate()
/// if let failure = report.failure { print(failure) }   // "sql/002_x.sql:3:1: no such table: …"
/// ```
/// Safe to run from several processes at once: the "already applied?" check and the step run inside one
/// transaction that holds the database's write lock (`MigrationDatabase.withWriteLock`: `BEGIN IMMEDIATE` on
/// SQLite), so the database's own lock serialises them; nothing is left locked by a crash. The runner is the same
/// for every backend: what differs is behind `MigrationDatabase`.
public struct Migrator {
    public let manifest: Manifest
    public let database: any MigrationDatabase
    /// The bodies of code steps, by name (`register(_:_:)`).
    var codeBodies: [String: CodeBody] = [:]
    /// Names registered more than once: refused before anything runs rather than one body silently replacing another.
    private var registeredTwice: [String] = []
    private var history: any HistoryStorage { database.history }
    /// The database's backend, which picks its plan from the manifest.
    private var backend: DatabaseBackend { database.dialect.backend }
    /// This database's plan: migrations marked for another backend are not part of it.
    private var plan: [PlanStep] { manifest.plan(for: backend) }

    public init(manifest: Manifest, database: any MigrationDatabase) {
        self.manifest = manifest
        self.database = database
    }

    /// The Swift code of a code step: it runs inside the step's transaction on `database`, and throwing rolls back
    /// its writes (nothing is recorded).
    public typealias CodeBody = (_ database: any DatabaseConnection) throws -> Void

    /// Supplies the body of the manifest's code step `name` (`<code name="…">`). It runs once, in plan order, in one
    /// transaction with the step's history row: a throw rolls back what it wrote and records nothing, and the run
    /// fails naming the step. The body must not end that transaction (`COMMIT`, `ROLLBACK` are refused).
    ///
    /// `plan` and `migrate` refuse before anything runs when a registered name is not a code step of the manifest,
    /// when a name is registered twice, and when a code step due in this run has no body (reason `code-step`).
    /// Where a step is retried after a lock timeout (PostgreSQL), its body runs again after the rollback.
    public mutating func register(_ name: String, _ body: @escaping CodeBody) {
        if codeBodies[name] != nil && !registeredTwice.contains(name) { registeredTwice.append(name) }
        codeBodies[name] = body
    }

    /// The names `register(_:_:)` was given that the manifest does not list, and those given twice.
    private var registrationRefusals: [Refusal] {
        let listed = Set(manifest.codeSteps.map(\.name))
        let unknown = codeBodies.keys.filter { !listed.contains($0) }.sorted().map { name in
            Refusal(reason: .codeRegistration, id: CodeStep.identityPrefix + name,
                    message: "code step '\(name)' is registered, but \(manifest.path) has no <code name=\"\(name)\">"
                        + (listed.isEmpty ? "" : " (its code steps: \(listed.sorted().joined(separator: ", ")))")
                        + "; add it to the manifest or remove the registration")
        }
        return unknown + registeredTwice.map { name in
            Refusal(reason: .codeRegistration, id: CodeStep.identityPrefix + name,
                    message: "code step '\(name)' is registered twice; register each code step once")
        }
    }

    // MARK: Validation

    /// Larger files are checked statement by statement as they run instead, so `validate` never reads a huge
    /// data load into memory.
    static let lintSizeLimit = 4 << 20

    /// What migrations may not do, found before anything runs by the dialect's lint: statements that cannot run
    /// inside a transaction in transactional files, writes to the history table, and text the database would not
    /// run to its end.
    /// Checks the migrations of this database's backend.
    public func lint() -> [ManifestProblem] {
        Self.lint(manifest.migrations(for: backend), dialect: database.dialect)
    }

    /// `lint()` for a backend without opening a database of it (`strata validate` checks each backend the manifest
    /// is for with its dialect).
    public static func lint(_ migrations: [MigrationStep], dialect: any SQLDialect) -> [ManifestProblem] {
        lintFindings(migrations, dialect: dialect).map(\.problem)
    }

    /// What `strata validate` checks without a database: the plan of each backend the manifest is for
    /// (`Manifest.validatedBackends`), with that backend's dialect. A file in several plans is reported once per
    /// distinct finding.
    public static func lint(_ manifest: Manifest, dialect: (DatabaseBackend) -> any SQLDialect)
        -> (problems: [ManifestProblem], warnings: [ManifestProblem]) {
        var problems: [ManifestProblem] = []
        var warnings: [ManifestProblem] = []
        func add(_ found: [ManifestProblem], to list: inout [ManifestProblem]) {
            for problem in found where !list.contains(problem) { list.append(problem) }
        }
        for backend in manifest.validatedBackends {
            let migrations = manifest.migrations(for: backend)
            add(lintWarnings(migrations), to: &warnings)
            let dialect = dialect(backend)
            add(lint(migrations, dialect: dialect), to: &problems)
            add(manifest.plan(for: backend).compactMap { step in
                guard case .seed(let seed) = step, let reason = dialect.seedRefusal(seed) else { return nil }
                return ManifestProblem(seed.location, reason)
            }, to: &problems)
        }
        return (problems, warnings)
    }

    /// Migrations `lint()` could not check ahead of time because they are larger than `lintSizeLimit`: said, not
    /// passed over in silence. The backend still checks each of their statements as it runs.
    public func lintWarnings() -> [ManifestProblem] {
        Self.lintWarnings(manifest.migrations(for: backend))
    }

    /// `lintWarnings()` for any list of migrations.
    public static func lintWarnings(_ migrations: [MigrationStep]) -> [ManifestProblem] {
        migrations.compactMap { migration in
            guard let size = try? RegularFile(path: migration.path).size, size > Self.lintSizeLimit else { return nil }
            return ManifestProblem(SourceLocation(path: displayPath(migration.path), line: 1),
                "not checked ahead of time (\(size >> 20) MiB, over the \(Self.lintSizeLimit >> 20) MiB read ahead); each statement is checked as it runs, and a refused one fails and rolls back the step (\(migration.location))")
        }
    }

    private func lintFindings(_ migrations: [MigrationStep]) -> [(id: String, problem: ManifestProblem)] {
        Self.lintFindings(migrations, dialect: database.dialect)
    }

    private static func lintFindings(_ migrations: [MigrationStep], dialect: any SQLDialect) -> [(id: String, problem: ManifestProblem)] {
        migrations.flatMap { migration in
            guard let bytes = migration.bytesReadAhead else {
                return [(id: String, problem: ManifestProblem)]()
            }
            // Only what runs is linted (a down section may hold anything), at the file's own line numbers.
            let section: MigrationSection
            do {
                section = try migration.format.upSection(of: bytes)
            } catch {
                let failure = error as? MigrationFormatError
                return [(migration.id, ManifestProblem(SourceLocation(path: displayPath(migration.path), line: max(failure?.line ?? 1, 1)),
                                                       "\(failure?.message ?? "\(error)") (\(migration.location))"))]
            }
            return dialect.lint(Array(bytes[section.range]), insideTransaction: migration.runsInTransaction).map {
                (migration.id, ManifestProblem(SourceLocation(path: displayPath(migration.path), line: $0.line + section.startLine - 1,
                                                              column: $0.column),
                                               $0.message + " (\(migration.location))"))
            }
        }
    }

    // MARK: Status and plan

    /// Every step of the manifest, and every recorded step no longer in it, with its state.
    public func status(_ options: MigrationOptions = MigrationOptions()) throws -> [StepStatus] {
        // `deleted` records are kept: a file restored after `repair` is applied (same checksum) or drifted, never
        // pending, or it would run twice.
        let records = try history.all()
        if records.isEmpty { try refuseHistoryElsewhere() }
        var byKey: [String: HistoryRecord] = [:]
        for record in records { byKey[key(record.kind, record.identity)] = record }
        var result: [StepStatus] = []
        for step in plan {
            let record = byKey.removeValue(forKey: key(step.historyKind, step.id))
            // Only a recorded step needs its file hashed; a pending seed may be large.
            // A record is compared under the checksum version it was written with.
            let checksum = record.flatMap { try? step.currentChecksum(version: $0.checksumVersion) }
            let state: StepStatus.State
            if let record {
                if record.isDirty { state = isBeingApplied(record) ? .running : .dirty }
                else if record.checksum == checksum { state = .applied }
                else if case .seed(let seed) = step, seed.onChange == .reapply, checksum != nil { state = .changed }
                else { state = .drifted }
            } else if case .seed(let seed) = step, !isActive(seed, options) {
                state = .skipped
            } else {
                state = .pending
            }
            result.append(StepStatus(kind: step.kind, id: step.id, state: state, step: step, record: record, checksum: checksum))
        }
        for record in records where record.state != .deleted && byKey[key(record.kind, record.identity)] != nil {
            result.append(StepStatus(kind: record.stepKind, id: record.identity, state: record.isDirty ? .dirty : .missing,
                                     step: nil, record: record, checksum: nil))
        }
        return result
    }

    /// What `migrate` would do with these options, writing nothing.
    public func plan(_ options: MigrationOptions = MigrationOptions()) throws -> MigrationPlan {
        try plan(options, forMigrate: false)
    }

    /// What would make `migrate` refuse with these options, without counting seed rows; writes nothing. Lets a
    /// caller refuse before creating a database file.
    public func refusals(_ options: MigrationOptions = MigrationOptions()) throws -> [Refusal] {
        try plan(options, forMigrate: true).refusals
    }

    /// For `migrate`, seed rows are not counted and the plan id is computed only when one is expected: both would
    /// read pending files once more.
    func plan(_ options: MigrationOptions, forMigrate: Bool) throws -> MigrationPlan {
        let statuses = try status(options)
        var refusals = registrationRefusals + refusals(for: statuses, options)
        if !manifest.backends.contains(backend) {
            let marks = DatabaseBackend.allCases.filter(manifest.backends.contains).map(\.displayName).joined(separator: " and ")
            refusals.append(Refusal(reason: .backend, id: backend.rawValue,
                message: "\(manifest.path) has no migrations for \(backend.displayName): every migration is marked for \(marks); point --database at a \(marks) database, or add migrations for \(backend.displayName)"))
        }
        let lastApplied = statuses.filter { $0.kind == .migration && ($0.state == .applied || $0.state == .drifted) }
            .map(\.id).max(by: NaturalOrder.areInIncreasingOrder)
        var steps: [PlannedStep] = []
        var pendingMigration: String?
        for status in statuses {
            let beingApplied = status.state == .running
            guard let step = status.step, status.state == .pending || status.state == .changed || beingApplied else { continue }
            switch step {
            case .migration(let migration):
                if status.state == .pending { pendingMigration = pendingMigration ?? migration.id }
                guard options.includeMigrations else { continue }
                let outOfOrder = lastApplied.map { NaturalOrder.areInIncreasingOrder(migration.id, $0) } ?? false
                if outOfOrder && options.strictOrder {
                    refusals.append(Refusal(reason: .outOfOrder, id: migration.id,
                        message: "\(migration.id) is pending but sorts before \(lastApplied ?? "") which is applied; --strict-order refuses out-of-order migrations"))
                }
                steps.append(PlannedStep(step: step, reason: outOfOrder ? .outOfOrder : .pending, rowCount: nil))
            case .seed(let seed):
                guard options.includeSeeds else { continue }
                if !options.includeMigrations, let pendingMigration {
                    refusals.append(Refusal(reason: .seedOrder, id: seed.id,
                        message: "seed \(seed.id) runs after migration \(pendingMigration), which is pending; run 'strata migrate' first"))
                }
                steps.append(PlannedStep(step: step, reason: status.state == .changed ? .reapply : .pending,
                                         rowCount: forMigrate ? nil : try? SeedLoader.countRows(seed)))
                if let reason = database.dialect.seedRefusal(seed) {
                    refusals.append(Refusal(reason: .seedMode, id: seed.id, message: "\(reason) (\(seed.location))"))
                }
            case .code(let code):
                if status.state == .pending { pendingMigration = pendingMigration ?? code.id }
                guard options.includeMigrations else { continue }
                // Out of order as a file would be: it runs right after a file that sorts before one applied.
                let outOfOrder = lastApplied.map { NaturalOrder.areInIncreasingOrder(code.after, $0) } ?? false
                if outOfOrder && options.strictOrder {
                    refusals.append(Refusal(reason: .outOfOrder, id: code.id,
                        message: "\(code.id) is pending but runs after \(code.after), which sorts before \(lastApplied ?? "") which is applied; --strict-order refuses out-of-order migrations"))
                }
                steps.append(PlannedStep(step: step, reason: outOfOrder ? .outOfOrder : .pending, rowCount: nil))
                if codeBodies[code.name] == nil {
                    refusals.append(Refusal(reason: .codeStep, id: code.id,
                        message: "\(code.id) is a Swift code step (\(code.location)) due in this run, and no code is registered for it: the strata command cannot run Swift code; the program must run it, with Migrator and migrator.register(\"\(code.name)\") { db in … }; then the steps after it can run"))
                }
            }
        }
        // Refused whether or not anything is pending, so a deploy finds out on its first run, not its first change.
        if options.backup != nil && database.backupSource == nil {
            refusals.append(Refusal(reason: .backup, id: backend.rawValue, message: database.backupUnavailableReason))
        }
        if steps.contains(where: { if case .migration(let m) = $0.step { !m.runsInTransaction } else { false } }) {
            refusals += try database.unfinishedObjects().map {
                Refusal(reason: .unfinished, id: $0.name,
                        message: "\($0); the plan holds a transaction=\"none\" migration, which could build on it")
            }
        }
        // Only files about to run are read: applied ones were checked before they ran.
        let pendingMigrations = steps.compactMap { planned -> MigrationStep? in
            if case .migration(let migration) = planned.step { migration } else { nil }
        }
        refusals += lintFindings(pendingMigrations)
            .map { Refusal(reason: .invalidSQL, id: $0.id, message: $0.problem.description) }
        // A backup is named with the plan it precedes.
        let id = forMigrate && options.expectedPlanID == nil && options.backup == nil ? "" : try planID(steps)
        if let expected = options.expectedPlanID, expected != id {
            refusals.append(Refusal(reason: .planChanged, id: expected,
                message: "the plan changed since it was reviewed (plan id \(expected), now \(id)): a file or the database changed; run 'strata plan' again"))
        }
        return MigrationPlan(id: id, steps: steps, refusals: refusals)
    }

    private func planID(_ steps: [PlannedStep]) throws -> String {
        var lines: [String] = []
        for planned in steps {
            var fingerprint: String
            switch planned.step {
            case .migration(let migration):
                fingerprint = (try? Checksum.ofFile(atPath: migration.path, content: .sql)) ?? "unreadable"
            case .seed(let seed):
                let attributes = try? FileManager.default.attributesOfItem(atPath: seed.path)
                let size = (attributes?[.size] as? UInt).map { Int64($0) } ?? (attributes?[.size] as? Int).map { Int64($0) } ?? -1
                let modified = (attributes?[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
                fingerprint = "\(size)@\(modified)"
            case .code(let code):
                fingerprint = "version \(code.version)"
            }
            lines.append("\(planned.step.kind.rawValue) \(planned.step.id) \(planned.reason.rawValue) \(fingerprint)")
        }
        return String(try Checksum.of(Array(lines.joined(separator: "\n").utf8)).prefix(16))
    }

    private func refusals(for statuses: [StepStatus], _ options: MigrationOptions) -> [Refusal] {
        statuses.compactMap { status in
            switch status.state {
            case .drifted:
                if case .code(let code)? = status.step {
                    return Refusal(reason: .drift, id: status.id,
                        message: "\(status.id) has changed since it was applied (recorded version \(status.record?.checksum ?? ""), manifest now \(code.version), \(code.location)); the applied version's code ran, the new one's never will: put the version back, or check the database and run 'strata repair'")
                }
                return Refusal(reason: .drift, id: status.id,
                    message: "\(status.id) has changed since it was applied (recorded checksum \(status.record?.checksum.prefix(12) ?? ""), file now \(status.checksum?.prefix(12) ?? "unreadable")); restore it, or check it and run 'strata repair'")
            case .missing:
                return Refusal(reason: .missing, id: status.id,
                    message: "\(status.id) was applied but is no longer in the manifest; restore it, or run 'strata repair' to mark it deleted")
            case .dirty:
                // Read as dirty a moment ago; its runner may hold the lock by now (a fresh claim).
                if isBeingApplied(status.record) { return nil }
                // The status may be stale: the runner could have finished and exited since it was read. Once it
                // is gone nothing else can change the record, so a fresh read now is conclusive.
                let fresh = try? history.record(kind: status.kind, identity: status.id)
                guard let fresh, fresh.isDirty else { return nil }
                return Refusal(reason: .dirty, id: status.id, message: dirtyMessage(status.id, fresh))
            default:
                return nil
            }
        }
    }

    private func dirtyMessage(_ id: String, _ record: HistoryRecord?) -> String {
        let how = record?.state == .failed
            ? "failed part-way outside a transaction (\(record?.error ?? "unknown error"))"
            : "was started outside a transaction by \(record?.runner ?? "another process") and never finished"
        return "\(id) \(how); check the database by hand, then run 'strata resolve \(id) --applied' or 'strata resolve \(id) --rolled-back'"
    }

    // MARK: Migrate

    /// Applies every pending step in plan order. Refusals (drift, dirty, strict order, invalid SQL) throw
    /// `MigrationError.refused` before anything runs; a failing step is returned in `MigrationReport.failure`.
    public func migrate(_ options: MigrationOptions = MigrationOptions(),
                        progress: ((MigrationEvent) -> Void)? = nil) throws -> MigrationReport {
        let plan = try plan(options, forMigrate: true)
        guard plan.refusals.isEmpty else { throw MigrationError.refused(plan.refusals) }
        guard let backupOptions = options.backup, !plan.steps.isEmpty else {
            return try run(plan.steps, options, watcher: nil, progress)
        }
        var cancelled = MigrationReport()
        cancelled.cancelled = true
        cancelled.notRun = plan.steps.map(\.step.id)
        if options.cancellation?.isCancelled == true { return cancelled }
        switch try backUp(backupOptions, options, progress) {
        case .cancelled:
            return cancelled
        case .nothingToApply:
            var report = MigrationReport()
            report.alreadyApplied = plan.steps.map(\.step.id)
            return report
        case .taken(let backup, let copied):
            var report = try run(copied.steps, options, watcher: nil, progress)
            report.backup = backup
            // Steps of the first plan another run applied before the backup was taken: in it, and not run here.
            let later = Set(copied.steps.map { key($0.step.kind, $0.step.id) })
            let before = plan.steps.filter { !later.contains(key($0.step.kind, $0.step.id)) }.map(\.step.id)
            report.alreadyApplied = before + report.alreadyApplied
            return report
        }
    }

    /// Applies `steps` (a plan without refusals) in order; `watcher` sees each step before and after it runs.
    func run(_ steps: [PlannedStep], _ options: MigrationOptions, watcher: (any StepWatcher)?,
             _ progress: ((MigrationEvent) -> Void)?) throws -> MigrationReport {
        var report = MigrationReport()
        // Violations already in the database are not blamed on a step: each is checked for those it makes.
        var foreignKeys = try database.foreignKeyBaseline(excusingCurrent: false)
        if steps.contains(where: { $0.step.kind == .migration }) {
            do {
                foreignKeys = try database.foreignKeyBaseline(excusingCurrent: true)
                if foreignKeys.count > 0 {
                    progress?(.notice("\(foreignKeys.count) foreign key violation\(foreignKeys.count == 1 ? "" : "s") already in the database; each migration is checked only for violations it adds"))
                }
            } catch let error as DatabaseError where error.kind != .busy {
                // A schema the database cannot check (a foreign key to a column that is not unique): a step may fix it,
                // and each step is checked after it runs, so the run starts and says why nothing is excused.
                progress?(.notice("foreign keys cannot be checked before the run (\(error.message)); each migration is checked after it runs"))
            }
        }
        for (index, planned) in steps.enumerated() {
            // Between steps only: a step is finished or rolled back, never abandoned half-way.
            if options.cancellation?.isCancelled == true {
                report.cancelled = true
                report.notRun = steps[index...].map(\.step.id)
                return report
            }
            // Each migration starts from the connection as the run opened it (see `SessionSnapshot`).
            let snapshot = planned.step.kind == .seed ? nil : try database.sessionSnapshot()
            try watcher?.willRun(planned.step)
            progress?(.started(planned.step, planned.reason))
            do {
                let outcome: StepOutcome
                switch planned.step {
                case .migration(let migration) where migration.runsInTransaction:
                    outcome = try retryingLockTimeouts(planned.step, options, snapshot, progress) {
                        try applyInTransaction(migration, options, foreignKeys, progress)
                    }
                case .migration(let migration):
                    outcome = try applyOutsideTransaction(migration, options, foreignKeys, snapshot, progress)
                case .seed(let seed):
                    outcome = try retryingLockTimeouts(planned.step, options, nil, progress) {
                        try applySeed(seed, options, started: ContinuousClock.now, progress)
                    }
                case .code(let code):
                    outcome = try retryingLockTimeouts(planned.step, options, snapshot, progress) {
                        try applyCode(code, options)
                    }
                }
                switch outcome {
                case .applied(let rows, let durationMs):
                    let step = AppliedStep(kind: planned.step.kind, id: planned.step.id, reason: planned.reason,
                                           durationMs: durationMs, rowCount: rows)
                    report.applied.append(step)
                    try watcher?.didRun(planned.step, step)
                    progress?(.finished(step))
                case .alreadyApplied:
                    report.alreadyApplied.append(planned.step.id)
                }
            } catch let failure as StepFailure {
                report.failure = failure
            } catch is Cancelled {
                report.cancelled = true
                report.notRun = steps[index...].map(\.step.id)
                return report
            } catch let error as DatabaseError where error.sql == "COMMIT TRANSACTION" {
                // Statements ran, then COMMIT failed (disk full in WAL mode, I/O error): the step's failure all the same.
                var failure = StepFailure(kind: planned.step.kind, id: planned.step.id,
                                          file: displayPath(planned.step.filePath), line: nil, column: nil,
                                          message: "COMMIT failed, the step was rolled back: \(error.message)",
                                          databaseError: error)
                if error.kind == .cannotOpen {
                    // The connection went while COMMIT was on its way: only the server knows whether it committed.
                    failure = failure.with(message: "COMMIT failed: \(error.message)")
                    failure.aftermath = .unrecorded("whether the server committed the step is unknown; the step and its history row commit together, so 'strata status' tells which")
                }
                report.failure = failure
            }
            do {
                try snapshot?.restore()
            } catch {
                // After a failed step its own failure is the news (a lost connection fails both); the run stops anyway.
                if report.failure == nil {
                    var failure = StepFailure(kind: planned.step.kind, id: planned.step.id,
                                              file: displayPath(planned.step.filePath), line: nil, column: nil,
                                              message: "the connection could not be put back as it was before this step (\(error)); the run stopped so that later steps do not run on a changed connection")
                    failure.aftermath = .kept
                    report.failure = failure
                }
            }
            if report.failure != nil {
                settleAfterFailure(&report)
                return report
            }
        }
        return report
    }

    /// After a failed step: lets the database finish its rollback and says whether it did, and counts the steps
    /// other runs applied, so the report states what is left rather than assuming it.
    private func settleAfterFailure(_ report: inout MigrationReport) {
        do {
            try database.finishRollback()
        } catch {
            report.unfinishedRollback = (error as? DatabaseError)?.message ?? "\(error)"
            return
        }
        if let records = try? history.all() {
            report.appliedByOtherRuns = max(0, records.filter(\.isApplied).count - report.applied.count)
        }
    }

    private enum StepOutcome {
        case applied(rows: Int?, durationMs: Int)
        case alreadyApplied
    }

    /// Thrown inside a transaction to roll it back without error when another process got there first.
    private struct AppliedElsewhere: Error {}

    /// Thrown while waiting for another process's step once the run is cancelled; nothing was claimed.
    private struct Cancelled: Error {}

    /// Runs a transactional step (`attempt`) and, when it failed only because a statement gave up waiting for a
    /// lock (`DatabaseError.Kind.lockNotAvailable`: the step was rolled back), runs it again from the start, history
    /// checked again, up to `options.lockRetries` times. Each pause is twice the one before (from
    /// `options.lockRetryDelay`, up to `MigrationOptions.maximumLockRetryDelay`) and holds no lock, so what queued
    /// behind the step's lock request runs meanwhile and the session holding the lock may finish. The decision is
    /// made on the error's kind, which the backend sets from its own codes.
    private func retryingLockTimeouts(_ step: PlanStep, _ options: MigrationOptions, _ snapshot: (any SessionSnapshot)?,
                                      _ progress: ((MigrationEvent) -> Void)?,
                                      _ attempt: () throws -> StepOutcome) throws -> StepOutcome {
        let started = ContinuousClock.now
        var retries = 0
        var delay = options.lockRetryDelay
        while true {
            let failure: StepFailure
            do {
                return try attempt()
            } catch let error as StepFailure where error.databaseError?.kind == .lockNotAvailable {
                failure = error
            } catch let error as DatabaseError where error.kind == .lockNotAvailable {
                // A statement of Strata's own (the history check, say) gave up: the step's failure all the same.
                failure = StepFailure(kind: step.kind, id: step.id, file: displayPath(step.filePath), line: nil,
                                      column: nil, message: error.message, databaseError: error)
            }
            guard retries < max(options.lockRetries, 0) else {
                guard retries > 0 else { throw failure }
                let seconds = Double(milliseconds(since: started)) / 1000
                throw failure.with(message: failure.message
                    + "; gave up after \(retries + 1) attempts in \(printfFormat("%.1f", seconds)) s (\(retries) retr\(retries == 1 ? "y" : "ies")); run again once the session holding the lock is done, or raise --lock-timeout or --lock-retries")
            }
            retries += 1
            progress?(.retrying(id: step.id, retry: retries, of: options.lockRetries, delay: delay, reason: failure.description))
            // What the rolled-back attempt changed on the connection outside its transaction does not reach the next.
            do { try snapshot?.restore() } catch { throw failure }
            try pause(delay, options.cancellation)
            delay = min(delay * 2, max(MigrationOptions.maximumLockRetryDelay, options.lockRetryDelay))
        }
    }

    /// Sleeps for `delay`, throwing `Cancelled` as soon as the run is cancelled (the step is not applied and holds
    /// nothing, so it is simply not run).
    private func pause(_ delay: Duration, _ cancellation: MigrationCancellation?) throws {
        let end = ContinuousClock.now + delay
        while ContinuousClock.now < end {
            if cancellation?.isCancelled == true { throw Cancelled() }
            let left = end - ContinuousClock.now
            let slice = min(left, .milliseconds(50))
            sleepBlocking(for: slice)
        }
        if cancellation?.isCancelled == true { throw Cancelled() }
    }

    /// The bounds a step's statements run with. A `transaction="none"` step gets no lock timeout: its statements
    /// cannot be rolled back, so it is never retried, and giving up part-way would leave it partly applied (and a
    /// `CREATE INDEX CONCURRENTLY`, whose wait for older transactions blocks no one, an invalid index). A none file
    /// whose waits would block others sets its own `lock_timeout`.
    private func limits(_ options: MigrationOptions, insideTransaction: Bool) -> StatementLimits {
        StatementLimits(lockTimeout: insideTransaction ? max(options.lockTimeout, .zero) : .zero,
                        statementTimeout: options.statementTimeout.map { max($0, .zero) })
    }

    private func applyInTransaction(_ migration: MigrationStep, _ options: MigrationOptions,
                                    _ foreignKeys: any ForeignKeyBaseline,
                                    _ progress: ((MigrationEvent) -> Void)?) throws -> StepOutcome {
        let started = ContinuousClock.now
        do {
            return try reportingLockTimeout {
                try database.withForeignKeys(enforced: migration.enforcesForeignKeys) {
                    try database.withWriteLock {
                        try database.limitStatements(limits(options, insideTransaction: true), insideTransaction: true)
                        try history.create()
                        if let record = try history.record(kind: .migration, identity: migration.id), record.state != .deleted {
                            try check(record, checksum: self.checksum(of: .migration(migration), version: record.checksumVersion), id: migration.id)
                            throw AppliedElsewhere()
                        }
                        // Read, run, hash and record the same bytes, read only now that the write lock is held.
                        let ran = try run(migration, progress)
                        try checkForeignKeys(migration, foreignKeys)
                        let durationMs = milliseconds(since: started)
                        do {
                            try history.write(HistoryRecord(
                                kind: .migration, identity: migration.id, checksum: ran.checksum,
                                checksumVersion: Checksum.algorithmVersion, appliedAt: HistoryRecord.now(),
                                durationMs: durationMs, rowCount: nil, state: .applied, toolVersion: Strata.version,
                                appliedSQL: ran.text, runner: nil, error: nil))
                        } catch let error as DatabaseError where error.kind != .busy {
                            throw StepFailure(kind: .migration, id: migration.id, file: displayPath(migration.path),
                                              line: nil, column: nil, message: "could not record the step: \(error.message)",
                                              databaseError: error)
                        }
                        return .applied(rows: nil, durationMs: durationMs)
                    }
                }
            }
        } catch is AppliedElsewhere {
            return .alreadyApplied
        }
    }

    private func applyOutsideTransaction(_ migration: MigrationStep, _ options: MigrationOptions,
                                         _ foreignKeys: any ForeignKeyBaseline, _ snapshot: (any SessionSnapshot)?,
                                         _ progress: ((MigrationEvent) -> Void)?) throws -> StepOutcome {
        let (text, checksum) = try read(migration)
        do {
            // Set for the session before the claim; the session snapshot taken before the step undoes it after.
            try database.limitStatements(limits(options, insideTransaction: false), insideTransaction: false)
        } catch let error as DatabaseError {
            throw StepFailure(kind: .migration, id: migration.id, file: displayPath(migration.path), line: nil,
                              column: nil, message: "could not set the step's timeouts: \(error.message)",
                              databaseError: error)
        }
        let deadline = ContinuousClock.now + options.waitTimeout
        // Held from before the `running` row is committed until after the final row is: while the row says
        // `running`, the lock tells whether this process is still at it. The kernel releases it if we die.
        var lock: (any StepClaim)?
        defer { lock?.release() }
        // Claim the step: a `running` row, committed before the file runs, marks the attempt durably.
        while true {
            let claimed: Bool
            do {
                claimed = try reportingLockTimeout {
                    try database.withWriteLock { () -> Bool in
                        try history.create()
                        if let record = try history.record(kind: .migration, identity: migration.id), record.state != .deleted {
                            if isBeingApplied(record) { return false }
                            try check(record, checksum: record.checksumVersion == Checksum.algorithmVersion ? checksum
                                      : self.checksum(of: .migration(migration), version: record.checksumVersion), id: migration.id)
                            throw AppliedElsewhere()
                        }
                        do {
                            lock = try database.stepLocks.claim(kind: .migration, id: migration.id)
                        } catch let error as DatabaseError {
                            throw error
                        } catch {
                            throw StepFailure(kind: .migration, id: migration.id, file: displayPath(migration.path),
                                              line: nil, column: nil, message: "\(error)")
                        }
                        // Held by another process whose `running` row is not committed yet, or was just replaced.
                        guard lock != nil else { return false }
                        try history.write(HistoryRecord(
                            kind: .migration, identity: migration.id, checksum: checksum,
                            checksumVersion: Checksum.algorithmVersion, appliedAt: HistoryRecord.now(), durationMs: nil,
                            rowCount: nil, state: .running, toolVersion: Strata.version, appliedSQL: text,
                            runner: Runner.current, error: nil))
                        return true
                    }
                }
            } catch is AppliedElsewhere {
                return .alreadyApplied
            }
            if claimed { break }
            guard ContinuousClock.now < deadline else {
                throw MigrationError.lockTimeout("\(migration.id) is being applied by another process and did not finish within \(options.waitTimeout); run again once it is done")
            }
            progress?(.waiting("\(migration.id) is being applied by another process; waiting"))
            sleepBlocking(for: .milliseconds(200))
            if options.cancellation?.isCancelled == true { throw Cancelled() }
        }

        let started = ContinuousClock.now
        var failure: StepFailure?
        var ran: (checksum: String, text: String?)?
        do {
            ran = try runOutsideTransaction(migration, foreignKeys, progress)
        } catch let error as StepFailure {
            failure = error
        } catch {
            failure = StepFailure(kind: .migration, id: migration.id, file: displayPath(migration.path), line: nil,
                                  column: nil, message: "\(error)").partlyApplied("what the file did before the error stayed applied")
        }
        let durationMs = milliseconds(since: started)
        let record = HistoryRecord(
            kind: .migration, identity: migration.id, checksum: ran?.checksum ?? checksum,
            checksumVersion: Checksum.algorithmVersion, appliedAt: HistoryRecord.now(), durationMs: durationMs,
            rowCount: nil, state: failure == nil ? .applied : .failed, toolVersion: Strata.version,
            appliedSQL: ran == nil ? text : ran?.text, runner: failure == nil ? nil : Runner.current,
            error: failure?.summary)
        // The file's session state (`SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY`, a role) must not decide
        // whether its outcome can be recorded; a restore that fails here fails again, reported, after the step.
        try? snapshot?.restore()
        try recordOutcome(record, of: migration, failure: failure, waitingUntil: ContinuousClock.now + options.waitTimeout,
                          progress)
        if let failure { throw failure }
        return .applied(rows: nil, durationMs: durationMs)
    }

    /// Writes the final record of a `transaction="none"` step. The file's work is done (or partly done) and cannot
    /// be undone, so a busy database is waited for past the busy timeout, up to `--timeout` more; if the record still
    /// cannot be written, the failure says the history row still reads `running` and what to do.
    private func recordOutcome(_ record: HistoryRecord, of migration: MigrationStep, failure: StepFailure?,
                               waitingUntil deadline: ContinuousClock.Instant,
                               _ progress: ((MigrationEvent) -> Void)?) throws {
        while true {
            do {
                try history.write(record)
                return
            } catch let error as DatabaseError {
                // A lock timeout the file set for its session is waited out the same way.
                if (error.kind == .busy || error.kind == .lockNotAvailable) && ContinuousClock.now < deadline {
                    progress?(.waiting("\(migration.id) ran; waiting for the write lock to record it"))
                    continue
                }
                // The file's own failure, where it had one, keeps its place; what could not be recorded is added.
                var unrecorded = failure.map {
                    $0.with(message: "\($0.message); then its outcome could not be recorded (\(error.message))")
                } ?? StepFailure(kind: .migration, id: migration.id, file: displayPath(migration.path), line: nil,
                                 column: nil, message: "every statement ran, and its outcome could not be recorded (\(error.message))")
                let ran = failure.flatMap { if case .partlyApplied(let kept) = $0.aftermath { kept } else { nil } }
                    ?? "what the file did stayed applied"
                // Say what history holds now, read again: the file may have dropped it (a schema dropped with CASCADE).
                switch Result(catching: { try history.record(kind: .migration, identity: migration.id) }) {
                case .success(let row?) where row.state == .running:
                    unrecorded.aftermath = .unrecorded("\(ran), and its history row still says running: check the database, then run 'strata resolve \(migration.id) --applied' or 'strata resolve \(migration.id) --rolled-back'")
                case .success(nil) where (try? history.exists()) == false:
                    unrecorded.aftermath = .unrecorded("\(ran), and strata_history no longer exists (the file dropped it?): nothing records any step now, so every step reads as pending; restore the history from a backup before running again")
                default:
                    unrecorded.aftermath = .unrecorded("\(ran), and what history holds for it could not be read; check 'strata status' and the database, then settle it with 'strata resolve \(migration.id)'")
                }
                throw unrecorded
            }
        }
    }

    /// Runs a `transaction="none"` file. Its statements are not undone when one fails, so a failure says what
    /// stayed applied. Afterwards the connection must be back in autocommit mode: a `BEGIN` without `COMMIT` would
    /// otherwise hold everything, history included, until the connection closes, and then vanish.
    private func runOutsideTransaction(_ migration: MigrationStep, _ foreignKeys: any ForeignKeyBaseline,
                                       _ progress: ((MigrationEvent) -> Void)?) throws -> (checksum: String, text: String?) {
        var statements = 0
        // Whether the file had its own transaction open after its last completed statement: SQLite may roll that
        // back by itself when a statement fails (`INSERT OR ROLLBACK`, `RAISE(ROLLBACK)`), Strata does otherwise.
        var transactionOpen = false
        return try database.withForeignKeys(enforced: migration.enforcesForeignKeys) {
            let ran: (checksum: String, text: String?)
            do {
                ran = try run(migration, progress) {
                    statements += 1
                    transactionOpen = database.isInTransaction
                }
            } catch let error as StepFailure {
                let wasOpen = database.rollBackOpenTransaction() || transactionOpen
                let kept = statements
                let before = error.line.map { "the \(kept) statement\(kept == 1 ? "" : "s") before line \($0)" }
                    ?? "the statements that ran before the failure"
                throw error.partlyApplied(before + " stayed applied"
                    + (wasOpen ? ", except those inside the transaction the file had open, which were rolled back" : "")
                    + "; nothing after the failing statement ran")
            }
            if database.rollBackOpenTransaction() {
                throw StepFailure(kind: .migration, id: migration.id, file: displayPath(migration.path), line: nil,
                                  column: nil, message: "the file ended with a transaction still open (BEGIN without COMMIT)")
                    .partlyApplied("Strata rolled that transaction back: the statements before its BEGIN stayed applied, those after it did not")
            }
            do {
                try checkForeignKeys(migration, foreignKeys)
            } catch let error as StepFailure {
                throw error.partlyApplied("every statement of the file ran and stayed applied")
            }
            return ran
        }
    }

    private func applySeed(_ seed: SeedStep, _ options: MigrationOptions, started: ContinuousClock.Instant,
                           _ progress: ((MigrationEvent) -> Void)?) throws -> StepOutcome {
        do {
            return try reportingLockTimeout {
                try database.withWriteLock {
                    try database.limitStatements(limits(options, insideTransaction: true), insideTransaction: true)
                    try history.create()
                    if let record = try history.record(kind: .seed, identity: seed.id), record.state != .deleted {
                        let checksum = try self.checksum(of: .seed(seed), version: record.checksumVersion)
                        if !(seed.onChange == .reapply && record.isApplied && record.checksum != checksum) {
                            try check(record, checksum: checksum, id: seed.id)
                            throw AppliedElsewhere()
                        }
                    }
                    let target: any SeedTarget
                    do {
                        target = try database.seedTarget(seed)
                    } catch let error as DatabaseError where error.kind != .busy {
                        throw StepFailure(kind: .seed, id: seed.id, file: displayPath(seed.path), line: nil, column: nil,
                                          message: error.message, databaseError: error)
                    }
                    var loader = SeedLoader(step: seed, target: target) { rows, read, total in
                        progress?(.seedProgress(id: seed.id, rows: rows, bytesRead: read, totalBytes: total))
                    }
                    // The checksum recorded is that of the bytes loaded, hashed from the same read.
                    loader.computeChecksum = true
                    let loaded: (rows: Int, checksum: String?)
                    do {
                        // Seeds, and triggers on seeded tables, may not write Strata's history either.
                        loaded = try database.withSeedRules { try loader.load() }
                    } catch let error as SeedError {
                        throw StepFailure(kind: .seed, id: seed.id, file: error.file, line: error.line,
                                          column: error.column, message: error.message)
                    } catch let error as DatabaseError where error.kind != .busy {
                        throw StepFailure(kind: .seed, id: seed.id, file: displayPath(seed.path), line: nil, column: nil,
                                          message: error.message, databaseError: error)
                    }
                    let checksum = try loaded.checksum ?? self.checksum(of: .seed(seed), version: Checksum.algorithmVersion)
                    let durationMs = milliseconds(since: started)
                    try history.write(HistoryRecord(
                        kind: .seed, identity: seed.id, checksum: checksum, checksumVersion: Checksum.algorithmVersion,
                        appliedAt: HistoryRecord.now(), durationMs: durationMs, rowCount: loaded.rows, state: .applied,
                        toolVersion: Strata.version, appliedSQL: nil, runner: nil, error: nil))
                    return .applied(rows: loaded.rows, durationMs: durationMs)
                }
            }
        } catch is AppliedElsewhere {
            return .alreadyApplied
        }
    }

    /// Runs a code step's registered body and writes its history row in one transaction holding the write lock,
    /// as a transactional file runs: a body that throws leaves neither its writes nor a row, and a crash part-way
    /// leaves nothing (the transaction never committed). Its statements run under the rules seeds run under
    /// (history may not be written), with foreign keys as the connection has them.
    private func applyCode(_ code: CodeStep, _ options: MigrationOptions) throws -> StepOutcome {
        func failure(_ message: String, _ error: DatabaseError? = nil) -> StepFailure {
            StepFailure(kind: .code, id: code.id, file: code.location.path, line: code.location.line, column: nil,
                        message: message, databaseError: error)
        }
        // The plan refused this already; checked again so a step never counts as run without its body.
        guard let body = codeBodies[code.name] else {
            throw failure("no code is registered for code step '\(code.name)'; the program must register it (Migrator.register)")
        }
        let started = ContinuousClock.now
        do {
            return try reportingLockTimeout {
                try database.withWriteLock {
                    try database.limitStatements(limits(options, insideTransaction: true), insideTransaction: true)
                    try history.create()
                    if let record = try history.record(kind: .migration, identity: code.id), record.state != .deleted {
                        try check(record, checksum: code.version, id: code.id)
                        throw AppliedElsewhere()
                    }
                    do {
                        try database.withSeedRules { try body(database) }
                    } catch let error as DatabaseError {
                        throw failure("code step '\(code.name)' failed: \(error.description)", error)
                    } catch {
                        throw failure("code step '\(code.name)' failed: \(error)")
                    }
                    let durationMs = milliseconds(since: started)
                    do {
                        try history.write(HistoryRecord(
                            kind: .migration, identity: code.id, checksum: code.version,
                            checksumVersion: Checksum.algorithmVersion, appliedAt: HistoryRecord.now(),
                            durationMs: durationMs, rowCount: nil, state: .applied, toolVersion: Strata.version,
                            appliedSQL: nil, runner: nil, error: nil))
                    } catch let error as DatabaseError where error.kind != .busy {
                        throw failure("could not record the step (did the code swallow a database error?): \(error.message)", error)
                    }
                    return .applied(rows: nil, durationMs: durationMs)
                }
            }
        } catch is AppliedElsewhere {
            return .alreadyApplied
        }
    }

    /// The step's file checksum under `version`, or the step's failure when the file cannot be read.
    private func checksum(of step: PlanStep, version: Int) throws -> String {
        do {
            return try step.currentChecksum(version: version)
        } catch {
            throw StepFailure(kind: step.kind, id: step.id, file: displayPath(step.filePath), line: nil, column: nil,
                              message: "cannot read the \(step.kind == .seed ? "seed" : "migration") file: \(error)")
        }
    }

    /// A record found inside the write lock: applied with the same checksum means another run did it.
    private func check(_ record: HistoryRecord, checksum: String, id: String) throws {
        if record.isDirty {
            throw MigrationError.refused([Refusal(reason: .dirty, id: id, message: dirtyMessage(id, record))])
        }
        if record.checksum != checksum {
            throw MigrationError.refused([Refusal(reason: .drift, id: id,
                message: "\(id) was applied by another run with different content; check it and run 'strata repair'")])
        }
    }

    /// The file's checksum and, for files up to `recordedTextLimit`, its text, read once: what a
    /// `transaction="none"` step's claim records before it runs.
    private func read(_ migration: MigrationStep) throws -> (String?, String) {
        do {
            if let bytes = Self.fileBytes(migration.path, atMost: Self.recordedTextLimit) {
                return (Checksum.normalizedText(bytes), try Checksum.of(bytes))
            }
            return (nil, try Checksum.ofFile(atPath: migration.path, content: .sql))
        } catch {
            throw StepFailure(kind: .migration, id: migration.id, file: displayPath(migration.path), line: nil,
                              column: nil, message: "cannot read the migration file: \(error)")
        }
    }

    /// History keeps the applied SQL of files up to 1 MiB (for drift diffs); larger files, typically data loads,
    /// are recorded by checksum only so memory never grows with a file's size.
    static let recordedTextLimit = 1 << 20

    static func recordedText(of path: String) -> String? {
        fileBytes(path, atMost: recordedTextLimit).map { Checksum.normalizedText($0) }
    }

    /// The file's bytes when it is no larger than `limit`; nil for a larger or unreadable file.
    static func fileBytes(_ path: String, atMost limit: Int) -> [UInt8]? {
        guard let file = try? RegularFile(path: path), file.size <= limit,
              let bytes = try? file.read(upTo: limit + 1), bytes.count <= limit else { return nil }
        return bytes
    }

    /// Runs the file under the backend's rules for migrations, and returns the checksum and
    /// (for small files) the text of exactly the bytes that ran. A plain file streams from disk; a file in another
    /// tool's format is read whole once, and only its up section runs, at the file's own line numbers.
    private func run(_ migration: MigrationStep, _ progress: ((MigrationEvent) -> Void)?,
                     statementFinished: (() -> Void)? = nil) throws -> (checksum: String, text: String?) {
        func failure(_ message: String, line: Int? = nil, column: Int? = nil) -> StepFailure {
            StepFailure(kind: .migration, id: migration.id, file: displayPath(migration.path), line: line,
                        column: column, message: message)
        }
        let hasher: NormalizingHasher
        do { hasher = try NormalizingHasher(content: .sql) } catch { throw failure("\(error)") }
        var kept: [UInt8]? = []
        func observe(_ chunk: UnsafeBufferPointer<UInt8>) {
            hasher.update(chunk)
            if let count = kept?.count {
                if count + chunk.count <= Self.recordedTextLimit { kept?.append(contentsOf: chunk) } else { kept = nil }
            }
        }
        do {
            if migration.format == .plain {
                try database.runScript(contentsOfFile: migration.path, insideTransaction: migration.runsInTransaction,
                                       progress: { read, total in
                    progress?(.scriptProgress(id: migration.id, bytesRead: read, totalBytes: total))
                }, observe: observe, afterEach: statementFinished)
            } else {
                let bytes: [UInt8]
                do { bytes = try RegularFile(path: migration.path).readToEnd() } catch {
                    throw DatabaseError(kind: .cannotOpen, message: "\(error)")
                }
                bytes.withUnsafeBufferPointer(observe)
                let section: MigrationSection
                do { section = try migration.format.upSection(of: bytes) } catch let error as MigrationFormatError {
                    throw failure(error.message, line: error.line)
                }
                guard section.runsInTransaction == migration.runsInTransaction else {
                    throw failure("the file's own transaction option changed since the manifest was read; run again")
                }
                try database.runScript(Array(bytes[section.range]), startLine: section.startLine,
                                       insideTransaction: migration.runsInTransaction, afterEach: statementFinished)
            }
        } catch let error as DatabaseError {
            let message = error.line == nil && error.kind == .cannotOpen
                ? "cannot read the migration file (\(error.message))" : error.message
            var failed = failure(message, line: error.line, column: error.column)
            failed.databaseError = error
            throw failed
        }
        do {
            return (try hasher.finish(), kept.map { Checksum.normalizedText($0) })
        } catch {
            throw failure("\(error)")
        }
    }

    /// Fails the step for foreign key violations it made (those in `baseline` were there before the run), naming
    /// the rows; a schema the database cannot check (a foreign key to a column that is not unique) fails it too.
    private func checkForeignKeys(_ migration: MigrationStep, _ baseline: any ForeignKeyBaseline) throws {
        func failure(_ message: String) -> StepFailure {
            StepFailure(kind: .migration, id: migration.id, file: displayPath(migration.path), line: nil, column: nil,
                        message: message)
        }
        let violations: [ForeignKeyViolation]
        do {
            violations = try baseline.newViolations()
        } catch let error as DatabaseError where error.kind != .busy {
            var failed = failure("foreign key check could not run: \(error.message) (a REFERENCES clause must name the parent's primary key or a UNIQUE column)")
            failed.databaseError = error
            throw failed
        }
        guard !violations.isEmpty else { return }
        let shown = violations.prefix(10).map(\.description).joined(separator: "; ")
        let more = violations.count > 10 ? " (and \(violations.count - 10) more)" : ""
        let withoutRowid = violations.contains { $0.rowid == nil }
            ? " (rows of tables without rowid cannot be told apart from rows that were already wrong before the run)" : ""
        throw failure("foreign key check failed: \(shown)\(more)\(withoutRowid)")
    }

    /// Turns the database's busy error into a message a deploy log can act on.
    private func reportingLockTimeout<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as DatabaseError where error.kind == .busy {
            throw MigrationError.lockTimeout(
                "another process held the database's write lock for longer than the busy timeout (\(database.lockTimeout)); it may be migrating too — run again, or raise --timeout")
        }
    }

    // MARK: Baseline, repair, resolve

    /// Records every step up to and including `id` as applied without running it (adopting an existing database).
    /// Steps already recorded are left alone. Returns the ids recorded.
    @discardableResult
    public func baseline(through id: String, _ options: MigrationOptions = MigrationOptions()) throws -> [String] {
        let plan = self.plan
        guard let end = plan.firstIndex(where: { $0.id == id }) else {
            throw MigrationError.invalidStep("\(id) is not a step of \(manifest.path)")
        }
        return try reportingLockTimeout {
            try database.withWriteLock {
                try history.create()
                var recorded: [String] = []
                for step in plan[...end] {
                    if case .seed(let seed) = step, !isActive(seed, options) { continue }
                    if let existing = try history.record(kind: step.historyKind, identity: step.id), existing.state != .deleted {
                        continue
                    }
                    var text: String?
                    if case .migration = step { text = Self.recordedText(of: step.filePath) }
                    let checksum: String
                    do { checksum = try step.currentChecksum(version: Checksum.algorithmVersion) } catch {
                        throw MigrationError.invalidStep("cannot read \(displayPath(step.filePath))")
                    }
                    try history.write(HistoryRecord(
                        kind: step.historyKind, identity: step.id, checksum: checksum, checksumVersion: Checksum.algorithmVersion,
                        appliedAt: HistoryRecord.now(), durationMs: 0, rowCount: nil, state: .baseline,
                        toolVersion: Strata.version, appliedSQL: text, runner: nil, error: nil))
                    recorded.append(step.id)
                }
                return recorded
            }
        }
    }

    /// Re-records the checksums of drifted steps (after a human checked them) and marks records of files
    /// no longer in the manifest as deleted.
    public func repair() throws -> RepairReport {
        try reportingLockTimeout {
            try database.withWriteLock {
                var report = RepairReport()
                for status in try status() {
                    guard let record = status.record else { continue }
                    switch status.state {
                    case .drifted:
                        // Re-recorded under the current checksum version.
                        guard let step = status.step,
                              let checksum = try? step.currentChecksum(version: Checksum.algorithmVersion)
                        else { continue }
                        var text = record.appliedSQL
                        if status.kind == .migration, let path = status.step?.filePath {
                            text = Self.recordedText(of: path)
                        }
                        try history.write(record.with(checksum: checksum, version: Checksum.algorithmVersion, appliedSQL: text))
                        report.realigned.append(status.id)
                    case .missing:
                        try history.write(record.with(state: .deleted))
                        report.deleted.append(status.id)
                    default:
                        break
                    }
                }
                return report
            }
        }
    }

    /// Settles a dirty step after a human has checked the database.
    public func resolve(_ id: String, as resolution: Resolution) throws {
        try reportingLockTimeout {
            try database.withWriteLock {
                let records = try history.all().filter { $0.identity == id && $0.isDirty }
                guard let record = records.first else {
                    throw MigrationError.invalidStep("\(id) is not dirty; 'strata status' lists dirty steps")
                }
                if isBeingApplied(record) {
                    throw MigrationError.refused([Refusal(reason: .dirty, id: id,
                        message: "\(id) is being applied now by \(record.runner ?? "another process"), which holds its lock; wait for it to finish, then check 'strata status'")])
                }
                // Whichever way the step is settled, what it left half-built must go first: recorded as applied, an
                // INVALID index would pass for the finished one; rolled back, a rerun with IF NOT EXISTS keeps it.
                let unfinished = try database.unfinishedObjects()
                if !unfinished.isEmpty {
                    throw MigrationError.refused(unfinished.map {
                        Refusal(reason: .unfinished, id: $0.name, message: "cannot resolve \(id): \($0), then resolve it again")
                    })
                }
                switch resolution {
                case .applied:
                    let step = plan.first { $0.id == id && $0.historyKind == record.kind }
                    if let step, let checksum = try? step.currentChecksum(version: Checksum.algorithmVersion) {
                        try history.write(record.with(checksum: checksum, version: Checksum.algorithmVersion, state: .applied))
                    } else {
                        try history.write(record.with(state: .applied))
                    }
                case .rolledBack:
                    try history.delete(kind: record.kind, identity: id)
                }
            }
        }
    }

    /// Refuses a database whose history is not where this connection looks (a `<database schema>` added or
    /// changed, a `search_path` that no longer reaches it) but which holds another history recording steps of this
    /// manifest: every step would read as pending and run again. A history of other steps only (another
    /// application's, in its own schema) is left alone.
    private func refuseHistoryElsewhere() throws {
        let ours = Set(plan.map { key($0.historyKind, $0.id) })
        let refusals = try database.otherHistories().compactMap { other -> Refusal? in
            let shared = other.steps.intersection(ours)
            guard !shared.isEmpty else { return nil }
            let names = shared.sorted().prefix(3).map { String($0.split(separator: "/", maxSplits: 1).last ?? "") }
            return Refusal(reason: .historyElsewhere, id: other.location,
                message: "\(other.location) records \(shared.count) step\(shared.count == 1 ? "" : "s") of this manifest (\(names.joined(separator: ", "))\(shared.count > 3 ? ", …" : "")), but this database's history is looked for elsewhere and has none there: every step would run again. Name that history's schema in <database schema=\"…\">, or move the table where it is looked for")
        }
        if !refusals.isEmpty { throw MigrationError.refused(refusals) }
    }

    /// What interrupted statements outside a transaction left unusable in the database (`UnfinishedObject`).
    public func unfinishedObjects() throws -> [UnfinishedObject] {
        try database.unfinishedObjects()
    }

    // MARK: Helpers

    /// A `running` step whose runner lock is held by a live process. `failed` never is, whatever its pid.
    private func isBeingApplied(_ record: HistoryRecord?) -> Bool {
        guard let record, record.state == .running else { return false }
        return database.stepLocks.isHeld(kind: record.kind, id: record.identity)
    }

    private func isActive(_ seed: SeedStep, _ options: MigrationOptions) -> Bool {
        seed.contexts.isEmpty || !options.contexts.isDisjoint(with: seed.contexts)
    }

    private func key(_ kind: StepKind, _ id: String) -> String { kind.rawValue + "/" + id }

    private func milliseconds(since start: ContinuousClock.Instant) -> Int {
        let elapsed = (ContinuousClock.now - start).components
        return Int(elapsed.seconds * 1000 + elapsed.attoseconds / 1_000_000_000_000_000)
    }
}

extension PlanStep {
    /// How the step's file is hashed: line endings inside SQL literals or quoted CSV fields are data.
    var checksumContent: Checksum.Content {
        switch self {
        case .migration, .code: .sql
        case .seed: .csv
        }
    }

    /// What history compares the step's record with: its file's checksum under `version`, or a code step's
    /// `version` as the manifest gives it (a code step has no file).
    func currentChecksum(version: Int) throws -> String {
        switch self {
        case .code(let code): code.version
        case .migration, .seed: try Checksum.ofFile(atPath: filePath, content: checksumContent, version: version)
        }
    }
}

extension HistoryRecord {
    /// A copy with a new checksum (and the version it was computed with), state or text.
    func with(checksum: String? = nil, version: Int? = nil, state: State? = nil, appliedSQL: String?? = nil) -> HistoryRecord {
        HistoryRecord(kind: kind, identity: identity, checksum: checksum ?? self.checksum,
                      checksumVersion: version ?? checksumVersion, appliedAt: appliedAt, durationMs: durationMs,
                      rowCount: rowCount, state: state ?? self.state, toolVersion: toolVersion,
                      appliedSQL: appliedSQL ?? self.appliedSQL, runner: state == nil ? runner : nil,
                      error: state == nil ? error : nil)
    }
}

/// A path relative to the current directory when it lies below it, for readable messages.
public func displayPath(_ path: String) -> String {
    let cwd = FileManager.default.currentDirectoryPath
    let prefix = cwd.hasSuffix("/") ? cwd : cwd + "/"
    return path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : path
}

extension MigrationStep {
    /// The file's bytes when it is no larger than what is checked ahead of time (`Migrator.lintSizeLimit`); nil for
    /// a larger or unreadable file, whose statements are met only as they run.
    package var bytesReadAhead: [UInt8]? { Migrator.fileBytes(path, atMost: Migrator.lintSizeLimit) }
}
