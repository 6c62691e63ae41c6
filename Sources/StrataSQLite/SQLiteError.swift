import CSQLite
import StrataCore

extension DatabaseError {
    /// An error as SQLite reported it: its kind follows from the primary result code, and the extended code is kept.
    init(code: Int32, message: String, sql: String? = nil, line: Int? = nil, column: Int? = nil) {
        // SQLite's own message is the bare word; say who stopped the statement.
        let message = code & 0xff == SQLITE_INTERRUPT && message == "interrupted"
            ? "interrupted: interrupt() stopped the statement" : message
        self.init(kind: Self.kind(ofSQLiteCode: code & 0xff),
                  code: BackendCode(backend: "SQLite", value: String(code), name: String(cString: sqlite3_errstr(code & 0xff))),
                  message: message, sql: sql, line: line, column: column)
    }

    /// SQLite's extended result code (`SQLITE_CONSTRAINT_UNIQUE`, …); for an error Strata detected itself, or one
    /// from another backend, the SQLite code closest to its kind.
    public var extendedResultCode: Int32 {
        if let code, code.backend == "SQLite", let value = Int32(code.value) { return value }
        return Self.sqliteCode(of: kind)
    }

    /// SQLite's primary result code (`SQLITE_CONSTRAINT`, `SQLITE_BUSY`, …).
    public var resultCode: Int32 { extendedResultCode & 0xff }

    private static func kind(ofSQLiteCode code: Int32) -> Kind {
        switch code {
        case SQLITE_BUSY, SQLITE_LOCKED: .busy
        case SQLITE_CONSTRAINT: .constraint
        case SQLITE_READONLY: .readOnly
        case SQLITE_FULL: .diskFull
        case SQLITE_ERROR: .syntax
        case SQLITE_MISUSE: .misuse
        case SQLITE_MISMATCH, SQLITE_RANGE, SQLITE_TOOBIG: .conversion
        case SQLITE_CANTOPEN: .cannotOpen
        case SQLITE_AUTH: .authorization
        case SQLITE_INTERRUPT: .interrupted
        default: .other
        }
    }

    private static func sqliteCode(of kind: Kind) -> Int32 {
        switch kind {
        case .busy, .lockNotAvailable, .deadlock: SQLITE_BUSY
        case .constraint: SQLITE_CONSTRAINT
        case .readOnly: SQLITE_READONLY
        case .diskFull: SQLITE_FULL
        case .syntax: SQLITE_ERROR
        case .misuse: SQLITE_MISUSE
        case .conversion: SQLITE_MISMATCH
        case .cannotOpen: SQLITE_CANTOPEN
        case .authorization: SQLITE_AUTH
        case .interrupted, .statementTimeout: SQLITE_INTERRUPT
        case .other: SQLITE_IOERR
        }
    }
}
