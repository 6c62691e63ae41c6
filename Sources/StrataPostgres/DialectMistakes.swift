import StrataCore

/// SQL of the other backend in a migration file, found by `strata validate`: SQLite-only syntax in a file for
/// PostgreSQL (`AUTOINCREMENT`, `PRAGMA`, `WITHOUT ROWID`, `INSERT OR REPLACE`), PostgreSQL-only syntax in a file for
/// SQLite (`SERIAL`, `::` casts, `$$` bodies, `CREATE EXTENSION`, `CONCURRENTLY`). Read with PostgreSQL's reader, so
/// words inside strings, comments and dollar-quoted bodies are not taken for syntax. Only patterns that are wrong
/// wherever they stand are reported (a column may be named `autoincrement`): the check never stops a `migrate`.
public enum DialectMistakes {
    /// What of the other backend's SQL `bytes` (a migration's up section) holds, for a file run on `backend`.
    /// Lines and columns are 1-based within `bytes`.
    public static func findings(in bytes: [UInt8], for backend: DatabaseBackend) -> [LintFinding] {
        var script = PostgresScript(bytes: bytes)
        script.recordsTokens = true
        var findings: [LintFinding] = []
        // Text this reader cannot read to its end is the lint's to report.
        while let piece = try? script.next() {
            if case .metaCommand = piece { continue }
            for (offset, message) in backend == .postgresql ? sqliteOnly(script.tokens) : postgresOnly(script.tokens, bytes) {
                let place = position(of: offset, in: bytes)
                findings.append(LintFinding(line: place.line, column: place.column, message: message))
            }
        }
        return findings
    }

    /// SQLite's syntax in a statement for PostgreSQL: (byte offset, message).
    static func sqliteOnly(_ tokens: [PostgresToken]) -> [(Int, String)] {
        var found: [(Int, String)] = []
        func word(_ index: Int) -> String? {
            index >= 0 && index < tokens.count && tokens[index].kind == .word ? tokens[index].text : nil
        }
        let hint = "; PostgreSQL writes INSERT … ON CONFLICT (…) DO UPDATE / DO NOTHING"
        switch (word(0), word(1), word(2)) {
        case ("PRAGMA", _, _):
            found.append((tokens[0].range.lowerBound, "PRAGMA is SQLite's: PostgreSQL has none (its settings are SET or ALTER … SET)"))
        case ("INSERT", "OR", let action?) where ["REPLACE", "IGNORE", "ABORT", "FAIL", "ROLLBACK"].contains(action):
            found.append((tokens[1].range.lowerBound, "INSERT OR \(action) is SQLite's" + hint))
        case ("REPLACE", "INTO", _):
            found.append((tokens[0].range.lowerBound, "REPLACE INTO is SQLite's" + hint))
        case ("ATTACH", _, _), ("DETACH", _, _):
            found.append((tokens[0].range.lowerBound, "\(tokens[0].text) is SQLite's: PostgreSQL reaches other databases through extensions such as postgres_fdw"))
        default:
            break
        }
        for (index, token) in tokens.enumerated() where token.kind == .word {
            switch token.text {
            case "AUTOINCREMENT" where ["KEY", "ASC", "DESC"].contains(word(index - 1) ?? ""):
                found.append((token.range.lowerBound, "AUTOINCREMENT is SQLite's: in PostgreSQL write the column as integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY (or bigint …)"))
            case "ROWID" where word(index - 1) == "WITHOUT":
                found.append((tokens[index - 1].range.lowerBound, "WITHOUT ROWID is SQLite's table option: PostgreSQL tables have no rowid; leave it out"))
            case "STRICT" where index == tokens.count - 1 && index > 0 && tokens[index - 1].kind == .symbol && tokens[index - 1].text == ")"
                && word(0) == "CREATE":
                found.append((token.range.lowerBound, "STRICT is SQLite's table option: PostgreSQL's column types are always enforced; leave it out"))
            default:
                break
            }
        }
        return found
    }

    /// PostgreSQL's syntax in a statement for SQLite: (byte offset, message).
    static func postgresOnly(_ tokens: [PostgresToken], _ bytes: [UInt8]) -> [(Int, String)] {
        var found: [(Int, String)] = []
        func word(_ index: Int) -> String? {
            index >= 0 && index < tokens.count && tokens[index].kind == .word ? tokens[index].text : nil
        }
        if word(0) == "CREATE" {
            var next = 1
            if word(1) == "OR" && word(2) == "REPLACE" { next = 3 }
            if let kind = word(next), ["EXTENSION", "SCHEMA", "SEQUENCE", "DOMAIN", "FUNCTION", "PROCEDURE", "TYPE",
                                        "MATERIALIZED", "POLICY", "ROLE", "PUBLICATION"].contains(kind) {
                found.append((tokens[next].range.lowerBound, "CREATE \(kind) is PostgreSQL's: SQLite has no such object"))
            }
        }
        for (index, token) in tokens.enumerated() {
            switch token.kind {
            case .word where ["SERIAL", "BIGSERIAL", "SMALLSERIAL", "SERIAL4", "SERIAL8", "SERIAL2"].contains(token.text) && token.depth > 0:
                found.append((token.range.lowerBound, "\(token.text) is PostgreSQL's: SQLite takes it as a plain type name, and the column gets no automatic values; write INTEGER PRIMARY KEY"))
            case .word where token.text == "CONCURRENTLY" && (word(index - 1) == "INDEX" || word(index - 1) == "REFRESH"):
                found.append((token.range.lowerBound, "CONCURRENTLY is PostgreSQL's: SQLite builds an index in the statement's own transaction; leave it out"))
            case .symbol where token.text == ":" && index + 1 < tokens.count && tokens[index + 1].kind == .symbol
                && tokens[index + 1].text == ":" && tokens[index + 1].range.lowerBound == token.range.upperBound:
                found.append((token.range.lowerBound, ":: casts are PostgreSQL's: SQLite writes CAST(value AS type)"))
            case .string where token.range.lowerBound < bytes.count && bytes[token.range.lowerBound] == UInt8(ascii: "$"):
                found.append((token.range.lowerBound, "$$ quoting is PostgreSQL's: SQLite reads '$' as the start of a parameter name"))
            default:
                break
            }
        }
        return found
    }

    /// The 1-based line and column (in characters) of byte `offset` of `bytes`.
    static func position(of offset: Int, in bytes: [UInt8]) -> (line: Int, column: Int) {
        var line = 1
        var lineStart = 0
        for index in 0..<min(offset, bytes.count) where bytes[index] == UInt8(ascii: "\n") {
            line += 1
            lineStart = index + 1
        }
        let prefix = bytes[lineStart..<min(offset, bytes.count)]
        return (line, String(decoding: prefix, as: UTF8.self).count + 1)
    }
}
