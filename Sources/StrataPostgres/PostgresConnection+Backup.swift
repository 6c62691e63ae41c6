import StrataCore

/// Strata copies SQLite files; a PostgreSQL server's data is not a file Strata can copy consistently from a client.
/// `pg_dump` takes a consistent snapshot (one `REPEATABLE READ` transaction) and is what to run before a migration;
/// continuous archiving restores to any moment, the one before the migration included. Running either is a matter
/// for the server's operator (versions, credentials, space, where the dump goes), so `--backup` is refused rather
/// than half-offered.
extension PostgresConnection {
    /// Why this build cannot back up a PostgreSQL database: its operator's tools do.
    public var backupUnavailableReason: String { Self.backupUnavailableReason(name) }

    /// Why a backup of the PostgreSQL database `name` (as messages show it) is refused, and what to use instead.
    public static func backupUnavailableReason(_ name: String) -> String {
        "--backup (and <database backup>) copies a SQLite database file with SQLite's backup API; it is refused on PostgreSQL, nothing was run: back up \(name) with the server's own tools before migrating: 'pg_dump --format=custom --file=BEFORE.dump DATABASE' (restored with pg_restore), or continuous archiving with point-in-time recovery (pg_basebackup plus archived WAL, recovered to the moment before the migration); then migrate without --backup (strata migrate --no-backup overrides the manifest's <database backup>)"
    }
}
