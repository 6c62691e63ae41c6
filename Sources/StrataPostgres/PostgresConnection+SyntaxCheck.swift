import CLibPQ
import StrataCore

extension PostgresConnection {
    /// `strata validate`'s check of a PostgreSQL migration by the server: each statement of `bytes` (a migration's up
    /// section) is sent to be parsed (the extended protocol's Parse, as the unnamed statement) and never run, inside a
    /// read-only transaction that is rolled back, so nothing is written and no lock outlives the check. A syntax error
    /// (SQLSTATE 42601) is a finding at the line and column the server points to; any other refusal (a table no
    /// earlier file has made yet: the server analyses the statements it can) is not the statement's syntax and is
    /// left out. Lines and columns are 1-based within `bytes`.
    public func syntaxFindings(in bytes: [UInt8]) throws -> [LintFinding] {
        // Plain PQexec: none of a step's bookkeeping (`executeSimple`) applies to the check's own statements.
        func run(_ sql: String) throws {
            try check(PostgresResult(PQexec(handle, sql)), sql: sql)
        }
        try run("BEGIN READ ONLY; SET LOCAL lock_timeout = '2s'; SAVEPOINT strata_syntax_check")
        defer { _ = PostgresResult(PQexec(handle, "ROLLBACK")) }
        var script = PostgresScript(bytes: bytes)
        var findings: [LintFinding] = []
        // Text the reader cannot read to its end is the lint's to report.
        while let piece = try? script.next() {
            let statement: PostgresStatementText
            switch piece {
            case .statement(let text): statement = text
            case .copy(let text, _):
                statement = text
                while (try? script.nextCopyData()) != nil {}
            case .metaCommand: continue
            }
            let result = PostgresResult(PQprepare(handle, "", statement.sql, 0, nil))
            if PQresultStatus(result.handle) != PGRES_COMMAND_OK, let failed = result.handle {
                let state = PQresultErrorField(failed, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
                if state == "42601" {
                    let message = PQresultErrorField(failed, Int32(UInt8(ascii: "M"))).map { String(cString: $0) } ?? "syntax error"
                    var place = (line: statement.line, column: statement.column)
                    if let position = PQresultErrorField(failed, Int32(UInt8(ascii: "P"))), let offset = Int(String(cString: position)) {
                        place = statement.location(ofPosition: offset)
                    }
                    findings.append(LintFinding(line: place.line, column: place.column, message: message))
                }
                try run("ROLLBACK TO SAVEPOINT strata_syntax_check")
            }
        }
        return findings
    }
}
