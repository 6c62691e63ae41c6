/// History and files in, statuses and a plan out: each step's state, what `migrate` would run and why, everything
/// that would make it refuse, and the plan's id. Writes nothing.
struct Planner {
    let manifest: Manifest
    let database: any MigrationDatabase
    /// The names of the registered code steps' bodies (`Migrator.register`), and those registered twice.
    let registered: Set<String>
    let registeredTwice: [String]
    /// The names of the code steps whose down bodies are registered (`Migrator.registerDown(_:_:)`).
    var registeredDowns: Set<String> = []

    private var book: HistoryBook { HistoryBook(database: database) }
    private var backend: DatabaseBackend { database.dialect.backend }
    /// This database's plan: migrations marked for another backend are not part of it.
    var steps: [PlanStep] { manifest.plan(for: backend) }

    // MARK: Status

    /// Every step of the manifest, and every recorded step no longer in it, with its state.
    func status(_ options: MigrationOptions) throws -> [StepStatus] {
        // `deleted` records are kept: a file restored after `repair` is applied (same checksum) or drifted, never
        // pending, or it would run twice.
        let records = try database.history.all()
        if records.isEmpty && !options.newHistory { try book.refuseHistoryElsewhere(of: steps) }
        var byKey: [String: HistoryRecord] = [:]
        for record in records { byKey[HistoryBook.key(record.kind, record.identity)] = record }
        var result: [StepStatus] = []
        for step in steps {
            let record = byKey.removeValue(forKey: HistoryBook.key(step.historyKind, step.id))
            // Only a recorded step needs its file hashed; a pending seed may be large.
            // A record is compared under the checksum version it was written with.
            let checksum = record.flatMap { try? step.currentChecksum(version: $0.checksumVersion) }
            let state: StepStatus.State
            let liveness = book.liveness(of: record)
            if let record {
                if record.isDirty { state = liveness?.mayBeApplying == true ? .running : .dirty }
                else if record.checksum == checksum { state = .applied }
                else if step.isReappliedWhenChanged, checksum != nil, !book.isEarlierVersion(step, of: record) { state = .changed }
                else { state = .drifted }
            } else if case .seed(let seed) = step, !Self.isActive(seed, options) {
                state = .skipped
            } else {
                state = .pending
            }
            result.append(StepStatus(kind: step.kind, id: step.id, state: state, step: step, record: record, checksum: checksum,
                                     liveness: state == .running ? liveness : nil))
        }
        for record in records where record.state != .deleted && byKey[HistoryBook.key(record.kind, record.identity)] != nil {
            result.append(StepStatus(kind: record.stepKind, id: record.identity, state: record.isDirty ? .dirty : .missing,
                                     step: nil, record: record, checksum: nil))
        }
        return result
    }

    /// Whether a seed runs with these options' contexts.
    static func isActive(_ seed: SeedStep, _ options: MigrationOptions) -> Bool {
        seed.contexts.isEmpty || !options.contexts.isDisjoint(with: seed.contexts)
    }

    // MARK: Plan

    /// What `migrate` would do with these options, and what would make it refuse. For `migrate` (`forMigrate`),
    /// seed rows are not counted and the plan id is computed only when one is expected: both would read pending
    /// files once more.
    func plan(_ options: MigrationOptions, forMigrate: Bool) throws -> MigrationPlan {
        let statuses = try status(options)
        if let rollback = options.rollback {
            return try rollbackPlan(rollback, statuses, options, forMigrate: forMigrate)
        }
        // With a target, the steps after it in plan order stay pending; the seeds and code steps that run right
        // after a target migration are its own.
        var last = try options.target.map { try index(of: $0) } ?? steps.count - 1
        if case .migration? = steps.indices.contains(last) ? steps[last] : nil {
            while last + 1 < steps.count, steps[last + 1].kind != .migration { last += 1 }
        }
        let position = Dictionary(steps.enumerated().map { (HistoryBook.key($1.kind, $1.id), $0) }, uniquingKeysWith: { first, _ in first })
        var refusals = registrationRefusals + refusals(for: statuses)
        if !manifest.backends.contains(backend) {
            let marks = DatabaseBackend.allCases.filter(manifest.backends.contains).map(\.displayName).joined(separator: " and ")
            refusals.append(Refusal(reason: .backend, id: backend.rawValue,
                message: "\(manifest.path) has no migrations for \(backend.displayName): every migration is marked for \(marks); point --database at a \(marks) database, or add migrations for \(backend.displayName)"))
        }
        let lastApplied = statuses.filter { status in
            guard status.kind == .migration, status.state == .applied || status.state == .drifted else { return false }
            if case .migration(let migration)? = status.step, migration.repeatable { return false }
            return true
        }.map(\.id).max(by: NaturalOrder.areInIncreasingOrder)
        var planned: [PlannedStep] = []
        var pendingMigration: String?
        for status in statuses {
            let beingApplied = status.state == .running
            guard let step = status.step, status.state == .pending || status.state == .changed || beingApplied else { continue }
            guard (position[HistoryBook.key(step.kind, step.id)] ?? 0) <= last else { continue }
            switch step {
            case .migration(let migration) where migration.repeatable:
                guard options.includeMigrations else { continue }
                planned.append(PlannedStep(step: step, reason: status.state == .changed ? .reapply : .pending, rowCount: nil))
            case .migration(let migration):
                if status.state == .pending { pendingMigration = pendingMigration ?? migration.id }
                guard options.includeMigrations else { continue }
                let outOfOrder = lastApplied.map { NaturalOrder.areInIncreasingOrder(migration.id, $0) } ?? false
                if outOfOrder && options.strictOrder {
                    refusals.append(Refusal(reason: .outOfOrder, id: migration.id,
                        message: "\(migration.id) is pending but sorts before \(lastApplied ?? "") which is applied; --strict-order refuses out-of-order migrations"))
                }
                planned.append(PlannedStep(step: step, reason: outOfOrder ? .outOfOrder : .pending, rowCount: nil))
            case .seed(let seed):
                // A changed reapply seed of a context this run does not name is not reloaded: it is that context's.
                guard options.includeSeeds, Self.isActive(seed, options) else { continue }
                if !options.includeMigrations, let pendingMigration {
                    refusals.append(Refusal(reason: .seedOrder, id: seed.id,
                        message: "seed \(seed.id) runs after migration \(pendingMigration), which is pending; run 'strata migrate' first"))
                }
                planned.append(PlannedStep(step: step, reason: status.state == .changed ? .reapply : .pending,
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
                planned.append(PlannedStep(step: step, reason: outOfOrder ? .outOfOrder : .pending, rowCount: nil))
                if !registered.contains(code.name) {
                    refusals.append(Refusal(reason: .codeStep, id: code.id,
                        message: "\(code.id) is a Swift code step (\(code.location)) due in this run, and no code is registered for it: the strata command cannot run Swift code; the program must run it, with Migrator and migrator.register(\"\(code.name)\") { db in … }; then the steps after it can run"))
                }
            }
        }
        // Refused whether or not anything is pending, so a deploy finds out on its first run, not its first change.
        if options.backup != nil && database.backupSource == nil {
            refusals.append(Refusal(reason: .backup, id: backend.rawValue, message: database.backupUnavailableReason))
        }
        for case .migration(let migration) in planned.map(\.step) where !migration.runsInTransaction {
            if let message = database.noneStepRefusal(id: migration.id) {
                refusals.append(Refusal(reason: .pooler, id: migration.id, message: message))
            }
        }
        if planned.contains(where: { if case .migration(let m) = $0.step { !m.runsInTransaction } else { false } }) {
            refusals += try database.unfinishedObjects().map {
                Refusal(reason: .unfinished, id: $0.name,
                        message: "\($0); the plan holds a transaction=\"none\" migration, which could build on it")
            }
        }
        // Only files about to run are read: applied ones were checked before they ran.
        let pendingMigrations = planned.compactMap { step -> MigrationStep? in
            if case .migration(let migration) = step.step { migration } else { nil }
        }
        refusals += MigrationLint.findings(pendingMigrations, dialect: database.dialect)
            .map { Refusal(reason: .invalidSQL, id: $0.id, message: $0.problem.description) }
        // A backup is named with the plan it precedes.
        var id = ""
        if !forMigrate || options.expectedPlanID != nil || options.backup != nil {
            for index in planned.indices { planned[index].checksum = contentChecksum(planned[index].step) }
            id = try planID(planned)
        }
        if let expected = options.expectedPlanID, expected != id {
            refusals.append(Refusal(reason: .planChanged, id: expected,
                message: "the plan changed since it was reviewed (plan id \(expected), now \(id)): a file or the database changed; run 'strata plan' again"))
        }
        return MigrationPlan(id: id, steps: planned, refusals: refusals)
    }

    /// The checksum of a step's content as the plan id covers it, under the version its record would get here;
    /// nil for a file that cannot be read.
    func contentChecksum(_ step: PlanStep) -> String? {
        guard let checksum = try? step.currentChecksum(version: step.checksumVersion(on: database.dialect)) else { return nil }
        // A goose file with ENVSUB runs with the environment's values: the plan reviewed is the text they make, so
        // another value is another plan (the values themselves are not in the id, only their hash).
        guard case .migration(let migration) = step, migration.substitutesEnvironment,
              let substituted = MigrationScript.substitutedText(of: migration) else { return checksum }
        return checksum + "+" + ((try? Checksum.of(substituted)) ?? "unreadable")
    }

    /// The plan's id: its steps in order, each with why it runs, its content (`PlannedStep.checksum`) and its
    /// options (`PlanFingerprint`). A file that cannot be read gives an id no readable file gives.
    func planID(_ steps: [PlannedStep]) throws -> String {
        let lines = steps.map { planned in
            let content = planned.step.kind == .code ? "version \(planned.checksum ?? "")"
                : (planned.reason == .rollback ? "down " : "") + (planned.checksum ?? "unreadable")
            return "\(planned.step.kind.rawValue) \(planned.step.id) \(planned.reason.rawValue) \(content) "
                + PlanFingerprint.options(of: planned.step)
        }
        return String(try Checksum.of(Array(lines.joined(separator: "\n").utf8)).prefix(16))
    }

    // MARK: Refusals

    /// The names `register(_:_:)` was given that the manifest does not list, and those given twice.
    var registrationRefusals: [Refusal] {
        let listed = Set(manifest.codeSteps.map(\.name))
        let unknown = registered.filter { !listed.contains($0) }.sorted().map { name in
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

    /// What the steps' states refuse: drift, missing files, dirty steps.
    private func refusals(for statuses: [StepStatus]) -> [Refusal] {
        statuses.compactMap { status in
            switch status.state {
            case .drifted:
                if let step = status.step, let record = status.record, book.isEarlierVersion(step, of: record) {
                    return Refusal(reason: .drift, id: status.id, message: HistoryBook.earlierVersionMessage(status.id, record))
                }
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
                if book.isBeingApplied(status.record) { return nil }
                // The status may be stale: the runner could have finished and exited since it was read. Once it
                // is gone nothing else can change the record, so a fresh read now is conclusive.
                let fresh = try? database.history.record(kind: status.kind, identity: status.id)
                guard let fresh, fresh.isDirty else { return nil }
                return Refusal(reason: .dirty, id: status.id, message: HistoryBook.dirtyMessage(status.id, fresh))
            default:
                return nil
            }
        }
    }
}
