/// A database a command works on, as `--database` or the manifest's `<database>` names it, checked by its backend
/// before anything is opened: a name at which no durable, locked database would be kept is refused with a
/// `DatabaseLocationError`, since a run there could report steps applied and keep nothing.
public protocol DatabaseTarget {
    /// How output and JSON name the database (never with a password).
    var name: String { get }
    /// Whether the database exists already; commands that only read do not create it.
    var exists: Bool { get }
    /// Opens it for a run that writes, creating it when absent, waiting up to `timeout` for another runner's lock.
    /// A database that cannot be written (a read-only file, a hot standby) is refused with a `DatabaseError` of
    /// kind `.readOnly` before anything runs.
    func openForWriting(timeout: Duration) throws -> any MigrationDatabase
    /// Opens it read-only; a database that does not exist yet reads as an empty one and is not created.
    func openForReading() throws -> any MigrationDatabase
    /// Opens it for a rehearsal (`Migrator.rehearse`), waiting up to `timeout` for another process's lock: where the
    /// plan runs on a copy (SQLite) the database is only read, and one that does not exist yet rehearses as an empty
    /// one and is not created; where it runs in a transaction that is rolled back (PostgreSQL), as for writing.
    func openForRehearsal(timeout: Duration) throws -> any MigrationDatabase
    /// The user schema as SQL text in a stable order, without Strata's own history table (for reviews and diffs).
    func schema() throws -> String
}

/// A database name its backend refuses, with the reason and what to give instead.
public struct DatabaseLocationError: Error, Sendable, CustomStringConvertible {
    /// What is wrong with the name and what to give instead.
    public let message: String

    /// Creates the error from its message.
    public init(_ message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
