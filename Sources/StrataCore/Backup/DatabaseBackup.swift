/// A backup taken before a run wrote anything (`MigrationReport.backup`).
public struct DatabaseBackup: Sendable, Equatable {
    /// The backup file: a SQLite database as the live one was at one committed moment.
    public let path: String
    /// The id of the plan the run applied after taking it (`MigrationPlan.id`), also in the file's name.
    public let planID: String
    /// When its name was given, UTC ISO-8601 to the millisecond (the time in the file's name).
    public let takenAt: String
    /// Its size in bytes.
    public let size: Int
    /// How long copying, checking and syncing took.
    public let durationMs: Int
    /// The backup directory did not exist and was created for it.
    public let createdDirectory: Bool
    /// Older backups of the same database removed to keep `BackupOptions.keep`, oldest first.
    public let removed: [String]
    /// Why older backups beyond `keep` could not be removed (the backup itself is in place; the run goes on).
    public let notRemoved: [String]

    /// Creates the description of a backup that was taken.
    public init(path: String, planID: String, takenAt: String, size: Int, durationMs: Int, createdDirectory: Bool,
                removed: [String], notRemoved: [String]) {
        self.path = path
        self.planID = planID
        self.takenAt = takenAt
        self.size = size
        self.durationMs = durationMs
        self.createdDirectory = createdDirectory
        self.removed = removed
        self.notRemoved = notRemoved
    }
}

/// A backup or restore that could not be done. Nothing was applied or replaced: a backup is taken before any step
/// runs, and a restore replaces the database in one transaction or not at all.
public struct BackupError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What a caller can do about it.
    public enum Kind: String, Sendable, Equatable {
        /// The backend has no backup Strata takes (PostgreSQL: `pg_dump`, point-in-time recovery); the message
        /// says what to use.
        case unavailable
        /// Refused before anything was read or written: a file that is not a usable backup, a stale journal or WAL
        /// beside the database, a database SQLite cannot restore into as it is.
        case refused
        /// Another connection held the database's lock past the timeout (a restore waits for no one to be writing).
        case busy
        /// The copy, its check or a file operation failed (a full disk, an unwritable directory, an I/O error).
        case failed
    }

    /// What kind of failure it was.
    public let kind: Kind
    /// What went wrong, naming the file or directory.
    public let message: String

    /// Creates the error from its kind and message.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
