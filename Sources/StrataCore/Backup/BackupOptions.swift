/// A backup `Migrator.migrate` takes before its first step (`MigrationOptions.backup`; `strata migrate --backup DIR
/// --keep N`; `<database backup="DIR" keep="N"/>` in a manifest, read as `Manifest.databaseBackup`).
///
/// The copy is one committed state of the database, written into `directory` under a name that holds the database's
/// file name, the time and the plan id (`library.sqlite.20260301T120000.123Z.3f9a0c1d2e4b5a69.backup`), synced to
/// disk and checked (`PRAGMA integrity_check`) before any step runs. Nothing to apply: no backup.
public struct BackupOptions: Sendable, Equatable {
    /// Where backups go; created (with missing parents) when absent.
    public var directory: String
    /// How many of this database's backups to keep in `directory`, the new one included: older ones beyond it are
    /// removed once the new one is in place. Nil keeps every one.
    public var keep: Int?

    /// Creates options writing backups into `directory`, keeping the newest `keep` (nil: every one).
    public init(directory: String, keep: Int? = nil) {
        self.directory = directory
        self.keep = keep
    }
}
