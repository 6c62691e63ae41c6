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

    /// Another connection held a lock past the busy timeout.
    public var isBusy: Bool { resultCode == SQLITE_BUSY }

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

