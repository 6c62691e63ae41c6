/// Connections to one database that many threads and tasks share: reads run concurrently, each on a consistent
/// snapshot and unable to write; writes run in a transaction. Each backend has one (SQLite's `DatabasePool`,
/// PostgreSQL's `PostgresPool`); code that takes "a pool of either backend" is written against this protocol.
///
/// ```swift
/// func balance(of account: Int, in pool: some ConnectionPool) async throws -> Int {
///     try await pool.read { db in try db.scalar("SELECT balance FROM accounts WHERE id = ?", [account], as: Int.self) ?? 0 }
/// }
/// ```
///
/// A body gets a connection for its own use until it returns; it must not keep it, nor call the pool again (that
/// is an error, not a deadlock). Nor may a `read` or `write` body end the transaction the pool opened for it
/// (`COMMIT`, `ROLLBACK`): SQLite refuses such a statement before it runs; PostgreSQL stops the body once it ran
/// and fails the call.
public protocol ConnectionPool: Sendable {
    /// The backend's connection a body is given.
    associatedtype Connection: DatabaseConnection

    /// Runs `body` on a read-only connection, in a transaction that sees one snapshot of the database, blocking the
    /// caller until it is done.
    func read<T>(_ body: (Connection) throws -> T) throws -> T
    /// Runs `body` in a read-write transaction (committed when it returns, rolled back when it throws), blocking
    /// the caller until it is done.
    func write<T>(_ body: (Connection) throws -> T) throws -> T
    /// Runs `body` on the writing connection outside any transaction: for statements that cannot run in one, or a
    /// body that opens its own with `withTransaction`.
    func writeWithoutTransaction<T>(_ body: (Connection) throws -> T) throws -> T

    /// `read(_:)` without blocking the calling task: it suspends while it waits for a connection.
    func read<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T
    /// `write(_:)` without blocking the calling task.
    func write<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T
    /// `writeWithoutTransaction(_:)` without blocking the calling task.
    func writeWithoutTransaction<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T
}
