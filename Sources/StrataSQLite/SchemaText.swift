import StrataCore

/// SQL text as SQLite reads it, with its formatting taken out, so two definitions compare equal when they differ
/// only in whitespace, comments, the case of keywords and bare names, or brackets or backticks around a plain name.
enum SchemaText {
    /// The tokens of `sql` separated by one space (none after `(` or around `.`, none before `)`, `,` or `;`, and
    /// none inside an operator written without one, such as `<>`): bare words in lower case (SQLite's keywords and
    /// names are ASCII case-insensitive); a quoted name (`"…"`, `` `…` ``, `[…]`) as its bare self when it is one plain
    /// lower-case word that is not a keyword and was quoted with brackets or backticks, else in double quotes with its
    /// case kept (a double-quoted token may be a string literal, where case and quoting matter); strings as written,
    /// and `x'…'` blob literals kept as one token.
    static func normalized(_ sql: String) -> String {
        String(decoding: scan(sql).output, as: UTF8.self)
    }

    /// The CHECK constraints of a `CREATE TABLE` (column and table constraints alike), each normalised as
    /// `normalized(_:)` writes it (`check (price > 0)`), without the constraint's name.
    static func checks(_ sql: String) -> [String] {
        let sink = scan(sql)
        return sink.checks.map { String(decoding: sink.output[$0], as: UTF8.self) }
    }

    private static func scan(_ sql: String) -> Normalizer {
        Array(sql.utf8).withUnsafeBufferPointer { text in
            var sink = Normalizer(text: text)
            var scanner = SQLScanner()
            var index = 0
            while index < text.count { _ = scanner.nextStatement(in: text, base: 0, index: &index, tokens: &sink) }
            _ = scanner.finish(at: text.count, tokens: &sink)
            return sink
        }
    }

    /// A declared column type: upper case, runs of whitespace as one space, none inside parentheses.
    static func type(_ declared: String) -> String {
        var out: [UInt8] = []
        var pendingSpace = false
        for byte in declared.utf8 {
            if byte == 0x20 || (byte >= 0x09 && byte <= 0x0D) {
                pendingSpace = !out.isEmpty
                continue
            }
            let punctuation = byte == UInt8(ascii: "(") || byte == UInt8(ascii: ")") || byte == UInt8(ascii: ",")
            if pendingSpace && !punctuation && out.last != UInt8(ascii: "(") && out.last != UInt8(ascii: ",") {
                out.append(0x20)
            }
            pendingSpace = false
            out.append(byte >= 0x61 && byte <= 0x7A ? byte - 0x20 : byte)
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// A name as a definition would write it: bare when it is a plain word that is not a keyword, else quoted.
    static func name(_ name: String) -> String {
        let bytes = Array(name.utf8)
        let plain = !bytes.isEmpty && !(bytes[0] >= 0x30 && bytes[0] <= 0x39) && bytes.allSatisfy(SQLScanner.isWordByte)
            && !Normalizer.keywords.contains(name.sqliteFolded)
        return plain ? name : quoteIdentifier(name)
    }

    private struct Normalizer: SQLTokenSink {
        let text: UnsafeBufferPointer<UInt8>
        var output: [UInt8] = []

        init(text: UnsafeBufferPointer<UInt8>) {
            self.text = text
        }

        /// Where each CHECK clause is in `output`: from the word `check` through its closing parenthesis.
        var checks: [Range<Int>] = []
        /// The last token: a punctuation byte and where it ended in `text`, or nil for a word or quoted token.
        private var last: (byte: UInt8, end: Int)?
        private var depth = 0
        /// While a CHECK clause is read: where it starts in `output`, and the depth its parentheses close at.
        private var check: (start: Int, depth: Int)?
        private var checkPending: Int?

        /// Where the last word ended in `text` when it was a lone `x`: a string right after it is a blob literal.
        private var blobPrefixEnd: Int?

        mutating func word(from start: Int, to end: Int) {
            separate(before: nil, at: start)
            blobPrefixEnd = end - start == 1 && (text[start] | 0x20) == UInt8(ascii: "x") ? end : nil
            let wordStart = output.count
            for byte in text[start..<end] { output.append(byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte) }
            last = nil
            checkPending = check == nil && output[wordStart...].elementsEqual("check".utf8) ? wordStart : nil
        }

        mutating func quoted(_ quote: UInt8, from start: Int, to end: Int) {
            // `x'41'` is one token, a blob; `x '41'` is a column and its alias: only the second has a space.
            let blob = quote == UInt8(ascii: "'") && blobPrefixEnd == start
            blobPrefixEnd = nil
            if !blob { separate(before: nil, at: start) }
            last = nil
            checkPending = nil
            guard quote != UInt8(ascii: "'") else {
                output += text[start..<end]
                return
            }
            // A double-quoted token that names no column is a string in SQLite (`DEFAULT "true"` is the text
            // 'true', `DEFAULT true` the integer 1): it keeps its quotes, so it never equals a bare word. Brackets
            // and backticks always quote a name.
            let ambiguous = quote == UInt8(ascii: "\"")
            // The name inside, its doubled closing quotes made single (`[…]` has no escape).
            let close = quote == UInt8(ascii: "[") ? UInt8(ascii: "]") : quote
            var name: [UInt8] = []
            var index = start + 1
            while index < end - 1 {
                name.append(text[index])
                index += text[index] == close && quote != UInt8(ascii: "[") ? 2 : 1
            }
            let plain = !name.isEmpty && !(name[0] >= 0x30 && name[0] <= 0x39) && name.allSatisfy(SQLScanner.isWordByte)
                && !name.contains(where: { $0 >= 0x41 && $0 <= 0x5A })
            if plain && !ambiguous && !Self.keywords.contains(String(decoding: name, as: UTF8.self)) {
                output += name
            } else {
                output.append(UInt8(ascii: "\""))
                for byte in name {
                    if byte == UInt8(ascii: "\"") { output.append(byte) }
                    output.append(byte)
                }
                output.append(UInt8(ascii: "\""))
            }
        }

        mutating func punctuation(_ byte: UInt8, at offset: Int) {
            separate(before: byte, at: offset)
            output.append(byte)
            last = (byte, offset + 1)
            if byte == UInt8(ascii: "(") {
                if let start = checkPending { check = (start, depth) }
                depth += 1
            } else if byte == UInt8(ascii: ")") {
                depth -= 1
                if let open = check, depth == open.depth {
                    checks.append(open.start..<output.count)
                    check = nil
                }
            }
            checkPending = nil
        }

        /// One space before the next token unless the rules of `normalized(_:)` say none.
        private mutating func separate(before byte: UInt8?, at offset: Int) {
            guard !output.isEmpty else { return }
            let dot = UInt8(ascii: ".")
            if let last, last.byte == UInt8(ascii: "(") || last.byte == dot { return }
            if let byte, [UInt8(ascii: ")"), UInt8(ascii: ","), UInt8(ascii: ";"), dot].contains(byte) { return }
            if let byte, let last, last.end == offset, Self.operatorBytes.contains(byte), Self.operatorBytes.contains(last.byte) {
                return
            }
            output.append(0x20)
        }

        /// Bytes that make operators of two (`<>`, `<=`, `!=`, `==`, `||`, `<<`, `>>`): kept together when written so.
        static let operatorBytes: Set<UInt8> = Set("<>=!|".utf8)

        /// Words that mean something else bare than quoted: a quoted one stays quoted.
        static let keywords: Set<String> = [
            "abort", "action", "add", "after", "all", "alter", "always", "analyze", "and", "as", "asc", "attach",
            "autoincrement", "before", "begin", "between", "by", "cascade", "case", "cast", "check", "collate", "column",
            "commit", "conflict", "constraint", "create", "cross", "current", "current_date", "current_time",
            "current_timestamp", "database", "default", "deferrable", "deferred", "delete", "desc", "detach", "distinct",
            "do", "drop", "each", "else", "end", "escape", "except", "exclude", "exclusive", "exists", "explain", "fail",
            "filter", "first", "following", "for", "foreign", "from", "full", "generated", "glob", "group", "groups",
            "having", "if", "ignore", "immediate", "in", "index", "indexed", "initially", "inner", "insert", "instead",
            "intersect", "into", "is", "isnull", "join", "key", "last", "left", "like", "limit", "match", "materialized",
            "natural", "no", "not", "nothing", "notnull", "null", "nulls", "of", "offset", "on", "or", "order", "others",
            "outer", "over", "partition", "plan", "pragma", "preceding", "primary", "query", "raise", "range",
            "recursive", "references", "regexp", "reindex", "release", "rename", "replace", "restrict", "returning",
            "right", "rollback", "row", "rows", "savepoint", "select", "set", "table", "temp", "temporary", "then",
            "ties", "to", "transaction", "trigger", "unbounded", "union", "unique", "update", "using", "vacuum", "values",
            "view", "virtual", "when", "where", "window", "with", "without",
        ]
    }
}
