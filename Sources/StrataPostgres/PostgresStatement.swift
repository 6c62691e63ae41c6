import CLibPQ
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataCore

/// One statement on a PostgreSQL connection, run with `PQexecParams` the first time its SQL runs on the session (so
/// the server plans it with the values bound, as psql would) and as a server-side prepared statement from the second
/// (`PostgresPreparedStatements`). Rows are read from the whole result and classified by the column's type
/// (`PostgresColumnKind`): integers, floats and booleans as numbers, `bytea` as bytes, arrays as JSON, everything
/// else (numeric, dates, uuid, json) as the server's text. A prepared statement's result comes in binary when every
/// column's type has a binary reading, and reads the same (`PostgresBinary`).
public final class PostgresStatement {
    unowned let connection: PostgresConnection
    /// The statement's SQL.
    public let sql: String
    private var parameters = PostgresParameters()
    /// A bind that failed (text with a NUL byte), reported by the next `run()` or `step()`.
    private var failedBind: DatabaseError?
    /// Owns the result `cursor` reads.
    private var result: PostgresResult?
    /// The current result and row, read by `column(at:)` and by the row container (`columnSource`).
    let cursor: UnsafeMutablePointer<PostgresResultCursor>
    private var cachedLayout: RowLayout?
    /// How many times the statement has run: from the second (or the second of its SQL on the session), it runs as a
    /// server-side prepared statement (`PostgresPreparedStatements`).
    private var executions = 0

    init(connection: PostgresConnection, sql: String) {
        self.connection = connection
        self.sql = sql
        cursor = .allocate(capacity: 1)
        cursor.initialize(to: PostgresResultCursor())
    }

    deinit {
        cursor.pointee.deallocate()
        cursor.deinitialize(count: 1)
        cursor.deallocate()
    }

    /// Column names of the result (described by the server when the statement has not run yet; a statement with
    /// more than `PostgresPreparedStatements.maximumParameters` parameters cannot be, and has none until `start()`).
    public var layout: RowLayout {
        if let cachedLayout { return cachedLayout }
        let names: [String]
        if let handle = result?.handle {
            names = (0..<PQnfields(handle)).map { String(cString: PQfname(handle, $0)) }
        } else {
            names = (try? describe()) ?? []
        }
        let layout = RowLayout(names: names)
        cachedLayout = layout
        return layout
    }

    private func describe() throws -> [String] {
        // The description lists the parameters too, and too many of them would cost the connection
        // (`PostgresPreparedStatements.maximumParameters`); `$n` is counted anywhere in the text, literals included,
        // which can only overcount.
        guard Self.highestPlaceholder(in: sql) <= PostgresPreparedStatements.maximumParameters else {
            throw DatabaseError(kind: .misuse, code: nil,
                                message: "a statement with more than \(PostgresPreparedStatements.maximumParameters) parameters cannot be described before it runs; run it first",
                                sql: sql)
        }
        let prepared = PostgresResult(PQprepare(connection.handle, "", sql, 0, nil))
        try connection.check(prepared, sql: sql)
        let described = PostgresResult(PQdescribePrepared(connection.handle, ""))
        try connection.check(described, sql: sql)
        guard let handle = described.handle else { return [] }
        return (0..<PQnfields(handle)).map { String(cString: PQfname(handle, $0)) }
    }

    /// The highest `$n` written anywhere in `sql` (0 for none).
    static func highestPlaceholder(in sql: String) -> Int {
        var highest = 0
        var number: Int?
        for byte in sql.utf8 {
            if byte == UInt8(ascii: "$") {
                number = 0
            } else if let current = number, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
                // Past any real parameter number; clamped so a long run of digits cannot overflow.
                number = min(current * 10 + Int(byte - UInt8(ascii: "0")), Int(Int32.max))
            } else {
                if let current = number { highest = max(highest, current) }
                number = nil
            }
        }
        return max(highest, number ?? 0)
    }

    /// Binds every argument; positional ones to `$1`, `$2`, … in order.
    public func bind(_ arguments: StatementArguments) throws {
        reset()
        failedBind = nil
        switch arguments {
        case .positional(let values):
            parameters = try PostgresParameters(values, sql: sql)
        case .positionalWithDates(let values, let dates):
            parameters = try PostgresParameters(StatementArguments.values(values, dates: dates, precision: PostgresDialect().datePrecision),
                                                sql: sql)
        case .named, .namedWithDates:
            throw DatabaseError(kind: .misuse, code: nil,
                                message: "named arguments are SQLite's; PostgreSQL statements take $1, $2, … with positional arguments",
                                sql: sql)
        case .unrepresentable(let error):
            throw DatabaseError(kind: error.kind, code: error.code, message: error.message, sql: sql)
        }
    }

    /// Binds one value to the 1-based parameter `index`.
    public func bind(_ value: DatabaseValue, at index: Int32) throws {
        try parameters.set(value, at: Int(index), sql: sql)
    }

    /// Binds NULL to the 1-based parameter `index`.
    public func bindNull(at index: Int32) { setRemembering(.null, at: index) }
    /// Binds an integer to the 1-based parameter `index`.
    public func bind(int64 value: Int64, at index: Int32) { setRemembering(.integer(value), at: index) }
    /// Binds a floating-point number to the 1-based parameter `index`.
    public func bind(double value: Double, at index: Int32) { setRemembering(.real(value), at: index) }

    /// Binds UTF-8 text to the 1-based parameter `index`.
    public func bind(text bytes: UnsafeBufferPointer<UInt8>, at index: Int32, copying: Bool) {
        // Text is copied into the parameter list either way; `copying` only matters to backends that borrow.
        let text = String(decoding: bytes, as: UTF8.self)
        setRemembering(.text(text), at: index)
        if !text.utf8.elementsEqual(bytes), failedBind == nil {
            failedBind = DatabaseError(kind: .conversion, code: nil,
                                       message: "parameter \(index) is not valid UTF-8 text", sql: sql)
        }
    }

    /// Binds bytes to the 1-based parameter `index`.
    public func bind(blob bytes: UnsafeBufferPointer<UInt8>, at index: Int32) {
        setRemembering(.blob(Data(bytes)), at: index)
    }

    private func setRemembering(_ value: DatabaseValue, at index: Int32) {
        do {
            try parameters.set(value, at: Int(index), sql: sql)
        } catch let error as DatabaseError {
            if failedBind == nil { failedBind = error }
        } catch {
            if failedBind == nil { failedBind = DatabaseError(kind: .other, message: "\(error)", sql: sql) }
        }
    }

    private func takeBindFailure() throws {
        if let failedBind {
            self.failedBind = nil
            throw failedBind
        }
    }

    /// Runs the statement once with its current bindings.
    public func run() throws {
        try takeBindFailure()
        reset()
        _ = try execute()
    }

    private func execute() throws -> PostgresResult {
        // Through a pooler, outside any transaction, a statement whose reading or writing Strata's settings decide runs
        // in one of its own that sets them (`inSettingsTransaction`): set for the session, they would stay on a pooled
        // server connection. Unprepared: preparing it would cost two more round trips for one run.
        if connection.reachesServerThroughPooler, connection.transactionStatus == PQTRANS_IDLE, connection.transactionOwner == nil,
           Self.runsInATransaction(sql) {
            executions += 1
            return try connection.inSettingsTransaction {
                try connection.run(sql, parameters, binary: connection.prepared.readsInBinary(sql, connection: connection))
            }
        }
        executions += 1
        // A batch's statement, run again and again, is prepared from its second run.
        if executions > 1 || connection.preparesEveryStatement { return try connection.runPrepared(sql, parameters) }
        // Any other run is parsed anew, as psql's would be (a prepared statement would keep reading a table that a
        // later one earlier on `search_path` shadows), with its result in binary when an earlier text run of this
        // SQL on the session was a SELECT whose columns all have a binary reading.
        return try connection.run(sql, parameters, binary: connection.prepared.readsInBinary(sql, connection: connection))
    }

    /// Whether `sql` is a query or a row change (its first word `SELECT`, `WITH`, `VALUES`, `TABLE`, `SHOW`, `INSERT`,
    /// `UPDATE`, `DELETE` or `MERGE`, after any comments and opening parentheses), which can run inside a transaction
    /// block; other commands (`CREATE DATABASE`, `VACUUM`, `CREATE INDEX CONCURRENTLY`) may not.
    static func runsInATransaction(_ sql: String) -> Bool {
        var bytes = Substring(sql).utf8[...]
        while let first = bytes.first {
            if first == UInt8(ascii: "(") || first == UInt8(ascii: " ") || (9...13).contains(first) {
                bytes = bytes.dropFirst()
            } else if bytes.starts(with: "--".utf8) {
                bytes = bytes.drop { $0 != UInt8(ascii: "\n") }
            } else if bytes.starts(with: "/*".utf8) {
                // Not nested: a statement Strata sends itself starts with one plain comment at most.
                guard let end = bytes.indices.first(where: { bytes[$0...].starts(with: "*/".utf8) }) else { return false }
                bytes = bytes[end...].dropFirst(2)
            } else {
                break
            }
        }
        let word = String(decoding: bytes.prefix { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0 | 0x20) }, as: UTF8.self).uppercased()
        return ["SELECT", "WITH", "VALUES", "TABLE", "SHOW", "INSERT", "UPDATE", "DELETE", "MERGE"].contains(word)
    }

    /// Moves to the next row, running the statement first if needed; false when there are no more.
    public func step() throws -> Bool {
        try start()
        guard result != nil, cursor.pointee.row < cursor.pointee.rowCount else { return false }
        cursor.pointee.row += 1
        return cursor.pointee.row < cursor.pointee.rowCount
    }

    /// Runs the statement unless its result is already there, positioned before the first row: its layout is then
    /// the result's, which needs no description (a statement with too many parameters cannot be described).
    public func start() throws {
        if result == nil {
            try takeBindFailure()
            let executed = try execute()
            guard cursor.pointee.start(executed) else {
                // A binary result with a column of a type that has no binary reading: the table changed since the
                // text run this SQL's reading was learned from. Not run again: a statement reporting SELECT may still
                // write (a data-modifying WITH, nextval, a volatile function). The next run reads text.
                connection.prepared.forgetBinary(sql)
                throw DatabaseError(kind: .other, code: nil,
                                    message: "the result came in binary, as an earlier run of this SQL on the session showed it could, but a column's type has changed since to one Strata does not read in binary; nothing was read, and the statement ran once: run it again to read it as text",
                                    sql: sql)
            }
            if executions == 1 { connection.prepared.learn(from: executed, sql: sql) }
            result = executed
            cachedLayout = nil
        }
    }

    /// Discards the result, so the statement can run again with new arguments.
    public func reset() {
        cursor.pointee.clear()
        result = nil
    }

    /// A column of the current row, classified by the column's type.
    public func column(at index: Int32) -> ColumnValue {
        PostgresResultCursor.column(of: cursor, at: index)
    }

    /// The current row's value of the 0-based column `index`.
    public func value(at index: Int32) -> DatabaseValue {
        switch column(at: index) {
        case .null: .null
        case .integer(let value): .integer(value)
        case .real(let value): .real(value)
        case .text(let bytes): .text(String(decoding: bytes, as: UTF8.self))
        case .blob(let bytes): .blob(Data(bytes))
        }
    }

    /// Every remaining row of the result.
    func remainingRows() throws -> [Row] {
        var rows: [Row] = []
        while try step() {
            let count = Int32(layout.names.count)
            rows.append(Row(layout: layout, values: (0..<count).map(value(at:))))
        }
        return rows
    }
}

extension PostgresStatement: PreparedStatement {}

/// Type OIDs from `pg_type` that reading and writing need (fixed by PostgreSQL's catalog, `pg_type.dat`).
enum PostgresType {
    static let bool: Oid = 16
    static let bytea: Oid = 17
    static let int8: Oid = 20
    static let int2: Oid = 21
    static let int4: Oid = 23
    static let oid: Oid = 26
    static let float4: Oid = 700
    static let float8: Oid = 701
    static let name: Oid = 19
    static let text: Oid = 25
    static let json: Oid = 114
    static let bpchar: Oid = 1042
    static let varchar: Oid = 1043
    static let date: Oid = 1082
    static let timestamp: Oid = 1114
    static let timestamptz: Oid = 1184
    static let numeric: Oid = 1700
    static let uuid: Oid = 2950
    static let jsonb: Oid = 3802
}

/// Parsers for libpq's text format of the types read as numbers and bytes.
enum PostgresText {
    /// A decimal integer that fits `Int64`, else nil.
    static func integer(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard !bytes.isEmpty else { return nil }
        let negative = bytes[0] == UInt8(ascii: "-")
        var value: Int64 = 0
        var index = negative ? 1 : 0
        guard index < bytes.count else { return nil }
        while index < bytes.count {
            let digit = bytes[index] &- 48
            guard digit < 10 else { return nil }
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = negative ? times.subtractingReportingOverflow(Int64(digit))
                                             : times.addingReportingOverflow(Int64(digit))
            guard !overflow1, !overflow2 else { return nil }
            value = next
            index += 1
        }
        return value
    }

    static func double(_ bytes: UnsafeBufferPointer<UInt8>) -> Double? {
        let text = String(decoding: bytes, as: UTF8.self)
        switch text {
        case "NaN": return .nan
        case "Infinity": return .infinity
        case "-Infinity": return -.infinity
        default: return Double(text)
        }
    }

    /// `bytea` in the hex output format (`\x0a1b…`), the default since PostgreSQL 9.0, or the escape format a session
    /// set to `bytea_output = 'escape'` prints (`\\` for a backslash, `\ooo` in octal for other bytes outside
    /// printable ASCII): a backslash is always escaped there, so the two cannot be mistaken for each other.
    static func bytea(_ bytes: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard bytes.count >= 2, bytes[0] == UInt8(ascii: "\\"), bytes[1] == UInt8(ascii: "x") else { return byteaEscaped(bytes) }
        guard bytes.count % 2 == 0 else { return nil }
        var decoded: [UInt8] = []
        decoded.reserveCapacity((bytes.count - 2) / 2)
        var index = 2
        while index < bytes.count {
            guard let high = nibble(bytes[index]), let low = nibble(bytes[index + 1]) else { return nil }
            decoded.append(high << 4 | low)
            index += 2
        }
        return decoded
    }

    private static func byteaEscaped(_ bytes: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = 0
        func octal(_ byte: UInt8) -> UInt8? { (UInt8(ascii: "0")...UInt8(ascii: "7")).contains(byte) ? byte - UInt8(ascii: "0") : nil }
        while index < bytes.count {
            guard bytes[index] == UInt8(ascii: "\\") else {
                decoded.append(bytes[index])
                index += 1
                continue
            }
            if index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "\\") {
                decoded.append(UInt8(ascii: "\\"))
                index += 2
            } else if index + 3 < bytes.count, let a = octal(bytes[index + 1]), let b = octal(bytes[index + 2]),
                      let c = octal(bytes[index + 3]), a <= 3 {
                decoded.append(a << 6 | b << 3 | c)
                index += 4
            } else {
                return nil
            }
        }
        return decoded
    }

    private static func nibble(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
