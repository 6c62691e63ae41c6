import StrataCore

/// Finds, before anything runs, what a migration file may not do: statements that cannot run inside the
/// transaction Strata wraps around a file, writes to Strata's history table, and text SQLite would not run to the
/// end (a NUL byte, an unterminated string or comment).
///
/// While a migration runs, SQLite's authorizer is the authority (see `ScriptRules`): it sees every statement after
/// parsing, including trigger bodies. `validate` cannot prepare statements whose tables only earlier files create, so
/// it applies the same rules here, to tokens read by the same scanner that splits statements for execution: quoted
/// identifiers are read as SQLite reads them (`PRAGMA "foreign_keys"`, `[foreign_keys]`, `main.foreign_keys`), and
/// words inside strings, comments and trigger bodies are not statements.
enum SQLLint {
    /// A statement that a migration must not contain, or text that cannot run to its end.
    public typealias Finding = LintFinding

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
        var loneCRs = scan.loneCRs[...]
        for statement in scan.statements {
            // Findings in text order: a lone CR before this statement's start is reported before it.
            while let cr = loneCRs.first, cr.offset < statement.offset {
                findings.append(loneCRFinding(cr))
                loneCRs = loneCRs.dropFirst()
            }
            if let message = message(for: statement, insideTransaction: insideTransaction) {
                findings.append(Finding(line: statement.line, column: statement.column, message: message))
            }
        }
        findings += loneCRs.map(loneCRFinding)
        if let open = scan.unterminated {
            findings.append(Finding(line: open.line, column: open.column,
                message: "the file ends inside a \(open.what) that starts here; nothing after it could run"))
        }
        return findings
    }

    private static func loneCRFinding(_ cr: (offset: Int, line: Int, column: Int)) -> Finding {
        Finding(line: cr.line, column: cr.column,
                message: "a lone CR inside a -- comment: SQLite ends the comment only at LF, so the text after it up to the next LF is comment and does not run; convert the file's line endings to LF or CRLF")
    }

    private static func message(for statement: Statement, insideTransaction: Bool) -> String? {
        let words = statement.words
        guard let first = words.first else { return nil }
        if statement.writesHistory {
            return HistoryRecord.refusal(verb: "writes to", table: HistoryStore.table)
        }
        if first == "PRAGMA", statement.hasAssignment, let name = pragmaName(words) {
            let value = statement.words.drop { $0 != "=" && $0 != "(" }.dropFirst().first ?? ""
            return ScriptRules(insideTransaction: insideTransaction)
                .refusal(pragma: name.lowercased(), value: value.lowercased())
        }
        guard insideTransaction else { return nil }
        let suffix = "; mark the file transaction=\"none\" in the manifest"
        switch first {
        case "VACUUM", "ATTACH", "DETACH":
            return "\(first) cannot run inside a transaction" + suffix
        case "BEGIN":
            return "BEGIN cannot run inside the transaction Strata wraps around the file (SQLite refuses a transaction within a transaction)" + suffix
        case "COMMIT", "END":
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

    /// One statement as the lint sees it.
    struct Statement {
        /// Where its first token starts: the byte offset, and the line and column.
        var offset: Int
        var line: Int
        var column: Int
        /// The first tokens, upper-cased: words and quoted identifiers unquoted, and punctuation.
        var words: [String] = []
        /// Whether it writes, alters, drops, indexes, puts a trigger on or creates again a table named as the
        /// history (in its own text or in a trigger body it creates). Reading the history is fine.
        var writesHistory = false
        var hasAssignment: Bool { words.prefix(5).contains("=") || words.prefix(5).contains("(") }
    }

    /// The statements of a text, split exactly as execution splits them; the literal or comment the text ends
    /// inside, if any; and each `--` comment's first CR that hides text from SQLite (see `LintTokens.lineComment`).
    static func statements(in bytes: [UInt8]) -> (statements: [Statement], unterminated: (what: String, line: Int, column: Int)?,
                                                   loneCRs: [(offset: Int, line: Int, column: Int)]) {
        var scanner = SQLScanner()
        var result: [Statement] = []
        var unterminated: (what: String, line: Int, column: Int)?
        var loneCRs: [(offset: Int, line: Int, column: Int)] = []
        bytes.withUnsafeBufferPointer { text in
            let start = text.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
            var tokens = LintTokens(text: text)
            var position = TextPosition()
            var positionOffset = start
            func add(_ range: Range<Int>) {
                position.advance(over: text, from: positionOffset, to: range.lowerBound)
                positionOffset = range.lowerBound
                result.append(Statement(offset: range.lowerBound, line: position.line, column: position.column,
                                        words: tokens.words, writesHistory: tokens.writesHistory))
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
            var at = TextPosition()
            var atOffset = 0
            for offset in tokens.loneCRs {
                at.advance(over: text, from: atOffset, to: offset)
                atOffset = offset
                loneCRs.append((offset, at.line, at.column))
            }
        }
        return (result, unterminated, loneCRs)
    }

    private static func position(in bytes: [UInt8], at offset: Int) -> TextPosition {
        var position = TextPosition()
        bytes.withUnsafeBufferPointer { position.advance(over: $0, from: 0, to: offset) }
        return position
    }
}

/// Collects the first tokens of the statement being scanned, and whether it writes the history table: whether a
/// name spelled as the history (quoted or bare, any ASCII case, optionally `schema.`-qualified) stands where SQLite
/// reads the table a statement writes. Names elsewhere (after FROM, JOIN, in a subquery or a string) are reads.
private struct LintTokens: SQLTokenSink {
    let text: UnsafeBufferPointer<UInt8>
    var words: [String] = []
    /// Whether a write target named as the history has been seen (one pending at the statement's end counts).
    var writesHistory: Bool { confirmed || pending }
    private var confirmed = false
    /// Offsets of CRs inside `--` comments that hide text from SQLite, over the whole text.
    private(set) var loneCRs: [Int] = []
    /// The last tokens of the statement, upper-cased; a quoted name is prefixed with `"` so it never reads as a
    /// keyword.
    private var tail: [String] = []
    /// A history name in a target position, unless the next token is `.` (then it was a schema's name).
    private var pending = false
    /// How many `ON` keywords the statement has had: the first in CREATE TRIGGER / CREATE INDEX names its table.
    private var onCount = 0
    private static let history = HistoryStore.table.uppercased()

    init(text: UnsafeBufferPointer<UInt8>) {
        self.text = text
    }

    mutating func reset() {
        words.removeAll(keepingCapacity: true)
        tail.removeAll(keepingCapacity: true)
        confirmed = false
        pending = false
        onCount = 0
    }

    mutating func word(from start: Int, to end: Int) {
        add(String(decoding: text[start..<end], as: UTF8.self), quoted: false)
    }

    mutating func quoted(_ quote: UInt8, from start: Int, to end: Int) {
        // SQLite reads a quoted name without its quotes, a doubled quote as one. It even takes a 'string' where a
        // name is expected, which is where `isTarget` looks; elsewhere a 'string' is a value, which names nothing.
        let closing = quote == UInt8(ascii: "[") ? UInt8(ascii: "]") : quote
        guard end - start >= 2 else { return add("", quoted: true) }
        var inner: [UInt8] = []
        var index = start + 1
        while index < end - 1 {
            inner.append(text[index])
            index += text[index] == closing && closing != UInt8(ascii: "]") && index + 1 < end - 1 ? 2 : 1
        }
        add(String(decoding: inner, as: UTF8.self), quoted: true)
    }

    mutating func punctuation(_ byte: UInt8, at offset: Int) {
        // A `;` ends a statement (or, in a trigger body, one of its commands): never a leading word.
        guard byte != UInt8(ascii: ";") else { return resolvePending(next: ";") }
        add(String(UnicodeScalar(byte)), quoted: false)
    }

    /// SQLite ends a `--` comment only at LF: after a lone CR, whatever text follows up to the LF is comment too.
    /// The first CR followed by more than blanks is recorded (CRLF, or a CR ending the text, hides nothing).
    mutating func lineComment(from start: Int, to end: Int) {
        var index = start
        while index < end {
            if text[index] == 0x0D {
                var next = index + 1
                while next < end, [0x0D, 0x20, 0x09].contains(text[next]) { next += 1 }
                if next < end { loneCRs.append(index) }
                return
            }
            index += 1
        }
    }

    private mutating func resolvePending(next: String) {
        if pending, next != "." { confirmed = true }
        pending = false
    }

    private mutating func add(_ token: String, quoted: Bool) {
        // SQLite folds ASCII letters only.
        let upper = String(decoding: token.utf8.map { $0 >= 0x61 && $0 <= 0x7A ? $0 - 0x20 : $0 }, as: UTF8.self)
        if words.count < 8 { words.append(upper) }
        resolvePending(next: quoted ? "\"" : upper)
        if !quoted && upper == "ON" { onCount += 1 }
        if upper == Self.history && !confirmed && isTarget { pending = true }
        tail.append(quoted ? "\"" + upper : upper)
        if tail.count > 12 { tail.removeFirst(tail.count - 12) }
    }

    /// Whether the name being added stands where SQLite reads the table a statement (or a trigger body's command)
    /// writes, alters, drops, indexes, puts a trigger on or creates.
    private var isTarget: Bool {
        var t = tail[...]
        if t.last == ".", t.count >= 2 { t = t.dropLast(2) }
        guard let last = t.last else { return false }
        let before = t.dropLast()
        switch last {
        case "INTO", "UPDATE":
            return true // INSERT [OR …] INTO, REPLACE INTO, UPDATE
        case "FROM":
            return before.last == "DELETE"
        case "TO":
            return before.last == "RENAME" // ALTER TABLE … RENAME TO (RENAME [COLUMN] x TO names a column)
        case "ON":
            // CREATE [UNIQUE] INDEX … ON table, CREATE TRIGGER … ON table: the statement's first ON (later ones are
            // join conditions in a trigger body).
            return onCount == 1 && words.first == "CREATE" && (words.contains("INDEX") || words.contains("TRIGGER"))
        default:
            break
        }
        // UPDATE OR ROLLBACK|ABORT|REPLACE|FAIL|IGNORE table
        if before.last == "OR", before.dropLast().last == "UPDATE" { return true }
        // DROP TABLE [IF EXISTS], ALTER TABLE, CREATE [TEMP|TEMPORARY] [VIRTUAL] TABLE|VIEW [IF NOT EXISTS]
        var rest = t
        if rest.last == "EXISTS" {
            rest = rest.dropLast()
            if rest.last == "NOT" { rest = rest.dropLast() }
            guard rest.last == "IF" else { return false }
            rest = rest.dropLast()
        }
        guard let kind = rest.last, kind == "TABLE" || kind == "VIEW" else { return false }
        rest = rest.dropLast()
        if kind == "TABLE", rest.last == "DROP" || rest.last == "ALTER" { return true }
        if kind == "TABLE", rest.last == "VIRTUAL" { rest = rest.dropLast() }
        if rest.last == "TEMP" || rest.last == "TEMPORARY" { rest = rest.dropLast() }
        return rest.last == "CREATE"
    }
}
