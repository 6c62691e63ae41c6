#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Strata

/// `strata rehearse`: asks the library to run the pending plan where nothing is kept, renders what it found.
extension Commands {
    func rehearse() throws -> Int32 {
        let manifest = try self.manifest()
        let target = try target(manifest)
        let path = target.name
        var options = try self.options
        // migrate's backup, judged rather than taken; refused where migrate refuses it, before connecting.
        options.backup = try backupOptions(manifest)
        if options.backup != nil, let refusal = DatabaseTargets.backupRefusal(for: target) {
            throw MigrationError.refused([refusal])
        }
        let signals = StopSignals(command: "rehearse")
        options.cancellation = signals.cancellation
        // What the rehearsal stands for: a migrate, or with --rollback-steps/--rollback-to, a rollback.
        let run = options.rollback == nil ? "migrate" : "rollback"
        let wouldApply = options.rollback == nil ? "would apply" : "would undo"
        let into = options.rollback == nil ? "to" : "in"
        let database: any MigrationDatabase
        do {
            let timeout = try timeout
            database = try connect(target, cancellation: signals.cancellation) { try target.openForRehearsal(timeout: timeout) }
        } catch let error as DatabaseError where error.kind == .readOnly {
            throw MigrationError.refused([Refusal(reason: .readOnly, id: "", message: error.message)])
        } catch let error as DatabaseUnreachable where error.stopped {
            // Stopped while waiting for the database: nothing ran.
            let number = signals.received ?? SIGINT
            output.object(["command": "rehearse", "error": "stopped", "message": .string(error.description),
                           "stoppedBy": .string(StopSignals.name(number))])
            output.error("strata rehearse: \(error)")
            return 128 + number
        }
        var progress = ProgressLine(enabled: output.showsProgress)
        let report = try Migrator(manifest: manifest, database: database).rehearse(options) { event in
            switch event {
            case .seedProgress(let id, let rows, let read, let total):
                progress.update(id: id, rows: rows, bytesRead: read, totalBytes: total)
            case .statementProgress(let id, let finished, let total, let elapsed):
                progress.update(id: id, statement: finished, of: total, elapsed: elapsed)
            case .scriptProgress(let id, let read, let total):
                progress.update(id: id, bytesRead: read, totalBytes: total)
            case .finished:
                progress.clear()
            case .waiting(let message), .notice(let message):
                output.log(message)
            case .started, .retrying, .backedUp:
                break
            }
        }
        progress.clear()
        output.object(["command": "rehearse", "database": .string(path), "stage": .string(report.stage),
                       "wouldSucceed": .bool(report.wouldSucceed), "wouldFail": .bool(report.wouldFail),
                       "steps": .array(report.steps.map(Self.json)),
                       "failure": report.failure.map(Self.json) ?? .null,
                       "notRehearsedUpToFailure": .array(report.notRehearsedUpToFailure.map(JSON.string)),
                       "failureNotKnownBecause": report.failureNotKnownBecause.map(JSON.string) ?? .null,
                       "rehearsedUnlikeMigrate": .array(report.rehearsedUnlikeMigrate.map(JSON.string)),
                       "rehearsedAfterNotRehearsed": .array(report.rehearsedAfterNotRehearsed.map(JSON.string)),
                       "room": report.room.map(JSON.string) ?? .null,
                       "backup": report.backup.map(Self.json) ?? .null,
                       "schemaChanges": .array(report.schemaChanges.map(Self.json)),
                       "sequences": .array(report.sequences.map(Self.json)),
                       "sessionLeftovers": .array(report.sessionLeftovers.map(Self.json)),
                       "stoppedBy": report.cancelled ? .string(StopSignals.name(signals.received ?? SIGINT)) : .null,
                       "notRun": .array(report.notRun.map(JSON.string))])
        let applied = report.steps.filter { $0.outcome == .applied }.count
        output.line(report.steps.isEmpty && report.notRun.isEmpty ? "Nothing to rehearse: \(path) is up to date."
                    : "Rehearsed \(report.stage):")
        let width = report.steps.map(\.id.count).max() ?? 0
        for step in report.steps {
            output.line(Self.rehearsedLines(step, width: width, undoing: options.rollback != nil))
            if step.outcome == .failed, let failure = report.failure { output.line("      \(failure)") }
        }
        if let room = report.room { output.line("room: \(room)") }
        if let backup = report.backup { output.line("backup: \(backup.note)") }
        if !report.schemaChanges.isEmpty {
            output.line("schema changes (\(report.schemaChanges.count)):")
            for change in report.schemaChanges { output.line(Self.line(change)) }
        }
        if !report.sequences.isEmpty {
            output.line("sequences the rehearsal drew from (a rollback does not put them back; other sessions may have drawn too):")
            for sequence in report.sequences {
                output.line("  \(sequence.sequence): \(sequence.before.map(String.init) ?? "none") → \(sequence.after.map(String.init) ?? "none")")
            }
        }
        if !report.sessionLeftovers.isEmpty {
            output.line("left on the rehearsal's session by its steps, which a rollback does not undo:")
            for leftover in report.sessionLeftovers {
                let kind = leftover.kind == .advisoryLock ? "advisory lock" : "dblink connection"
                output.line("  \(kind) \(leftover.name)\(leftover.step.map { " (\($0))" } ?? ""): \(leftover.outcome)")
            }
        }
        let skipped = report.notRehearsed.count
        let untried = skipped == 0 ? "" : "; \(counted(skipped, "step")) not rehearsed, so not known to succeed"
        if report.cancelled {
            let number = signals.received ?? SIGINT
            output.error("strata rehearse: stopped by \(StopSignals.name(number)) after \(counted(applied, "step")); not rehearsed: \(report.notRun.joined(separator: ", ")). Nothing was changed.")
            return 128 + number
        }
        if let backup = report.backup, backup.outcome == .wouldFail {
            if let failure = report.failure { output.error("strata rehearse: \(failure)") }
            output.error("strata rehearse: \(run) would fail before its first step: \(backup.note). Nothing was changed.")
            return ExitCode.stepFailed
        }
        let backupNotKnown = report.backup.flatMap { $0.outcome == .notKnown ? $0.note : nil }
        if let failure = report.failure {
            output.error("strata rehearse: \(failure)")
            guard report.wouldFail else {
                let before = report.notRehearsedUpToFailure.filter { $0 != failure.id }
                let skipped = before.filter { id in report.notRehearsed.contains { $0.id == id } }
                let unlike = before.filter { !skipped.contains($0) }
                var why: [String] = []
                if !skipped.isEmpty {
                    why.append("it failed here after \(skipped.joined(separator: ", ")), which \(skipped.count == 1 ? "was" : "were") not rehearsed, and may need what \(skipped.count == 1 ? "that step does" : "those steps do")")
                }
                if !unlike.isEmpty {
                    why.append("it failed here after \(unlike.joined(separator: ", ")), which ran unlike migrate (see \(unlike.count == 1 ? "its note" : "their notes"))")
                }
                if let reason = report.failureNotKnownBecause {
                    why.append(reason)
                }
                if let backupNotKnown { why.append("and before it, \(backupNotKnown)") }
                output.error("  whether \(run) would fail at \(failure.id) is not known: \(why.joined(separator: "; ")). Nothing was changed.")
                return ExitCode.notKnown
            }
            let first = backupNotKnown.map { " (unless its backup fails first: \($0))" } ?? ""
            output.error("  \(run) would fail at \(failure.id)\(first): it \(wouldApply) \(counted(applied, "step")) before it and stop there\(untried). Nothing was changed.")
            return ExitCode.stepFailed
        }
        if !report.successNotKnown.isEmpty || backupNotKnown != nil {
            let why = (report.successNotKnown.isEmpty ? [] : [Self.whySuccessNotKnown(report)]) + (backupNotKnown.map { [$0] } ?? [])
            output.error("strata rehearse: every rehearsed step ran, but whether \(run) would succeed is not known: \(why.joined(separator: "; ")). Nothing was changed.")
            return ExitCode.notKnown
        }
        if !report.steps.isEmpty {
            output.line("\(run) \(wouldApply) \(counted(applied, "step")) \(into) \(path)\(untried). Nothing was changed.")
        }
        return ExitCode.success
    }

    /// `003_b.sql ran after 002_a.sql, which was not rehearsed, …; 004_c.sql ran unlike migrate (see its note)`.
    static func whySuccessNotKnown(_ report: RehearsalReport) -> String {
        var why: [String] = []
        // Steps after the same steps not rehearsed, together.
        var groups: [(skipped: [String], steps: [String])] = []
        for step in report.steps where report.rehearsedAfterNotRehearsed.contains(step.id) {
            if let last = groups.indices.last, groups[last].skipped == step.notRehearsedBefore {
                groups[last].steps.append(step.id)
            } else {
                groups.append((step.notRehearsedBefore, [step.id]))
            }
        }
        for group in groups {
            let one = group.skipped.count == 1
            let those = one ? "that step does" : "those steps do"
            why.append("\(group.steps.joined(separator: ", ")) ran after \(group.skipped.joined(separator: ", ")), which \(one ? "was" : "were") not rehearsed: without what \(those) first in migrate, so \(group.steps.count == 1 ? "it" : "each") may succeed here only for that")
        }
        let unlike = report.rehearsedUnlikeMigrate
        if !unlike.isEmpty {
            why.append("\(unlike.joined(separator: ", ")) ran unlike migrate (see \(unlike.count == 1 ? "its note" : "their notes"))")
        }
        return why.joined(separator: "; ")
    }

    /// `  applied  migration  005_x.sql  3 ms`, then a line per table changed and per lock taken.
    static func rehearsedLines(_ step: RehearsedStep, width: Int, undoing: Bool = false) -> String {
        let outcome = undoing && step.outcome == .applied ? "rolled back" : step.outcome.rawValue
        var line = "  " + outcome.padded(to: 14) + step.kind.rawValue.padded(to: 11)
            + step.id.padded(to: max(width, step.id.count))
        if let duration = step.durationMs { line += "  " + "\(duration) ms".leftPadded(to: 8) }
        if let rows = step.rowCount { line += "  \(formatCount(rows)) rows loaded" }
        if step.reason != .pending { line += "  (\(step.reason.rawValue))" }
        while line.hasSuffix(" ") { line.removeLast() }
        var lines = [line]
        if let note = step.note { lines.append("      \(note)") }
        for table in step.tables { lines.append("      " + tableLine(table)) }
        if !step.locks.isEmpty {
            lines.append("      locks, which migrate holds until the step commits\(step.durationMs.map { " (\($0) ms here)" } ?? ""):")
        }
        for lock in step.locks { lines.append("        \(lock.mode) on \(lock.relation): blocks \(lock.blocks)") }
        if !step.heldLocks.isEmpty {
            lines.append("      held since an earlier step, so whether this step asked for them again is not seen; migrate, which commits each step first, takes again those it needs:")
        }
        for lock in step.heldLocks where lock.seen != nil {
            lines.append("        \(lock.mode) on \(lock.relation) (taken by \(lock.takenBy); this step \(lock.seen ?? "")): blocks \(lock.blocks)")
        }
        let unseen = step.heldLocks.filter { $0.seen == nil }.map { "\($0.mode) on \($0.relation) (\($0.takenBy))" }
        if !unseen.isEmpty { lines.append("        not seen used by this step: " + unseen.joined(separator: ", ")) }
        return lines.joined(separator: "\n")
    }

    /// `books: 2 inserted, 1 updated, 0 deleted (5 rows → 6)`, with what is unknown left out and the note after.
    static func tableLine(_ change: TableRowChanges) -> String {
        var parts: [String] = []
        if let inserted = change.inserted { parts.append("\(formatCount(inserted)) inserted") }
        if let updated = change.updated { parts.append("\(formatCount(updated)) updated") }
        if let deleted = change.deleted { parts.append("\(formatCount(deleted)) deleted") }
        var line = change.table + ": " + (parts.isEmpty ? "rows changed not known" : parts.joined(separator: ", "))
        if change.rowsBefore != nil || change.rowsAfter != nil {
            line += " (rows \(change.rowsBefore.map(formatCount) ?? "–") → \(change.rowsAfter.map(formatCount) ?? "–"))"
        }
        if let note = change.note { line += "; " + note }
        return line
    }

    static func json(_ step: RehearsedStep) -> JSON {
        ["kind": .string(step.kind.rawValue), "id": .string(step.id), "reason": .string(step.reason.rawValue),
         "outcome": .string(step.outcome.rawValue), "durationMs": .optional(step.durationMs), "rows": .optional(step.rowCount),
         "tables": .array(step.tables.map(json)), "locks": .array(step.locks.map(json)),
         "heldLocks": .array(step.heldLocks.map(json)),
         "notRehearsedBefore": .array(step.notRehearsedBefore.map(JSON.string)), "note": .optional(step.note)]
    }

    static func json(_ backup: RehearsedBackup) -> JSON {
        ["directory": .string(displayPath(backup.directory)), "outcome": .string(backup.outcome.rawValue),
         "bytes": backup.bytes.map { .integer($0) } ?? .null, "free": backup.free.map { .integer($0) } ?? .null,
         "note": .string(backup.note)]
    }

    static func json(_ lock: HeldLock) -> JSON {
        ["relation": .string(lock.relation), "mode": .string(lock.mode), "blocks": .string(lock.blocks),
         "takenBy": .string(lock.takenBy), "seen": .optional(lock.seen)]
    }

    static func json(_ leftover: SessionLeftover) -> JSON {
        ["kind": .string(leftover.kind.rawValue), "name": .string(leftover.name), "step": .optional(leftover.step),
         "outcome": .string(leftover.outcome), "undone": .bool(leftover.undone)]
    }

    static func json(_ change: TableRowChanges) -> JSON {
        ["table": .string(change.table), "inserted": .optional(change.inserted), "updated": .optional(change.updated),
         "deleted": .optional(change.deleted), "rowsBefore": .optional(change.rowsBefore),
         "rowsAfter": .optional(change.rowsAfter), "note": .optional(change.note)]
    }

    static func json(_ lock: TableLock) -> JSON {
        ["relation": .string(lock.relation), "mode": .string(lock.mode), "blocks": .string(lock.blocks)]
    }

    static func json(_ sequence: SequenceAdvance) -> JSON {
        ["sequence": .string(sequence.sequence), "before": sequence.before.map { .integer($0) } ?? .null,
         "after": sequence.after.map { .integer($0) } ?? .null]
    }
}
