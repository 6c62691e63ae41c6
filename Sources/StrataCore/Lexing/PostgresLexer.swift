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
///
/// It lives in the core, beside `SQLScanner`, because checksum version 3 is defined by it (`PostgresLiterals`):
/// the script reader, the lint and the checksum of PostgreSQL files share this one lexer, so they agree on what is a
/// literal.
package struct PostgresLexer {
    package init() {}

    /// What a call to `scan` stopped at.
    package enum Event: Equatable {
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

    enum State: Equatable {
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

    var state = State.normal
    var commentDepth = 0
    /// `$tag$` of the open dollar quote.
    var delimiter: [UInt8] = []
    var stringIsPrefixed = false
    /// Absolute offset where the open literal, or the part of a continued `E'…'` constant, starts (its token's).
    var literalStart = 0
    /// Absolute offset where the open literal or block comment starts.
    package internal(set) var constructStart = 0
    /// Absolute offset of the current statement's first token, nil between statements.
    package internal(set) var statementStart: Int?
    /// Absolute offset just past the current statement's last token (trailing comments and blanks excluded).
    package internal(set) var lastTokenEnd = 0
    var parenDepth = 0
    /// psql's `begin_depth`: open `BEGIN`/`CASE` levels in a function body.
    var beginDepth = 0
    /// psql's `identifier_count` and `identifiers`: the first letters of the statement's first four identifiers
    /// when they are CREATE, OR, REPLACE, FUNCTION or PROCEDURE (0 otherwise), packed one byte each.
    var identifierCount = 0
    var identifiers: UInt32 = 0
    var tokenCount = 0
    /// Whether the statement's first token is the key word COPY.
    package internal(set) var startsWithCopy = false
    var previousWasFrom = false
    /// Whether the statement is `COPY … FROM STDIN` (the words outside parentheses and literals), whose data
    /// lines follow it in the script.
    package internal(set) var isCopyFromStdin = false
    /// Record every token of each statement in `tokens` (for the lint).
    package var recordsTokens = false
    package internal(set) var tokens: [PostgresToken] = []
    /// The first backslash inside a statement outside literals: psql would start a meta-command there, and the
    /// server rejects it.
    package internal(set) var strayBackslash: Int?

    /// Whether the text so far ends inside a block comment that no statement contains (the reader notes where it
    /// starts before dropping its bytes).
    package var isInsideCommentBetweenStatements: Bool { state == .blockComment && statementStart == nil }

    /// Whether the text so far ends inside a string constant (in any quoting), a quoted identifier or a dollar
    /// quote: a byte there is data.
    package var isInsideLiteral: Bool {
        switch state {
        case .string, .quotedIdentifier, .dollarQuoted: true
        case .normal, .lineComment, .blockComment, .afterEscapeString: false
        }
    }

    /// Forgets the statement just ended; call after reading what the reader needs of it.
    package mutating func resetStatement() {
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
    package mutating func scan(_ text: UnsafeBufferPointer<UInt8>, base: Int, cursor: inout Int, limit: Int,
                       isFinal: Bool) -> Event {
        var window = LexerWindow(text: text, end: limit - base, isFinal: isFinal)
        var i = cursor - base
        defer { cursor = base + i }
        while true {
            let event: Event?
            switch state {
            case .normal: event = scanNormal(&window, &i, base: base)
            case .lineComment: event = scanLineComment(window, &i)
            case .blockComment: event = scanBlockComment(&window, &i)
            case .string(let escapes): event = scanString(&window, &i, base: base, escapes: escapes)
            case .afterEscapeString: event = scanAfterEscapeString(&window, &i, base: base)
            case .quotedIdentifier: event = scanQuotedIdentifier(&window, &i, base: base)
            case .dollarQuoted: event = scanDollarQuoted(window, &i, base: base)
            }
            if let event { return event }
        }
    }

    // MARK: States

    /// Between tokens: scans tokens up to an event, or up to a literal or comment (nil: go on in its state).
    mutating func scanNormal(_ w: inout LexerWindow, _ i: inout Int, base: Int) -> Event? {
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

    mutating func scanLineComment(_ w: LexerWindow, _ i: inout Int) -> Event? {
        // Ends at LF or CR, either of which psql and the server take as a line break.
        while i < w.end, w.text[i] != 0x0A, w.text[i] != 0x0D { i += 1 }
        guard i < w.end || w.isFinal else { return .needMore }
        state = .normal
        return nil
    }

    mutating func scanBlockComment(_ w: inout LexerWindow, _ i: inout Int) -> Event? {
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

    mutating func scanString(_ w: inout LexerWindow, _ i: inout Int, base: Int, escapes: Bool) -> Event? {
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
    mutating func scanAfterEscapeString(_ w: inout LexerWindow, _ i: inout Int, base: Int) -> Event? {
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
                    literalStart = base + j
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

    mutating func scanQuotedIdentifier(_ w: inout LexerWindow, _ i: inout Int, base: Int) -> Event? {
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

    mutating func scanDollarQuoted(_ w: LexerWindow, _ i: inout Int, base: Int) -> Event? {
        let count = delimiter.count
        while i < w.end {
            guard w.text[i] == Byte.dollar else { i += 1; continue }
            // The body ends at the first occurrence of exactly the opening delimiter: `$a$` inside `$b$…$b$` is
            // text, and a `$` that starts no match is text too.
            var matched = 0
            while matched < count, i + matched < w.end, w.text[i + matched] == delimiter[matched] { matched += 1 }
            if matched == count {
                i += count
                finish(.string, text: "", start: literalStart, end: base + i)
                state = .normal
                return nil
            }
            if i + matched == w.end && !w.isFinal { return .needMore }
            i += 1
        }
        let tag = String(decoding: delimiter, as: UTF8.self)
        return w.isFinal ? .unterminated(what: "dollar-quoted string (\(tag))", start: constructStart) : .needMore
    }
}

/// The scanned text with its end: reading past the end gives nil, and notes (`starved`) when more text may
/// follow, so a decision that needed it is taken again once it is read.
struct LexerWindow {
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
