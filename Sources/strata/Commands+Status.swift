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

/// `status` and `plan`: what is applied, what would run, and what would stop it.
extension Commands {
    func status() throws -> Int32 {
        let manifest = try self.manifest()
        let target = try target(manifest)
        let path = target.name
        let migrator = Migrator(manifest: manifest, database: try connect(target) { try target.openForReading() })
        let statuses = try migrator.status(try options)
        let unfinished = try migrator.unfinishedObjects()
        let rows = statuses.map { status -> [String] in
            [status.kind.rawValue, status.id, status.state.rawValue, status.record?.appliedAt ?? "",
             status.record?.rowCount.map { "\(formatCount($0)) rows" } ?? ""]
        }
        output.line("\(path):")
        output.line(table([["KIND", "STEP", "STATE", "APPLIED AT", "ROWS"]] + rows))
        // Strata records nothing: another tool's history there is what adopting the database starts from.
        let foreign = statuses.contains { $0.record?.isApplied == true } ? [] : migrator.foreignHistories()
        output.object(["command": "status", "database": .string(path), "steps": .array(statuses.map(Self.json)),
                       "unfinished": .array(unfinished.map(Self.json)),
                       "foreignHistories": .array(foreign.map { ["tool": .string($0.tool.rawValue), "table": .string($0.tool.table),
                                                                  "rows": .optional($0.rows)] })])
        for (tool, rows) in foreign {
            output.log("this database has \(tool.rawValue)'s history table \(tool.table) (\(counted(rows, "row"))) and Strata's records nothing: if \(tool.rawValue) migrated it, run 'strata baseline --from \(tool.rawValue)' to record what it applied")
        }
        let troubled = statuses.filter { [.drifted, .missing, .dirty].contains($0.state) }
        for status in troubled where status.state == .dirty {
            output.log("\(status.id) is dirty; run 'strata resolve \(status.id) --applied' or '--rolled-back' after checking the database")
        }
        for object in unfinished { output.log(object.description) }
        for status in statuses where status.state == .running {
            output.log("\(status.id) is being applied now by \(status.record?.runner ?? "another process"), \((status.liveness ?? .holdsLock).description)")
        }
        guard troubled.isEmpty && unfinished.isEmpty else { return ExitCode.refused }
        // A gate's question, "is the database up to date?": what migrate would still apply, or is applying now.
        let waiting = statuses.filter { [.pending, .changed, .running].contains($0.state) }
        if invocation.has("exit-code") && !waiting.isEmpty {
            output.log("\(counted(waiting.count, "step")) not applied yet: \(waiting.map(\.id).joined(separator: ", "))")
            return ExitCode.pending
        }
        return ExitCode.success
    }

    func plan() throws -> Int32 {
        let manifest = try self.manifest()
        let target = try target(manifest)
        let path = target.name
        let plan = try Migrator(manifest: manifest, database: try connect(target) { try target.openForReading() }).plan(try options)
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
            guard case .migration(let migration) = step.step, migration.format.hasSections else { return nil }
            return try? migration.format.upSection(ofFileAt: migration.path)
        }
        let undoing = invocation.spec.name == "rollback"
        if plan.steps.isEmpty {
            output.line(undoing ? "Nothing to roll back in \(path)." : Self.nothingToDo(path, to: invocation.value("to")))
        } else {
            output.line(undoing ? "rollback would undo \(counted(plan.steps.count, "step")) of \(path), in this order (plan id \(plan.id)):"
                        : "migrate would apply \(counted(plan.steps.count, "step")) to \(path) (plan id \(plan.id)):")
            let lines = table(zip(plan.steps, sections).map(Self.plannedRow)).split(separator: "\n")
            for (line, text) in zip(lines, sql) {
                output.line(String(line))
                if let text {
                    output.line(text.split(separator: "\n", omittingEmptySubsequences: false).map { "      " + $0 }.joined(separator: "\n"))
                }
            }
        }
        output.object(["command": .string(undoing ? "rollback --dry-run" : "plan"),
                       "database": .string(path), "planId": .string(plan.id),
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
                           pairs.append(("repeatable", .bool(migration.repeatable)))
                           pairs.append(("down", .optional(Self.downText(migration))))
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
}
