import CSQLite
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataCore

/// A connection to one SQLite database.
///
/// A `Database` is used from one thread at a time; share one across threads or tasks through `DatabaseQueue`.
/// Every failure throws a `DatabaseError`; nothing traps or prints.
public final class Database {
    /// Where the database lives.
    public enum Location: Sendable, Equatable {
        /// A file, created when absent (unless read-only).
        case file(String)
        /// A private database in memory, gone when the connection closes.
        case inMemory
        /// A private database in a temporary file, deleted when the connection closes.
        case temporary
    }

    /// How a connection is opened.
    public struct Configuration: Sendable, Equatable {
        /// Open without write access; writes fail with `SQLITE_READONLY`. A hot journal left by a writer that
        /// stopped mid-transaction is still rolled back (SQLite must, before anything can be read).
        public var readOnly = false
        /// How long to wait for another connection's lock before failing with `SQLITE_BUSY`.
        public var busyTimeout: Duration = .seconds(5)
        /// Enforce foreign keys (SQLite's own default is off).
        public var foreignKeys = true
        /// Switch the database to write-ahead logging when opening it.
        public var walMode = false
        /// How a `Date` is stored: ISO-8601 text (the default), unix seconds as FMDB stores them, or Julian day
        /// numbers. Text is read as ISO-8601 whatever this says; a number is read as this storage counts.
        public var dateStorage: DateStorage = .iso8601Text

        /// Creates a configuration.
        public init(readOnly: Bool = false, busyTimeout: Duration = .seconds(5),
                    foreignKeys: Bool = true, walMode: Bool = false, dateStorage: DateStorage = .iso8601Text) {
            self.readOnly = readOnly
            self.busyTimeout = busyTimeout
            self.foreignKeys = foreignKeys
            self.walMode = walMode
            self.dateStorage = dateStorage
        }
    }

    let handle: OpaquePointer
    /// Where the database is: a file or memory.
    public let location: Location
    /// How the connection was opened.
    public let configuration: Configuration
    private var statementCache: [String: Statement] = [:]
    var savepointDepth = 0
    let transactionState = TransactionState()
    /// Installed for the connection's whole life: `ScriptRules` and the transaction statements scopes check.
    let authorizer: ConnectionAuthorizer
    private(set) var isClosed = false
    /// Lets another thread stop the statement running on this connection; cut off from it when it closes.
    public let interruptHandle: InterruptHandle
    /// The closure `trace(_:)` registered, which SQLite points to unretained; nil when none is.
    var traceBox: TraceBox?
    /// The SQL functions `createFunction` defined, by name and argument count: a rehearsal's copy defines them too,
    /// so steps that call them run there as on this connection.
    private(set) var functions: [String: FunctionDefinition] = [:]

    /// Opens (and for writable files, creates) the database at `path`.
    public convenience init(path: String, configuration: Configuration = Configuration()) throws {
        try self.init(.file(path), configuration: configuration)
    }

    /// Opens a connection to the database at `location`.
    public init(_ location: Location = .inMemory, configuration: Configuration = Configuration()) throws {
        let filename: String
        switch location {
        case .file(let path): filename = path
        case .inMemory: filename = ":memory:"
        case .temporary: filename = ""
        }
        // A connection is used by one thread at a time (`DatabaseQueue` serializes), so SQLite's per-call mutex
        // is pure cost; `ColumnValue` relies on its absence too.
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        // A read-only connection cannot roll back a hot journal (a writer killed or out of disk mid-transaction),
        // and then every read fails with "attempt to write a readonly database". With a journal beside the file,
        // open it writable, never creating it, and refuse writes with query_only: SQLite recovers as any writer
        // would. (SQLite opens a file it may not write read-only; `recoverHotJournal` explains that case.)
        let recovers = configuration.readOnly && Self.hasJournal(location)
        flags |= configuration.readOnly ? (recovers ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY)
            : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        var connection: OpaquePointer?
        let code = sqlite3_open_v2(filename, &connection, flags, nil)
        guard code == SQLITE_OK, let connection else {
            let message = connection.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
            sqlite3_close_v2(connection)
            throw DatabaseError(code: code, message: "cannot open \(filename.isEmpty ? "temporary database" : filename): \(message)")
        }
        handle = connection
        self.location = location
        self.configuration = configuration
        authorizer = ConnectionAuthorizer(connection: connection)
        interruptHandle = InterruptHandle(connection: connection)
        authorizer.install()
        transactionState.authorizer = authorizer
        sqlite3_extended_result_codes(connection, 1)
        let components = configuration.busyTimeout.components
        let milliseconds = components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
        sqlite3_busy_timeout(connection, Int32(clamping: milliseconds))
        do {
            if recovers { try recoverHotJournal() }
            if configuration.foreignKeys { try execute("PRAGMA foreign_keys = ON") }
            if configuration.walMode && !configuration.readOnly {
                let mode = try scalar("PRAGMA journal_mode = WAL", as: String.self)
                guard mode?.lowercased() == "wal" || location == .inMemory else {
                    throw DatabaseError(code: SQLITE_ERROR, message: "could not switch to WAL (journal mode is \(mode ?? "unknown"))")
                }
            }
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    private static func hasJournal(_ location: Location) -> Bool {
        guard case .file(let path) = location, !path.isEmpty else { return false }
        return FileManager.default.fileExists(atPath: path + "-journal")
    }

    /// Makes the connection read-only and lets SQLite roll back a hot journal with a first read.
    private func recoverHotJournal() throws {
        try execute("PRAGMA query_only = ON")
        do {
            _ = try scalar("SELECT count(*) FROM sqlite_schema", as: Int.self)
        } catch let error as DatabaseError where error.resultCode == SQLITE_READONLY {
            let path = self.path ?? "the database"
            throw DatabaseError(code: error.extendedResultCode, message: "\(path)-journal is a hot journal: a writer stopped in the middle of a transaction, and SQLite must roll it back before the database can be read, which needs write access to \(path) and its directory; run this command once as a user who can write them (any strata command finishes the rollback)")
        }
    }

    /// Closes the connection; later calls fail with `SQLITE_MISUSE`. Called automatically when released.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        statementCache.removeAll()
        // A statement the caller still holds keeps the connection alive after this (a zombie), and SQLite may
        // compile and run it again: its authorizer and trace hook must not outlive this object.
        sqlite3_set_authorizer(handle, nil, nil)
        removeTrace()
        // After this an interrupt from another thread is a no-op, never a call on a freed connection.
        interruptHandle.invalidate()
        sqlite3_close_v2(handle)
    }

    /// The file path of the main database, or nil for in-memory and temporary databases.
    public var path: String? {
        guard let cPath = sqlite3_db_filename(handle, "main") else { return nil }
        let path = String(cString: cPath)
        return path.isEmpty ? nil : path
    }

    /// Whether SQLite opened the main database read-only (a `mode=ro` URI, or a file it may not write).
    public var isReadOnly: Bool {
        sqlite3_db_readonly(handle, "main") == 1
    }

    /// The VFS the main database is read and written through, as SQLite names it (`unix` on Linux, unless a URI's
    /// `vfs=` chose another such as `memdb` or `unix-none`); nil when no file backs it (in memory, temporary).
    public var vfsName: String? {
        var name: UnsafeMutablePointer<CChar>?
        guard sqlite3_file_control(handle, "main", SQLITE_FCNTL_VFSNAME, &name) == SQLITE_OK, let name else { return nil }
        defer { sqlite3_free(name) }
        return String(cString: name)
    }

    /// The VFS SQLite uses when a filename names none: the one that keeps a database in its file, with locking.
    public static var defaultVFSName: String? {
        guard let vfs = sqlite3_vfs_find(nil), let name = vfs.pointee.zName else { return nil }
        return String(cString: name)
    }

    /// The rowid of the most recent successful INSERT on this connection.
    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }
    /// Rows changed by the most recent INSERT, UPDATE or DELETE.
    public var changes: Int { Int(sqlite3_changes64(handle)) }
    /// Rows changed since the connection opened.
    public var totalChanges: Int { Int(sqlite3_total_changes64(handle)) }
    /// True between BEGIN and COMMIT/ROLLBACK.
    public var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    // MARK: Statements

    /// Compiles one SQL statement for repeated use. Trailing text after the statement is an error.
    public func prepare(_ sql: String) throws -> Statement {
        guard !isClosed else { throw DatabaseError.misuse("the database connection is closed", sql: sql) }
        var statement: OpaquePointer?
        var tail: UnsafePointer<CChar>?
        var hasTrailingStatement = false
        var control: TransactionControl?
        let code = sql.withCString { start -> Int32 in
            let (code, found) = authorizer.classifying {
                sqlite3_prepare_v3(handle, start, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, &tail)
            }
            control = found
            if code == SQLITE_OK, let tail, tail.pointee != 0 {
                hasTrailingStatement = Self.containsStatement(tail, connection: handle)
            }
            return code
        }
        guard code == SQLITE_OK else {
            throw DatabaseError(code: code, message: errorMessage(handle, code: code), sql: sql)
        }
        guard let statement else {
            throw DatabaseError.misuse("no SQL statement in the text", sql: sql)
        }
        guard !hasTrailingStatement else {
            sqlite3_finalize(statement)
            throw DatabaseError.misuse("more than one statement; run several with executeScript(_:)", sql: sql)
        }
        return Statement(handle: statement, connection: handle, sql: sql, transactionState: transactionState,
                         control: control, dateStorage: configuration.dateStorage)
    }

    private static func containsStatement(_ text: UnsafePointer<CChar>, connection: OpaquePointer) -> Bool {
        var next: OpaquePointer?
        let code = sqlite3_prepare_v2(connection, text, -1, &next, nil)
        defer { sqlite3_finalize(next) }
        // A tail that fails to compile still holds a statement the caller did not mean to drop.
        return code != SQLITE_OK || next != nil
    }

    /// A compiled statement from the per-connection cache, keyed by its SQL text.
    func cachedStatement(_ sql: String) throws -> Statement {
        if let cached = statementCache[sql], !cached.isBusy { return cached }
        let statement = try prepare(sql)
        if statementCache[sql] == nil { statementCache[sql] = statement }
        return statement
    }

    /// Runs one statement with its arguments (`?`, `?NNN`, `:name`), checked before anything runs. A literal with
    /// interpolated values goes to `execute(_: SQL)` instead.
    public func execute(_ sql: String, _ arguments: StatementArguments) throws {
        try cachedStatement(sql).execute(arguments)
    }

    /// A lazy cursor over the rows of one query, with its arguments (`?`, `?NNN`, `:name`).
    public func query(_ sql: String, _ arguments: StatementArguments) throws -> RowCursor {
        let statement = try cachedStatement(sql)
        try statement.bind(arguments)
        statement.isBusy = true
        return RowCursor(statement: statement)
    }

    /// The first column of the first row as `T`, or nil when there is no row or the value is NULL.
    public func scalar<T: DatabaseValueConvertible>(_ sql: String, _ arguments: StatementArguments,
                                                    as type: T.Type = T.self) throws -> T? {
        guard let row = try query(sql, arguments).next(), row.count > 0 else { return nil }
        return try row.get(0, as: T?.self)
    }

    func lastError(_ code: Int32, sql: String? = nil) -> DatabaseError {
        DatabaseError(code: code, message: errorMessage(handle, code: code), sql: sql)
    }

    // MARK: Functions

    /// Defines (or replaces) a scalar SQL function backed by a Swift closure.
    ///
    /// ```swift
    /// try db.createFunction("reverse", argumentCount: 1) { args in
    ///     (try args[0].map { String($0.reversed()) } as String?)
    /// }
    /// ```
    /// A closure that throws makes the SQL statement fail with the error's description.
    public func createFunction(_ name: String, argumentCount: Int32, deterministic: Bool = true,
                               _ body: @escaping ([DatabaseValue]) throws -> (any DatabaseValueConvertible)?) throws {
        functions["\(name.sqliteFolded)/\(argumentCount)"] = FunctionDefinition(name: name, argumentCount: argumentCount,
                                                                                 deterministic: deterministic, body: body)
        let box = FunctionBox(body, dateStorage: configuration.dateStorage)
        var flags = SQLITE_UTF8
        if deterministic { flags |= SQLITE_DETERMINISTIC }
        let code = sqlite3_create_function_v2(
            handle, name, argumentCount, flags, Unmanaged.passRetained(box).toOpaque(),
            { context, count, arguments in
                guard let context else { return }
                let box = Unmanaged<FunctionBox>.fromOpaque(sqlite3_user_data(context)).takeUnretainedValue()
                box.call(context: context, count: count, arguments: arguments)
            },
            nil, nil,
            { pointer in
                guard let pointer else { return }
                Unmanaged<FunctionBox>.fromOpaque(pointer).release()
            })
        guard code == SQLITE_OK else { throw lastError(code) }
    }
}

/// A function `createFunction` defined, as it was given.
struct FunctionDefinition {
    let name: String
    let argumentCount: Int32
    let deterministic: Bool
    let body: ([DatabaseValue]) throws -> (any DatabaseValueConvertible)?
}

/// Keeps a Swift closure alive for as long as SQLite holds its function.
final class FunctionBox {
    let body: ([DatabaseValue]) throws -> (any DatabaseValueConvertible)?
    /// A `Date` the function returns is stored as the connection stores every date.
    let dateStorage: DateStorage

    init(_ body: @escaping ([DatabaseValue]) throws -> (any DatabaseValueConvertible)?, dateStorage: DateStorage) {
        self.body = body
        self.dateStorage = dateStorage
    }

    func call(context: OpaquePointer, count: Int32, arguments: UnsafeMutablePointer<OpaquePointer?>?) {
        var values: [DatabaseValue] = []
        for index in 0..<Int(count) {
            values.append(Self.value(arguments?[index]))
        }
        do {
            let result: DatabaseValue
            let returned = try body(values)
            let converted = (returned as? Date).map { Result<DatabaseValue, DatabaseError>.success(dateStorage.databaseValue(of: $0, precision: SQLiteDialect().datePrecision)) }
                ?? returned.map(checkedDatabaseValue) ?? .success(.null)
            switch converted {
            case .success(let value): result = value
            case .failure(let error): throw error
            }
            switch result {
            case .null: sqlite3_result_null(context)
            case .integer(let i): sqlite3_result_int64(context, i)
            case .real(let d) where d.isNaN:
                // SQLite would store NULL: a NaN `Double`, or what a NaN or infinite `Date` converts to.
                sqlite3_result_error(context, "the function returned NaN, which SQLite would store as NULL (a Date that is NaN or infinite has no stored form)", -1)
            case .real(let d): sqlite3_result_double(context, d)
            case .text(let s): sqlite3_result_text(context, s, -1, SQLITE_TRANSIENT)
            case .blob(let data):
                data.withUnsafeBytes { raw in
                    sqlite3_result_blob64(context, raw.baseAddress, UInt64(raw.count), SQLITE_TRANSIENT)
                }
            }
        } catch {
            sqlite3_result_error(context, "\(error)", -1)
        }
    }

    private static func value(_ argument: OpaquePointer?) -> DatabaseValue {
        guard let argument else { return .null }
        switch sqlite3_value_type(argument) {
        case SQLITE_INTEGER: return .integer(sqlite3_value_int64(argument))
        case SQLITE_FLOAT: return .real(sqlite3_value_double(argument))
        case SQLITE_TEXT:
            guard let text = sqlite3_value_text(argument) else { return .text("") }
            let count = Int(sqlite3_value_bytes(argument))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let count = Int(sqlite3_value_bytes(argument))
            guard let bytes = sqlite3_value_blob(argument), count > 0 else { return .blob(Data()) }
            return .blob(Data(bytes: bytes, count: count))
        default: return .null
        }
    }
}
