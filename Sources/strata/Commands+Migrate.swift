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

/// `migrate`, `seed` and `rollback`: the run, its progress lines and its report.
extension Commands {
    /// `rollback`: with `--dry-run` the plan of downs, as `plan` prints a plan; otherwise the run, as `migrate`'s.
    func rollback() throws -> Int32 {
        try invocation.has("dry-run") ? plan() : migrate(seedsOnly: false)
    }

    func migrate(seedsOnly: Bool) throws -> Int32 {
        let manifest = try self.manifest()
        let target = try target(manifest)
        let path = target.name
        var options = try self.options
        options.includeMigrations = !seedsOnly
        options.backup = try backupOptions(manifest)
        if options.backup != nil, let refusal = DatabaseTargets.backupRefusal(for: target) {
            throw MigrationError.refused([refusal])   // before connecting: nothing runs
        }
        let command = invocation.spec.name
        let undoing = options.rollback != nil
        let signals = StopSignals(command: command)
        options.cancellation = signals.cancellation
        if !target.exists && undoing {
            throw CommandFailure("there is no database at \(path): nothing was applied there, so nothing can be rolled back (check --database)")
        }
        if !target.exists {
            // Refuse before opening for writing creates the database: an empty one reads the same as none.
            let refusals = try Migrator(manifest: manifest, database: try connect(target) { try target.openForReading() }).refusals(options)
            guard refusals.isEmpty else { throw MigrationError.refused(refusals) }
        }
        let database: any MigrationDatabase
        do {
            database = try openForWriting(target, cancellation: signals.cancellation)
        } catch let error as DatabaseUnreachable where error.stopped {
            // Stopped while waiting for the database: nothing ran.
            let number = signals.received ?? SIGINT
            output.object(["command": .string(command), "error": "stopped", "message": .string(error.description),
                           "stoppedBy": .string(StopSignals.name(number))])
            output.error("strata \(command): \(error)")
            return 128 + number
        }
        let migrator = Migrator(manifest: manifest, database: database)
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
            case .statementProgress(let id, let finished, let total, let elapsed):
                progress.update(id: id, statement: finished, of: total, elapsed: elapsed)
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
                output.log("retrying \(id) in \(Self.seconds(delay)) (retry \(retry) of \(retries)): it was rolled back because a statement gave up waiting for a lock or lost a deadlock: \(reason)")
            }
        }
        progress.clear()
        var object: [(String, JSON)] = [
            ("command", .string(command)), ("database", .string(path)), ("backup", report.backup.map(Self.json) ?? .null),
            ("applied", .array(report.applied.map(Self.json))), ("alreadyApplied", .array(report.alreadyApplied.map(JSON.string))),
            ("failure", report.failure.map(Self.json) ?? .null),
            ("stoppedBy", report.cancelled ? .string(StopSignals.name(signals.received ?? SIGINT)) : .null),
            ("notRun", .array(report.notRun.map(JSON.string)))]
        // A failed step is a failure as every command's: "error" says so, whatever else the report holds.
        if let failure = report.failure, !report.cancelled {
            object += [("error", "step-failed"), ("message", .string(failure.description))]
        }
        output.object(.object(object))
        if report.cancelled {
            let number = signals.received ?? SIGINT
            let applied = report.applied.isEmpty ? "none" : report.applied.map(\.id).joined(separator: ", ")
            output.error(undoing
                ? "strata \(command): stopped by \(StopSignals.name(number)): rolled back by this run: \(applied); not rolled back: \(report.notRun.joined(separator: ", ")), which stay applied. To undo them too, run 'strata rollback --steps \(report.notRun.count)'."
                : "strata \(command): stopped by \(StopSignals.name(number)): applied by this run: \(applied); not run: \(report.notRun.joined(separator: ", ")). Run 'strata \(command)' again to apply them.")
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
            } else if undoing {
                output.error("  the down of \(failure.id) was rolled back and left no trace: \(failure.id) stays applied; nothing after it ran.")
            } else {
                output.error("  \(failure.id) was rolled back and left no trace; nothing after it ran.")
            }
            if !undoing, report.applied.isEmpty { adoptionHint(migrator) }
            let others = report.appliedByOtherRuns.map { ", \($0) by other runs" } ?? ""
            output.error(undoing ? "  kept: \(counted(report.applied.count, "step")) rolled back by this run; the steps it did not reach stay applied."
                         : "  kept: \(counted(report.applied.count, "step")) applied by this run\(others).")
            return ExitCode.stepFailed
        }
        if !report.alreadyApplied.isEmpty {
            output.line("  \(report.alreadyApplied.count) step\(report.alreadyApplied.count == 1 ? " was" : "s were") \(undoing ? "rolled back" : "applied") meanwhile by another run")
        }
        if report.applied.isEmpty {
            output.line(undoing ? "Nothing to roll back in \(path)." : Self.nothingToDo(path, to: invocation.value("to")))
        } else {
            output.line(undoing ? "\(counted(report.applied.count, "step")) rolled back in \(path)."
                        : "\(counted(report.applied.count, "step")) applied to \(path).")
        }
        if undoing, let asked = invocation.value("steps").flatMap(Int.init),
           asked > report.applied.count + report.alreadyApplied.count {
            output.line("  --steps \(asked) asked for more steps than were applied: every applied step was rolled back.")
        }
        return ExitCode.success
    }

    /// When Strata's history records nothing applied and another tool's history table is there: the database was
    /// migrated by that tool, and `baseline --from` adopts it (a first `migrate` fails on "already exists").
    func adoptionHint(_ migrator: Migrator) {
        guard let records = try? migrator.database.history.all(), !records.contains(where: \.isApplied) else { return }
        for (tool, rows) in migrator.foreignHistories() {
            output.error("  this database has \(tool.rawValue)'s history table \(tool.table) (\(counted(rows, "row"))) and Strata's records nothing: if \(tool.rawValue) migrated it, adopt what it applied with 'strata baseline --from \(tool.rawValue)', then migrate")
        }
    }
}
