/// The tokens of `PostgresLexer`: dollar quotes and parameters, numbers, words and the literals they prefix, symbols,
/// and the character classes psql uses.
extension PostgresLexer {
    // MARK: Tokens

    /// `$`: a parameter `$1`, a dollar quote's opening `$tag$` or `$$`, or a lone `$`.
    mutating func dollar(_ w: inout LexerWindow, _ i: inout Int, base: Int) -> Event? {
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
            finish(.parameter, text: "", start: base + i, end: base + j)
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
        literalStart = base + i
        delimiter = Array(w.text[i...j])
        state = .dollarQuoted
        i = j + 1
        return nil
    }

    /// A number, including what PostgreSQL 15+ scans as part of it (`1e'…'` and `0x1F` are one token each).
    mutating func number(_ w: inout LexerWindow, _ i: inout Int, base: Int) -> Event? {
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
        finish(.number, text: recordsTokens ? String(decoding: w.text[i..<j], as: UTF8.self) : "", start: base + i,
               end: base + j)
        i = j
        return nil
    }

    /// A word, or a literal whose prefix letter starts here: `E'`, `B'`, `X'`, `N'`, `U&'`, `U&"`.
    mutating func wordOrPrefixedLiteral(_ w: inout LexerWindow, _ i: inout Int, base: Int) -> Event? {
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

    enum Keyword {
        case create, or, replace, function, procedure, begin, `case`, end, copy, from, stdin, other
    }

    /// An identifier or key word: psql's function-body tracking, the COPY check, and the token.
    mutating func word(_ text: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int, base: Int) {
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
        finish(.word, text: upper, start: base + start, end: base + end)
        previousWasFrom = isFrom
    }

    /// psql's test: the statement starts CREATE FUNCTION, CREATE PROCEDURE, or the same with OR REPLACE.
    var isFunctionDefinition: Bool {
        let c = UInt32(0x63), o = UInt32(0x6F), r = UInt32(0x72), f = UInt32(0x66), p = UInt32(0x70)
        guard identifiers & 0xFF == c else { return false }
        let second = identifiers >> 8 & 0xFF
        if second == f || second == p { return true }
        let fourth = identifiers >> 24 & 0xFF
        return second == o && identifiers >> 16 & 0xFF == r && (fourth == f || fourth == p)
    }

    static func keyword(_ text: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) -> Keyword {
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

    mutating func symbol(_ byte: UInt8, _ i: inout Int, base: Int) {
        begin(at: i, base: base)
        if byte == Byte.openParenthesis {
            parenDepth += 1
        } else if byte == Byte.closeParenthesis, parenDepth > 0 {
            parenDepth -= 1
        }
        i += 1
        finish(.symbol, text: recordsTokens ? String(UnicodeScalar(byte)) : "", start: base + i - 1, end: base + i,
               depth: byte == Byte.openParenthesis ? parenDepth - 1 : parenDepth)
    }

    mutating func openString(at i: Int, base: Int, prefix: Int, escapes: Bool) {
        begin(at: i, base: base)
        constructStart = base + i
        literalStart = base + i
        stringIsPrefixed = prefix > 0
        state = .string(escapes: escapes)
    }

    mutating func closeString(_ w: LexerWindow, _ end: Int, base: Int) {
        var content = ""
        if recordsTokens && !stringIsPrefixed {
            let start = constructStart - base + 1
            if end - 1 - start <= 64 { content = String(decoding: w.text[start..<(end - 1)], as: UTF8.self) }
        }
        finish(.string, text: content, start: literalStart, end: base + end)
    }

    mutating func openQuotedIdentifier(at i: Int, base: Int, prefix: Int) {
        begin(at: i, base: base)
        constructStart = base + i + prefix
        literalStart = base + i
        state = .quotedIdentifier
    }

    mutating func closeQuotedIdentifier(_ w: LexerWindow, _ end: Int, base: Int) {
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
        finish(.quotedIdentifier, text: name, start: literalStart, end: base + end)
    }

    /// A token starts at `i`: the statement starts with it if none has.
    mutating func begin(at i: Int, base: Int) {
        if statementStart == nil { statementStart = base + i }
    }

    mutating func finish(_ kind: PostgresToken.Kind, text: String, start: Int, end: Int, depth: Int? = nil) {
        if recordsTokens {
            tokens.append(PostgresToken(kind: kind, text: text, depth: depth ?? parenDepth, range: start..<end))
        }
        tokenCount += 1
        previousWasFrom = false
        lastTokenEnd = end
    }

    // MARK: Character classes (psqlscan.l's ident_start, ident_cont, dolq_cont)

    /// `0`…`9`.
    package static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    /// A letter, `_`, or any byte of a non-ASCII character.
    package static func isIdentifierStart(_ byte: UInt8) -> Bool {
        let lower = byte | 0x20
        return (lower >= 0x61 && lower <= 0x7A) || byte == 0x5F || byte >= 0x80
    }

    /// What may follow an identifier's first character: also digits and `$`.
    static func isIdentifierPart(_ byte: UInt8) -> Bool {
        isIdentifierStart(byte) || isDigit(byte) || byte == Byte.dollar
    }

    /// What a dollar quote's tag may hold after its first character: as an identifier, but no `$`.
    package static func isDollarTagPart(_ byte: UInt8) -> Bool { isIdentifierStart(byte) || isDigit(byte) }
}
