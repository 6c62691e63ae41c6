/// One token of a statement as the lint reads it. Recorded only when asked (`PostgresLexer.recordsTokens`):
/// running a script needs none.
struct PostgresToken: Equatable, Sendable {
    enum Kind: Equatable, Sendable {
        /// A key word or unquoted identifier; `text` is upper-cased (ASCII letters only, which is all PostgreSQL
        /// folds in UTF-8).
        case word
        /// A `"quoted"` or `U&"quoted"` identifier; `text` is the name, a doubled `""` read as one `"`.
        case quotedIdentifier
        /// A string constant in any quoting; `text` is the content of a short `'…'` constant (as written, for
        /// the lint's few value checks), otherwise empty.
        case string
        /// A number, with what PostgreSQL reads as part of it (`1e5`, `0x1F`, `1abc`); `text` as written.
        case number
        /// A positional parameter, `$1`.
        case parameter
        /// One punctuation or operator character.
        case symbol
    }

    let kind: Kind
    let text: String
    /// How many parentheses are open around the token (0: the statement's own level).
    let depth: Int

    /// Whether this is the (upper-case) key word or unquoted name `word`.
    func isWord(_ word: String) -> Bool { kind == .word && text == word }
}

/// PostgreSQL's lexical rules for finding where a statement of a script ends, as psql applies them
/// (`src/fe_utils/psqlscan.l`, which follows the server's `scan.l` rule for rule): a byte-at-a-time state machine
/// that keeps its state across chunks, so the reader feeds it any amount of text and it asks for more when a
/// decision needs bytes not read yet.
///
/// A `;` ends a statement unless it is inside a literal, a comment, parentheses, or the `BEGIN … END` body of a
/// `CREATE [OR REPLACE] FUNCTION|PROCEDURE` (tracked as psql does: `BEGIN` and, inside one, `CASE` open a level,
/// `END` closes one, outside parentheses). Literals: `'…'` (standard-conforming: a backslash is a character),
/// `E'…'` with backslash escapes, `U&'…'`, `B'…'`, `X'…'`, `N'…'`, string continuation across a line break,
/// `"…"` and `U&"…"` identifiers, and `$tag$…$tag$` dollar quotes; `--` and nesting `/* */` comments.
/// Identifiers may hold `$` after their first character, so `a$b$` opens nothing, and `$1` is a parameter.
struct PostgresLexer {
    /// What a call to `scan` stopped at.
    enum Event: Equatable {
        /// The statement that `statementStart` begins ends here: at the `;` (already consumed) or, with nil, at the
        /// end of the text.
        case statementEnd(semicolon: Int?)
        /// A backslash where a statement would begin: a psql meta-command, whose line the reader takes. Nothing is
        /// consumed.
        case metaCommand(at: Int)
        /// The bytes up to the limit are scanned, or a decision needs bytes past it.
        case needMore
        /// The text ended between statements.
        case endOfInput
        /// The text ended inside a literal or comment that starts at `start`.
        case unterminated(what: String, start: Int)
    }

    private enum State: Equatable {
        case normal
        case lineComment
        case blockComment
        /// Inside `'…'`; `escapes` for `E'…'`, where a backslash escapes the next character.
        case string(escapes: Bool)
        /// Just after the quote closing an `E'…'` constant: SQL continues a constant across whitespace holding a
        /// line break (`E'a\''` newline `'b'`), and the continuation keeps the escapes, so it decides where the next
        /// `'` ends.
        case afterEscapeString
        case quotedIdentifier
        case dollarQuoted
    }

    private var state = State.normal
    private var commentDepth = 0
    /// `$tag$` of the open dollar quote.
    private var delimiter: [UInt8] = []
    private var stringIsPrefixed = false
    /// Absolute offset where the open literal or block comment starts.
    private(set) var constructStart = 0
    /// Absolute offset of the current statement's first token, nil between statements.
    private(set) var statementStart: Int?
    /// Absolute offset just past the current statement's last token (trailing comments and blanks excluded).
    private(set) var lastTokenEnd = 0
    private var parenDepth = 0
    /// psql's `begin_depth`: open `BEGIN`/`CASE` levels in a function body.
    private var beginDepth = 0
    /// psql's `identifier_count` and `identifiers`: the first letters of the statement's first four identifiers
    /// when they are CREATE, OR, REPLACE, FUNCTION or PROCEDURE (0 otherwise), packed one byte each.
    private var identifierCount = 0
    private var identifiers: UInt32 = 0
    private var tokenCount = 0
    private var startsWithCopy = false
    private var previousWasFrom = false
    /// Whether the statement is `COPY … FROM STDIN` (the words outside parentheses and literals), whose data
    /// lines follow it in the script.
    private(set) var isCopyFromStdin = false
    /// Record every token of each statement in `tokens` (for the lint).
    var recordsTokens = false
    private(set) var tokens: [PostgresToken] = []
    /// The first backslash inside a statement outside literals: psql would start a meta-command there, and the
    /// server rejects it.
    private(set) var strayBackslash: Int?

    /// Whether the text so far ends inside a block comment that no statement contains (the reader notes where it
    /// starts before dropping its bytes).
    var isInsideCommentBetweenStatements: Bool { state == .blockComment && statementStart == nil }

    /// Forgets the statement just ended; call after reading what the reader needs of it.
    mutating func resetStatement() {
        statementStart = nil
        parenDepth = 0
        beginDepth = 0
        identifierCount = 0
        identifiers = 0
        tokenCount = 0
        startsWithCopy = false
        previousWasFrom = false
        isCopyFromStdin = false
        strayBackslash = nil
        tokens.removeAll(keepingCapacity: true)
    }

    /// Scans from `cursor` up to `limit` (absolute offsets into the text, `text[0]` being offset `base`).
    /// `isFinal`: no text follows `limit`, so a look past it sees the end rather than asking for more.
    mutating func scan(_ text: UnsafeBufferPointer<UInt8>, base: Int, cursor: inout Int, limit: Int,
                       isFinal: Bool) -> Event {
        var window = Window(text: text, end: limit - base, isFinal: isFinal)
        var i = cursor - base
        defer { cursor = base + i }
        while true {
            let event: Event?
            switch state {
            case .normal: event = scanNormal(&window, &i, base: base)
            case .lineComment: event = scanLineComment(window, &i)
            case .blockComment: event = scanBlockComment(&window, &i)
            case .string(let escapes): event = scanString(&window, &i, base: base, escapes: escapes)
            case .afterEscapeString: event = scanAfterEscapeString(&window, &i)
            case .quotedIdentifier: event = scanQuotedIdentifier(&window, &i, base: base)
            case .dollarQuoted: event = scanDollarQuoted(window, &i, base: base)
            }
            if let event { return event }
        }
    }

    // MARK: States

    /// Between tokens: scans tokens up to an event, or up to a literal or comment (nil: go on in its state).
    private mutating func scanNormal(_ w: inout Window, _ i: inout Int, base: Int) -> Event? {
        while i < w.end {
            let byte = w.text[i]
            w.starved = false
            switch byte {
            case 0x20, 0x09, 0x0A, 0x0D, 0x0C, 0x0B:
                i += 1
            case Byte.minus:
                let next = w[i + 1]
                if w.starved { return .needMore }
                guard next == Byte.minus else { symbol(byte, &i, base: base); continue }
                state = .lineComment
                i += 2
                return nil
            case Byte.slash:
                let next = w[i + 1]
                if w.starved { return .needMore }
                guard next == Byte.star else { symbol(byte, &i, base: base); continue }
                state = .blockComment
                commentDepth = 0
                constructStart = base + i
                i += 2
                return nil
            case Byte.semicolon:
                guard statementStart != nil else { i += 1; continue } // an empty statement
                guard parenDepth == 0 && beginDepth == 0 else { symbol(byte, &i, base: base); continue }
                i += 1
                return .statementEnd(semicolon: base + i - 1)
            case Byte.quote:
                openString(at: i, base: base, prefix: 0, escapes: false)
                i += 1
                return nil
            case Byte.doubleQuote:
                openQuotedIdentifier(at: i, base: base, prefix: 0)
                i += 1
                return nil
            case Byte.dollar:
                if let event = dollar(&w, &i, base: base) { return event }
                if state != .normal { return nil }
            case Byte.backslash:
                guard statementStart != nil else { return .metaCommand(at: base + i) }
                if strayBackslash == nil { strayBackslash = base + i }
                symbol(byte, &i, base: base)
            case 0x30...0x39:
                if let event = number(&w, &i, base: base) { return event }
            default:
                guard Self.isIdentifierStart(byte) else { symbol(byte, &i, base: base); continue }
                if let event = wordOrPrefixedLiteral(&w, &i, base: base) { return event }
                if state != .normal { return nil }
            }
        }
        guard w.isFinal else { return .needMore }
        return statementStart == nil ? .endOfInput : .statementEnd(semicolon: nil)
    }

    private mutating func scanLineComment(_ w: Window, _ i: inout Int) -> Event? {
        // Ends at LF or CR, either of which psql and the server take as a line break.
        while i < w.end, w.text[i] != 0x0A, w.text[i] != 0x0D { i += 1 }
        guard i < w.end || w.isFinal else { return .needMore }
        state = .normal
        return nil
    }

    private mutating func scanBlockComment(_ w: inout Window, _ i: inout Int) -> Event? {
        w.starved = false
        while i < w.end {
            let byte = w.text[i]
            if byte == Byte.star {
                let next = w[i + 1]
                if w.starved { return .needMore }
                if next == Byte.slash {
                    i += 2
                    if commentDepth == 0 {
                        state = .normal
                        return nil
                    }
                    commentDepth -= 1
                    continue
                }
            } else if byte == Byte.slash {
                let next = w[i + 1]
                if w.starved { return .needMore }
                if next == Byte.star {
                    // Comments nest, as the SQL standard says and PostgreSQL (unlike C) does.
                    commentDepth += 1
                    i += 2
                    continue
                }
            }
            i += 1
        }
        return w.isFinal ? .unterminated(what: "/* comment", start: constructStart) : .needMore
    }

    private mutating func scanString(_ w: inout Window, _ i: inout Int, base: Int, escapes: Bool) -> Event? {
        w.starved = false
        while i < w.end {
            let byte = w.text[i]
            if byte == Byte.quote {
                let next = w[i + 1]
                if w.starved { return .needMore }
                if next == Byte.quote { i += 2; continue } // '' is one quote
                i += 1
                closeString(w, i, base: base)
                state = escapes ? .afterEscapeString : .normal
                return nil
            }
            if byte == Byte.backslash && escapes {
                // In E'…' a backslash escapes the next byte: E'\'' holds one quote, E'\\' one backslash.
                if i + 1 < w.end { i += 2; continue }
                if !w.isFinal { return .needMore }
            }
            i += 1
        }
        let what = escapes ? "E'…' string constant" : "string constant"
        return w.isFinal ? .unterminated(what: what, start: constructStart) : .needMore
    }

    /// After `E'…'`: blanks and `--` comments holding at least one line break, then `'`, continue the constant
    /// with its escapes; anything else is scanned again as ordinary text.
    private mutating func scanAfterEscapeString(_ w: inout Window, _ i: inout Int) -> Event? {
        w.starved = false
        var j = i
        var sawLineBreak = false
        while let byte = w[j] {
            switch byte {
            case 0x20, 0x09, 0x0C, 0x0B:
                j += 1
                continue
            case 0x0A, 0x0D:
                sawLineBreak = true
                j += 1
                continue
            case Byte.minus:
                guard w[j + 1] == Byte.minus else { break }
                j += 2
                while let inComment = w[j], inComment != 0x0A, inComment != 0x0D { j += 1 }
                continue
            case Byte.quote:
                if w.starved { return .needMore }
                if sawLineBreak {
                    i = j + 1
                    state = .string(escapes: true)
                    return nil
                }
            default:
                break
            }
            break
        }
        if w.starved { return .needMore }
        state = .normal
        return nil
    }

    private mutating func scanQuotedIdentifier(_ w: inout Window, _ i: inout Int, base: Int) -> Event? {
        w.starved = false
        while i < w.end {
            if w.text[i] == Byte.doubleQuote {
                let next = w[i + 1]
                if w.starved { return .needMore }
                if next == Byte.doubleQuote { i += 2; continue }
                i += 1
                closeQuotedIdentifier(w, i, base: base)
                state = .normal
                return nil
            }
            i += 1
        }
        return w.isFinal ? .unterminated(what: "quoted identifier", start: constructStart) : .needMore
    }

    private mutating func scanDollarQuoted(_ w: Window, _ i: inout Int, base: Int) -> Event? {
        let count = delimiter.count
        while i < w.end {
            guard w.text[i] == Byte.dollar else { i += 1; continue }
            // The body ends at the first occurrence of exactly the opening delimiter: `$a$` inside `$b$…$b$` is
            // text, and a `$` that starts no match is text too.
            var matched = 0
            while matched < count, i + matched < w.end, w.text[i + matched] == delimiter[matched] { matched += 1 }
            if matched == count {
                i += count
                finish(.string, text: "", end: base + i)
                state = .normal
                return nil
            }
            if i + matched == w.end && !w.isFinal { return .needMore }
            i += 1
        }
        let tag = String(decoding: delimiter, as: UTF8.self)
        return w.isFinal ? .unterminated(what: "dollar-quoted string (\(tag))", start: constructStart) : .needMore
    }

    // MARK: Tokens

    /// `$`: a parameter `$1`, a dollar quote's opening `$tag$` or `$$`, or a lone `$`.
    private mutating func dollar(_ w: inout Window, _ i: inout Int, base: Int) -> Event? {
        let next = w[i + 1]
        if w.starved { return .needMore }
        if let next, Self.isDigit(next) {
            var j = i + 2
            while let c = w[j], Self.isDigit(c) { j += 1 }
            // `$1abc` is one (erroneous) token for PostgreSQL 15 and later, never a `$1` and a word.
            if let c = w[j], Self.isIdentifierStart(c) {
                while let c = w[j], Self.isIdentifierPart(c) { j += 1 }
            }
            if w.starved { return .needMore }
            begin(at: i, base: base)
            finish(.parameter, text: "", end: base + j)
            i = j
            return nil
        }
        var j = i + 1
        // A tag is an identifier without `$`, not starting with a digit.
        if let next, Self.isIdentifierStart(next) {
            while let c = w[j], Self.isDollarTagPart(c) { j += 1 }
        }
        let closing = w[j]
        if w.starved { return .needMore }
        guard closing == Byte.dollar else {
            // `$abc` not followed by `$` opens nothing: the `$` is a character of its own, and what follows is
            // scanned as a word.
            symbol(Byte.dollar, &i, base: base)
            return nil
        }
        begin(at: i, base: base)
        constructStart = base + i
        delimiter = Array(w.text[i...j])
        state = .dollarQuoted
        i = j + 1
        return nil
    }

    /// A number, including what PostgreSQL 15+ scans as part of it (`1e'…'` and `0x1F` are one token each).
    private mutating func number(_ w: inout Window, _ i: inout Int, base: Int) -> Event? {
        var j = i
        func isDigitOrUnderscore(_ c: UInt8?) -> Bool { c.map { Self.isDigit($0) || $0 == 0x5F } ?? false }
        while isDigitOrUnderscore(w[j]) { j += 1 }
        if w[j] == Byte.dot && w[j + 1] != Byte.dot { // `1..10` is 1, `..`, 10
            j += 1
            while isDigitOrUnderscore(w[j]) { j += 1 }
        }
        if w[j] == 0x45 || w[j] == 0x65 {
            let sign = w[j + 1] == Byte.plus || w[j + 1] == Byte.minus ? 1 : 0
            if let digit = w[j + 1 + sign], Self.isDigit(digit) {
                j += 1 + sign
                while isDigitOrUnderscore(w[j]) { j += 1 }
            }
        }
        if let c = w[j], Self.isIdentifierStart(c) {
            while let c = w[j], Self.isIdentifierPart(c) { j += 1 }
        }
        if w.starved { return .needMore }
        begin(at: i, base: base)
        finish(.number, text: recordsTokens ? String(decoding: w.text[i..<j], as: UTF8.self) : "", end: base + j)
        i = j
        return nil
    }

    /// A word, or a literal whose prefix letter starts here: `E'`, `B'`, `X'`, `N'`, `U&'`, `U&"`.
    private mutating func wordOrPrefixedLiteral(_ w: inout Window, _ i: inout Int, base: Int) -> Event? {
        let letter = w.text[i] | 0x20 // lower case for ASCII letters; no other identifier start maps to one
        let next = w[i + 1]
        if w.starved { return .needMore }
        if next == Byte.quote && (letter == 0x65 || letter == 0x62 || letter == 0x78 || letter == 0x6E) {
            // E'…' has backslash escapes; B'…', X'…', N'…' end like '…'.
            openString(at: i, base: base, prefix: 1, escapes: letter == 0x65)
            i += 2
            return nil
        }
        if next == Byte.ampersand && letter == 0x75 {
            let third = w[i + 2]
            if w.starved { return .needMore }
            if third == Byte.quote {
                openString(at: i, base: base, prefix: 2, escapes: false)
                i += 3
                return nil
            }
            if third == Byte.doubleQuote {
                openQuotedIdentifier(at: i, base: base, prefix: 2)
                i += 3
                return nil
            }
            // `U&` before anything else: the scanner takes the `U` alone, and not as an identifier.
            symbol(w.text[i], &i, base: base)
            return nil
        }
        var j = i + 1
        while let c = w[j], Self.isIdentifierPart(c) { j += 1 }
        if w.starved { return .needMore }
        word(w.text, from: i, to: j, base: base)
        i = j
        return nil
    }

    private enum Keyword {
        case create, or, replace, function, procedure, begin, `case`, end, copy, from, stdin, other
    }

    /// An identifier or key word: psql's function-body tracking, the COPY check, and the token.
    private mutating func word(_ text: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int, base: Int) {
        begin(at: start, base: base)
        let keyword = Self.keyword(text, from: start, to: end)
        if identifierCount == 0 { identifiers = 0 }
        switch keyword {
        case .create, .or, .replace, .function, .procedure:
            if identifierCount < 4 { identifiers |= UInt32(text[start] | 0x20) << (8 * identifierCount) }
        default:
            break
        }
        identifierCount += 1
        if parenDepth == 0 && isFunctionDefinition {
            switch keyword {
            case .begin: beginDepth += 1
            case .case: if beginDepth >= 1 { beginDepth += 1 } // CASE … END inside a body
            case .end: if beginDepth > 0 { beginDepth -= 1 }
            default: break
            }
        }
        if tokenCount == 0 && keyword == .copy { startsWithCopy = true }
        if startsWithCopy && previousWasFrom && parenDepth == 0 && keyword == .stdin { isCopyFromStdin = true }
        let isFrom = keyword == .from && parenDepth == 0
        var upper = ""
        if recordsTokens {
            upper = String(decoding: text[start..<end].map { $0 >= 0x61 && $0 <= 0x7A ? $0 - 0x20 : $0 }, as: UTF8.self)
        }
        finish(.word, text: upper, end: base + end)
        previousWasFrom = isFrom
    }

    /// psql's test: the statement starts CREATE FUNCTION, CREATE PROCEDURE, or the same with OR REPLACE.
    private var isFunctionDefinition: Bool {
        let c = UInt32(0x63), o = UInt32(0x6F), r = UInt32(0x72), f = UInt32(0x66), p = UInt32(0x70)
        guard identifiers & 0xFF == c else { return false }
        let second = identifiers >> 8 & 0xFF
        if second == f || second == p { return true }
        let fourth = identifiers >> 24 & 0xFF
        return second == o && identifiers >> 16 & 0xFF == r && (fourth == f || fourth == p)
    }

    private static func keyword(_ text: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) -> Keyword {
        func equals(_ word: StaticString) -> Bool {
            guard word.utf8CodeUnitCount == end - start else { return false }
            return word.withUTF8Buffer { lower in
                for k in 0..<lower.count where text[start + k] | 0x20 != lower[k] { return false }
                return true
            }
        }
        switch end - start {
        case 2: return equals("or") ? .or : .other
        case 3: return equals("end") ? .end : .other
        case 4: return equals("case") ? .case : equals("copy") ? .copy : equals("from") ? .from : .other
        case 5: return equals("begin") ? .begin : equals("stdin") ? .stdin : .other
        case 6: return equals("create") ? .create : .other
        case 7: return equals("replace") ? .replace : .other
        case 8: return equals("function") ? .function : .other
        case 9: return equals("procedure") ? .procedure : .other
        default: return .other
        }
    }

    private mutating func symbol(_ byte: UInt8, _ i: inout Int, base: Int) {
        begin(at: i, base: base)
        if byte == Byte.openParenthesis {
            parenDepth += 1
        } else if byte == Byte.closeParenthesis, parenDepth > 0 {
            parenDepth -= 1
        }
        i += 1
        finish(.symbol, text: recordsTokens ? String(UnicodeScalar(byte)) : "", end: base + i,
               depth: byte == Byte.openParenthesis ? parenDepth - 1 : parenDepth)
    }

    private mutating func openString(at i: Int, base: Int, prefix: Int, escapes: Bool) {
        begin(at: i, base: base)
        constructStart = base + i
        stringIsPrefixed = prefix > 0
        state = .string(escapes: escapes)
    }

    private mutating func closeString(_ w: Window, _ end: Int, base: Int) {
        var content = ""
        if recordsTokens && !stringIsPrefixed {
            let start = constructStart - base + 1
            if end - 1 - start <= 64 { content = String(decoding: w.text[start..<(end - 1)], as: UTF8.self) }
        }
        finish(.string, text: content, end: base + end)
    }

    private mutating func openQuotedIdentifier(at i: Int, base: Int, prefix: Int) {
        begin(at: i, base: base)
        constructStart = base + i + prefix
        state = .quotedIdentifier
    }

    private mutating func closeQuotedIdentifier(_ w: Window, _ end: Int, base: Int) {
        var name = ""
        if recordsTokens {
            var bytes: [UInt8] = []
            var k = constructStart - base + 1
            while k < end - 1 {
                bytes.append(w.text[k])
                k += w.text[k] == Byte.doubleQuote ? 2 : 1
            }
            name = String(decoding: bytes, as: UTF8.self)
        }
        finish(.quotedIdentifier, text: name, end: base + end)
    }

    /// A token starts at `i`: the statement starts with it if none has.
    private mutating func begin(at i: Int, base: Int) {
        if statementStart == nil { statementStart = base + i }
    }

    private mutating func finish(_ kind: PostgresToken.Kind, text: String, end: Int, depth: Int? = nil) {
        if recordsTokens { tokens.append(PostgresToken(kind: kind, text: text, depth: depth ?? parenDepth)) }
        tokenCount += 1
        previousWasFrom = false
        lastTokenEnd = end
    }

    // MARK: Character classes (psqlscan.l's ident_start, ident_cont, dolq_cont)

    /// `0`…`9`.
    static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    /// A letter, `_`, or any byte of a non-ASCII character.
    static func isIdentifierStart(_ byte: UInt8) -> Bool {
        let lower = byte | 0x20
        return (lower >= 0x61 && lower <= 0x7A) || byte == 0x5F || byte >= 0x80
    }

    /// What may follow an identifier's first character: also digits and `$`.
    static func isIdentifierPart(_ byte: UInt8) -> Bool {
        isIdentifierStart(byte) || isDigit(byte) || byte == Byte.dollar
    }

    /// What a dollar quote's tag may hold after its first character: as an identifier, but no `$`.
    static func isDollarTagPart(_ byte: UInt8) -> Bool { isIdentifierStart(byte) || isDigit(byte) }
}

/// The scanned text with its end: reading past the end gives nil, and notes (`starved`) when more text may
/// follow, so a decision that needed it is taken again once it is read.
private struct Window {
    let text: UnsafeBufferPointer<UInt8>
    let end: Int
    let isFinal: Bool
    var starved = false

    init(text: UnsafeBufferPointer<UInt8>, end: Int, isFinal: Bool) {
        self.text = text
        self.end = end
        self.isFinal = isFinal
    }

    subscript(_ index: Int) -> UInt8? {
        mutating get {
            if index < end { return text[index] }
            if !isFinal { starved = true }
            return nil
        }
    }
}

/// The ASCII bytes the lexer and reader name.
enum Byte {
    static let minus = UInt8(ascii: "-")
    static let plus = UInt8(ascii: "+")
    static let slash = UInt8(ascii: "/")
    static let star = UInt8(ascii: "*")
    static let semicolon = UInt8(ascii: ";")
    static let quote = UInt8(ascii: "'")
    static let doubleQuote = UInt8(ascii: "\"")
    static let dollar = UInt8(ascii: "$")
    static let backslash = UInt8(ascii: "\\")
    static let dot = UInt8(ascii: ".")
    static let ampersand = UInt8(ascii: "&")
    static let openParenthesis = UInt8(ascii: "(")
    static let closeParenthesis = UInt8(ascii: ")")
    static let lineFeed: UInt8 = 0x0A
    static let carriageReturn: UInt8 = 0x0D
}
