import Dispatch
import StrataCore

/// Up to `size` connections to one PostgreSQL database, shared by many threads and tasks.
///
/// ```swift
/// let pool = try PostgresPool(url: "postgresql://app@db.internal/library",
///                             configuration: .init(size: 8, statementTimeout: .seconds(5)))
/// try await pool.write { db in try db.execute("INSERT INTO members (name) VALUES ($1)", ["Ada"]) }
/// let count = try await pool.read { db in try db.scalar("SELECT count(*) FROM members", as: Int.self) }
/// ```
///
/// - `read` runs in a `REPEATABLE READ READ ONLY` transaction: every statement of the body sees the one snapshot
///   taken by its first, and a write fails (`.readOnly`, SQLSTATE 25006).
/// - `write` runs in a `READ WRITE` transaction at the server's default isolation (`READ COMMITTED` unless the
///   database or role sets another), committed when the body returns and rolled back when it throws;
///   `withSavepoint` nests inside it. `writeWithoutTransaction` hands over the session as it is, and
///   `withTransaction` works there as on any connection.
/// - A `read` or `write` body that ends the transaction itself (`COMMIT`, `ROLLBACK`) is stopped at that statement,
///   no statement of it runs afterwards, and the call fails saying what became of what ran before.
/// - A call waits at most `checkoutTimeout` for a free connection, then fails with `.busy` naming the pool's size
///   and the wait.
/// - A connection that breaks (a server restart, a terminated backend) costs the call using it an error, and is
///   dropped; an idle one the server closed is noticed before it is lent and replaced. Later calls connect anew.
/// - Sessions are reused: settings a body changes with `SET` (not `SET LOCAL`), advisory locks it takes and
///   temporary tables it creates outlive the call.
public final class PostgresPool: ConnectionPool {
    /// How a pool connects and how long it waits.
    public struct Configuration: Sendable, Equatable {
        /// How many connections may be open at once (they are opened when first needed).
        public var size: Int
        /// How long a call waits for a free connection before failing with `.busy`.
        public var checkoutTimeout: Duration
        /// How long each statement of a call may run before the server cancels it (`statement_timeout`, error
        /// `.statementTimeout`, SQLSTATE 57014); nil: the server's setting. Calls may give their own.
        public var statementTimeout: Duration?

        /// Creates a configuration.
        public init(size: Int = 10, checkoutTimeout: Duration = .seconds(30), statementTimeout: Duration? = nil) {
            self.size = size
            self.checkoutTimeout = checkoutTimeout
            self.statementTimeout = statementTimeout
        }
    }

    /// The database's URI with any password hidden.
    public let name: String
    /// How many connections the pool keeps and how long calls wait.
    public let configuration: Configuration
    /// The URI as given, password included: never shown.
    private let url: String
    private let connections: ConnectionCheckout<PostgresConnection>
    private let reentrancy = ReentrancyGuard(message: "PostgresPool called from inside one of its own calls; use the connection passed to the closure")

    /// A pool on the database `url` names (anything `PostgresConnection(url:)` takes). Nothing connects until the
    /// first call.
    public init(url: String, configuration: Configuration = Configuration()) {
        self.url = url
        name = DatabaseURL.redacted(url)
        self.configuration = configuration
        connections = ConnectionCheckout(capacity: configuration.size, timeout: configuration.checkoutTimeout,
                                         name: "the PostgreSQL pool of \(DatabaseURL.redacted(url))")
    }

    /// Connections open now (idle or in use).
    public var connectionCount: Int { connections.count }

    /// What a call does with the connection it is lent.
    private enum Access {
        case read, write, session
    }

    // MARK: Blocking

    /// Runs `body` on a connection in a read-only transaction, waiting for a free connection.
    public func read<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try call(.read, statementTimeout: nil, body)
    }

    /// Runs `body` on a connection in a transaction, committed when it returns and rolled back when it throws.
    public func write<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try call(.write, statementTimeout: nil, body)
    }

    /// Runs `body` on a connection outside a transaction, for statements that cannot run in one.
    public func writeWithoutTransaction<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try call(.session, statementTimeout: nil, body)
    }

    /// `read(_:)` whose statements are each cancelled after `statementTimeout`, whatever the pool's setting.
    public func read<T>(statementTimeout: Duration, _ body: (PostgresConnection) throws -> T) throws -> T {
        try call(.read, statementTimeout: statementTimeout, body)
    }

    /// `write(_:)` whose statements are each cancelled after `statementTimeout`, whatever the pool's setting.
    public func write<T>(statementTimeout: Duration, _ body: (PostgresConnection) throws -> T) throws -> T {
        try call(.write, statementTimeout: statementTimeout, body)
    }

    private func call<T>(_ access: Access, statementTimeout: Duration?, _ body: (PostgresConnection) throws -> T) throws -> T {
        try reentrancy.run { try run(access, statementTimeout, on: try connections.acquire(), body) }
    }

    // MARK: Async

    /// Runs `body` on a connection in a read-only transaction, off the caller's thread.
    public func read<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        try await call(.read, statementTimeout: nil, body)
    }

    /// Runs `body` on a connection in a transaction, off the caller's thread.
    public func write<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        try await call(.write, statementTimeout: nil, body)
    }

    /// Runs `body` on a connection outside a transaction, off the caller's thread.
    public func writeWithoutTransaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        try await call(.session, statementTimeout: nil, body)
    }

    /// `read(_:)` whose statements are each cancelled after `statementTimeout`, without blocking the calling task.
    public func read<T: Sendable>(statementTimeout: Duration,
                                  _ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        try await call(.read, statementTimeout: statementTimeout, body)
    }

    /// `write(_:)` whose statements are each cancelled after `statementTimeout`, without blocking the calling task.
    public func write<T: Sendable>(statementTimeout: Duration,
                                   _ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        try await call(.write, statementTimeout: statementTimeout, body)
    }

    /// Suspends while waiting for a connection; connecting and the body run on a Dispatch thread, since libpq
    /// blocks.
    private func call<T: Sendable>(_ access: Access, statementTimeout: Duration?,
                                   _ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        let grant = try await connections.acquire()
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result {
                    try self.reentrancy.run { try self.run(access, statementTimeout, on: grant, body) }
                })
            }
        }
    }

    // MARK: One call

    private func run<T>(_ access: Access, _ statementTimeout: Duration?, on grant: ConnectionCheckout<PostgresConnection>.Grant,
                        _ body: (PostgresConnection) throws -> T) throws -> T {
        let connection = try lend(grant)
        defer { connections.release(connection, reusable: connection.settleForReuse()) }
        let setTimeout = statementTimeout.map { "; SET LOCAL statement_timeout = \(PostgresConnection.timeoutLiteral($0))" } ?? ""
        switch access {
        case .read:
            // Read-only for the session too, not only the transaction: a body that ends the transaction itself
            // (a COMMIT in a script) still cannot write. Put back before the connection is lent again.
            try connection.executeSimple("SET default_transaction_read_only = on")
            defer { _ = try? connection.executeSimple("RESET default_transaction_read_only") }
            return try connection.withTransaction(beginning: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" + setTimeout,
                                                  owner: "a pool's read") { try body(connection) }
        case .write:
            return try connection.withTransaction(beginning: "BEGIN READ WRITE" + setTimeout, owner: "a pool's write") {
                try body(connection)
            }
        case .session:
            return try body(connection)
        }
    }

    /// The connection a grant stands for: an idle one still connected, else a new one.
    private func lend(_ grant: ConnectionCheckout<PostgresConnection>.Grant) throws -> PostgresConnection {
        if case .idle(let connection) = grant, connection.isIdleAndConnected { return connection }
        // A place to open one, or the place of an idle connection the server closed (dropped here).
        do {
            return try connect()
        } catch {
            connections.releasePlace()
            throw error
        }
    }

    private func connect() throws -> PostgresConnection {
        let connection = try PostgresConnection(url: url)
        if let timeout = configuration.statementTimeout {
            try connection.executeSimple("SET statement_timeout = \(PostgresConnection.timeoutLiteral(timeout))")
        }
        return connection
    }
}
