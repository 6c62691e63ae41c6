#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Strata

/// One command's run: load what it needs through the library, call it, render the result.
struct Commands {
    let invocation: Invocation
    let output: Output

    func run() throws -> Int32 {
        switch invocation.spec.name {
        case "validate": return try validate()
        case "migrate": return try migrate(seedsOnly: false)
        case "seed": return try migrate(seedsOnly: true)
        case "status": return try status()
        case "plan": return try plan()
        case "baseline": return try baseline()
        case "repair": return try repair()
        case "resolve": return try resolve()
        case "restore": return try restore()
        case "new": return try newMigration()
        case "schema": return try schema()
        case "diff": return try diff()
        case "rehearse": return try rehearse()
        case "check": return try check()
        case "completion": return try completion()
        default: throw UsageError("unknown command '\(invocation.spec.name)'")
        }
    }

    // MARK: Loading

    func manifest() throws -> Manifest {
        guard let path = invocation.value("manifest") else { throw UsageError("--manifest PATH is required") }
        let manifest = try Manifest.load(path: path)
        for warning in manifest.warnings { output.log("warning: \(warning)") }
        return manifest
    }

    /// The database `--database` or the manifest names, checked by its backend (exit 2 for a name at which no
    /// durable database would be kept).
    func target(_ manifest: Manifest?) throws -> any DatabaseTarget {
        try DatabaseTargets.target(option: invocation.value("database"), manifest: manifest)
    }

    var timeout: Duration {
        get throws {
            guard let text = invocation.value("timeout") else { return .seconds(60) }
            guard let seconds = Double(text), seconds >= 0, seconds < 86_400 * 7 else {
                throw UsageError("--timeout must be a number of seconds, not '\(text)'")
            }
            return .milliseconds(Int64(seconds * 1000))
        }
    }

    var options: MigrationOptions {
        get throws {
            var options = MigrationOptions(contexts: Set(invocation.all("context")), strictOrder: invocation.has("strict-order"),
                                           waitTimeout: try timeout, expectedPlanID: invocation.value("plan-id"))
            if let lockTimeout = try seconds("lock-timeout") { options.lockTimeout = lockTimeout }
            if let text = invocation.value("lock-retries") {
                guard let retries = Int(text), (0...1000).contains(retries) else {
                    throw UsageError("--lock-retries must be a whole number from 0 to 1000, not '\(text)'")
                }
                options.lockRetries = retries
            }
            options.statementTimeout = try seconds("statement-timeout")
            return options
        }
    }

    /// The target opened for a command that writes; one that cannot be written is a refusal (exit 3), the same on
    /// every backend.
    private func openForWriting(_ target: any DatabaseTarget) throws -> any MigrationDatabase {
        do {
            return try target.openForWriting(timeout: try timeout)
        } catch let error as DatabaseError where error.kind == .readOnly {
            throw MigrationError.refused([Refusal(reason: .readOnly, id: "", message: error.message)])
        }
    }

    /// The value of a `--NAME SECONDS` option as a duration (nil when not given): a number of seconds from 0 to a
    /// week, fractions allowed.
    private func seconds(_ name: String) throws -> Duration? {
        guard let text = invocation.value(name) else { return nil }
        guard let seconds = Double(text), seconds.isFinite, seconds >= 0, seconds <= 86_400 * 7 else {
            throw UsageError("--\(name) must be a number of seconds from 0 to 604800, not '\(text)'")
        }
        return .milliseconds(Int64((seconds * 1000).rounded(.up)))
    }

    // MARK: Commands

    private func validate() throws -> Int32 {
        let manifest = try self.manifest()
        // validate reads files only: no database is opened; each backend's plan is linted with its dialect.
        let (problems, unchecked) = Migrator.lint(manifest, dialect: DatabaseTargets.dialect(for:))
        for warning in unchecked { output.log("warning: \(warning)") }
        let warnings = JSON.array((manifest.warnings + unchecked).map(Self.json))
        if !problems.isEmpty {
            output.object(["command": "validate", "valid": false, "problems": .array(problems.map(Self.json)),
                           "warnings": warnings])
            printError(problems.map(\.description).joined(separator: "\n"))
            return ExitCode.stepFailed
        }
        // A manifest with backend marks says how many migrations each checked plan has.
        let plans = manifest.validatedBackends.map { ($0, manifest.migrations(for: $0).count) }
        let perBackend = manifest.migrations.contains { $0.backends != nil }
            ? " (" + plans.map { "\($0.0.displayName) \($0.1)" }.joined(separator: ", ") + ")" : ""
        let summary = counted(manifest.migrations.count, "migration") + perBackend + ", "
            + counted(manifest.seeds.count, "seed") + ", " + counted(manifest.models.count, "model")
        output.line("ok: \(summary)")
        output.object(["command": "validate", "valid": true, "migrations": .optional(manifest.migrations.count),
                       "plans": .object(plans.map { ($0.0.rawValue, .optional($0.1)) }),
                       "seeds": .optional(manifest.seeds.count), "models": .optional(manifest.models.count),
                       "warnings": warnings])
        return ExitCode.success
    }

    private func migrate(seedsOnly: Bool) throws -> Int32 {
        let manifest = try self.manifest()
        let target = try target(manifest)
        let path = target.name
        var options = try self.options
        options.includeMigrations = !seedsOnly
        options.backup = try backupOptions(manifest)
        if options.backup != nil, let refusal = DatabaseTargets.backupRefusal(for: target) {
            throw MigrationError.refused([refusal])   // before connecting: nothing runs
        }
        let command = seedsOnly ? "seed" : "migrate"
        let signals = StopSignals(command: command)
        options.cancellation = signals.cancellation
        if !target.exists {
            // Refuse before opening for writing creates the database: an empty one reads the same as none.
            let refusals = try Migrator(manifest: manifest, database: try target.openForReading()).refusals(options)
            guard refusals.isEmpty else { throw MigrationError.refused(refusals) }
        }
        let migrator = Migrator(manifest: manifest, database: try openForWriting(target))
        var progress = ProgressLine(enabled: output.showsProgress)
        let keep = options.backup?.keep
        let idWidth = manifest.plan(for: migrator.database.dialect.backend).map(\.id.count).max() ?? 0
        let report = try migrator.migrate(options) { event in
            switch event {
            case .started(let step, let reason):
                if reason == .outOfOrder {
                    output.log("note: \(step.id) is applied out of order (it sorts before a migration already applied)")
                }
            case .finished(let step):
                progress.clear()
                output.line(Self.appliedLine(step, width: idWidth))
            case .seedProgress(let id, let rows, let read, let total):
                progress.update(id: id, rows: rows, bytesRead: read, totalBytes: total)
            case .scriptProgress(let id, let read, let total):
                progress.update(id: id, bytesRead: read, totalBytes: total)
            case .waiting(let message), .notice(let message):
                output.log(message)
            case .backedUp(let backup):
                if backup.createdDirectory {
                    output.log("created the backup directory \(displayPath(PathComponents.deletingLast(backup.path)))")
                }
                output.line(Self.backupLine(backup))
                for removed in backup.removed { output.line("  removed  \(displayPath(removed))  (keep \(keep ?? 0))") }
            case .retrying(let id, let retry, let retries, let delay, let reason):
                progress.clear()
                output.log("retrying \(id) in \(Self.seconds(delay)) (retry \(retry) of \(retries)): it was rolled back because a statement gave up waiting for a lock: \(reason)")
            }
        }
        progress.clear()
        output.object(["command": .string(command), "database": .string(path),
                       "backup": report.backup.map(Self.json) ?? .null,
                       "applied": .array(report.applied.map(Self.json)),
                       "alreadyApplied": .array(report.alreadyApplied.map(JSON.string)),
                       "failure": report.failure.map(Self.json) ?? .null,
                       "stoppedBy": report.cancelled ? .string(StopSignals.name(signals.received ?? SIGINT)) : .null,
                       "notRun": .array(report.notRun.map(JSON.string))])
        if report.cancelled {
            let number = signals.received ?? SIGINT
            let applied = report.applied.isEmpty ? "none" : report.applied.map(\.id).joined(separator: ", ")
            output.error("strata \(command): stopped by \(StopSignals.name(number)): applied by this run: \(applied); not run: \(report.notRun.joined(separator: ", ")). Run 'strata \(command)' again to apply them.")
            return 128 + number
        }
        if let failure = report.failure {
            output.error("strata \(command): \(failure)")
            if let unfinished = report.unfinishedRollback {
                output.error("  \(failure.id) is not fully rolled back yet: SQLite could not finish (\(unfinished)); the journal beside \(path) holds what undoes it, and the next command that opens the database (e.g. 'strata status') completes the rollback.")
            } else if failure.aftermath == .kept {
                output.error("  \(failure.id) was applied and recorded; the run stopped after it: nothing after it ran.")
            } else if case .partlyApplied = failure.aftermath {
                output.error("  \(failure.id) ran outside a transaction and failed; what stayed applied is said above; nothing after it ran.")
            } else if case .unrecorded = failure.aftermath {
                output.error("  \(failure.id) ran outside a transaction; what stayed applied and what history holds are said above; nothing after it ran.")
            } else {
                output.error("  \(failure.id) was rolled back and left no trace; nothing after it ran.")
            }
            let others = report.appliedByOtherRuns.map { ", \($0) by other runs" } ?? ""
            output.error("  kept: \(counted(report.applied.count, "step")) applied by this run\(others).")
            return ExitCode.stepFailed
        }
        if !report.alreadyApplied.isEmpty {
            output.line("  \(report.alreadyApplied.count) step\(report.alreadyApplied.count == 1 ? " was" : "s were") applied meanwhile by another run")
        }
        if report.applied.isEmpty {
            output.line("Nothing to do: \(path) is up to date.")
        } else {
            output.line("\(counted(report.applied.count, "step")) applied to \(path).")
        }
        return ExitCode.success
    }

    private func status() throws -> Int32 {
        let manifest = try self.manifest()
        let target = try target(manifest)
        let path = target.name
        let migrator = Migrator(manifest: manifest, database: try target.openForReading())
        let statuses = try migrator.status(try options)
        let unfinished = try migrator.unfinishedObjects()
        let rows = statuses.map { status -> [String] in
            [status.kind.rawValue, status.id, status.state.rawValue, status.record?.appliedAt ?? "",
             status.record?.rowCount.map { "\(formatCount($0)) rows" } ?? ""]
        }
        output.line("\(path):")
        output.line(table([["KIND", "STEP", "STATE", "APPLIED AT", "ROWS"]] + rows))
        output.object(["command": "status", "database": .string(path), "steps": .array(statuses.map(Self.json)),
                       "unfinished": .array(unfinished.map(Self.json))])
        let troubled = statuses.filter { [.drifted, .missing, .dirty].contains($0.state) }
        for status in troubled where status.state == .dirty {
            output.log("\(status.id) is dirty; run 'strata resolve \(status.id) --applied' or '--rolled-back' after checking the database")
        }
        for object in unfinished { output.log(object.description) }
        for status in statuses where status.state == .running {
            output.log("\(status.id) is being applied now by \(status.record?.runner ?? "another process"), which holds its lock")
        }
        return troubled.isEmpty && unfinished.isEmpty ? ExitCode.success : ExitCode.refused
    }

    private func plan() throws -> Int32 {
        let manifest = try self.manifest()
        let target = try target(manifest)
        let path = target.name
        let plan = try Migrator(manifest: manifest, database: try target.openForReading()).plan(try options)
        // With --sql, each migration's text, read once for whichever output is printed.
        let sql: [String?] = plan.steps.map { step in
            guard invocation.has("sql"), case .migration(let migration) = step.step,
                  let data = FileManager.default.contents(atPath: migration.path) else { return nil }
            let bytes = [UInt8](data)
            // What runs: the up section of a file in another tool's format.
            guard let section = try? migration.format.upSection(of: bytes) else { return String(decoding: bytes, as: UTF8.self) }
            return String(decoding: bytes[section.range], as: UTF8.self)
        }
        // The up section's lines of each migration in another tool's format, for the reviewer.
        let sections: [MigrationSection?] = plan.steps.map { step in
            guard case .migration(let migration) = step.step, migration.format != .plain else { return nil }
            return try? migration.format.upSection(ofFileAt: migration.path)
        }
        if plan.steps.isEmpty {
            output.line("Nothing to do: \(path) is up to date.")
        } else {
            output.line("migrate would apply \(counted(plan.steps.count, "step")) to \(path) (plan id \(plan.id)):")
            let lines = table(zip(plan.steps, sections).map(Self.plannedRow)).split(separator: "\n")
            for (line, text) in zip(lines, sql) {
                output.line(String(line))
                if let text {
                    output.line(text.split(separator: "\n", omittingEmptySubsequences: false).map { "      " + $0 }.joined(separator: "\n"))
                }
            }
        }
        output.object(["command": "plan", "database": .string(path), "planId": .string(plan.id),
                       "steps": .array(zip(zip(plan.steps, sections), sql).map { planned, text in
                           let (step, section) = planned
                           if case .code(let code) = step.step, case .object(var pairs) = Self.json(step) {
                               pairs.append(("name", .string(code.name)))
                               pairs.append(("after", .string(code.after)))
                               pairs.append(("version", .string(code.version)))
                               return .object(pairs)
                           }
                           guard case .migration(let migration) = step.step,
                                 case .object(var pairs) = Self.json(step) else { return Self.json(step) }
                           pairs.append(("format", .string(migration.format.rawValue)))
                           if let section {
                               pairs.append(("upSection", .array([.optional(section.startLine), .optional(section.endLine)])))
                           }
                           if invocation.has("sql") { pairs.append(("sql", .optional(text))) }
                           return .object(pairs)
                       }),
                       "refusals": .array(plan.refusals.map(Self.json))])
        for refusal in plan.refusals { output.error("refused: \(refusal.message)") }
        return plan.refusals.isEmpty ? ExitCode.success : ExitCode.refused
    }

    private func baseline() throws -> Int32 {
        guard let through = invocation.value("through") else { throw UsageError("--through FILE is required") }
        let manifest = try self.manifest()
        let target = try target(manifest)
        let path = target.name
        let recorded = try Migrator(manifest: manifest, database: try openForWriting(target))
            .baseline(through: through, try options)
        output.line(recorded.isEmpty ? "Nothing recorded: every step through \(through) is already recorded."
                    : "Recorded as applied without running: " + recorded.joined(separator: ", "))
        output.object(["command": "baseline", "database": .string(path), "recorded": .array(recorded.map(JSON.string))])
        return ExitCode.success
    }

    private func repair() throws -> Int32 {
        let manifest = try self.manifest()
        let target = try target(manifest)
        let path = target.name
        let report = try Migrator(manifest: manifest, database: try openForWriting(target)).repair()
        if report.realigned.isEmpty && report.deleted.isEmpty { output.line("Nothing to repair.") }
        for id in report.realigned { output.line("  realigned  \(id): the recorded checksum now matches the file") }
        for id in report.deleted { output.line("  deleted    \(id): no longer in the manifest") }
        output.object(["command": "repair", "database": .string(path), "realigned": .array(report.realigned.map(JSON.string)),
                       "deleted": .array(report.deleted.map(JSON.string))])
        return ExitCode.success
    }

    private func resolve() throws -> Int32 {
        let id = invocation.positionals[0]
        let resolution: Resolution
        switch (invocation.has("applied"), invocation.has("rolled-back")) {
        case (true, false): resolution = .applied
        case (false, true): resolution = .rolledBack
        default: throw UsageError("give exactly one of --applied or --rolled-back")
        }
        let manifest = try self.manifest()
        let target = try target(manifest)
        let path = target.name
        try Migrator(manifest: manifest, database: try openForWriting(target)).resolve(id, as: resolution)
        output.line(resolution == .applied ? "\(id) recorded as applied." : "\(id) forgotten; the next migrate runs it again.")
        output.object(["command": "resolve", "database": .string(path), "id": .string(id), "resolution": .string(resolution.rawValue)])
        return ExitCode.success
    }

    private func newMigration() throws -> Int32 {
        var backend: DatabaseBackend?
        if let name = invocation.value("backend") {
            guard let named = DatabaseBackend(rawValue: name) else {
                throw UsageError("--backend must be \(DatabaseBackend.allCases.map(\.rawValue).joined(separator: " or ")), not '\(name)'")
            }
            backend = named
        }
        let created = try MigrationFile.create(named: invocation.positionals[0], in: try manifest(), backend: backend)
        output.line("created \(displayPath(created))")
        output.object(["command": "new", "path": .string(displayPath(created))])
        return ExitCode.success
    }

    private func schema() throws -> Int32 {
        let manifest = invocation.value("manifest") == nil ? nil : try self.manifest()
        let target = try target(manifest)
        let path = target.name
        // Unlike status and plan, an empty schema is an answer here: printing it for a database that is not there
        // would let a review diff pass against a mistyped path.
        guard target.exists else {
            throw CommandFailure("\(path) does not exist; schema reads an existing database and creates none")
        }
        let schema = try target.schema()
        if !output.json && !output.quiet { StandardOutput.print(schema, terminator: "") }
        guard output.json else { return ExitCode.success }
        // The snapshot is what `diff --schema` reads back.
        let snapshot = try target.openForReading().schemaSnapshot().jsonData()
        output.object(["command": "schema", "database": .string(path), "schema": .string(schema),
                       "snapshot": .raw(String(decoding: snapshot, as: UTF8.self))])
        return ExitCode.success
    }

    private func check() throws -> Int32 {
        let manifest = try self.manifest()
        let target = try target(manifest)
        let path = target.name
        let problems = try checkModels(of: manifest, in: try target.openForReading())
        output.object(["command": "check", "database": .string(path), "models": .optional(manifest.models.count),
                       "problems": .array(problems.map(Self.json))])
        guard problems.isEmpty else {
            printError(problems.map(\.description).joined(separator: "\n"))
            return ExitCode.refused
        }
        output.line("ok: \(counted(manifest.models.count, "model")) match \(path)")
        return ExitCode.success
    }

    private func completion() throws -> Int32 {
        let shell = invocation.positionals[0]
        guard Completion.shells.contains(shell) else {
            throw UsageError("no completion for '\(shell)'; the shells are: \(Completion.shells.joined(separator: ", "))")
        }
        let script = Completion.bash()
        if !output.json && !output.quiet { StandardOutput.print(script, terminator: "") }
        output.object(["command": "completion", "shell": .string(shell), "script": .string(script)])
        return ExitCode.success
    }

    /// The backup `--backup DIR` (or the manifest's `<database backup>`) asks for, `--keep N` applied; nil with
    /// `--no-backup` or when neither asks for one.
    private func backupOptions(_ manifest: Manifest) throws -> BackupOptions? {
        if invocation.has("no-backup") {
            guard invocation.value("backup") == nil && invocation.value("keep") == nil else {
                throw UsageError("--no-backup takes no backup; it cannot go with --backup or --keep")
            }
            return nil
        }
        // --backup DIR replaces the manifest's backup, its keep included: that keep counted another directory.
        var backup = manifest.databaseBackup
        if let directory = invocation.value("backup") {
            guard !directory.isEmpty else { throw UsageError("--backup needs a directory, not ''") }
            backup = BackupOptions(directory: directory)
        }
        if let text = invocation.value("keep") {
            guard backup != nil else {
                throw UsageError("--keep N says how many backups to keep; it needs --backup DIR (or <database backup> in the manifest)")
            }
            guard let keep = Int(text), (1...999_999).contains(keep) else {
                throw UsageError("--keep must be a whole number from 1 to 999999, not '\(text)'")
            }
            backup?.keep = keep
        }
        return backup
    }

    // MARK: Rendering

    /// `  backup   backups/library.sqlite.….backup  (48 KiB, checked, 12 ms)`.
    static func backupLine(_ backup: DatabaseBackup) -> String {
        "  backup   \(displayPath(backup.path))  (\(byteCount(backup.size)), integrity ok, synced, \(backup.durationMs) ms)"
    }

    /// "512 bytes", "48 KiB", "3.1 MiB".
    static func byteCount(_ bytes: Int) -> String {
        if bytes < 1024 { return "\(bytes) bytes" }
        if bytes < 1 << 20 { return "\(bytes >> 10) KiB" }
        let tenths = bytes * 10 >> 20
        return bytes < 1 << 30 ? "\(tenths / 10).\(tenths % 10) MiB" : "\(formatCount(bytes >> 20)) MiB"
    }

    static func json(_ backup: DatabaseBackup) -> JSON {
        ["path": .string(displayPath(backup.path)), "planId": .string(backup.planID), "takenAt": .string(backup.takenAt),
         "bytes": .optional(backup.size), "durationMs": .optional(backup.durationMs),
         "createdDirectory": .bool(backup.createdDirectory), "removed": .array(backup.removed.map { .string(displayPath($0)) })]
    }

    /// "0.5 s", "2 s".
    static func seconds(_ duration: Duration) -> String {
        let (whole, fraction) = duration.components
        let tenths = fraction / 100_000_000_000_000_000
        return tenths == 0 ? "\(whole) s" : "\(whole).\(tenths) s"
    }

    static func appliedLine(_ step: AppliedStep, width: Int) -> String {
        var line = "  applied  " + step.kind.rawValue.padded(to: 9) + "  "
            + step.id.padded(to: max(width, step.id.count))
        line += "  " + "\(step.durationMs) ms".leftPadded(to: 8)
        if let rows = step.rowCount { line += "  \(formatCount(rows)) rows" }
        if step.reason != .pending { line += "  (\(step.reason.rawValue))" }
        return line
    }

    static func plannedRow(_ step: PlannedStep, _ section: MigrationSection?) -> [String] {
        var row = [step.step.kind.rawValue, step.step.id]
        if case .migration(let migration) = step.step, migration.format != .plain {
            row.append("\(migration.format.rawValue): up section only"
                       + (section.map { " (lines \($0.startLine)-\($0.endLine))" } ?? ""))
        } else if case .code(let code) = step.step {
            // The command cannot run it: the program that registers it does (see `Migrator.register`).
            row.append("Swift code, version \(code.version), run by the program")
        } else {
            row.append(step.rowCount.map { "\(formatCount($0)) rows" } ?? "")
        }
        if step.reason != .pending { row.append("(\(step.reason.rawValue))") }
        return row
    }

    static func json(_ problem: ManifestProblem) -> JSON {
        ["file": .string(problem.location.path), "line": .optional(problem.location.line),
         "column": .optional(problem.location.column), "message": .string(problem.message)]
    }

    static func json(_ step: AppliedStep) -> JSON {
        ["kind": .string(step.kind.rawValue), "id": .string(step.id), "reason": .string(step.reason.rawValue),
         "durationMs": .optional(step.durationMs), "rows": .optional(step.rowCount)]
    }

    static func json(_ failure: StepFailure) -> JSON {
        ["kind": .string(failure.kind.rawValue), "id": .string(failure.id), "file": .string(failure.file),
         "line": .optional(failure.line), "column": .optional(failure.column), "message": .string(failure.message),
         "aftermath": aftermath(failure.aftermath)]
    }

    /// `{"state":"rolled-back"}` or `{"state":"partly-applied","kept":"…"}`.
    static func aftermath(_ aftermath: StepFailure.Aftermath) -> JSON {
        switch aftermath {
        case .rolledBack: ["state": .string("rolled-back")]
        case .partlyApplied(let kept): ["state": .string("partly-applied"), "kept": .string(kept)]
        case .unrecorded(let kept): ["state": .string("unrecorded"), "kept": .string(kept)]
        case .kept: ["state": .string("applied")]
        }
    }

    static func json(_ refusal: Refusal) -> JSON {
        ["reason": .string(refusal.reason.rawValue), "id": .string(refusal.id), "message": .string(refusal.message)]
    }

    static func json(_ step: PlannedStep) -> JSON {
        ["kind": .string(step.step.kind.rawValue), "id": .string(step.step.id), "reason": .string(step.reason.rawValue),
         "rows": .optional(step.rowCount)]
    }

    static func json(_ object: UnfinishedObject) -> JSON {
        ["kind": .string(object.kind), "name": .string(object.name), "table": .string(object.table),
         "fixes": .array(object.fixes.map(JSON.string))]
    }

    static func json(_ status: StepStatus) -> JSON {
        ["kind": .string(status.kind.rawValue), "id": .string(status.id), "state": .string(status.state.rawValue),
         "appliedAt": .optional(status.record?.appliedAt), "durationMs": .optional(status.record?.durationMs),
         "rows": .optional(status.record?.rowCount), "recordedChecksum": .optional(status.record?.checksum),
         "fileChecksum": .optional(status.checksum)]
    }

    static func json(_ error: MigrationError, command: String) -> JSON {
        switch error {
        case .refused(let refusals):
            ["command": .string(command), "error": "refused", "refusals": .array(refusals.map(json))]
        default:
            ["command": .string(command), "error": .string(error.description)]
        }
    }
}

/// The live "rows, rows/s, percent" line for a large seed on a terminal.
struct ProgressLine {
    let enabled: Bool
    private var started: ContinuousClock.Instant?
    private var shown = false

    init(enabled: Bool) { self.enabled = enabled }

    mutating func update(id: String, rows: Int, bytesRead: Int, totalBytes: Int) {
        guard enabled else { return }
        let start = started ?? ContinuousClock.now
        started = start
        let elapsed = (ContinuousClock.now - start).components
        let seconds = max(Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18, 0.001)
        let percent = totalBytes > 0 ? bytesRead * 100 / totalBytes : 100
        let rate = Int(Double(rows) / seconds)
        _ = StandardOutput.writeAll("\r  loading \(id): \(formatCount(rows)) rows, \(formatCount(rate)) rows/s, \(percent)%\u{1B}[K", to: STDERR_FILENO)
        shown = true
    }

    /// A long SQL file: shown once it spans more than one read.
    mutating func update(id: String, bytesRead: Int, totalBytes: Int) {
        guard enabled, totalBytes > 1 << 20 else { return }
        let percent = totalBytes > 0 ? bytesRead * 100 / totalBytes : 100
        _ = StandardOutput.writeAll("\r  applying \(id): \(percent)% of \(totalBytes >> 20) MiB\u{1B}[K", to: STDERR_FILENO)
        shown = true
    }

    mutating func clear() {
        guard shown else { return }
        _ = StandardOutput.writeAll("\r\u{1B}[K", to: STDERR_FILENO)
        shown = false
        started = nil
    }
}

