import StrataCore

/// The `statement_timeout` a step began with and where it came from, so that a statement it stopped says which
/// setting stopped it and at what value: the run's own (`StatementLimits.statementTimeout`), or the server's, set
/// for the role, the database or the server (the server's message, "canceling statement due to statement timeout",
/// names neither). What the file sets for itself later is the file's to read; the message says "as the step began".
struct PostgresStatementTimeout: Equatable {
    /// As `SHOW statement_timeout` writes it: "1s", "1500ms", "0" (no limit).
    let value: String
    /// Where it was set: "the run's statement timeout", "set for role app (ALTER ROLE … SET statement_timeout)", …
    let origin: String
    /// Set by `SET LOCAL`: it ends with the transaction it was set in.
    let transactionLocal: Bool

    /// "statement_timeout was 1s as the step began: set for database appdb (…)".
    var explanation: String { "statement_timeout was \(value) as the step began: \(origin)" }

    /// A number of milliseconds as the server shows a `statement_timeout` of that many: in the largest unit that
    /// holds it exactly ("1s", "1500ms", "2min").
    static func showing(milliseconds: Int64) -> String {
        guard milliseconds > 0 else { return "0" }
        for (unit, size) in [("d", Int64(86_400_000)), ("h", 3_600_000), ("min", 60_000), ("s", 1000)] where milliseconds % size == 0 {
            return "\(milliseconds / size)\(unit)"
        }
        return "\(milliseconds)ms"
    }

    /// Where a setting whose `pg_settings.source` is `source` came from, for a session of `role` on `database`.
    static func origin(source: String, role: String, database: String) -> String {
        switch source {
        case "user": "set for role \(role) (ALTER ROLE … SET statement_timeout)"
        case "database": "set for database \(database) (ALTER DATABASE … SET statement_timeout)"
        case "database user": "set for role \(role) in database \(database) (ALTER ROLE … IN DATABASE … SET statement_timeout)"
        case "configuration file": "set in the server's configuration (postgresql.conf, or ALTER SYSTEM)"
        case "client": "set by the connection's options (options=-c… in its URL, or PGOPTIONS)"
        case "session": "set for the session (SET statement_timeout) before the run"
        default: "the server's setting (source: \(source))"
        }
    }
}

extension PostgresConnection {
    /// Notes the `statement_timeout` a step begins with, right after `limitStatements` set the step's bounds: the
    /// run's own when it set one, else the server's, read with where it was set (one query per step).
    func noteStatementTimeout(_ limits: StatementLimits, insideTransaction: Bool) throws {
        if let timeout = limits.statementTimeout {
            stepStatementTimeout = PostgresStatementTimeout(
                value: PostgresStatementTimeout.showing(milliseconds: Self.milliseconds(timeout)),
                origin: "the run's statement timeout", transactionLocal: insideTransaction)
            return
        }
        let row = try rows("""
            SELECT pg_catalog.current_setting('statement_timeout') AS value, source,
                   session_user::text AS role, pg_catalog.current_database()::text AS database
            FROM pg_catalog.pg_settings WHERE name = 'statement_timeout'
            """, .none).first
        stepStatementTimeout = try row.map { row in
            PostgresStatementTimeout(value: try row.get("value"),
                                     origin: PostgresStatementTimeout.origin(source: try row.get("source"), role: try row.get("role"),
                                                                            database: try row.get("database")),
                                     transactionLocal: false)
        }
    }

    /// Forgets the step's `statement_timeout` once it no longer holds: at the end of the transaction that set it
    /// locally (`transactionEnded`), or when the session is reset.
    func forgetStatementTimeout(transactionEnded: Bool) {
        if !transactionEnded || stepStatementTimeout?.transactionLocal == true { stepStatementTimeout = nil }
    }

    /// `error` saying which `statement_timeout` stopped its statement, when one did during a step: "canceling
    /// statement due to statement timeout (statement_timeout was 1s as the step began: set for role app …)". A
    /// server whose messages are not in English is not told apart from a cancel request, so both are said.
    func explainingStatementTimeout(_ error: DatabaseError) -> DatabaseError {
        guard error.code?.backend == "PostgreSQL", error.code?.value == "57014",
              let timeout = stepStatementTimeout, timeout.value != "0" else { return error }
        switch error.kind {
        case .statementTimeout:
            return error.with(message: "\(error.message) (\(timeout.explanation))")
        case .interrupted where !error.message.hasPrefix(PostgresError.cancelRequestMessage):
            return error.with(message: "\(error.message) (a statement timeout or a cancel request; \(timeout.explanation))")
        default:
            return error
        }
    }
}
