/// A database that can copy itself into a file while other connections use it: what `MigrationOptions.backup`
/// needs from a backend. SQLite's `Database` adopts it with SQLite's online backup API.
public protocol BackupSource {
    /// The database file's name (not its directory), which backups are named after; nil for a database that no file
    /// holds (in memory, temporary), of which no backup is taken.
    var backupBaseName: String? { get }
    /// The mode bits of the database file, which its backups get too: a backup holds every row, so it must not be
    /// readable by more users than the database is. Nil where there is no file.
    var backupFileMode: UInt32? { get }
    /// Writes one committed state of the database into `path`, an empty file this process created, waiting up to the
    /// connection's busy timeout for a moment when it may read; then checks the copy (`PRAGMA integrity_check`, on a
    /// connection of its own, so what is checked is the file) and syncs it to disk. Throws when any of it fails, and
    /// leaves what it wrote for the caller to remove.
    ///
    /// `check` runs first, on this connection, inside the read transaction the state is then copied from: what it
    /// reads is exactly what is copied, and no commit can come between. What it throws is thrown as it is, and
    /// nothing is copied. `Migrator` checks there that no step is half-applied in the state it backs up.
    func writeBackup(to path: String, checkingFirst check: () throws -> Void) throws
    /// The size in bytes of the copy `writeBackup` would write now (SQLite: page count × page size), for judging
    /// ahead whether it fits (`Migrator.rehearse`); nil where it cannot be told.
    var backupByteCount: Int64? { get }
}

extension BackupSource {
    /// The database's size in bytes, to judge whether a backup fits; nil (the default) where the backend cannot tell.
    public var backupByteCount: Int64? { nil }

    /// Writes one committed state of the database into `path`, checked and synced (`writeBackup(to:checkingFirst:)`
    /// with nothing to check).
    public func writeBackup(to path: String) throws {
        try writeBackup(to: path, checkingFirst: {})
    }
}
