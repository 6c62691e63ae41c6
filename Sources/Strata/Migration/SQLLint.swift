/// Finds, before anything runs, what a migration file may not do: statements that cannot run inside the
/// transaction Strata wraps around a file, writes to Strata's history table, and text SQLite would not run to the
/// end (a NUL byte, an unterminated string or comment).
///
/// While a migration runs, SQLite's authorizer is the authority (see `ScriptRules`): it sees every statement after
/// parsing, including trigger bodies. `validate` cannot prepare statements whose tables only earlier files create, so
/// it applies the same rules here, to tokens read by the same scanner that splits statements for execution: quoted
/// identifiers are read as SQLite reads them (`PRAGMA "foreign_keys"`, `[foreign_keys]`, `main.foreign_keys`), and
/// words inside strings, comments and trigger bodies are not statements.
public enum SQLLint {
    /// A statement that a migration must not contain, or text that cannot run to its end.
    public struct Finding: Sendable, Equatable {
        public let line: Int
        public let column: Int
        public let message: String
    }

    /// Findings for a file that runs inside a transaction (`insideTransaction`) or with `transaction="none"`.
    public static func findings(in text: String, insideTransaction: Bool = true) -> [Finding] {
        findings(in: Array(text.utf8), insideTransaction: insideTransaction)
    }

    public static func findings(in bytes: [UInt8], insideTransaction: Bool = true) -> [Finding] {
        var findings: [Finding] = []
        if let nul = bytes.firstIndex(of: 0) {
            let at = position(in: bytes, at: nul)
            findings.append(Finding(line: at.line, column: at.column,
                message: "the file contains a NUL byte, which would silently end it for SQLite; remove it"))
        }
        let scan = statements(in: bytes)
        for statement in scan.statements {
            if let message = message(for: statement, insideTransaction: insideTransaction) {
                findings.append(Finding(line: statement.line, column: statement.column, message: message))
            }
        }
        if let open = scan.unterminated {
            findings.append(Finding(line: open.line, column: open.column,
                message: "the file ends inside a \(open.what) that starts here; nothing after it could run"))
        }
        return findings
    }

    private static func message(for statement: Statement, insideTransaction: Bool) -> String? {
        let words = statement.words
        guard let first = words.first else { return nil }
        if statement.mentionsHistory,
           ["INSERT", "REPLACE", "UPDATE", "DELETE", "DROP", "ALTER", "WITH"].contains(first)
            || (first == "CREATE" && (words.prefix(4).contains("TRIGGER") || createsHistoryName(words))) {
            return "this statement writes to \(HistoryStore.table), Strata's record of what was applied; migrations may not change it ('strata repair', 'strata resolve' and 'strata baseline' do, after a human has checked)"
        }
        if first == "PRAGMA", statement.hasAssignment, let name = pragmaName(words) {
            let value = statement.words.drop { $0 != "=" && $0 != "(" }.dropFirst().first ?? ""
            switch name {
            case "WRITABLE_SCHEMA":
                return "PRAGMA writable_schema lets SQL rewrite the schema behind SQLite's back; Strata refuses it in migrations"
            case "QUERY_ONLY":
                return "PRAGMA query_only would stop Strata recording the step; Strata refuses it in migrations"
            case "CASE_SENSITIVE_LIKE":
                return "PRAGMA case_sensitive_like changes LIKE for the rest of the run and cannot be read back to restore it; use GLOB or a COLLATE clause instead"
            case "JOURNAL_MODE" where !insideTransaction && (value == "OFF" || value == "MEMORY"):
                return "PRAGMA journal_mode = \(value) would leave later steps without a rollback journal on disk, so a failure or a crash could half-apply them; use DELETE, TRUNCATE, PERSIST or WAL"
            default:
                break
            }
        }
        guard insideTransaction else { return nil }
        let suffix = "; mark the file transaction=\"none\" in the manifest"
        switch first {
        case "VACUUM", "ATTACH", "DETACH":
            return "\(first) cannot run inside a transaction" + suffix
        case "PRAGMA":
            switch pragmaName(words) {
            case "FOREIGN_KEYS" where statement.hasAssignment:
                return "PRAGMA foreign_keys is silently ignored inside a transaction: Strata runs each migration with foreign keys off and checks them before commit; to enforce them while a file runs, set foreignKeys=\"on\" on its <migration>"
            case "JOURNAL_MODE" where statement.hasAssignment:
                return "PRAGMA journal_mode cannot change inside a transaction" + suffix
            default:
                return nil
            }
        case "BEGIN", "COMMIT", "END":
            return "\(first) would end the transaction Strata wraps around the file, breaking all-or-nothing" + suffix
        case "ROLLBACK" where !words.contains("TO"):
            return "ROLLBACK would end the transaction Strata wraps around the file, breaking all-or-nothing" + suffix
        default:
            return nil
        }
    }

    /// `PRAGMA [schema.]name = value` or `PRAGMA [schema.]name(value)`: the name.
    private static func pragmaName(_ words: [String]) -> String? {
        words.count > 2 && words[2] == "." ? words.dropFirst(3).first : words.dropFirst().first
    }

    /// `CREATE [TEMP|TEMPORARY] [VIRTUAL] TABLE|VIEW [IF NOT EXISTS] [schema.]strata_history`: another table of
    /// that name would take the history's place (a temp one is searched first).
    private static func createsHistoryName(_ words: [String]) -> Bool {
        var rest = words.dropFirst().drop { ["TEMP", "TEMPORARY", "VIRTUAL"].contains($0) }
        guard let kind = rest.first, kind == "TABLE" || kind == "VIEW" else { return false }
        rest = rest.dropFirst()
        if rest.starts(with: ["IF", "NOT", "EXISTS"]) { rest = rest.dropFirst(3) }
        if rest.count > 2, rest[rest.startIndex + 1] == "." { rest = rest.dropFirst(2) }
        return rest.first == HistoryStore.table.uppercased()
    }

    /// One statement as the lint sees it.
    struct Statement {
        var line: Int
        var column: Int
        /// The first tokens, upper-cased: words and quoted identifiers unquoted, and punctuation.
        var words: [String] = []
        /// Whether any word, quoted identifier or string in it names the history table.
        var mentionsHistory = false
        var hasAssignment: Bool { words.prefix(5).contains("=") || words.prefix(5).contains("(") }
    }

    /// The statements of a text, split exactly as execution splits them, and the literal or comment the text ends
    /// inside, if any.
    static func statements(in bytes: [UInt8]) -> (statements: [Statement], unterminated: (what: String, line: Int, column: Int)?) {
        var scanner = SQLScanner()
        var result: [Statement] = []
        var unterminated: (what: String, line: Int, column: Int)?
        bytes.withUnsafeBufferPointer { text in
            let start = text.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
            var tokens = LintTokens(text: text)
            var position = TextPosition()
            var positionOffset = start
            func add(_ range: Range<Int>) {
                position.advance(over: text, from: positionOffset, to: range.lowerBound)
                positionOffset = range.lowerBound
                result.append(Statement(line: position.line, column: position.column, words: tokens.words,
                                        mentionsHistory: tokens.mentionsHistory))
                tokens.reset()
            }
            var index = start
            while index < text.count {
                if let range = scanner.nextStatement(in: text, base: 0, index: &index, tokens: &tokens) { add(range) }
            }
            if let open = scanner.unterminated {
                var at = position
                at.advance(over: text, from: positionOffset, to: open.start)
                unterminated = (open.what, at.line, at.column)
            } else if let range = scanner.finish(at: text.count, tokens: &tokens) {
                add(range)
            }
        }
        return (result, unterminated)
    }

    private static func position(in bytes: [UInt8], at offset: Int) -> TextPosition {
        var position = TextPosition()
        bytes.withUnsafeBufferPointer { position.advance(over: $0, from: 0, to: offset) }
        return position
    }
}

/// Collects the first tokens of the statement being scanned, and whether it names the history table.
private struct LintTokens: SQLTokenSink {
    let text: UnsafeBufferPointer<UInt8>
    var words: [String] = []
    var mentionsHistory = false
    /// The last token, upper-cased.
    private var previous = ""

    init(text: UnsafeBufferPointer<UInt8>) {
        self.text = text
    }

    mutating func reset() {
        words.removeAll(keepingCapacity: true)
        mentionsHistory = false
        previous = ""
    }

    mutating func word(from start: Int, to end: Int) {
        add(String(decoding: text[start..<end], as: UTF8.self))
    }

    mutating func quoted(_ quote: UInt8, from start: Int, to end: Int) {
        // SQLite reads a quoted name without its quotes, a doubled quote as one. It even takes a 'string' where a
        // name is expected (after INTO, UPDATE, FROM, TABLE, ON, or a schema's `.`); elsewhere a 'string' is a
        // value, which names nothing.
        let isName = quote != UInt8(ascii: "'")
            || ["INTO", "UPDATE", "FROM", "TABLE", "ON", ".", "EXISTS", "TRIGGER", "VIEW"].contains(previous)
        let closing = quote == UInt8(ascii: "[") ? UInt8(ascii: "]") : quote
        guard end - start >= 2 else { return add("?", isName: false) }
        var inner: [UInt8] = []
        var index = start + 1
        while index < end - 1 {
            inner.append(text[index])
            index += text[index] == closing && closing != UInt8(ascii: "]") && index + 1 < end - 1 ? 2 : 1
        }
        add(String(decoding: inner, as: UTF8.self), isName: isName)
    }

    mutating func punctuation(_ byte: UInt8, at offset: Int) {
        // A `;` ends a statement (or, in a trigger body, one of its commands): never a leading word.
        guard byte != UInt8(ascii: ";") else { return }
        add(String(UnicodeScalar(byte)))
    }

    private mutating func add(_ token: String, isName: Bool = true) {
        // SQLite folds ASCII letters only.
        let upper = String(decoding: token.utf8.map { $0 >= 0x61 && $0 <= 0x7A ? $0 - 0x20 : $0 }, as: UTF8.self)
        if words.count < 8 { words.append(upper) }
        if isName && !mentionsHistory && upper == HistoryStore.table.uppercased() { mentionsHistory = true }
        previous = upper
    }
}
