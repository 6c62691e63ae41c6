import CLibPQ
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
/// Every session Strata opens runs with `TimeZone=UTC` and ISO dates, so timestamps read and write the same way on
/// every host; the settings are restored after each migration (`sessionSnapshot`). Used from one thread at a time.
public final class PostgresConnection {
    let handle: OpaquePointer
    /// The connection URI with any password removed: how output, JSON and errors name the database.
    public let name: String
    /// How long `withWriteLock` waits for another deployer.
    public let lockTimeout: Duration
    /// The schema holding `strata_history`: the manifest's, else the first schema of `search_path` holding one, else
    /// the first schema of `search_path` (`PostgresHistoryLocation`), as resolved on connecting.
    public let historySchema: String
    /// Rows changed by the last statement.
    public internal(set) var changes = 0
    /// Savepoints opened by `withSavepoint`, for unique names.
    var savepointDepth = 0
    /// Sets `withSavepoint`'s names apart from a body's own.
    let savepointPrefix = UInt32.random(in: 0...UInt32.max)
    /// Whether this session holds the deployers' advisory lock (`withWriteLock`).
    var holdsDeployLock = false
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

    /// The settings every Strata session runs with; `RESET ALL` returns to the server's defaults, so they are set
    /// again after each migration. `standard_conforming_strings` is how the splitter reads `'…'` (backslashes are
    /// plain characters), whatever a legacy database or role sets; `bytea_output` is the `hex` form `bytea` reads
    /// (a database set to `escape` would otherwise hand a `Data` the escape text's bytes). From PostgreSQL 14 the server also checks every 2 s that the client is still
    /// there while a statement runs, so a deployer killed mid-statement has its statement (and locks) ended.
    static func sessionSettings(serverVersion: Int32) -> String {
        var settings = """
            SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET IntervalStyle = 'iso_8601'; SET extra_float_digits = 3;
            SET client_min_messages = 'warning'; SET client_encoding = 'UTF8'; SET standard_conforming_strings = on;
            SET bytea_output = 'hex'
            """
        if serverVersion >= 140_000 { settings += "; SET client_connection_check_interval = '2s'" }
        return settings
    }

    var sessionSettings: String { Self.sessionSettings(serverVersion: PQserverVersion(handle)) }

    /// Connects to the database `url` names (a `postgres://` or `postgresql://` URI or a keyword/value string,
    /// anything libpq accepts, with libpq's environment — `PGPASSWORD`, `~/.pgpass` — as usual). A failure's message
    /// hides every piece of a password `url` holds (`DatabaseURL.redacted(_:secretsOf:)`).
    /// - Parameters:
    ///   - schema: where `strata_history` lives; nil: found on `search_path` (`PostgresHistoryLocation`).
    ///   - lockTimeout: how long `withWriteLock` waits for another deployer.
    public init(url: String, schema: String? = nil, lockTimeout: Duration = .seconds(60)) throws {
        name = DatabaseURL.redacted(url)
        self.lockTimeout = lockTimeout
        guard let connection = PQconnectdb(url) else {
            throw DatabaseError(kind: .cannotOpen, message: "libpq could not allocate a connection to \(DatabaseURL.redacted(url))")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(connection)).trimmingWhitespace()
            PQfinish(connection)
            throw DatabaseError(kind: .cannotOpen, message: "cannot connect to \(DatabaseURL.redacted(url)): \(PostgresURL.redacting(message, url: url))")
        }
        // Notices (e.g. "relation already exists, skipping") would go to stderr and mix with the command's output.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        let settings = PostgresResult(PQexec(connection, Self.sessionSettings(serverVersion: PQserverVersion(connection))))
        let current = PostgresResult(PQexec(connection, PostgresHistoryLocation.query))
        guard PQresultStatus(settings.handle) == PGRES_COMMAND_OK, PQresultStatus(current.handle) == PGRES_TUPLES_OK else {
            let error = PostgresError.error(PQresultStatus(settings.handle) == PGRES_COMMAND_OK ? current.handle : settings.handle,
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
