import StrataCore

/// One SQL statement of a script: its text without the `;` that ends it, and where it starts in the file.
struct PostgresStatementText: Equatable, Sendable {
    /// From the statement's first token to its last (comments and blanks around it left out, comments inside
    /// kept), exactly as written.
    let sql: String
    /// 1-based line and column (in characters) of the statement's first character that is not blank or comment.
    let line: Int
    let column: Int

    /// The file line and column of a 1-based character position inside `sql`, as PostgreSQL's error `position`
    /// field (`PG_DIAG_STATEMENT_POSITION`) counts it in the text it was sent: characters, not bytes, with CR and
    /// LF one character each. A position past the end gives the place just after the text.
    func location(ofPosition position: Int) -> (line: Int, column: Int) {
        var at = TextPosition(line: line)
        at.column = column
        var remaining = position - 1
        for byte in sql.utf8 {
            if byte & 0xC0 != 0x80 { // the first byte of a character
                if remaining <= 0 { break }
                remaining -= 1
            }
            at.advance(over: byte)
        }
        return (at.line, at.column)
    }
}

/// A psql backslash command line, such as `\restrict KEY` that pg_dump writes.
struct PostgresMetaCommand: Equatable, Sendable {
    /// The command without its backslash: `restrict`, `connect`, `set`.
    let name: String
    /// The rest of its line, blanks around it removed.
    let argument: String
    let line: Int
    let column: Int
}

/// What a script holds, in order.
enum PostgresScriptPiece: Equatable, Sendable {
    /// One SQL statement.
    case statement(PostgresStatementText)
    /// A `COPY … FROM STDIN` statement: its data lines follow in the script (`PostgresScript.nextCopyData()`),
    /// from line `dataLine`.
    case copy(PostgresStatementText, dataLine: Int)
    /// A psql meta-command line at a statement boundary.
    case metaCommand(PostgresMetaCommand)
}

/// Reads a PostgreSQL script piece by piece, splitting it where psql (and so pg_dump's restore) splits it
/// (`PostgresLexer` has the rules), in chunks: memory holds one statement and one chunk, whatever the file's size.
///
/// - A leading UTF-8 BOM is skipped. The text must be UTF-8 without NUL bytes (PostgreSQL takes neither in query
///   text): either is an error naming its line and column, raised when reading reaches it, so the pieces before
///   it are returned first.
/// - `'…'` is read with standard-conforming strings (a backslash is an ordinary character), PostgreSQL's default
///   since 9.1 and what pg_dump sets; `PostgresLint` reports a file that turns the setting off.
/// - After `COPY … FROM STDIN;` only blanks or a `--` comment may follow on its line; the data is the lines after
///   it up to a line that is exactly `\.` (LF or CRLF ended, or at the end of the file), as psql reads it. `next()`
///   skips data not read with `nextCopyData()`. psql's `\copy … from stdin` reads its data the same way.
/// - A backslash where a statement would begin starts a psql meta-command, which ends at the end of its line.
/// - Text ending inside a string, quoted identifier, dollar quote or block comment is an error at its start.
///
/// A value of this type reads through one file descriptor: copies share it, so use one copy.
struct PostgresScript {
    /// How much is read at once, and about how much COPY data `nextCopyData()` returns at once.
    static let defaultChunkSize = 64 << 10

    private enum Source {
        case memory([UInt8])
        case file(RegularFile, path: String)
    }

    private let source: Source
    private let chunkSize: Int
    private var memoryOffset = 0
    private var sourceExhausted = false

    /// The unread part of the text, addressed by absolute offsets: `buffer[0]` is at offset `base`.
    private var buffer: [UInt8] = []
    private var base = 0
    /// Bytes before this absolute offset are checked: UTF-8, no NUL. The lexer never reads past it.
    private var checkedEnd = 0
    /// The first byte that is not valid text, with why.
    private var invalid: (offset: Int, message: String)?
    private var startChecked = false
    /// Absolute offset where reading continues.
    private var cursor = 0

    private var lexer = PostgresLexer()
    /// The line and column at absolute offset `trackedOffset`; advanced, never moved back.
    private var tracker = TextPosition()
    private var trackedOffset = 0
    /// Where an open block comment between statements starts, noted before its bytes are dropped.
    private var commentStart: (offset: Int, position: TextPosition)?

    /// Whether COPY data is being read (after a `.copy` piece or a `\copy … from stdin` line).
    private var readingCopyData = false
    /// After `nextCopyData()` returned data that stopped at the `\.` line: where that line ends.
    private var pendingTerminatorEnd: Int?
    /// Whether the last COPY data ran to the end of the file without a `\.` line.
    private(set) var copyDataLackedTerminator = false

    /// Sees every byte read, in order (the runner hashes and keeps what ran).
    var onRead: ((UnsafeBufferPointer<UInt8>) -> Void)?
    /// Told the bytes read so far and the file's size after each chunk.
    var onProgress: ((_ bytesRead: Int, _ totalBytes: Int) -> Void)?
    private var bytesRead = 0

    /// Opens a script file; only a regular file is read (see `RegularFile`). Errors name the path.
    init(path: String, chunkSize: Int = PostgresScript.defaultChunkSize) throws {
        do {
            source = .file(try RegularFile(path: path), path: path)
        } catch let error as RegularFile.OpenError {
            throw DatabaseError(kind: .cannotOpen, message: error.description)
        }
        self.chunkSize = max(chunkSize, 1)
    }

    /// A script held in memory, read in chunks of `chunkSize` all the same (tests vary it to cut the text
    /// everywhere).
    init(bytes: [UInt8], chunkSize: Int = PostgresScript.defaultChunkSize) {
        source = .memory(bytes)
        self.chunkSize = max(chunkSize, 1)
    }

    /// Script text that starts at `startLine` of its file (the up section of another tool's migration file).
    init(bytes: [UInt8], startLine: Int) {
        self.init(bytes: bytes)
        tracker = TextPosition(line: startLine)
    }

    /// Record the tokens of each statement (`tokens`), for the lint.
    var recordsTokens: Bool {
        get { lexer.recordsTokens }
        set { lexer.recordsTokens = newValue }
    }

    /// The tokens of the statement last returned, when `recordsTokens` is on.
    private(set) var tokens: [PostgresToken] = []
    /// In the statement last returned: where a backslash stands outside literals (psql would start a
    /// meta-command there; the server rejects it).
    private(set) var strayBackslash: (line: Int, column: Int)?

    /// How many bytes the reader holds now (tests check that it stays near a chunk).
    var bufferedByteCount: Int { buffer.count }

    /// The absolute offset in the text (a BOM included) where reading continues: after a `.copy` piece or a
    /// `\copy … from stdin` line, where its data starts (tests place COPY data in the text with it).
    var offset: Int { cursor }

    // MARK: Pieces

    /// The next piece, or nil at the end.
    mutating func next() throws -> PostgresScriptPiece? {
        while readingCopyData { _ = try nextCopyData() }
        try skipByteOrderMark()
        while true {
            let event = scanAvailable()
            switch event {
            case .needMore:
                try readMore()
            case .endOfInput:
                return nil
            case .unterminated(let what, let start):
                let at = lexer.isInsideCommentBetweenStatements && commentStart?.offset == start
                    ? commentStart?.position ?? position(at: start) : position(at: start)
                throw Self.error("the text ends inside a \(what) that starts here; nothing after it could run", at)
            case .metaCommand(let offset):
                if let command = try metaCommand(at: offset) { return .metaCommand(command) }
            case .statementEnd(let semicolon):
                if let piece = try statement(endingAt: semicolon) { return piece }
            }
        }
    }

    private mutating func statement(endingAt semicolon: Int?) throws -> PostgresScriptPiece? {
        guard let start = lexer.statementStart else { return nil }
        let at = position(at: start)
        let sql = String(decoding: buffer[(start - base)..<(lexer.lastTokenEnd - base)], as: UTF8.self)
        let text = PostgresStatementText(sql: sql, line: at.line, column: at.column)
        strayBackslash = lexer.strayBackslash.map { position(at: $0) }.map { ($0.line, $0.column) }
        if lexer.recordsTokens { tokens = lexer.tokens }
        let isCopy = lexer.isCopyFromStdin
        lexer.resetStatement()
        guard isCopy else { return .statement(text) }
        if semicolon != nil { try skipRestOfCopyLine() }
        readingCopyData = true
        copyDataLackedTerminator = false
        return .copy(text, dataLine: position(at: cursor).line)
    }

    /// Scans what is read and checked so far.
    private mutating func scanAvailable() -> PostgresLexer.Event {
        let isFinal = sourceExhausted && invalid == nil && checkedEnd == base + buffer.count
        let limit = checkedEnd
        let text = buffer // shares storage; a local copy keeps the access to `buffer` apart from the lexer's
        return text.withUnsafeBufferPointer { text in
            lexer.scan(text, base: base, cursor: &cursor, limit: limit, isFinal: isFinal)
        }
    }

    /// psql reads the data of `COPY … FROM STDIN` from the line after the statement; what follows the `;` on its
    /// own line would run after the data. Only blanks and `--` comments may stand there.
    private mutating func skipRestOfCopyLine() throws {
        var inComment = false
        while true {
            if cursor == checkedEnd {
                if isAtEnd { return }
                try readMore()
                continue
            }
            let byte = buffer[cursor - base]
            if inComment {
                // psql's lexer ends the comment at CR too; what follows a lone CR is checked like the rest.
                if byte == Byte.lineFeed || byte == Byte.carriageReturn { inComment = false } else { cursor += 1 }
                continue
            }
            switch byte {
            case Byte.lineFeed:
                cursor += 1
                return
            case 0x20, 0x09, 0x0C, 0x0B, Byte.carriageReturn:
                cursor += 1
            case Byte.minus where cursor + 1 == checkedEnd && !isAtEnd:
                try readMore() // is it `--`?
            case Byte.minus where cursor + 1 < checkedEnd && buffer[cursor + 1 - base] == Byte.minus:
                inComment = true
                cursor += 2
            default:
                throw Self.error("text after COPY … FROM STDIN; on its line: psql would run it after the data, which starts on the next line; put it on a line of its own after the \\. line",
                                 position(at: cursor))
            }
        }
    }

    /// A meta-command line, once all of it is read; nil to read more first.
    private mutating func metaCommand(at offset: Int) throws -> PostgresMetaCommand? {
        var end = offset + 1
        while end < checkedEnd, buffer[end - base] != Byte.lineFeed, buffer[end - base] != Byte.carriageReturn {
            end += 1
        }
        guard end < checkedEnd || isAtEnd else {
            try readMore()
            return nil
        }
        let (name, argument) = PostgresScriptRules.metaCommand(buffer[(offset + 1 - base)..<(end - base)])
        let at = position(at: offset)
        let command = PostgresMetaCommand(name: name, argument: argument, line: at.line, column: at.column)
        cursor = end
        if PostgresScriptRules.readsCopyData(name: name, argument: argument) {
            // psql reads `\copy … from stdin` data from the script, from the next line on, as for COPY.
            while cursor < checkedEnd || !isAtEnd {
                if cursor == checkedEnd { try readMore(); continue }
                cursor += 1
                if buffer[cursor - 1 - base] == Byte.lineFeed { break }
            }
            readingCopyData = true
            copyDataLackedTerminator = false
        }
        return command
    }

    // MARK: COPY data

    /// After a `.copy` piece: the next whole lines of its data, raw (line ends included, the `\.` line not), about
    /// a chunk at a time; nil once the data ended at its `\.` line or at the end of the file.
    mutating func nextCopyData() throws -> [UInt8]? {
        guard readingCopyData else { return nil }
        if let end = pendingTerminatorEnd {
            cursor = end
            pendingTerminatorEnd = nil
            readingCopyData = false
            return nil
        }
        let start = cursor
        var lineStart = cursor
        while true {
            if lineStart - start >= chunkSize { return takeData(from: start, to: lineStart) }
            switch copyLine(at: lineStart) {
            case .line(let end):
                lineStart = end
            case .terminator(let end):
                guard lineStart == start else {
                    pendingTerminatorEnd = end
                    return takeData(from: start, to: lineStart)
                }
                cursor = end
                readingCopyData = false
                return nil
            case .endOfData:
                if lineStart > start { return takeData(from: start, to: lineStart) }
                readingCopyData = false
                copyDataLackedTerminator = true
                return nil
            case .needMore:
                if let invalid {
                    if lineStart > start { return takeData(from: start, to: lineStart) }
                    throw Self.error(invalid.message, position(at: invalid.offset))
                }
                cursor = start // keeps the lines not yet returned across the read
                try readMore()
            }
        }
    }

    private enum CopyLine {
        case line(end: Int)
        case terminator(end: Int)
        case endOfData
        case needMore
    }

    /// The data line starting at absolute offset `start`, or the `\.` line ending the data
    /// (`PostgresScriptRules.copyTerminator`).
    private func copyLine(at start: Int) -> CopyLine {
        guard start < checkedEnd else { return isAtEnd ? .endOfData : .needMore }
        return buffer.withUnsafeBufferPointer { text in
            let i = start - base
            let end = checkedEnd - base
            switch PostgresScriptRules.copyTerminator(in: text, at: i, end: end, isAtEnd: isAtEnd) {
            case .yes(let length): return .terminator(end: start + length)
            case .undecided: return .needMore
            case .no: break
            }
            var j = i
            while j < end, text[j] != Byte.lineFeed { j += 1 }
            if j < end { return .line(end: base + j + 1) }
            return isAtEnd ? .line(end: base + end) : .needMore
        }
    }

    private mutating func takeData(from start: Int, to end: Int) -> [UInt8] {
        cursor = end
        return Array(buffer[(start - base)..<(end - base)])
    }

    // MARK: Reading and checking

    /// Everything is read and checked: no byte follows `checkedEnd`.
    private var isAtEnd: Bool { sourceExhausted && invalid == nil && checkedEnd == base + buffer.count }

    private mutating func skipByteOrderMark() throws {
        guard !startChecked else { return }
        while buffer.count < 3 && !sourceExhausted { try readMore() }
        startChecked = true
        if buffer.starts(with: [0xEF, 0xBB, 0xBF]) {
            cursor = 3
            trackedOffset = 3 // the BOM is no character: the text starts at line 1, column 1
        }
    }

    /// Reads the next chunk, first dropping what is no longer needed; at a byte that is not valid text, throws.
    private mutating func readMore() throws {
        if let invalid { throw Self.error(invalid.message, position(at: invalid.offset)) }
        guard !sourceExhausted else { return }
        dropConsumed()
        let chunk: [UInt8]
        switch source {
        case .memory(let bytes):
            let end = min(bytes.count, memoryOffset + chunkSize)
            chunk = Array(bytes[memoryOffset..<end])
            memoryOffset = end
        case .file(let file, let path):
            do {
                chunk = try file.read(upTo: chunkSize)
            } catch {
                throw DatabaseError(kind: .other, message: "cannot read \(path): \(error)")
            }
        }
        if chunk.isEmpty {
            sourceExhausted = true
        } else {
            buffer.append(contentsOf: chunk)
            bytesRead += chunk.count
            if let onRead { chunk.withUnsafeBufferPointer(onRead) }
            if let onProgress, case .file(let file, _) = source { onProgress(bytesRead, file.size) }
        }
        check()
    }

    /// Drops the bytes before the current statement (or before the cursor between statements), after counting
    /// their lines.
    private mutating func dropConsumed() {
        let keep = min(lexer.statementStart ?? cursor, cursor)
        if lexer.isInsideCommentBetweenStatements, commentStart?.offset != lexer.constructStart,
           lexer.constructStart < keep {
            commentStart = (lexer.constructStart, position(at: lexer.constructStart))
        }
        guard keep > base else { return }
        _ = position(at: keep)
        buffer.removeSubrange(0..<(keep - base))
        base = keep
    }

    /// Checks the bytes read since the last check: UTF-8 without NUL. A sequence cut by the chunk's end waits for
    /// the next chunk.
    private mutating func check() {
        guard invalid == nil else { return }
        var i = checkedEnd - base
        var problem: (Int, String)?
        buffer.withUnsafeBufferPointer { text in
            let count = text.count
            while i < count {
                let byte = text[i]
                if byte >= 0x01 && byte < 0x80 { i += 1; continue }
                if byte == 0 {
                    problem = (i, "the text contains a NUL byte, which PostgreSQL does not accept in SQL text; remove it")
                    return
                }
                let length: Int
                var low: UInt8 = 0x80, high: UInt8 = 0xBF // the second byte's range
                switch byte {
                case 0xC2...0xDF: length = 2
                case 0xE0: length = 3; low = 0xA0
                case 0xE1...0xEC, 0xEE...0xEF: length = 3
                case 0xED: length = 3; high = 0x9F // no UTF-16 surrogates
                case 0xF0: length = 4; low = 0x90
                case 0xF1...0xF3: length = 4
                case 0xF4: length = 4; high = 0x8F // nothing past U+10FFFF
                default: length = 0
                }
                var valid = length > 0
                var k = 1
                while valid && k < length && i + k < count {
                    let next = text[i + k]
                    valid = k == 1 ? next >= low && next <= high : next & 0xC0 == 0x80
                    k += 1
                }
                if valid && i + length > count && !sourceExhausted { return } // cut by the chunk's end
                if !valid || i + length > count {
                    let bytes = text[i..<min(i + max(k, 1), count)].map { "0x" + String($0, radix: 16, uppercase: true) }
                    problem = (i, "the text is not valid UTF-8 here (bytes \(bytes.joined(separator: " "))); PostgreSQL reads SQL as text in the connection's encoding, which Strata sets to UTF-8 — convert the file to UTF-8")
                    return
                }
                i += length
            }
        }
        checkedEnd = base + i
        if let (offset, message) = problem { invalid = (base + offset, message) }
    }

    /// The line and column at an absolute offset at or after the last one asked, in the buffer.
    private mutating func position(at offset: Int) -> TextPosition {
        if offset > trackedOffset {
            let (from, to) = (trackedOffset - base, offset - base)
            buffer.withUnsafeBytes { raw in
                // One call for the range: TextPosition lives in another module, so a call per byte would cost.
                raw.withMemoryRebound(to: CChar.self) { tracker.advance(over: $0, from: from, to: to) }
            }
            trackedOffset = offset
        }
        return tracker
    }

    private static func error(_ message: String, _ at: TextPosition) -> DatabaseError {
        DatabaseError(kind: .syntax, code: nil, message: message, line: at.line, column: at.column)
    }
}
