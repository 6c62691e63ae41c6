import CSQLite
import Foundation

/// Every failure of the database layer: SQLite's result codes and message, and the SQL that failed.
public struct DatabaseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The primary result code (`SQLITE_CONSTRAINT`, `SQLITE_BUSY`, …).
    public var resultCode: Int32 { extendedResultCode & 0xff }
    /// The extended result code (`SQLITE_CONSTRAINT_UNIQUE`, …); equals `resultCode` where SQLite has none.
    public let extendedResultCode: Int32
    /// SQLite's message, or Strata's for misuse detected before SQLite ran anything.
    public let message: String
    /// The statement that failed, shortened to a readable length.
    public let sql: String?
    /// 1-based line and column of the failing statement's start, for errors from `executeScript`.
    public let line: Int?
    public let column: Int?

    public init(code: Int32, message: String, sql: String? = nil, line: Int? = nil, column: Int? = nil) {
        self.extendedResultCode = code
        self.message = message
        self.sql = sql.map(DatabaseError.shorten)
        self.line = line
        self.column = column
    }

    /// An error detected by Strata before SQLite ran anything (wrong arguments, nested transactions).
    static func misuse(_ message: String, sql: String? = nil) -> DatabaseError {
        DatabaseError(code: SQLITE_MISUSE, message: message, sql: sql)
    }

    func at(line: Int, column: Int) -> DatabaseError {
        DatabaseError(code: extendedResultCode, message: message, sql: sql, line: line, column: column)
    }

    /// What went wrong, in terms that do not depend on one database's result codes: code outside the SQLite layer
    /// decides on this, never on a SQLite constant.
    public enum Kind: String, Sendable, Equatable {
        /// Another connection held a lock past the busy timeout.
        case busy
        /// A constraint (UNIQUE, NOT NULL, CHECK, FOREIGN KEY) refused the change.
        case constraint
        /// The database or its file is read-only.
        case readOnly
        /// The disk (or the database's size limit) is full.
        case diskFull
        /// The SQL is wrong: syntax, a missing table or column.
        case syntax
        /// The API was used wrongly (wrong arguments, a closed connection, nested transactions).
        case misuse
        /// A value did not fit where it was to go (type, range, size).
        case conversion
        /// The database file could not be opened or read.
        case cannotOpen
        /// Refused by an authorization rule (what a migration may do).
        case authorization
        /// An I/O error, corruption, or anything else.
        case other
    }

    /// What went wrong; `extendedResultCode` keeps SQLite's own code.
    public var kind: Kind {
        switch resultCode {
        case SQLITE_BUSY, SQLITE_LOCKED: .busy
        case SQLITE_CONSTRAINT: .constraint
        case SQLITE_READONLY: .readOnly
        case SQLITE_FULL: .diskFull
        case SQLITE_ERROR: .syntax
        case SQLITE_MISUSE: .misuse
        case SQLITE_MISMATCH, SQLITE_RANGE, SQLITE_TOOBIG: .conversion
        case SQLITE_CANTOPEN: .cannotOpen
        case SQLITE_AUTH: .authorization
        default: .other
        }
    }

    /// An error of a kind, made outside the SQLite layer (it carries SQLite's closest code).
    public init(kind: Kind, message: String, sql: String? = nil) {
        let code: Int32 = switch kind {
        case .busy: SQLITE_BUSY
        case .constraint: SQLITE_CONSTRAINT
        case .readOnly: SQLITE_READONLY
        case .diskFull: SQLITE_FULL
        case .syntax: SQLITE_ERROR
        case .misuse: SQLITE_MISUSE
        case .conversion: SQLITE_MISMATCH
        case .cannotOpen: SQLITE_CANTOPEN
        case .authorization: SQLITE_AUTH
        case .other: SQLITE_IOERR
        }
        self.init(code: code, message: message, sql: sql)
    }

    /// SQLite's name for the primary code, e.g. "constraint failed".
    public var codeDescription: String {
        String(cString: sqlite3_errstr(resultCode))
    }

    public var description: String {
        var text = "SQLite error \(extendedResultCode) (\(codeDescription))"
        if let line, let column { text += " at line \(line), column \(column)" }
        text += ": \(message)"
        if let sql { text += " — in: \(sql)" }
        return text
    }

    static func shorten(_ sql: String) -> String {
        let flat = sql.split(whereSeparator: \.isNewline).joined(separator: " ")
            .trimmingCharacters(in: .whitespaces)
        return flat.truncated(to: 200)
    }
}

extension String {
    /// At most `limit` characters: a longer text keeps its start and ends in "...", for error messages.
    func truncated(to limit: Int) -> String {
        count > limit ? String(prefix(limit - 3)) + "..." : self
    }
}

