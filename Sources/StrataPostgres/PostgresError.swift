import CLibPQ
import StrataCore

/// PostgreSQL's errors as `DatabaseError`s: the kind decided from the SQLSTATE's class, the SQLSTATE kept as the
/// backend code, and the server's detail and hint appended to the message.
enum PostgresError {
    /// The server's words for a statement its `statement_timeout` stopped (SQLSTATE 57014, which a cancel request
    /// raises too, as "canceling statement due to user request"). Only an English message tells them apart.
    static let statementTimeoutMessage = "canceling statement due to statement timeout"
    static let cancelRequestMessage = "canceling statement due to user request"

    /// The kind of failure a SQLSTATE (with the server's message) reports. Classes per the PostgreSQL manual's
    /// appendix "Error Codes".
    static func kind(ofSQLState state: String, message: String) -> DatabaseError.Kind {
        switch state {
        case "55P03": return .lockNotAvailable                  // lock_not_available: lock_timeout or NOWAIT
        case "40P01": return .deadlock                          // deadlock_detected
        case "57014":                                           // query_canceled: statement_timeout or a cancel
            return message.hasPrefix(statementTimeoutMessage) ? .statementTimeout : .interrupted
        case "25006": return .readOnly                          // read_only_sql_transaction (a hot standby)
        case "53100": return .diskFull
        case "42501": return .authorization                     // insufficient_privilege
        default: break
        }
        switch state.prefix(2) {
        case "23": return .constraint
        case "42": return .syntax                               // syntax error or access rule violation
        case "22": return .conversion                           // data exception
        case "08", "28", "3D", "57": return .cannotOpen         // connection, authorization, database, shutdown
        case "53": return .diskFull                             // insufficient resources
        case "25", "26", "2D", "34", "0A": return .misuse       // transaction state, statement name, cursor, unsupported
        default: return .other
        }
    }

    /// The error a failed result reports, or the connection's message when there is no result.
    static func error(_ result: OpaquePointer?, connection: OpaquePointer?, sql: String?) -> DatabaseError {
        func field(_ code: Int32) -> String? {
            guard let result, let value = PQresultErrorField(result, code) else { return nil }
            return String(cString: value)
        }
        let state = field(Int32(UInt8(ascii: "C"))) ?? "08006"
        var message = field(Int32(UInt8(ascii: "M")))
            ?? connection.flatMap { PQerrorMessage($0) }.map { String(cString: $0) }?.trimmingWhitespace()
            ?? "no response from the server"
        let kind = kind(ofSQLState: state, message: message)
        if state == "57014" && message.hasPrefix(cancelRequestMessage) {
            message += " (a cancel request: another session's pg_cancel_backend, or a client's cancel)"
        }
        if let detail = field(Int32(UInt8(ascii: "D"))) { message += " (detail: \(detail))" }
        if let hint = field(Int32(UInt8(ascii: "H"))) { message += " (hint: \(hint))" }
        let code = BackendCode(backend: "PostgreSQL", value: state, name: name(ofSQLState: state))
        // PG_DIAG_SCHEMA_NAME, PG_DIAG_TABLE_NAME, PG_DIAG_CONSTRAINT_NAME: which constraint refused the row, for
        // callers that must look it up (a rehearsal judging whether migrate would meet it the same way).
        let constraint = field(Int32(UInt8(ascii: "n"))).map {
            DatabaseError.Constraint(schema: field(Int32(UInt8(ascii: "s"))), table: field(Int32(UInt8(ascii: "t"))), name: $0)
        }
        return DatabaseError(kind: kind, code: code, message: message, sql: sql, constraint: constraint)
    }

    /// A readable name for the SQLSTATEs Strata meets most; the class name otherwise.
    static func name(ofSQLState state: String) -> String {
        switch state {
        case "23505": "unique_violation"
        case "23503": "foreign_key_violation"
        case "23502": "not_null_violation"
        case "23514": "check_violation"
        case "42601": "syntax_error"
        case "42P01": "undefined_table"
        case "42703": "undefined_column"
        case "42P07": "duplicate_table"
        case "55P03": "lock_not_available"
        case "40P01": "deadlock_detected"
        case "57014": "query_canceled"
        case "25006": "read_only_sql_transaction"
        case "25001": "active_sql_transaction"
        case "22P02": "invalid_text_representation"
        case "22003": "numeric_value_out_of_range"
        case "22001": "string_data_right_truncation"
        case "22007", "22008": "invalid_datetime"
        default:
            switch state.prefix(2) {
            case "23": "integrity_constraint_violation"
            case "42": "syntax_error_or_access_rule_violation"
            case "22": "data_exception"
            case "08": "connection_exception"
            case "25": "invalid_transaction_state"
            default: "SQLSTATE class \(state.prefix(2))"
            }
        }
    }
}

extension String {
    func trimmingWhitespace() -> String {
        var text = Substring(self)
        while let last = text.last, last.isWhitespace { text = text.dropLast() }
        while let first = text.first, first.isWhitespace { text = text.dropFirst() }
        return String(text)
    }
}
