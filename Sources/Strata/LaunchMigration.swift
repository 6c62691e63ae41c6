#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Strata {
    /// Brings the database at `database` up to date with the manifest at `manifest`, as `strata migrate --manifest
    /// M --database D` does: every pending migration and seed once, each completely or not at all, recorded in
    /// history with its checksum. Meant for a program that ships its manifest, SQL and CSV files with itself (a
    /// SwiftPM target's resources, an app bundle) and migrates its own database when it starts:
    ///
    /// ```swift
    /// if let manifest = Bundle.module.url(forResource: "app", withExtension: "xml", subdirectory: "manifests") {
    ///     try Strata.migrate(manifest: manifest, database: supportDirectory.appendingPathComponent("app.sqlite").path)
    /// }
    /// ```
    ///
    /// - The manifest's relative paths (`directory="../sql"`, `file="../csv/…"`) resolve against the manifest's own
    ///   directory, so inside the bundle it came from. Nothing is written there: the bundle may be read-only.
    /// - `database` is the program's choice and overrides the manifest's `<database>`: a SQLite file path (or
    ///   `file:` URI), or a PostgreSQL URI or keyword/value string. A SQLite file that does not exist yet is created,
    ///   with its missing parent directories (an app's Application Support folder may not exist on first launch),
    ///   but only once nothing refuses the run. SQLite's journal and the lock files of `transaction="none"` steps
    ///   live beside the database, never beside the manifest.
    /// - A second launch finds every step recorded and does nothing; a launch after an update that ships new files
    ///   applies only those. Identities are file names, so a bundle that moved (each install of an app may live at
    ///   a new path) changes nothing. An edited file that was already applied is drift, and refused.
    /// - `codeSteps` supplies the bodies of the manifest's `<code>` steps by name (`Migrator.register(_:_:)`).
    ///
    /// - Returns: what was applied (nothing on a launch with nothing to do), or with `options.cancellation`
    ///   cancelled, what did not run (`MigrationReport.cancelled`).
    /// - Throws: `ManifestError` naming each problem's file and line (a manifest missing from the bundle, a file it
    ///   lists that the bundle lacks, a URL that is not a file's); `DatabaseLocationError` for a database name that
    ///   keeps no durable file;
    ///   `MigrationError.refused` before anything runs (drift, a dirty step, a read-only database, …);
    ///   `MigrationError.lockTimeout`; and the `StepFailure` of a step that failed (`file:line:column: message`;
    ///   the steps before it stay applied, and the next launch runs the rest).
    @discardableResult
    public static func migrate(manifest: URL, database: String, options: MigrationOptions = MigrationOptions(),
                               codeSteps: [String: Migrator.CodeBody] = [:],
                               progress: ((MigrationEvent) -> Void)? = nil) throws -> MigrationReport {
        guard manifest.isFileURL else {
            let shown = DatabaseURL.redacted(manifest.absoluteString)
            throw ManifestError(problems: [ManifestProblem(SourceLocation(path: shown, line: 1),
                "cannot read the manifest: \(shown) is not a file URL; give the URL of a manifest file "
                + "(Bundle.module.url(forResource:withExtension:subdirectory:) gives one)")])
        }
        let loaded = try Manifest.load(path: manifest.path(percentEncoded: false))
        let target = try DatabaseTargets.target(location: database, source: "the database '\(DatabaseURL.redacted(database))'",
                                                historySchema: loaded.databaseSchema)
        if options.backup != nil, let refusal = DatabaseTargets.backupRefusal(for: target) {
            throw MigrationError.refused([refusal])
        }
        func migrator(_ database: any MigrationDatabase) -> Migrator {
            var migrator = Migrator(manifest: loaded, database: database)
            for (name, body) in codeSteps { migrator.register(name, body) }
            return migrator
        }
        if !target.exists {
            // Refuse before opening for writing creates the database (and its folder), as `strata migrate` does.
            let refusals = try migrator(try target.openForReading()).refusals(options)
            guard refusals.isEmpty else { throw MigrationError.refused(refusals) }
            try createParentDirectory(of: target)
        }
        let opened: any MigrationDatabase
        do {
            opened = try target.openForWriting(timeout: options.waitTimeout)
        } catch let error as DatabaseError where error.kind == .readOnly {
            throw MigrationError.refused([Refusal(reason: .readOnly, id: "", message: error.message)])
        }
        let report = try migrator(opened).migrate(options, progress: progress)
        if let failure = report.failure { throw failure }
        return report
    }

    /// Creates the missing folders above a new SQLite file given by path. A `file:` URI is left to SQLite, which
    /// reports a folder that is not there.
    private static func createParentDirectory(of target: any DatabaseTarget) throws {
        guard let sqlite = target as? SQLiteTarget, !sqlite.path.hasPrefix("file:") else { return }
        let parent = PathComponents.deletingLast(sqlite.path)
        guard !parent.isEmpty, !FileManager.default.fileExists(atPath: parent) else { return }
        do {
            try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        } catch {
            throw DatabaseError(kind: .cannotOpen, code: nil,
                                message: "cannot create the folder \(parent) for the database \(sqlite.name): \(error)")
        }
    }
}
