#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Every failure of the database layer, whichever database: what kind of failure it was, the backend's own code
/// and message, and the SQL that failed.
///
/// Code outside a backend decides on `kind`; `code` keeps what the database itself said (SQLite's extended result
/// code, PostgreSQL's SQLSTATE) for messages and for programs that need the detail.
public struct DatabaseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What went wrong, in terms that do not depend on one database's codes.
    public let kind: Kind
    /// The database's own code, or nil for a failure Strata detected before the database ran anything.
    public let code: BackendCode?
    /// The database's message, or Strata's for misuse detected before the database ran anything.
    public let message: String
    /// The statement that failed, shortened to a readable length.
    public let sql: String?
    /// 1-based line and column of the failing statement's start, for errors from a script.
    public let line: Int?
    /// The 1-based column of the failing statement's start, for errors from a script (see `line`).
    public let column: Int?
    /// The constraint the database names as the one refused, where it names one (PostgreSQL's error fields); nil
    /// otherwise (SQLite names a constraint only in its message).
    public let constraint: Constraint?

    /// An error as a backend reports it: its kind, and its own code.
    public init(kind: Kind, code: BackendCode?, message: String, sql: String? = nil, line: Int? = nil, column: Int? = nil,
                constraint: Constraint? = nil) {
        self.kind = kind
        self.code = code
        self.message = message
        self.sql = sql.map(DatabaseError.shorten)
        self.line = line
        self.column = column
        self.constraint = constraint
    }

    /// A constraint a database names in an error: for a unique violation, the index that refused the row.
    public struct Constraint: Sendable, Equatable {
        /// The schema of its table, where the database says.
        public let schema: String?
        /// Its table, where the database says.
        public let table: String?
        /// The constraint's (or the unique index's) name.
        public let name: String

        /// Creates the name of a constraint, with its table and schema where known.
        public init(schema: String?, table: String?, name: String) {
            self.schema = schema
            self.table = table
            self.name = name
        }
    }

    /// An error of a kind detected by Strata itself, before or outside the database.
    public init(kind: Kind, message: String, sql: String? = nil) {
        self.init(kind: kind, code: nil, message: message, sql: sql)
    }

    /// An error detected by Strata before the database ran anything (wrong arguments, nested transactions).
    package static func misuse(_ message: String, sql: String? = nil) -> DatabaseError {
        DatabaseError(kind: .misuse, message: message, sql: sql)
    }

    /// The same error, placed at a line and column of a script.
    package func at(line: Int, column: Int) -> DatabaseError {
        DatabaseError(kind: kind, code: code, message: message, sql: sql, line: line, column: column, constraint: constraint)
    }

    /// The same error with another message (the code and place kept).
    package func with(message: String) -> DatabaseError {
        DatabaseError(kind: kind, code: code, message: message, sql: sql, line: line, column: column, constraint: constraint)
    }

    /// The same error, said to have come from another statement (a step's `COMMIT`).
    package func from(sql: String) -> DatabaseError {
        DatabaseError(kind: kind, code: code, message: message, sql: sql, line: line, column: column, constraint: constraint)
    }

    /// What went wrong, in terms that do not depend on one database's result codes.
    public enum Kind: String, Sendable, Equatable {
        /// A wait Strata bounded itself ran out: another connection held the lock past the busy timeout (SQLite),
        /// another deployer held Strata's lock past the connection's lock timeout (PostgreSQL), or every connection
        /// of a pool stayed in use past its checkout timeout. A statement the server stopped is not `busy`
        /// (`statementTimeout`, `interrupted`, `deadlock`).
        case busy
        /// A statement gave up waiting for a lock another session held, at the lock timeout the step runs with
        /// (PostgreSQL's `lock_timeout`, or `NOWAIT`). Nothing is wrong with the statement, and the transaction it
        /// ran in was rolled back: run again once that session is done, the same step can succeed. The runner
        /// retries transactional steps that fail this way (`MigrationOptions.lockRetries`).
        case lockNotAvailable
        /// The database broke a deadlock by failing this statement (PostgreSQL's 40P01): this session and another
        /// each waited for a lock the other held. The transaction it ran in was rolled back and the other went on;
        /// run again, the same step can succeed. The runner retries transactional steps that fail this way, as it does
        /// `lockNotAvailable` (`MigrationOptions.lockRetries`). The message carries the server's detail.
        case deadlock
        /// The statement ran longer than the statement timeout in force (PostgreSQL's `statement_timeout`, whether a
        /// run, a pool call, the role, the database or the server set it) and was stopped; the transaction it ran in
        /// was rolled back. Not retried: it would likely run as long again.
        case statementTimeout
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
        /// The database could not be opened or read.
        case cannotOpen
        /// Refused by an authorization rule (what a migration may do).
        case authorization
        /// The statement was stopped by a request to interrupt it (SQLite's `interrupt()`; on PostgreSQL a cancel
        /// request, `pg_cancel_backend()` from another session or a client's cancel). Nothing is wrong with it; what
        /// it had changed is undone, and a write interrupted inside a transaction rolls that back too. A PostgreSQL
        /// server whose messages are not in English reports its statement timeouts as this kind too (both are
        /// SQLSTATE 57014): its message, in its own language, then says which it was.
        case interrupted
        /// An I/O error, corruption, or anything else.
        case other
    }

    /// Whether the runner rolls back a transactional step that failed with this error and runs it again
    /// (`MigrationOptions.lockRetries`): it lost a wait for another session's lock, by the lock timeout or as a
    /// deadlock's victim, and nothing is wrong with the step itself.
    package var isRetriedByTheRunner: Bool {
        kind == .lockNotAvailable || kind == .deadlock
    }

    /// The message, with the backend's code and the place where known.
    public var description: String {
        var text = code.map { "\($0.backend) error \($0.value) (\($0.name))" } ?? "error (\(kind.rawValue))"
        if let line, let column { text += " at line \(line), column \(column)" }
        text += ": \(message)"
        if let sql { text += " — in: \(sql)" }
        return text
    }

    static func shorten(_ sql: String) -> String {
        let flat = sql.split(whereSeparator: \.isNewline).joined(separator: " ")
            .trimmingWhitespace()
        return flat.truncated(to: 200)
    }
}

extension String {
    /// At most `limit` characters: a longer text keeps its start and ends in "...", for error messages.
    package func truncated(to limit: Int) -> String {
        count > limit ? String(prefix(limit - 3)) + "..." : self
    }
}


/// A database's own code for a failure: which database, the code as it writes it, and its name for it.
public struct BackendCode: Sendable, Equatable, CustomStringConvertible {
    /// The database that reported it ("SQLite", "PostgreSQL").
    public let backend: String
    /// The code as the database writes it: SQLite's extended result code ("2067"), a SQLSTATE ("23505").
    public let value: String
    /// The database's name for the code ("constraint failed").
    public let name: String

    /// Creates a code as the backend names it.
    public init(backend: String, value: String, name: String) {
        self.backend = backend
        self.value = value
        self.name = name
    }

    /// The backend, the code and its name.
    public var description: String { "\(backend) \(value) (\(name))" }
}
