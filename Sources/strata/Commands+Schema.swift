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

/// `schema` and `check`: the database's schema, and the models against it.
extension Commands {
    func schema() throws -> Int32 {
        let manifest = invocation.value("manifest") == nil ? nil : try self.manifest()
        let target = try target(manifest)
        let path = target.name
        // Unlike status and plan, an empty schema is an answer here: printing it for a database that is not there
        // would let a review diff pass against a mistyped path.
        guard target.exists else {
            throw CommandFailure("\(path) does not exist; schema reads an existing database and creates none")
        }
        if let format = invocation.value("format"), format == "mermaid" || format == "dot" {
            let snapshot = try connect(target) { try target.openForReading() }.schemaSnapshot()
            let diagram = format == "mermaid" ? try SchemaDiagram.mermaid(snapshot) : try SchemaDiagram.dot(snapshot)
            if !output.quiet { StandardOutput.print(diagram, terminator: "") }
            return ExitCode.success
        }
        let schema = try connect(target) { try target.schema() }
        if !output.json && !output.quiet { StandardOutput.print(schema, terminator: "") }
        guard output.json else { return ExitCode.success }
        // The snapshot is what `diff --schema` reads back.
        let snapshot = try connect(target) { try target.openForReading() }.schemaSnapshot().jsonData()
        output.object(["command": "schema", "database": .string(path), "schema": .string(schema),
                       "snapshot": .raw(String(decoding: snapshot, as: UTF8.self))])
        return ExitCode.success
    }

    func check() throws -> Int32 {
        let manifest = try self.manifest()
        let target = try target(manifest)
        let path = target.name
        let problems = try checkModels(of: manifest, in: try connect(target) { try target.openForReading() })
        output.object(["command": "check", "database": .string(path), "models": .optional(manifest.models.count),
                       "problems": .array(problems.map(Self.json))])
        guard problems.isEmpty else {
            printError(problems.map(\.description).joined(separator: "\n"))
            return ExitCode.refused
        }
        output.line("ok: \(counted(manifest.models.count, "model")) match \(path)")
        return ExitCode.success
    }
}
