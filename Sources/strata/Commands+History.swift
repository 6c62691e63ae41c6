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

/// `baseline`, `repair` and `resolve`: the history changed by a human after checking the database.
extension Commands {
    func baseline() throws -> Int32 {
        let from = invocation.value("from")
        let through = invocation.value("through")
        guard (from == nil) != (through == nil) else {
            throw UsageError(from == nil ? "--through ID|VERSION or --from TOOL is required" : "give one of --through and --from, not both")
        }
        let tool = try from.map { name in
            guard let tool = ForeignTool(rawValue: name) else {
                throw UsageError("--from must be one of \(ForeignTool.allCases.map(\.rawValue).joined(separator: ", ")), not '\(name)'")
            }
            return tool
        }
        let manifest = try self.manifest()
        let target = try target(manifest)
        let path = target.name
        let migrator = Migrator(manifest: manifest, database: try openForWriting(target))
        if let tool {
            let adopted = try migrator.baseline(from: tool)
            output.line(adopted.notRead.map { "Nothing recorded: \($0)." }
                        ?? (adopted.recorded.isEmpty ? "Nothing recorded: \(tool.table) records no step Strata does not already record."
                        : "Recorded as applied without running, from \(tool.rawValue)'s \(tool.table): " + adopted.recorded.joined(separator: ", ")))
            if !adopted.repeatablesNotRecorded.isEmpty {
                output.line("Not recorded (repeatable; the next migrate applies them as they are now): " + adopted.repeatablesNotRecorded.joined(separator: ", "))
            }
            output.object(["command": "baseline", "database": .string(path), "from": .string(tool.rawValue),
                           "recorded": .array(adopted.recorded.map(JSON.string)),
                           "repeatablesNotRecorded": .array(adopted.repeatablesNotRecorded.map(JSON.string)),
                           "notRead": .optional(adopted.notRead)])
            return ExitCode.success
        }
        let recorded = try migrator.baseline(through: through ?? "", try options)
        output.line(recorded.isEmpty ? "Nothing recorded: every step through \(through ?? "") is already recorded."
                    : "Recorded as applied without running: " + recorded.joined(separator: ", "))
        output.object(["command": "baseline", "database": .string(path), "recorded": .array(recorded.map(JSON.string))])
        return ExitCode.success
    }

    func repair() throws -> Int32 {
        let manifest = try self.manifest()
        let target = try target(manifest)
        let path = target.name
        let report = try Migrator(manifest: manifest, database: try openForWriting(target)).repair()
        if report.realigned.isEmpty && report.deleted.isEmpty && report.reapplyAllowed.isEmpty {
            output.line("Nothing to repair.")
        }
        for id in report.realigned { output.line("  realigned  \(id): the recorded checksum now matches the file") }
        for id in report.deleted { output.line("  deleted    \(id): no longer in the manifest") }
        for id in report.reapplyAllowed {
            output.line("  reapply    \(id): a file loaded before the current one; the next migrate loads it over the rows loaded since")
        }
        output.object(["command": "repair", "database": .string(path), "realigned": .array(report.realigned.map(JSON.string)),
                       "deleted": .array(report.deleted.map(JSON.string)),
                       "reapplyAllowed": .array(report.reapplyAllowed.map(JSON.string))])
        return ExitCode.success
    }

    func resolve() throws -> Int32 {
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
}
