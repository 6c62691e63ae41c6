#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Strata

/// `strata diff`: reads two schemas, asks the library for their difference, renders it.
extension Commands {
    func diff() throws -> Int32 {
        let manifest = invocation.value("manifest") == nil ? nil : try self.manifest()
        var sides: [(name: String, read: () throws -> SchemaSnapshot)] = []
        var databases = invocation.all("database").map(Optional.some)
        // The manifest names the first database when no --database does.
        // The manifest, or else STRATA_DATABASE or DATABASE_URL, names the first database when no --database does.
        let environment = ProcessInfo.processInfo.environment
        if databases.isEmpty && (manifest != nil || DatabaseTargets.environmentVariables.contains(where: { environment[$0]?.isEmpty == false })) {
            databases = [nil]
        }
        for option in databases {
            let target = try DatabaseTargets.target(option: option, manifest: manifest, environment: environment)
            sides.append((target.name, {
                // Reading a missing file would compare an empty schema: a mistyped path must not pass for one.
                guard target.exists else {
                    throw CommandFailure("\(target.name) does not exist; diff reads existing databases and creates none")
                }
                return try connect(target) { try target.openForReading() }.schemaSnapshot()
            }))
        }
        for path in invocation.all("schema") {
            sides.append((displayPath(path), { try SchemaSnapshot.load(path: path) }))
        }
        guard sides.count == 2 else {
            throw UsageError("diff compares two schemas (given \(sides.count)): --database A --database B, or --database A "
                             + "(or --manifest M) --schema FILE")
        }
        let (old, new) = (try sides[0].read(), try sides[1].read())
        let difference: SchemaDifference
        do {
            difference = try SchemaDifference(from: old, to: new)
        } catch let error as SchemaComparisonError {
            throw UsageError(error.description)
        }
        let (from, to) = (sides[0].name, sides[1].name)
        output.object(["command": "diff", "from": .string(from), "to": .string(to), "equal": .bool(difference.isEmpty),
                       "differences": .array(difference.changes.map(Self.json))])
        if difference.isEmpty {
            output.line("no differences: \(from) and \(to) have the same schema")
            return ExitCode.success
        }
        output.line("\(counted(difference.changes.count, "difference")) from \(from) to \(to):")
        for change in difference.changes { output.line(Self.line(change)) }
        return ExitCode.schemasDiffer
    }

    static func json(_ change: SchemaChange) -> JSON {
        ["kind": .string(change.kind.rawValue), "action": .string(change.action.rawValue), "name": .string(change.name),
         "table": .optional(change.table), "definition": .optional(change.definition),
         "aspects": .array(change.aspects.map { ["aspect": .string($0.aspect), "from": .optional($0.old), "to": .optional($0.new)] })]
    }

    /// One change: `  added    column   books.isbn: isbn TEXT`, a change's short aspects on the same line
    /// (`type: INTEGER → TEXT`), long or multi-line ones (definitions) below it, marked `-` (before) and `+` (after).
    static func line(_ change: SchemaChange) -> String {
        var subject: String
        switch change.kind {
        case .column: subject = (change.table.map { $0 + "." } ?? "") + change.name
        case .constraint: subject = "on " + (change.table ?? "?")
        default: subject = change.name + (change.table.map { " on " + $0 } ?? "")
        }
        var text = "  " + change.action.rawValue.padded(to: 9) + change.kind.rawValue.padded(to: 11) + subject
        if let definition = change.definition, change.kind != .table, !definition.contains("\n"),
           definition != change.name || change.kind == .constraint {
            // A table's whole definition is long, and a one-line other object's is its name: the name says what
            // was added or dropped. A constraint's subject is its table, so its text is what says which.
            text += ": " + definition
        }
        let short = change.aspects.filter { aspect in
            [aspect.old, aspect.new].allSatisfy { ($0?.count ?? 0) <= 40 && $0?.contains("\n") != true }
        }
        if !short.isEmpty {
            text += ": " + short.map { "\($0.aspect) \($0.old ?? "none") → \($0.new ?? "none")" }.joined(separator: "; ")
        }
        for aspect in change.aspects where !short.contains(aspect) {
            text += "\n      \(aspect.aspect):"
            for (mark, value) in [("-", aspect.old), ("+", aspect.new)] {
                let lines = (value ?? "none").split(separator: "\n", omittingEmptySubsequences: false)
                text += lines.map { "\n        \(mark) \($0)" }.joined()
            }
        }
        return text
    }
}
