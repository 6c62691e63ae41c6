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

/// How results are rendered: text lines and the JSON shapes every command shares.
extension Commands {
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

    /// The line for a migrate or plan with nothing to apply: up to date, or, with `--to`, applied up to the target
    /// (later steps may be pending: "up to date" would say otherwise).
    static func nothingToDo(_ path: String, to target: String?) -> String {
        target.map { "Nothing to do: every step up to \($0) is applied in \(path)." } ?? "Nothing to do: \(path) is up to date."
    }

    static func appliedLine(_ step: AppliedStep, width: Int) -> String {
        var line = (step.reason == .rollback ? "  rolled back  " : "  applied  ") + step.kind.rawValue.padded(to: 9) + "  "
            + step.id.padded(to: max(width, step.id.count))
        line += "  " + "\(step.durationMs) ms".leftPadded(to: 8)
        if let rows = step.rowCount { line += "  \(formatCount(rows)) rows" }
        if step.reason != .pending { line += "  (\(step.reason.rawValue))" }
        return line
    }

    static func plannedRow(_ step: PlannedStep, _ section: MigrationSection?) -> [String] {
        var row = [step.step.kind.rawValue, step.step.id]
        if case .migration(let migration) = step.step, migration.format.hasSections {
            row.append("\(migration.format.rawValue): up section only"
                       + (section.map { " (lines \($0.startLine)-\($0.endLine))" } ?? ""))
        } else if case .code(let code) = step.step {
            // The command cannot run it: the program that registers it does (see `Migrator.register`).
            row.append("Swift code, version \(code.version), run by the program")
        } else {
            row.append(step.rowCount.map { "\(formatCount($0)) rows" } ?? "")
        }
        if case .migration(let migration) = step.step, migration.repeatable { row.append("repeatable") }
        if case .migration(let migration) = step.step, let down = downText(migration) { row.append("down: \(down)") }
        if step.reason != .pending { row.append("(\(step.reason.rawValue))") }
        return row
    }

    /// What undoes a migration, as `validate` and `plan` show it: its down file, or its own down section.
    static func downText(_ migration: MigrationStep) -> String? {
        switch migration.down?.source {
        case nil: nil
        case .section?: "its \(migration.format.rawValue) down section"
        case .file(let path)?: displayPath(path)
        }
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
}
