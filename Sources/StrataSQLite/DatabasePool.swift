import Dispatch
import StrataCore

/// One SQLite database file shared by many threads and tasks: one writer and up to `maximumReaderCount` readers
/// that run at the same time as each other and as the writer (like GRDB's `DatabasePool` and FMDB's
/// `FMDatabasePool`).
///
/// ```swift
/// let pool = try DatabasePool(path: "library.sqlite")
/// try await pool.write { db in try db.execute("INSERT INTO members (name) VALUES (?)", ["Ada"]) }
/// let count = try await pool.read { db in try db.scalar("SELECT count(*) FROM members", as: Int.self) }
/// ```
///
/// The database is switched to write-ahead logging (WAL), which is what lets readers go on while a write
/// transaction is open: each read runs in a transaction of its own and sees the database as it was when that
/// transaction first read, whatever commits meanwhile. Readers are opened read-only with `query_only` on, so a
/// read cannot write. Writes go one at a time through one connection (a `DatabaseQueue`), each in an `IMMEDIATE`
/// transaction.
public final class DatabasePool: ConnectionPool {
    /// How a pool opens its connections.
    public struct Configuration: Sendable, Equatable {
        /// For every connection; `walMode` is always on and `readOnly` is on for readers only.
        public var database: Database.Configuration
        /// How many reader connections may be open at once (they are opened when first needed).
        public var maximumReaderCount: Int
        /// How long a read waits for a reader when all are in use before failing with `.busy`.
        public var checkoutTimeout: Duration

        /// Creates a configuration.
        public init(database: Database.Configuration = Database.Configuration(), maximumReaderCount: Int = 5,
                    checkoutTimeout: Duration = .seconds(30)) {
            self.database = database
            self.maximumReaderCount = maximumReaderCount
            self.checkoutTimeout = checkoutTimeout
        }
    }

    /// The database file.
    public let path: String
    /// How the pool's connections are opened and shared.
    public let configuration: Configuration
    private let writer: DatabaseQueue
    private let readers: ConnectionCheckout<Database>
    /// The interrupt handles of every reader opened, for `interrupt()`; a closed reader's handle is dropped when
    /// the next reader opens.
    private let readerInterrupts = ReaderInterrupts()
    private let reentrancy = ReentrancyGuard(message: "DatabasePool.read called from inside a read; use the Database passed to the closure")

    /// Opens the pool on the database file at `path` (created when absent) and switches it to WAL. Readers are
    /// opened when first needed.
    public init(path: String, configuration: Configuration = Configuration()) throws {
        self.path = path
        self.configuration = configuration
        var writing = configuration.database
        writing.readOnly = false
        writing.walMode = true
        writer = try DatabaseQueue(path: path, configuration: writing)
        readers = ConnectionCheckout(capacity: configuration.maximumReaderCount, timeout: configuration.checkoutTimeout,
                                     name: "the SQLite pool's readers of \(DatabaseURL.redacted(path))")
    }

    /// Reader connections open now (idle or in use).
    public var readerCount: Int { readers.count }

    // MARK: Reading

    /// Runs `body` on a reader, in a transaction that sees one snapshot, blocking the caller until it is done.
    /// Calling `read` again from inside `body` is an error, not a deadlock; so is a statement that would end the
    /// transaction (`COMMIT`, `ROLLBACK`), refused before it runs as in `Database.transaction`.
    public func read<T>(_ body: (Database) throws -> T) throws -> T {
        try reentrancy.run { try read(try readers.acquire(), body) }
    }

    /// `read(_:)` without blocking the calling task: it suspends while it waits for a reader, and the body runs on
    /// a Dispatch thread.
    public func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        let grant = try await readers.acquire()
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try self.reentrancy.run { try self.read(grant, body) } })
            }
        }
    }

    private func read<T>(_ grant: ConnectionCheckout<Database>.Grant, _ body: (Database) throws -> T) throws -> T {
        let reader: Database
        switch grant {
        case .idle(let database):
            reader = database
        case .open:
            do {
                reader = try openReader()
            } catch {
                readers.releasePlace()
                throw error
            }
        }
        defer { readers.release(reader, reusable: !reader.isInTransaction) }
        return try reader.transaction(.deferred, body)
    }

    private func openReader() throws -> Database {
        var reading = configuration.database
        reading.readOnly = true
        reading.walMode = false
        let reader = try Database(path: path, configuration: reading)
        // Read-only already; query_only also refuses what a read-only file still allows (temporary tables).
        try reader.execute("PRAGMA query_only = ON")
        readerInterrupts.add(reader.interruptHandle)
        return reader
    }

    // MARK: Interrupting

    /// Stops every statement the pool's connections are running, the writer's and each reader's, from any thread
    /// (as GRDB's `DatabasePool.interrupt()`): each fails with `DatabaseError.Kind.interrupted`, as
    /// `Database.interrupt()` describes. A `write` whose statement was interrupted is rolled back.
    public func interrupt() {
        writer.interrupt()
        readerInterrupts.interruptAll()
    }

    // MARK: Writing

    /// Runs `body` in an `IMMEDIATE` transaction on the writer, blocking the caller until it is done: committed
    /// when it returns, rolled back when it throws. Writes run one at a time; reads go on meanwhile. A statement
    /// in the body that would end the transaction itself is refused before it runs, as in `Database.transaction`.
    public func write<T>(_ body: (Database) throws -> T) throws -> T {
        try writer.transaction(.immediate, body)
    }

    /// Runs `body` on the writer outside any transaction (for `VACUUM`, or a body that calls `transaction`).
    public func writeWithoutTransaction<T>(_ body: (Database) throws -> T) throws -> T {
        try writer.perform(body)
    }

    /// `write(_:)` without blocking the calling task.
    public func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await writer.transaction(.immediate, body)
    }

    /// `writeWithoutTransaction(_:)` without blocking the calling task.
    public func writeWithoutTransaction<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await writer.perform(body)
    }
}

/// The interrupt handles of a pool's readers, shared by the threads that open readers and the one interrupting.
private final class ReaderInterrupts: Sendable {
    private let lock = Lock()
    // Guarded by `lock`.
    private nonisolated(unsafe) var handles: [InterruptHandle] = []

    func add(_ handle: InterruptHandle) {
        lock.withLock {
            handles.removeAll { !$0.isOpen }
            handles.append(handle)
        }
    }

    func interruptAll() {
        for handle in lock.withLock({ handles }) { handle.interrupt() }
    }
}
