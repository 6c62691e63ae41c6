#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// SQLite's lexical rules for SQL text as a byte-at-a-time state machine that keeps its state across chunks, so
/// text of any size is scanned once, in time linear in its length and in memory independent of it.
///
/// It knows what SQLite's tokenizer knows about where a statement ends: `'strings'`, `"identifiers"`,
/// `` `identifiers` ``, `[identifiers]`, `--` and `/* */` comments, and the statement-level state machine of
/// `sqlite3_complete`, which keeps `CREATE TRIGGER … BEGIN …; END;` together. The SQLite backend's script execution
/// and lint and the checksum's line-ending rule all use this one scanner, so they agree on what is a literal and
/// where a statement ends.
///
/// It lives in the core, not in the SQLite backend, because checksum version 2 is defined by it: a recorded
/// checksum must keep its meaning whatever database the file later runs on. PostgreSQL's literals differ (dollar
/// quoting, `E'…'` escapes): its lexer (`PostgresLexer`), beside this one, defines version 3.
package struct SQLScanner {
    package init() {}

    /// Where the scanner is inside the current token.
    package enum Lexical: Equatable {
        case normal
        /// After a `-` that may begin `--`.
        case dash
        /// After a `/` that may begin `/*`.
        case slash
        case lineComment
        case blockComment
        /// After a `*` inside a block comment.
        case blockCommentStar
        /// Inside a string or identifier quoted with this byte.
        case quoted(UInt8)
        /// Just after the quote byte that closes the literal, unless the next byte doubles it.
        case quotedEnd(UInt8)
        /// Inside `[…]`.
        case bracket
        /// Inside a bare word (keyword or identifier).
        case word
    }

    /// The tokens `sqlite3_complete` tells apart; whitespace and comments change nothing, so they have none here.
    private enum Token: Int {
        case semicolon = 0, other, explain, create, temp, trigger, end
    }

    /// `sqlite3_complete`'s transitions: row = state (0 start of text, 1 after a complete statement, 2 in a
    /// statement, 3 after EXPLAIN, 4 after CREATE, 5 in a trigger, 6 after `;` in a trigger, 7 after END there),
    /// column = token. A `;` that leads to state 1 ends a statement.
    private static func transition(_ state: UInt8, _ token: Token) -> UInt8 {
        switch (state, token) {
        case (5, .semicolon), (6, .semicolon): return 6
        case (_, .semicolon): return 1
        case (0, .explain), (1, .explain), (3, .other): return 3
        case (0, .create), (1, .create), (3, .create): return 4
        case (4, .temp): return 4
        case (4, .trigger): return 5
        case (6, .end): return 7
        case (5, _), (6, _), (7, _): return 5
        default: return 2
        }
    }

    package private(set) var lexical = Lexical.normal
    private var state: UInt8 = 0
    /// Absolute offset where the current statement's first token starts, nil before it.
    package private(set) var statementStart: Int?
    /// Absolute offset of the literal or comment the scanner is inside (or of a pending `-` or `/`).
    package private(set) var constructStart = 0
    /// The first bytes of the current word, upper-cased, to recognise the few keywords that matter.
    private var wordBytes: UInt64 = 0
    private var wordLength = 0

    /// True while inside a string, a quoted identifier or a bracketed identifier: bytes there are data.
    package var isInsideLiteral: Bool {
        switch lexical {
        case .quoted, .bracket: true
        default: false
        }
    }

    /// A literal or comment that the text ended inside, with its absolute start offset.
    package var unterminated: (what: String, start: Int)? {
        switch lexical {
        case .quoted(UInt8(ascii: "'")): ("string", constructStart)
        case .quoted: ("quoted identifier", constructStart)
        case .bracket: ("[identifier]", constructStart)
        case .blockComment, .blockCommentStar: ("/* comment", constructStart)
        default: nil
        }
    }

    /// Scans `bytes[from...]`, whose first byte is at absolute offset `base`, and stops just after a `;` that ends
    /// a statement. Returns that statement's absolute range (first token through the `;`), or nil when the bytes
    /// end first; `index` is left where scanning stopped. A `;` that ends an empty statement is skipped.
    package mutating func nextStatement(in bytes: UnsafeBufferPointer<UInt8>, base: Int, index: inout Int) -> Range<Int>? {
        var sink = NoTokens()
        return nextStatement(in: bytes, base: base, index: &index, tokens: &sink)
    }

    /// As `nextStatement(in:base:index:)`, reporting each token to `tokens`.
    package mutating func nextStatement<Sink: SQLTokenSink>(in bytes: UnsafeBufferPointer<UInt8>, base: Int, index: inout Int,
                                                    tokens: inout Sink) -> Range<Int>? {
        let end = bytes.count
        while index < end {
            let byte = bytes[index]
            switch lexical {
            case .normal:
                switch byte {
                case 0x20, 0x09, 0x0A, 0x0D, 0x0C, 0x0B:
                    index += 1
                case UInt8(ascii: ";"):
                    index += 1
                    tokens.punctuation(byte, at: base + index - 1)
                    if let range = apply(.semicolon, at: base + index - 1, end: base + index) { return range }
                case UInt8(ascii: "-"), UInt8(ascii: "/"):
                    lexical = byte == UInt8(ascii: "-") ? .dash : .slash
                    constructStart = base + index
                    index += 1
                case UInt8(ascii: "'"), UInt8(ascii: "\""), UInt8(ascii: "`"):
                    lexical = .quoted(byte)
                    constructStart = base + index
                    index += 1
                case UInt8(ascii: "["):
                    lexical = .bracket
                    constructStart = base + index
                    index += 1
                case _ where Self.isWordByte(byte):
                    lexical = .word
                    constructStart = base + index
                    wordBytes = 0
                    wordLength = 0
                default:
                    tokens.punctuation(byte, at: base + index)
                    _ = apply(.other, at: base + index, end: base + index + 1)
                    index += 1
                }
            case .dash, .slash:
                let opener = lexical == .dash ? UInt8(ascii: "-") : UInt8(ascii: "/")
                if lexical == .dash && byte == UInt8(ascii: "-") {
                    lexical = .lineComment
                    index += 1
                } else if lexical == .slash && byte == UInt8(ascii: "*") {
                    lexical = .blockComment
                    index += 1
                } else {
                    // A lone `-` or `/` is an operator; the byte after it is scanned afresh.
                    lexical = .normal
                    tokens.punctuation(opener, at: constructStart)
                    _ = apply(.other, at: constructStart, end: constructStart + 1)
                }
            case .lineComment:
                let from = index
                index = Self.find(0x0A, in: bytes, from: index)
                tokens.lineComment(from: base + from, to: base + index)
                if index < end { lexical = .normal; index += 1 }
            case .blockComment:
                index = Self.find(UInt8(ascii: "*"), in: bytes, from: index)
                if index < end { lexical = .blockCommentStar; index += 1 }
            case .blockCommentStar:
                if byte == UInt8(ascii: "/") { lexical = .normal }
                else if byte != UInt8(ascii: "*") { lexical = .blockComment }
                index += 1
            case .quoted(let quote):
                index = Self.find(quote, in: bytes, from: index)
                if index < end { lexical = .quotedEnd(quote); index += 1 }
            case .quotedEnd(let quote):
                if byte == quote {
                    // A doubled quote is one quote character inside the literal.
                    lexical = .quoted(quote)
                    index += 1
                } else {
                    lexical = .normal
                    tokens.quoted(quote, from: constructStart, to: base + index)
                    _ = apply(.other, at: constructStart, end: base + index)
                }
            case .bracket:
                index = Self.find(UInt8(ascii: "]"), in: bytes, from: index)
                if index < end {
                    lexical = .normal
                    index += 1
                    tokens.quoted(UInt8(ascii: "["), from: constructStart, to: base + index)
                    _ = apply(.other, at: constructStart, end: base + index)
                }
            case .word:
                if Self.isWordByte(byte) {
                    if wordLength < 9 {
                        let upper = byte >= 0x61 && byte <= 0x7A ? byte - 0x20 : byte
                        if wordLength < 8 { wordBytes |= UInt64(upper) << (8 * UInt64(wordLength)) }
                        else if upper != UInt8(ascii: "Y") { wordLength = 10 } // only TEMPORARY has nine letters
                    }
                    if wordLength < 10 { wordLength += 1 }
                    index += 1
                } else {
                    endWord(base + index, &tokens)
                }
            }
        }
        return nil
    }

    /// Ends the text: a pending word, `-` or `/` becomes a token. Returns the range of a last statement that has
    /// no closing `;` (nil when there is none). Check `unterminated` first.
    package mutating func finish(at end: Int) -> Range<Int>? {
        var sink = NoTokens()
        return finish(at: end, tokens: &sink)
    }

    package mutating func finish<Sink: SQLTokenSink>(at end: Int, tokens: inout Sink) -> Range<Int>? {
        switch lexical {
        case .word:
            endWord(end, &tokens)
        case .dash, .slash:
            tokens.punctuation(lexical == .dash ? UInt8(ascii: "-") : UInt8(ascii: "/"), at: constructStart)
            _ = apply(.other, at: constructStart, end: constructStart + 1)
        case .quotedEnd(let quote):
            tokens.quoted(quote, from: constructStart, to: end)
            _ = apply(.other, at: constructStart, end: end)
        default:
            break
        }
        lexical = .normal
        defer { statementStart = nil; state = 1 }
        return statementStart.map { $0..<end }
    }

    private mutating func endWord<Sink: SQLTokenSink>(_ end: Int, _ tokens: inout Sink) {
        lexical = .normal
        tokens.word(from: constructStart, to: end)
        let token: Token
        switch wordLength {
        case 3 where wordBytes == Self.keywordEND: token = .end
        case 4 where wordBytes == Self.keywordTEMP, 9 where wordBytes == Self.keywordTEMPORAR: token = .temp
        case 6 where wordBytes == Self.keywordCREATE: token = .create
        case 7 where wordBytes == Self.keywordTRIGGER: token = .trigger
        case 7 where wordBytes == Self.keywordEXPLAIN: token = .explain
        default: token = .other
        }
        _ = apply(token, at: constructStart, end: end)
    }

    /// Feeds one token to the statement state machine; returns the statement's range when it ends here.
    private mutating func apply(_ token: Token, at start: Int, end: Int) -> Range<Int>? {
        state = Self.transition(state, token)
        if token == .semicolon {
            guard state == 1 else { return nil }
            defer { statementStart = nil }
            return statementStart.map { $0..<end }
        }
        if statementStart == nil { statementStart = start }
        return nil
    }

    private static let keywordEND = pack("END"), keywordTEMP = pack("TEMP"), keywordTEMPORAR = pack("TEMPORAR"),
                       keywordCREATE = pack("CREATE"), keywordTRIGGER = pack("TRIGGER"), keywordEXPLAIN = pack("EXPLAIN")

    /// Up to the first eight bytes of an upper-case word, one per byte, as `endWord` accumulates them.
    private static func pack(_ word: StaticString) -> UInt64 {
        var value: UInt64 = 0
        word.withUTF8Buffer { bytes in
            for (index, byte) in bytes.prefix(8).enumerated() { value |= UInt64(byte) << (8 * UInt64(index)) }
        }
        return value
    }

    /// SQLite's identifier characters: ASCII letters, digits, `_`, `$`, and every byte of a multi-byte character.
    @inline(__always)
    package static func isWordByte(_ byte: UInt8) -> Bool {
        (byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x7A || (byte >= 0x30 && byte <= 0x39)
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "$") || byte >= 0x80
    }

    /// The index of the first `byte` at or after `from`, or `bytes.count`.
    @inline(__always)
    private static func find(_ byte: UInt8, in bytes: UnsafeBufferPointer<UInt8>, from: Int) -> Int {
        guard let base = bytes.baseAddress, from < bytes.count,
              let found = memchr(base + from, Int32(byte), bytes.count - from) else { return bytes.count }
        return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
    }
}

/// Receives the tokens an `SQLScanner` finds, with absolute offsets; comments and whitespace are not reported.
package protocol SQLTokenSink {
    mutating func word(from start: Int, to end: Int)
    /// A string (quote `'`), a quoted identifier (`"`, `` ` ``, or `[` for `[…]`), including its quotes.
    mutating func quoted(_ quote: UInt8, from start: Int, to end: Int)
    mutating func punctuation(_ byte: UInt8, at offset: Int)
    /// Bytes inside a `--` comment (after the `--`, before the LF that ends it); a comment split across chunks is
    /// reported a piece at a time.
    mutating func lineComment(from start: Int, to end: Int)
}

extension SQLTokenSink {
    @inline(__always) package mutating func lineComment(from start: Int, to end: Int) {}
}

/// The sink for scanning that only needs statement boundaries; its calls compile away.
package struct NoTokens: SQLTokenSink {
    @inline(__always) package mutating func word(from start: Int, to end: Int) {}
    @inline(__always) package mutating func quoted(_ quote: UInt8, from start: Int, to end: Int) {}
    @inline(__always) package mutating func punctuation(_ byte: UInt8, at offset: Int) {}
}
