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

/// `validate`, `new` and `completion`: the manifest and its files, without a database.
extension Commands {
    func validate() throws -> Int32 {
        let manifest = try self.manifest()
        // Without --database no database is opened; with it, its backend's plan is checked, on PostgreSQL by its
        // server (parsed, never run). Each backend's plan is linted with its dialect.
        let target = try invocation.value("database").map { try DatabaseTargets.target(option: $0, manifest: manifest) }
        let validation = SQLValidation.validate(manifest, database: target)
        // What could not be checked is said plainly.
        for check in validation.checks where check.checked == "rules" && check.backend != nil { output.log("note: \(check.note)") }
        for warning in validation.warnings { output.log("warning: \(warning)") }
        let checks = JSON.array(validation.checks.map { check in
            ["backend": .optional(check.backend?.rawValue), "checked": .string(check.checked), "note": .string(check.note)]
        })
        if !validation.problems.isEmpty {
            // The same outcome, shape and exit code as a manifest every command refuses: migrate stops on these too.
            throw ValidateProblems(ManifestError(problems: validation.problems, warnings: manifest.warnings + validation.warnings),
                                   checks: checks)
        }
        // A manifest with backend marks says how many migrations each checked plan has.
        let plans = validation.backends.map { ($0, manifest.migrations(for: $0).count) }
        let perBackend = manifest.migrations.contains { $0.backends != nil }
            ? " (" + plans.map { "\($0.0.displayName) \($0.1)" }.joined(separator: ", ") + ")" : ""
        let summary = counted(manifest.migrations.count, "migration") + perBackend + ", "
            + counted(manifest.seeds.count, "seed") + ", " + counted(manifest.models.count, "model")
        output.line("ok: \(summary)")
        // Each up with what undoes it, so a reviewer sees the layout was read as its tool reads it.
        let downs = manifest.migrations.compactMap { migration in Self.downText(migration).map { (migration.id, $0) } }
        let width = downs.map(\.0.count).max() ?? 0
        for (id, down) in downs { output.line("  \(id.padded(to: width))  down: \(down)") }
        output.object(["command": "validate", "valid": true, "migrations": .optional(manifest.migrations.count),
                       "plans": .object(plans.map { ($0.0.rawValue, .optional($0.1)) }),
                       "seeds": .optional(manifest.seeds.count), "models": .optional(manifest.models.count),
                       "warnings": .array((manifest.warnings + validation.warnings).map(Self.json)), "checks": checks,
                       "downs": .object(downs.map { ($0.0, .string($0.1)) })])
        return ExitCode.success
    }

    func newMigration() throws -> Int32 {
        var backend: DatabaseBackend?
        if let name = invocation.value("backend") {
            guard let named = DatabaseBackend(rawValue: name) else {
                throw UsageError("--backend must be \(DatabaseBackend.allCases.map(\.rawValue).joined(separator: " or ")), not '\(name)'")
            }
            backend = named
        }
        let created = try MigrationFile.createFiles(named: invocation.positionals[0], in: try manifest(), backend: backend)
        for path in created { output.line("created \(displayPath(path))") }
        output.object(["command": "new", "path": .string(displayPath(created[0])),
                       "down": created.count > 1 ? .string(displayPath(created[1])) : .null])
        return ExitCode.success
    }

    func completion() throws -> Int32 {
        let shell = invocation.positionals[0]
        guard Completion.shells.contains(shell) else {
            throw UsageError("no completion for '\(shell)'; the shells are: \(Completion.shells.joined(separator: ", "))")
        }
        let script = Completion.bash()
        if !output.json && !output.quiet { StandardOutput.print(script, terminator: "") }
        output.object(["command": "completion", "shell": .string(shell), "script": .string(script)])
        return ExitCode.success
    }
}
