import CSQLite
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataCore

/// SQLite's "copy the bytes now" destructor, which Swift cannot import as a constant.
let SQLITE_TRANSIENT = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// A compiled SQL statement. Obtain one with `Database.prepare(_:)` to run the same SQL many times.
public final class Statement {
    let handle: OpaquePointer
    /// The connection handle, kept to read SQLite's error message for this statement.
    let connection: OpaquePointer
    /// The SQL text of this one statement.
    public let sql: String
    /// True while a cursor is reading rows, so the statement cache hands out a fresh statement instead.
    var isBusy = false
    /// The connection's `transaction`/`savepoint` scopes, told when SQLite rolls their transaction back itself.
    let transactionState: TransactionState?
    /// What the statement does to transactions (nil for most): checked against the open scopes each time it is
    /// about to run, since a statement compiled outside a scope (and cached) may run inside one later.
    let control: TransactionControl?
    /// How the connection stores dates: how `Date` arguments are bound and what numbers read as dates mean.
    let dateStorage: DateStorage

    init(handle: OpaquePointer, connection: OpaquePointer, sql: String, transactionState: TransactionState? = nil,
         control: TransactionControl? = nil, dateStorage: DateStorage = .iso8601Text) {
        self.handle = handle
        self.connection = connection
        self.sql = sql
        self.transactionState = transactionState
        self.dateStorage = dateStorage
        // `EXPLAIN COMMIT` lists the program of a COMMIT without running it.
        self.control = sqlite3_stmt_isexplain(handle) == 0 ? control : nil
    }

    deinit { sqlite3_finalize(handle) }

    /// Column names and a case-insensitive index, built once per compilation. SQLite compiles a statement again
    /// when the schema changed since (a migration rebuilt a table), and `SELECT *` then returns the columns of the
    /// new table, in its order: the names are read again then, or rows would be read under the old names.
    public var layout: RowLayout {
        let compilations = sqlite3_stmt_status(handle, SQLITE_STMTSTATUS_REPREPARE, 0)
        if let cachedLayout, compilations == layoutCompilations { return cachedLayout }
        let count = Int(sqlite3_column_count(handle))
        let names = (0..<count).map { String(cString: sqlite3_column_name(handle, Int32($0))) }
        let layout = RowLayout(names: names, dateStorage: dateStorage)
        cachedLayout = layout
        layoutCompilations = compilations
        return layout
    }
    private var cachedLayout: RowLayout?
    private var layoutCompilations: Int32 = 0

    /// The number of columns the statement returns.
    public var columnCount: Int { Int(sqlite3_column_count(handle)) }
    /// The number of parameters the statement takes.
    public var parameterCount: Int { Int(sqlite3_bind_parameter_count(handle)) }

    /// Binds all parameters at once; checks count and names before anything runs.
    public func bind(_ arguments: StatementArguments) throws {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        let count = parameterCount
        failedBind = 0
        switch arguments {
        case .unrepresentable(let error):
            // Refused by Strata before SQLite saw it: the error keeps its kind and carries no SQLite code.
            throw DatabaseError(kind: error.kind, code: error.code, message: error.message, sql: sql)
        case .positional(let values):
            try bind(positional: values, count: count)
        case .positionalWithDates(let values, let dates):
            try bind(positional: StatementArguments.values(values, dates: dates, precision: SQLiteDialect().datePrecision,
                                                           storage: dateStorage),
                     count: count)
        case .named(let values):
            try bind(named: values, count: count)
        case .namedWithDates(let values, let dates):
            try bind(named: StatementArguments.values(values, dates: dates, precision: SQLiteDialect().datePrecision,
                                                      storage: dateStorage),
                     count: count)
        }
    }

    private func bind(named values: [String: DatabaseValue], count: Int) throws {
        var used = Set<String>()
        for index in 1...max(count, 1) where count > 0 {
            guard let cName = sqlite3_bind_parameter_name(handle, Int32(index)) else {
                throw DatabaseError.misuse(
                    "parameter \(index) is positional; pass an array of arguments, not names", sql: sql)
            }
            let name = StatementArguments.bareName(String(cString: cName))
            guard let value = values[name] else {
                throw DatabaseError.misuse("missing argument for parameter :\(name)", sql: sql)
            }
            used.insert(name)
            try bind(value, at: Int32(index))
        }
        let unknown = Set(values.keys).subtracting(used).sorted()
        guard unknown.isEmpty else {
            throw DatabaseError.misuse(
                "no parameter named \(unknown.map { ":" + $0 }.joined(separator: ", ")) in the statement", sql: sql)
        }
    }

    private func bind(positional values: [DatabaseValue], count: Int) throws {
        guard values.count == count else {
            throw DatabaseError.misuse(
                "statement expects \(count) argument\(count == 1 ? "" : "s"), got \(values.count)", sql: sql)
        }
        for (offset, value) in values.enumerated() { try bind(value, at: Int32(offset + 1)) }
    }

    /// Binds one value to a 1-based parameter index.
    public func bind(_ value: DatabaseValue, at index: Int32) throws {
        let code: Int32
        switch value {
        case .null:
            code = sqlite3_bind_null(handle, index)
        case .integer(let i):
            code = sqlite3_bind_int64(handle, index, i)
        case .real(let d):
            guard !d.isNaN else { throw notANumber(at: index) }
            code = sqlite3_bind_double(handle, index, d)
        case .text(var s):
            code = s.withUTF8 { bytes -> Int32 in
                // An empty buffer has no base address, which SQLite would read as NULL.
                guard let base = bytes.baseAddress, bytes.count > 0 else {
                    return sqlite3_bind_text(handle, index, "", 0, nil)
                }
                return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                    sqlite3_bind_text64(handle, index, $0, UInt64(bytes.count), SQLITE_TRANSIENT, UInt8(SQLITE_UTF8))
                }
            }
        case .blob(let data):
            code = data.withUnsafeBytes { raw in
                guard let base = raw.baseAddress, raw.count > 0 else { return sqlite3_bind_zeroblob(handle, index, 0) }
                return sqlite3_bind_blob64(handle, index, base, UInt64(raw.count), SQLITE_TRANSIENT)
            }
        }
        guard code == SQLITE_OK else { throw error(code) }
    }

    // Allocation-free binding for bulk loads; indexes are 1-based. A text or blob SQLite refuses (longer than
    // its length limit) is remembered and thrown by the next `run()`, never left bound as NULL; lengths are
    // passed as 64 bits, so a value above 2 GiB is refused by SQLite rather than trapping in a conversion.

    /// The 1-based parameter whose last bulk bind failed, or 0; with SQLite's code.
    private var failedBind: Int32 = 0
    private var failedBindCode: Int32 = SQLITE_OK

    @inline(__always) private func noteBind(_ code: Int32, at index: Int32) {
        if code != SQLITE_OK { failedBind = index; failedBindCode = code }
    }

    /// Binds NULL.
    @inline(__always) public func bindNull(at index: Int32) { sqlite3_bind_null(handle, index) }
    /// Binds an integer.
    @inline(__always) public func bind(int64 value: Int64, at index: Int32) { sqlite3_bind_int64(handle, index, value) }
    /// Binds a floating-point value.
    /// Binds a floating-point value; NaN, which SQLite would store as NULL, fails the next run.
    @inline(__always) public func bind(double value: Double, at index: Int32) {
        if value.isNaN { failedBind = index; failedBindCode = Self.notANumberCode }
        sqlite3_bind_double(handle, index, value)
    }
    /// Binds UTF-8 text. SQLite copies it before this returns, unless `copying` is false: then the bytes must
    /// stay valid and unchanged until the statement has run (bulk loads keep them in an arena to save a copy).
    @inline(__always) public func bind(text bytes: UnsafeBufferPointer<UInt8>, at index: Int32, copying: Bool = true) {
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            sqlite3_bind_text(handle, index, "", 0, nil)
            return
        }
        let code = base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
            sqlite3_bind_text64(handle, index, $0, UInt64(bytes.count), copying ? SQLITE_TRANSIENT : nil, UInt8(SQLITE_UTF8))
        }
        noteBind(code, at: index)
    }

    /// Binds bytes as a blob, copied by SQLite before this returns.
    @inline(__always) public func bind(blob bytes: UnsafeBufferPointer<UInt8>, at index: Int32) {
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            sqlite3_bind_zeroblob(handle, index, 0)
            return
        }
        noteBind(sqlite3_bind_blob64(handle, index, base, UInt64(bytes.count), SQLITE_TRANSIENT), at: index)
    }

    /// Runs the statement once with its current bindings and resets it, keeping the bindings.
    @inline(__always) public func run() throws {
        if failedBind != 0 { throw bindFailure() }
        if control != nil { try checkControl() }
        let code = sqlite3_step(handle)
        guard code == SQLITE_DONE || code == SQLITE_ROW else {
            let failure = error(code)
            sqlite3_reset(handle)
            transactionState?.check(failure, connection: connection)
            throw failure
        }
        if let control { transactionState?.ran(control) }
        sqlite3_reset(handle)
    }

    /// Advances one row; true while a row is available.
    @inline(__always)
    public func step() throws -> Bool {
        if control != nil { try checkControl() }
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE:
            if let control { transactionState?.ran(control) }
            return false
        case let code:
            let failure = error(code)
            sqlite3_reset(handle)
            transactionState?.check(failure, connection: connection)
            throw failure
        }
    }

    /// Runs the statement to completion with the given arguments.
    public func execute(_ arguments: StatementArguments = .none) throws {
        try bind(arguments)
        defer { sqlite3_reset(handle) }
        while try step() {}
    }

    /// Advances to the next row; false after the last. Throws SQLite's error.
    public func next() throws -> Bool { try step() }

    /// The value of a 0-based column in the current row.
    public func value(at index: Int32) -> DatabaseValue {
        switch sqlite3_column_type(handle, index) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_column_int64(handle, index))
        case SQLITE_FLOAT:
            return .real(sqlite3_column_double(handle, index))
        case SQLITE_TEXT:
            guard let text = sqlite3_column_text(handle, index) else { return .text("") }
            let length = Int(sqlite3_column_bytes(handle, index))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: length), as: UTF8.self))
        case SQLITE_BLOB:
            let length = Int(sqlite3_column_bytes(handle, index))
            guard let bytes = sqlite3_column_blob(handle, index), length > 0 else { return .blob(Data()) }
            return .blob(Data(bytes: bytes, count: length))
        default:
            return .null
        }
    }

    func currentRow() -> Row {
        let count = Int32(sqlite3_column_count(handle))
        var values: [DatabaseValue] = []
        values.reserveCapacity(Int(count))
        for index in 0..<count { values.append(value(at: index)) }
        return Row(layout: layout, values: values)
    }

    /// Ends reading: the statement can be bound and run again (and the statement cache may hand it out).
    public func reset() {
        sqlite3_reset(handle)
        isBusy = false
    }

    /// A column of the current row, read once. Each `sqlite3_column_*` call looks the column up and checks for
    /// allocation failures again; a decoder that checks the type before reading would pay that twice per field,
    /// so this reads through the column's `sqlite3_value`. SQLite documents such values as usable with the
    /// `sqlite3_value_*` readers when the connection needs no mutex, which `Database` ensures
    /// (`SQLITE_OPEN_NOMUTEX`).
    @inline(__always) public func column(at index: Int32) -> ColumnValue {
        Self.column(of: handle, at: index)
    }

    /// `column(at:)` for a statement handle, which the mapper's SQLite container holds instead of the statement.
    @inline(__always) static func column(of handle: OpaquePointer, at index: Int32) -> ColumnValue {
        let value = sqlite3_column_value(handle, index)
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_value_int64(value))
        case SQLITE_FLOAT:
            return .real(sqlite3_value_double(value))
        case SQLITE_TEXT:
            let text = sqlite3_value_text(value)
            return .text(UnsafeBufferPointer(start: text, count: text == nil ? 0 : Int(sqlite3_value_bytes(value))))
        case SQLITE_BLOB:
            let bytes = sqlite3_value_blob(value)?.assumingMemoryBound(to: UInt8.self)
            return .blob(UnsafeBufferPointer(start: bytes, count: bytes == nil ? 0 : Int(sqlite3_value_bytes(value))))
        default:
            return .null
        }
    }

    /// Refuses to run a statement that would end a `transaction`/`savepoint` scope open on the connection.
    /// Also refuses any statement while a scope's transaction is lost and the connection is in autocommit (the
    /// stand-in transaction could not be opened): it would be committed at once.
    private func checkControl() throws {
        if let state = transactionState, state.depth > 0, let lost = state.lostError, sqlite3_get_autocommit(connection) != 0 {
            throw DatabaseError(code: lost.extendedResultCode, message: lost.message + "; this statement did not run", sql: sql)
        }
        guard let control, let reason = transactionState?.refusal(control) else { return }
        throw DatabaseError.misuse(reason, sql: sql)
    }

    /// The remembered bulk-bind failure, cleared; the statement is reset so the next rows start clean.
    /// The code a NaN bind notes: none of SQLite's own, which never refuses one.
    private static let notANumberCode: Int32 = -1

    /// NaN, which SQLite stores as NULL: refused, since a row would silently lose the value.
    private func notANumber(at index: Int32) -> DatabaseError {
        DatabaseError(code: SQLITE_MISMATCH, message: "parameter \(index) is NaN, which SQLite would store as NULL "
                      + "(a Date that is NaN or infinite has no stored form either)", sql: sql)
    }

    private func bindFailure() -> DatabaseError {
        if failedBindCode == Self.notANumberCode {
            let failure = notANumber(at: failedBind)
            failedBind = 0
            sqlite3_reset(handle)
            return failure
        }
        let failure = DatabaseError(code: failedBindCode, message: "parameter \(failedBind) could not be bound: "
                                    + String(cString: sqlite3_errstr(failedBindCode)), sql: sql)
        failedBind = 0
        sqlite3_reset(handle)
        return failure
    }

    func error(_ code: Int32) -> DatabaseError {
        DatabaseError(code: code, message: errorMessage(connection, code: code), sql: sql)
    }
}
