import CLibPQ
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataCore

/// A connection to a PostgreSQL database through libpq.
///
/// ```swift
/// let db = try PostgresConnection(url: "postgresql://app@db.internal/library")
/// try db.execute("INSERT INTO authors (name) VALUES ($1)", ["Ursula K. Le Guin"])
/// ```
///
/// Everything Strata runs on it sees `TimeZone=UTC` and ISO dates, so timestamps read and write the same way on every
/// host: set for the session, restored after each migration (`sessionSnapshot`); through a connection pooler, with
/// `SET LOCAL` in each transaction, so nothing stays on a server connection the pooler shares (`localSettings`).
/// Used from one thread at a time.
public final class PostgresConnection {
    let handle: OpaquePointer
    /// The connection URI with any password removed: how output, JSON and errors name the database.
    public let name: String
    /// How long `withWriteLock` waits for another deployer.
    public let lockTimeout: Duration
    /// The schema holding `strata_history`: the manifest's, else the first schema of `search_path` holding one, else
    /// the first schema of `search_path` (`PostgresHistoryLocation`), as resolved on connecting.
    public let historySchema: String
    /// Whether the connection reaches the server through a connection pooler (PgBouncer in either pooling mode, a
    /// managed platform's pooled endpoint): the server names another process for the session than the one the
    /// connection was given when it opened. Through one, every transaction may run on another server session, so
    /// nothing is kept across transactions and no second session is opened; what needs a session of its own for as
    /// long as it runs (a `transaction="none"` step's claim) uses `directURL`, or is refused before anything runs.
    public let reachesServerThroughPooler: Bool
    /// A connection straight to the server (not through the pooler) for what needs a session of its own while it
    /// runs: a `transaction="none"` step's claim, the lock watch's questions. Nil: the connection's own URL.
    public var directURL: String?
    /// Rows changed by the last statement.
    public internal(set) var changes = 0
    /// Savepoints opened by `withSavepoint`, for unique names.
    var savepointDepth = 0
    /// Sets `withSavepoint`'s names apart from a body's own.
    let savepointPrefix = UInt32.random(in: 0...UInt32.max)
    /// Whether this session holds the deployers' advisory lock (`withWriteLock`).
    var holdsDeployLock = false
    /// The server process that took the deployers' lock for the open step (`pg_backend_pid()`), to say so when the
    /// session changed under the step.
    var deployLockSession: Int64?
    /// Set while a rehearsal's transaction is open (`PostgresRehearsalStage`): each step runs in a savepoint of it.
    var isRehearsing = false
    /// In a rehearsal, the cursors and prepared statements the session had before it: the steps' reset keeps them.
    var rehearsalKeeps: PostgresSessionObjects?
    /// In a rehearsal, shown each statement of a script (a `COPY`'s without its data) before it is sent: the stage
    /// reads what the step's statements say as they run, whatever the file's size (`PostgresRehearsalStage`).
    var rehearsalStatementWatch: ((PostgresStatementText) -> Void)?
    /// Names the session a migration's statement waited for when it gives up (armed by `limitStatements`).
    let lockWatch = PostgresLockWatch()
    /// The `statement_timeout` the current step began with, for the error of a statement it stops
    /// (`noteStatementTimeout`); nil outside a step.
    var stepStatementTimeout: PostgresStatementTimeout?
    /// The session holding `transaction="none"` steps' claims (`PostgresStepLocks`), opened on first use.
    var claimSession: PostgresConnection?
    /// Whose transaction a statement must not end (`withTransaction`, a pool's `read` or `write`), while its body
    /// runs: the call that opened it, which commits or rolls it back itself.
    var transactionOwner: String?
    /// The last SQL text `confirmTransactionOpen` found ends no transaction.
    private var lastSQLEndingNoTransaction: String?
    /// Server-side prepared statements by SQL text (`runPrepared`), forgotten when the session is reset.
    var prepared = PostgresPreparedStatements()
    /// Whether `double precision` prints exactly (`extra_float_digits` above 0, as Strata sets it), which a binary
    /// read of one must match (`noteSessionChanges` reads it again after a statement that may have changed it).
    var floatTextIsExact = true
    /// Prepares every statement on its first run, not its second: how the tests run the mapper's conformance suite
    /// through prepared statements and binary results.
    var preparesEveryStatement = false

    /// The settings everything Strata runs sees: set for the session of a direct connection (which is Strata's
    /// alone and ends with it), again after each migration; through a connection pooler, each transaction Strata
    /// opens starts with them as `SET LOCAL` (`localSettings`), and a read or write Strata sends outside one runs in a
    /// transaction of its own that does (`inSettingsTransaction`), so none of them outlives its transaction on a
    /// server connection the pooler shares with the application (PgBouncer in transaction mode hands the next
    /// transaction another server session, and the application the one Strata used). `standard_conforming_strings` is how the splitter reads `'…'`
    /// (backslashes are plain characters), whatever a legacy database or role sets; `bytea_output` is the `hex` form
    /// `bytea` reads (a database set to `escape` would otherwise hand a `Data` the escape text's bytes). From
    /// PostgreSQL 14 the server also checks every 2 s that the client is still there while a statement runs, so a
    /// deployer killed mid-statement has its statement (and locks) ended.
    static func settings(serverVersion: Int32, scope: String) -> String {
        var settings = [
            "TimeZone = 'UTC'", "DateStyle = 'ISO, YMD'", "IntervalStyle = 'iso_8601'", "extra_float_digits = 3",
            "client_min_messages = 'warning'", "standard_conforming_strings = on", "bytea_output = 'hex'",
        ]
        if serverVersion >= 140_000 { settings.append("client_connection_check_interval = '2s'") }
        return settings.map { "SET \(scope)\($0)" }.joined(separator: "; ")
    }

    /// Strata's settings as `SET LOCAL`, sent right after each `BEGIN` Strata sends through a pooler.
    var localSettings: String { Self.settings(serverVersion: PQserverVersion(handle), scope: "LOCAL ") }

    /// Strata's settings for the session of a direct connection.
    var sessionSettings: String { Self.settings(serverVersion: PQserverVersion(handle), scope: "") }

    /// Connects to the database `url` names (a `postgres://` or `postgresql://` URI or a keyword/value string,
    /// anything libpq accepts, with libpq's environment — `PGPASSWORD`, `~/.pgpass` — as usual). A failure's message
    /// hides every piece of a password `url` holds (`DatabaseURL.redacted(_:secretsOf:)`).
    /// - Parameters:
    ///   - schema: where `strata_history` lives; nil: found on `search_path` (`PostgresHistoryLocation`).
    ///   - lockTimeout: how long `withWriteLock` waits for another deployer.
    public init(url: String, schema: String? = nil, lockTimeout: Duration = .seconds(60)) throws {
        name = DatabaseURL.redacted(url)
        self.lockTimeout = lockTimeout
        // UTF-8 from the start, in the startup packet (a `SET` would stay on a pooled server connection; PgBouncer
        // keeps each client's `client_encoding` itself): every file Strata sends is UTF-8.
        let keywords = ["dbname", "client_encoding"]
        let values = [url, "UTF8"]
        let opened = keywords.withCStrings { keywords in
            values.withCStrings { values in PQconnectdbParams(keywords, values, 1) }
        }
        guard let connection = opened else {
            throw DatabaseError(kind: .cannotOpen, message: "libpq could not allocate a connection to \(DatabaseURL.redacted(url))")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(connection)).trimmingWhitespace()
            PQfinish(connection)
            throw DatabaseError(kind: .cannotOpen, message: "cannot connect to \(DatabaseURL.redacted(url)): \(PostgresURL.redacting(message, url: url))")
        }
        // Notices (e.g. "relation already exists, skipping") would go to stderr and mix with the command's output.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        // A pooler (PgBouncer, and most others) gives its clients a process id and cancel key of its own: a server
        // that reports another process id for this session is reached through one, in session or transaction mode.
        let process = PostgresResult(PQexec(connection, "SELECT pg_catalog.pg_backend_pid()"))
        let serverProcess = PQresultStatus(process.handle) == PGRES_TUPLES_OK && PQntuples(process.handle) == 1
            ? PQgetvalue(process.handle, 0, 0).map { String(cString: $0) }.flatMap { Int32($0) } : nil
        let pooled = serverProcess.map { $0 != PQbackendPID(connection) } ?? false
        reachesServerThroughPooler = pooled
        // A direct session is Strata's alone and ends with it: Strata's settings are set for it. Through a pooler each
        // transaction sets them for itself (`localSettings`), and only a legacy server or role with
        // `standard_conforming_strings` off is set otherwise for the session (a `transaction="none"` step's statements
        // run outside any transaction, and are read with it on).
        let conforming = PQparameterStatus(connection, "standard_conforming_strings").map { String(cString: $0) == "on" } ?? false
        let sessionSQL = !pooled ? Self.settings(serverVersion: PQserverVersion(connection), scope: "")
            : conforming ? "" : "SET standard_conforming_strings = on"
        let settings = PostgresResult(PQexec(connection, sessionSQL))
        let current = PostgresResult(PQexec(connection, PostgresHistoryLocation.query))
        guard [PGRES_COMMAND_OK, PGRES_EMPTY_QUERY].contains(PQresultStatus(settings.handle)), PQresultStatus(current.handle) == PGRES_TUPLES_OK else {
            let error = PostgresError.error(PQresultStatus(settings.handle) == PGRES_FATAL_ERROR ? settings.handle : current.handle,
                                            connection: connection, sql: nil)
            PQfinish(connection)
            throw error
        }
        if let schema = PostgresHistoryLocation(configured: schema, current).schema {
            historySchema = schema
        } else {
            PQfinish(connection)
            throw DatabaseError(kind: .misuse, code: nil,
                                message: "search_path names no schema that exists on \(DatabaseURL.redacted(url)); name one with <database schema=\"…\">")
        }
        handle = connection
    }

    deinit { PQfinish(handle) }

    /// The server's major version, e.g. 150004 for 15.4.
    public var serverVersion: Int { Int(PQserverVersion(handle)) }

    // MARK: Running statements

    /// Runs SQL text that may hold several statements, without parameters (the simple query protocol).
    func executeSimple(_ sql: String) throws {
        try confirmTransactionOpen(sql: sql)
        let result = PostgresResult(PQexec(handle, sql))
        try check(result, sql: sql)
        try confirmTransactionKept(result, sql: sql)
        noteSessionChanges(result, sql: sql, severalStatements: true)
        changes = result.changes
        // The simple protocol returns only the last result; earlier ones were consumed by libpq.
    }

    /// Runs one statement with parameters and returns its result, in binary if asked (`PostgresBinary`).
    func run(_ sql: String, _ parameters: PostgresParameters, binary: Bool = false) throws -> PostgresResult {
        try confirmTransactionOpen(sql: sql)
        let result = parameters.withPointers { count, types, values, lengths, formats in
            PostgresResult(PQexecParams(handle, sql, count, types, values, lengths, formats, binary ? 1 : 0))
        }
        try check(result, sql: sql)
        try confirmTransactionKept(result, sql: sql)
        noteSessionChanges(result, sql: sql, severalStatements: false)
        changes = result.changes
        return result
    }

    /// Stops a body at the statement that ended the transaction its caller opened for it (a `COMMIT` or `ROLLBACK`
    /// in a pool's `write` or a `withTransaction` body): every statement after it would run on its own, committed
    /// at once, and a throw would then undo nothing. PostgreSQL tells only once the statement ran; the error says
    /// what became of what ran before, and the owner stays set so nothing after it runs (`confirmTransactionOpen`).
    func confirmTransactionKept(_ result: PostgresResult, sql: String) throws {
        guard let owner = transactionOwner, transactionStatus == PQTRANS_IDLE else { return }
        let tag = PQcmdStatus(result.handle).map { String(cString: $0) } ?? ""
        let before = tag == "COMMIT" ? "what ran before it in the call was committed"
            : tag == "ROLLBACK" ? "what ran before it in the call was rolled back" : "the transaction is over"
        throw DatabaseError(kind: .misuse, code: nil,
                            message: "this statement ended \(owner)'s transaction, which Strata commits or rolls back itself when the body returns or throws: \(before), and nothing after it ran",
                            sql: sql)
    }

    /// Refuses to run a statement of a body whose transaction a statement before it ended (an error the body
    /// caught and went on from): it would run on its own, committed at once.
    /// A statement that would end it (`COMMIT`, `ROLLBACK`, with or without `AND CHAIN`) is refused before it runs, and
    /// the transaction stays as it was: a function or procedure cannot end a transaction block, so the statement's
    /// own words are the whole story.
    func confirmTransactionOpen(sql: String) throws {
        guard let owner = transactionOwner else { return }
        // A batch runs one SQL text again and again: read once.
        if sql != lastSQLEndingNoTransaction, let command = PostgresLint.transactionEnd(in: sql) {
            throw DatabaseError(kind: .misuse, code: nil,
                                message: "\(command) would end \(owner)'s transaction, which Strata commits or rolls back itself when the body returns or throws; it did not run, and the transaction is as it was",
                                sql: sql)
        }
        lastSQLEndingNoTransaction = sql
        guard transactionStatus == PQTRANS_IDLE else { return }
        throw DatabaseError(kind: .misuse, code: nil,
                            message: "\(owner)'s transaction was ended by an earlier statement of the body (its own COMMIT or ROLLBACK), so this one would run outside it, committed at once; it did not run",
                            sql: sql)
    }

    /// Throws the error a result reports.
    func check(_ result: PostgresResult, sql: String?) throws {
        switch PQresultStatus(result.handle) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY, PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_SINGLE_TUPLE:
            return
        default:
            throw error(of: result, sql: sql)
        }
    }

    /// The error a failed result reports, saying which `statement_timeout` stopped a step's statement.
    func error(of result: PostgresResult, sql: String?) -> DatabaseError {
        explainingStatementTimeout(PostgresError.error(result.handle, connection: handle, sql: sql))
    }

    /// The connection's current error, for failures without a result.
    func connectionError(sql: String?) -> DatabaseError {
        PostgresError.error(nil, connection: handle, sql: sql)
    }

    /// Whether the session is inside a transaction block (open or failed).
    var transactionStatus: PGTransactionStatusType { PQtransactionStatus(handle) }
}

/// One libpq result, cleared when released.
final class PostgresResult {
    let handle: OpaquePointer?

    init(_ handle: OpaquePointer?) { self.handle = handle }
    deinit { PQclear(handle) }

    var rowCount: Int { handle.map { Int(PQntuples($0)) } ?? 0 }
    var columnCount: Int { handle.map { Int(PQnfields($0)) } ?? 0 }

    /// Rows an INSERT, UPDATE, DELETE, MERGE, COPY or SELECT affected.
    var changes: Int {
        guard let handle, let text = PQcmdTuples(handle) else { return 0 }
        return Int(String(cString: text)) ?? 0
    }
}

extension Array where Element == String {
    /// The strings as a null-terminated array of C strings, for libpq's keyword/value calls, valid inside `body`.
    func withCStrings<T>(_ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> T) -> T {
        let copies = map { strdup($0) }
        defer { copies.forEach { free($0) } }
        let pointers: [UnsafePointer<CChar>?] = copies.map { $0.map { UnsafePointer($0) } } + [nil]
        return pointers.withUnsafeBufferPointer { body($0.baseAddress) }
    }
}
