import Dispatch
import StrataCore

/// One database connection that many threads and tasks share safely, one access at a time
/// (like FMDB's `FMDatabaseQueue`).
///
/// ```swift
/// let queue = try DatabaseQueue(path: "library.sqlite")
/// try await queue.transaction { db in
///     try db.execute("INSERT INTO members (name) VALUES (?)", ["Ada"])
/// }
/// ```
public final class DatabaseQueue: Sendable {
    private let queue = DispatchQueue(label: "strata.database-queue")
    // Only ever touched on `queue`, which serialises every access.
    private nonisolated(unsafe) let database: Database
    private let key = DispatchSpecificKey<Bool>()
    private let interruptHandle: InterruptHandle

    /// Opens a connection at `location` that threads and tasks share, one access at a time.
    public init(_ location: Database.Location = .inMemory,
                configuration: Database.Configuration = Database.Configuration()) throws {
        database = try Database(location, configuration: configuration)
        interruptHandle = database.interruptHandle
        queue.setSpecific(key: key, value: true)
    }

    /// Stops the statement the connection is running, if any, from any thread, without waiting for the queue: it
    /// fails with `DatabaseError.Kind.interrupted` (see `Database.interrupt()`).
    public func interrupt() {
        interruptHandle.interrupt()
    }

    /// Opens a queue on the database file at `path`.
    public convenience init(path: String, configuration: Database.Configuration = Database.Configuration()) throws {
        try self.init(.file(path), configuration: configuration)
    }

    /// Runs `body` with exclusive use of the connection, blocking the caller until it is done.
    /// Calling it again from inside `body` is an error, not a deadlock.
    public func perform<T>(_ body: (Database) throws -> T) throws -> T {
        guard DispatchQueue.getSpecific(key: key) == nil else {
            throw DatabaseError.misuse("DatabaseQueue used re-entrantly; use the Database passed to the closure")
        }
        return try queue.sync { try body(database) }
    }

    /// Runs `body` in a transaction with exclusive use of the connection.
    public func transaction<T>(_ kind: TransactionKind = .deferred, _ body: (Database) throws -> T) throws -> T {
        try perform { try $0.transaction(kind, body) }
    }

    /// Runs `body` with exclusive use of the connection without blocking the calling task.
    public func perform<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(with: Result { try body(self.database) })
            }
        }
    }

    /// Runs `body` in a transaction without blocking the calling task.
    public func transaction<T: Sendable>(_ kind: TransactionKind = .deferred,
                                         _ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await perform { try $0.transaction(kind, body) }
    }
}
