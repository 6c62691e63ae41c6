import Strata

/// `strata restore`: puts a backup back into a SQLite database through the library, and says what it did.
extension Commands {
    func restore() throws -> Int32 {
        let backup = invocation.positionals[0]
        let manifest = invocation.value("manifest") == nil ? nil : try self.manifest()
        let target = try target(manifest)
        guard let sqlite = target as? SQLiteTarget else {
            throw BackupError(.unavailable, "restore puts back a SQLite backup, and \(target.name) is a PostgreSQL database: restore it with pg_restore (from a pg_dump) or point-in-time recovery; nothing was restored")
        }
        guard !sqlite.path.hasPrefix("file:") else {
            throw UsageError("restore takes the database's file path, not a file: URI")
        }
        let report = try Database.restore(backup: backup, to: sqlite.path,
                                          options: RestoreOptions(busyTimeout: try timeout, keepCurrent: invocation.has("keep-current"),
                                                                  allowOtherDatabase: invocation.has("other-database")))
        // Said whenever the backup's name gives another database: into a new file, or with --other-database.
        let whose = report.isOtherDatabasesBackup ? " (a backup of \(report.backupOf ?? ""))" : ""
        let from = displayPath(report.backup)
        if report.created {
            output.line("Created \(sqlite.name) from \(from)\(whose) (\(report.durationMs) ms); it passes PRAGMA integrity_check.")
        } else {
            output.line("Restored \(sqlite.name) from \(from)\(whose) (\(report.durationMs) ms); it passes PRAGMA integrity_check.")
            output.line(report.keptCurrent.map { "The database as it was is kept as \(displayPath($0))." }
                        ?? "The copy of the database as it was, kept until the restore succeeded, was removed (--keep-current keeps it).")
        }
        output.object(["command": "restore", "database": .string(sqlite.name), "backup": .string(from),
                       "backupOf": .optional(report.backupOf),
                       "created": .bool(report.created), "keptCurrent": .optional(report.keptCurrent.map(displayPath)),
                       "durationMs": .optional(report.durationMs)])
        return ExitCode.success
    }
}
