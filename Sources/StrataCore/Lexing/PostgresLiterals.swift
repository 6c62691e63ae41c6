#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which carriage returns of a PostgreSQL script are data, for checksum version 3 (`LineEndingNormalizer`), read
/// from chunks of any size pushed to it as the runner reads and runs the file.
///
/// A CR is data where the script reader (`PostgresScript`) reads it inside a string constant in any quoting
/// (`'…'`, `E'…'`, `U&'…'`, `B'…'`, `X'…'`, `N'…'`), a quoted identifier or a dollar quote, or inside a quoted field
/// of CSV COPY data (`copyLineEndings(_:)`). Elsewhere it is layout: between tokens, in comments and on meta-command
/// lines PostgreSQL and psql read CRLF, CR and LF alike. COPY data (and the rest of its statement's line) is read in
/// lines that only LF ends: there a CRLF is layout, and a lone CR data, since turning it into LF would move where a
/// line, and so the data, ends.
///
/// It reads the script as `PostgresScript` does, with the same lexer and the same COPY and meta-command rules
/// (`PostgresScriptRules`), so a quote in a COPY data line opens nothing. A byte the lexer has not consumed yet
/// (its look-ahead: `$ta` inside a dollar quote, a `'` inside a string) is kept until the next chunk. A CR is
/// decided as it arrives, since the CR itself settles every look-ahead before it (`$ta` then CR: still inside the
/// quote; `'` then CR: the string closed), but for one where only a CRLF is layout, which the byte after it decides
/// (`CarriageReturn.layoutBeforeLineFeed`). Memory holds the look-ahead, a COPY statement or a meta-command line,
/// never the whole text.
package struct PostgresLiterals {
    /// Where COPY data holds line endings that are data.
    package enum CopyLineEndings: Equatable, Sendable {
        /// Text format: a CR in the data ends a line (or is the server's error); a value's CR is written `\r`.
        case layout
        /// CSV with the default quote and escape, `"`: a CR inside a quoted field is data.
        case insideDoubleQuotes
        /// CSV with a QUOTE or ESCAPE of its own, or a format that cannot be told: every CR counts as data.
        case data
    }

    /// What a CR is.
    package enum CarriageReturn: Equatable {
        case data
        case layout
        /// Where lines end only at LF (COPY data, the rest of its statement's line): layout before an LF (a CRLF)
        /// or at the end of the text, data before any other byte.
        case layoutBeforeLineFeed
    }

    private enum Mode {
        case sql
        /// After `COPY … FROM STDIN;`: the rest of its line (blanks and a `--` comment), then its data.
        case restOfCopyLine(inComment: Bool)
        case copyData(CopyData)
        /// A meta-command from the backslash at `start`, its line searched for its end up to `searched`.
        case metaCommand(start: Int, searched: Int)
        /// After a `\copy … from stdin` line's end: up to the next LF, then its data.
        case restOfMetaCopyLine
        /// Where the reader stops with an error: nothing after it runs, so nothing there can be called layout.
        case stopped
    }

    private struct CopyData {
        var lineEndings: CopyLineEndings
        var atLineStart = true
        var insideQuotes = false
    }

    private var lexer = PostgresLexer()
    private var mode = Mode.sql
    /// The data rules of the COPY whose line or data is being read.
    private var dataLineEndings = CopyLineEndings.layout
    /// Bytes pushed and not consumed yet (or kept for the statement or line they belong to): `kept[0]` is at
    /// absolute offset `base`.
    private var kept: [UInt8] = []
    private var base = 0
    /// Absolute offset of the first byte not consumed.
    private var cursor = 0

    package init() {}

    /// Reads on over `bytes`.
    package mutating func advance(over bytes: UnsafeBufferPointer<UInt8>) {
        guard !bytes.isEmpty else { return }
        if kept.isEmpty {
            // Usually nothing is waiting: the chunk is read where it is, and only what stays undecided is copied.
            process(bytes)
            retain(bytes)
        } else {
            kept.append(contentsOf: bytes)
            let text = kept // shares storage; a local keeps the access apart from `process`'s to self
            text.withUnsafeBufferPointer { process($0) }
            text.withUnsafeBufferPointer { retain($0) }
        }
    }

    /// Reads on over one CR and says what it is.
    package mutating func advanceOverCarriageReturn() -> CarriageReturn {
        withUnsafePointer(to: Byte.carriageReturn) { advance(over: UnsafeBufferPointer(start: $0, count: 1)) }
        // The CR is the last byte read, so the state now is the one it was read in, or waits in: among blanks
        // after an `E'…'` constant (layout whatever follows), or after `\.` at a COPY data line's start (which ends
        // the data if an LF follows).
        switch mode {
        case .sql:
            return lexer.isInsideLiteral ? .data : .layout
        case .metaCommand:
            return .layout // a meta-command line ends at CR as at LF
        case .copyData(let data):
            let isValue = data.lineEndings == .data || (data.lineEndings == .insideDoubleQuotes && data.insideQuotes)
            return isValue && !data.atLineStart ? .data : .layoutBeforeLineFeed
        case .restOfCopyLine, .restOfMetaCopyLine:
            return .layoutBeforeLineFeed
        case .stopped:
            return .data
        }
    }

    /// How the data of a `COPY … FROM STDIN` whose tokens are `tokens` holds line endings: CSV when it names csv
    /// (a key word, a name or a plain string) or holds a string whose text is not known (`E'…'`, `$$…$$`), which
    /// may; its own quoting when it names QUOTE or ESCAPE.
    package static func copyLineEndings(_ tokens: [PostgresToken]) -> CopyLineEndings {
        var csv = false
        var ownQuoting = false
        for token in tokens {
            switch token.kind {
            case .word:
                if token.text == "CSV" { csv = true }
                if token.text == "QUOTE" || token.text == "ESCAPE" { ownQuoting = true }
            case .string:
                // The lexer keeps the text of a short plain '…' constant only; `''` is empty and known.
                let isKnown = !token.text.isEmpty || token.range.count == 2
                if !isKnown || token.text.lowercased() == "csv" { csv = true }
            case .quotedIdentifier:
                let name = token.text.lowercased()
                if name == "csv" { csv = true }
                if name == "quote" || name == "escape" { ownQuoting = true }
            case .number, .parameter, .symbol:
                break
            }
        }
        return !csv ? .layout : ownQuoting ? .data : .insideDoubleQuotes
    }

    // MARK: Reading

    /// Consumes what can be decided of `text`, whose first byte is at absolute offset `base`.
    private mutating func process(_ text: UnsafeBufferPointer<UInt8>) {
        let end = base + text.count
        var goesOn = true
        while goesOn {
            switch mode {
            case .sql: goesOn = readSQL(text, end: end)
            case .restOfCopyLine(let inComment): goesOn = readRestOfCopyLine(text, end: end, inComment: inComment)
            case .copyData(let data): goesOn = readCopyData(text, end: end, data)
            case .metaCommand(let start, let searched): goesOn = readMetaCommand(text, end: end, start: start, searched: searched)
            case .restOfMetaCopyLine:
                let lineEnd = Self.find(Byte.lineFeed, in: text, from: cursor - base)
                if lineEnd < text.count {
                    cursor = base + lineEnd + 1
                    mode = .copyData(CopyData(lineEndings: dataLineEndings))
                } else {
                    cursor = end
                    goesOn = false
                }
            case .stopped:
                cursor = end
                goesOn = false
            }
        }
    }

    /// Keeps the bytes of `text` still needed: from the cursor, or from the start of a COPY statement (its options
    /// decide its data's rules) or of a meta-command line.
    private mutating func retain(_ text: UnsafeBufferPointer<UInt8>) {
        var keep = cursor
        switch mode {
        case .sql where lexer.startsWithCopy: keep = min(lexer.statementStart ?? cursor, cursor)
        case .metaCommand(let start, _): keep = start
        default: break
        }
        kept = Array(text[(keep - base)...])
        base = keep
    }

    /// SQL text, with the lexer; false once it needs more bytes.
    private mutating func readSQL(_ text: UnsafeBufferPointer<UInt8>, end: Int) -> Bool {
        switch lexer.scan(text, base: base, cursor: &cursor, limit: end, isFinal: false) {
        case .needMore, .endOfInput, .unterminated:
            return false
        case .statementEnd:
            if lexer.isCopyFromStdin {
                if let start = lexer.statementStart, start >= base {
                    dataLineEndings = Self.copyLineEndings(ofStatement: UnsafeBufferPointer(rebasing: text[(start - base)..<(cursor - base)]))
                } else {
                    dataLineEndings = .data // not kept (never expected): no rule can be told
                }
                mode = .restOfCopyLine(inComment: false)
            }
            lexer.resetStatement()
        case .metaCommand(let at):
            mode = .metaCommand(start: at, searched: at + 1)
        }
        return true
    }

    /// As `PostgresScript` skips the rest of a COPY statement's line: blanks and a `--` comment, up to the LF.
    private mutating func readRestOfCopyLine(_ text: UnsafeBufferPointer<UInt8>, end: Int, inComment: Bool) -> Bool {
        var inComment = inComment
        while cursor < end {
            let byte = text[cursor - base]
            if inComment {
                // The comment ends at CR too; what follows a lone CR is read like the rest of the line.
                if byte == Byte.lineFeed || byte == Byte.carriageReturn { inComment = false } else { cursor += 1 }
                continue
            }
            switch byte {
            case Byte.lineFeed:
                cursor += 1
                mode = .copyData(CopyData(lineEndings: dataLineEndings))
                return true
            case 0x20, 0x09, 0x0C, 0x0B, Byte.carriageReturn:
                cursor += 1
            case Byte.minus where cursor + 1 == end:
                mode = .restOfCopyLine(inComment: false) // is it `--`?
                return false
            case Byte.minus where text[cursor + 1 - base] == Byte.minus:
                inComment = true
                cursor += 2
            default:
                mode = .stopped // the reader refuses text after COPY … FROM STDIN; on its line
                return true
            }
        }
        mode = .restOfCopyLine(inComment: inComment)
        return false
    }

    /// COPY data lines up to the `\.` line, as `PostgresScript.nextCopyData()` reads them.
    private mutating func readCopyData(_ text: UnsafeBufferPointer<UInt8>, end: Int, _ data: CopyData) -> Bool {
        var data = data
        while cursor < end {
            if data.atLineStart {
                switch PostgresScriptRules.copyTerminator(in: text, at: cursor - base, end: text.count, isAtEnd: false) {
                case .yes(let length):
                    cursor += length
                    mode = .sql
                    return true
                case .undecided:
                    mode = .copyData(data)
                    return false
                case .no:
                    data.atLineStart = false
                }
            }
            let from = cursor - base
            let lineEnd = Self.find(Byte.lineFeed, in: text, from: from)
            if data.lineEndings == .insideDoubleQuotes {
                // In CSV a quote opens, closes or (doubled) escapes only where fields allow it, so parity is inside-ness.
                var quote = Self.find(Byte.doubleQuote, in: text, from: from)
                while quote < lineEnd {
                    data.insideQuotes.toggle()
                    quote = Self.find(Byte.doubleQuote, in: text, from: quote + 1)
                }
            }
            if lineEnd < text.count {
                cursor = base + lineEnd + 1
                data.atLineStart = true
            } else {
                cursor = end
            }
        }
        mode = .copyData(data)
        return false
    }

    /// A meta-command's line, read whole (as `PostgresScript` reads it) to see whether it reads COPY data.
    private mutating func readMetaCommand(_ text: UnsafeBufferPointer<UInt8>, end: Int, start: Int, searched: Int) -> Bool {
        var lineEnd = searched
        while lineEnd < end, text[lineEnd - base] != Byte.lineFeed, text[lineEnd - base] != Byte.carriageReturn {
            lineEnd += 1
        }
        guard lineEnd < end else {
            mode = .metaCommand(start: start, searched: lineEnd)
            return false
        }
        let line = Array(text[(start + 1 - base)..<(lineEnd - base)])
        let (name, argument) = PostgresScriptRules.metaCommand(line[...])
        cursor = lineEnd
        if PostgresScriptRules.readsCopyData(name: name, argument: argument) {
            // Strata refuses psql's `\copy` before it runs, so no run tells its data's rules.
            dataLineEndings = .data
            mode = .restOfMetaCopyLine
        } else {
            mode = .sql
        }
        return true
    }

    /// The data rules of a `COPY … FROM STDIN` statement (first token through its `;`), from its tokens.
    private static func copyLineEndings(ofStatement statement: UnsafeBufferPointer<UInt8>) -> CopyLineEndings {
        var statementLexer = PostgresLexer()
        statementLexer.recordsTokens = true
        var at = 0
        _ = statementLexer.scan(statement, base: 0, cursor: &at, limit: statement.count, isFinal: true)
        return copyLineEndings(statementLexer.tokens)
    }

    /// The index of the first `byte` at or after `from`, or `bytes.count`.
    private static func find(_ byte: UInt8, in bytes: UnsafeBufferPointer<UInt8>, from: Int) -> Int {
        guard let base = bytes.baseAddress, from < bytes.count,
              let found = memchr(base + from, Int32(byte), bytes.count - from) else { return bytes.count }
        return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
    }
}
