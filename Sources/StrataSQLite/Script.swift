import CSQLite
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataCore

extension Database {
    /// Runs a whole SQL text (a migration file, say) statement by statement.
    ///
    /// Statements are split by SQLite's own lexical rules (see `SQLScanner`), so comments, triggers with
    /// `BEGIN … END;`, and strings or identifiers containing `;` need no care. The whole text is consumed or the
    /// call throws: a NUL byte, or text ending inside a string, quoted identifier or `/* comment`, is an error
    /// naming its line and column rather than a silent end. A failing statement throws a `DatabaseError` carrying
    /// the 1-based line and column where that statement starts. A statement outside a transaction that SQLite
    /// refuses as busy is run again until the busy timeout has passed (see `runScriptStatement`).
    ///
    /// - Parameter beforeEach: called with each compiled statement before it runs; throwing stops the script.
    public func executeScript(_ text: String, beforeEach: ((Statement) throws -> Void)? = nil) throws {
        var pending: [UInt8]? = Array(text.utf8)
        try executeScript(reading: {
            defer { pending = nil }
            return pending
        }, beforeEach: beforeEach, afterEach: nil)
    }

    /// Runs a whole SQL text as `executeScript(_:)` does, handing every row a statement returns to `onRow`, as
    /// FMDB's `executeStatements:withResultBlock:` does: each `Row` carries the column names of the statement it
    /// came from. Returning `.stop` ends the script there without an error: the statement is left where it stands
    /// and later ones do not run. A throw from `onRow` ends it too, with that error; a `DatabaseError` (such as a
    /// value `row.get` cannot convert) gets the statement's line and column, as SQLite's errors do.
    ///
    /// ```swift
    /// try db.executeScript("SELECT count(*) AS n FROM books; SELECT name FROM authors;") { row in
    ///     print(row)
    ///     return .proceed
    /// }
    /// ```
    public func executeScript(_ text: String, onRow: (Row) throws -> ScriptRowAction) throws {
        var pending: [UInt8]? = Array(text.utf8)
        // The callback is only called during this call; the optional parameter below merely types as escaping.
        try withoutActuallyEscaping(onRow) { onRow in
            try executeScript(reading: {
                defer { pending = nil }
                return pending
            }, beforeEach: nil, afterEach: nil, onRow: onRow)
        }
    }

    /// Runs a SQL file statement by statement, reading it in chunks: memory holds one statement and one chunk,
    /// whatever the file's size, and time is linear in the file's size. Errors carry the failing statement's
    /// 1-based line and column, as `executeScript(_:)` does. A UTF-8 BOM at the start is skipped. Only a regular
    /// file is read (a FIFO, device or directory is refused before anything runs).
    /// - Parameter progress: called after each chunk is read with the bytes read so far and the file's size.
    public func executeScript(contentsOfFile path: String, chunkSize: Int = 1 << 20,
                              progress: ((_ bytesRead: Int, _ totalBytes: Int) -> Void)? = nil,
                              beforeEach: ((Statement) throws -> Void)? = nil) throws {
        try executeScript(contentsOfFile: path, chunkSize: chunkSize, progress: progress, observe: nil,
                          beforeEach: beforeEach, afterEach: nil)
    }

    /// As the public form; `observe` sees every byte read from the file, in order, before it runs, so a caller can
    /// hash or keep exactly the bytes that ran; `afterEach` is called when a statement has run to completion.
    func executeScript(contentsOfFile path: String, chunkSize: Int = 1 << 20,
                       progress: ((_ bytesRead: Int, _ totalBytes: Int) -> Void)?,
                       observe: ((UnsafeBufferPointer<UInt8>) -> Void)?,
                       beforeEach: ((Statement) throws -> Void)?, afterEach: (() -> Void)?) throws {
        guard !isClosed else { throw DatabaseError.misuse("the database connection is closed") }
        let file: RegularFile
        do {
            file = try RegularFile(path: path)
        } catch let error as RegularFile.OpenError {
            throw DatabaseError(code: SQLITE_CANTOPEN, message: error.description)
        }
        var bytesRead = 0
        try executeScript(reading: {
            let chunk: [UInt8]
            do { chunk = try file.read(upTo: max(chunkSize, 1)) } catch {
                throw DatabaseError(code: SQLITE_IOERR, message: "cannot read \(path): \(error)")
            }
            guard !chunk.isEmpty else { return nil }
            bytesRead += chunk.count
            chunk.withUnsafeBufferPointer { observe?($0) }
            progress?(bytesRead, file.size)
            return chunk
        }, beforeEach: beforeEach, afterEach: afterEach)
    }

    /// Runs part of a file held in memory whose first byte starts line `startLine` (an up section), so errors
    /// carry the file's own line numbers.
    func executeScript(_ bytes: [UInt8], startLine: Int, afterEach: (() -> Void)?) throws {
        var pending: [UInt8]? = bytes
        try executeScript(reading: {
            defer { pending = nil }
            return pending
        }, startLine: startLine, beforeEach: nil, afterEach: afterEach)
    }

    /// The one execution path for in-memory and streamed scripts: `readChunk` returns the next bytes, nil at the end.
    private func executeScript(reading readChunk: () throws -> [UInt8]?, startLine: Int = 1,
                               beforeEach: ((Statement) throws -> Void)?, afterEach: (() -> Void)?,
                               onRow: ((Row) throws -> ScriptRowAction)? = nil) throws {
        guard !isClosed else { throw DatabaseError.misuse("the database connection is closed") }
        var buffer = ScriptBuffer()
        var scanner = SQLScanner()
        var position = TextPosition(line: startLine)
        var consumed = 0
        var scanned = 0
        var endOfInput = false

        func readMore() throws {
            guard let chunk = try readChunk(), !chunk.isEmpty else { endOfInput = true; return }
            if let nul = chunk.firstIndex(of: 0) {
                var at = position
                at.advance(over: buffer, from: consumed, to: buffer.end)
                chunk.withUnsafeBufferPointer { at.advance(over: $0, from: 0, to: nul) }
                throw DatabaseError(code: SQLITE_ERROR,
                    message: "the text contains a NUL byte, which would silently end it for SQLite; remove it")
                    .at(line: at.line, column: at.column)
            }
            buffer.append(chunk, droppingBefore: consumed)
        }

        /// Runs the statements of one scanned range; usually one, more where SQLite splits finer than the scanner.
        /// False when `onRow` stopped the script.
        func run(_ range: Range<Int>) throws -> Bool {
            position.advance(over: buffer, from: consumed, to: range.lowerBound)
            var offset = range.lowerBound
            while offset < range.upperBound {
                let start = buffer.skipTrivia(from: offset, to: range.upperBound)
                position.advance(over: buffer, from: offset, to: start)
                offset = start
                guard offset < range.upperBound else { break }
                guard range.upperBound - offset <= Int(Int32.max) else {
                    throw DatabaseError(code: SQLITE_TOOBIG, message: "a statement of \(range.upperBound - offset) bytes is longer than SQLite accepts")
                        .at(line: position.line, column: position.column)
                }
                var statement: OpaquePointer?
                var tailOffset = range.upperBound
                let (code, control) = authorizer.classifying {
                    buffer.withBytes(from: offset) { pointer in
                        var tail: UnsafePointer<CChar>?
                        let code = sqlite3_prepare_v2(handle, pointer, Int32(range.upperBound - offset), &statement, &tail)
                        if let tail { tailOffset = offset + pointer.distance(to: tail) }
                        return code
                    }
                }
                guard code == SQLITE_OK else {
                    sqlite3_finalize(statement)
                    throw lastError(code, sql: buffer.string(from: offset, to: min(range.upperBound, offset + 200)))
                        .at(line: position.line, column: position.column)
                }
                guard let statement else {
                    // Nothing compiled although the text is not blank: never skip it silently.
                    guard tailOffset > offset else {
                        throw DatabaseError(code: SQLITE_ERROR, message: "SQLite compiled nothing from this text",
                                            sql: buffer.string(from: offset, to: min(range.upperBound, offset + 200)))
                            .at(line: position.line, column: position.column)
                    }
                    position.advance(over: buffer, from: offset, to: tailOffset)
                    offset = tailOffset
                    continue
                }
                let sql = buffer.string(from: offset, to: tailOffset)
                guard sqlite3_bind_parameter_count(statement) == 0 else {
                    // A script binds nothing: SQLite would run the statement with NULL for every parameter.
                    let name = sqlite3_bind_parameter_name(statement, 1).map { String(cString: $0) } ?? "?"
                    sqlite3_finalize(statement)
                    throw DatabaseError(code: SQLITE_RANGE,
                        message: "the statement has a parameter (\(name)) but a script binds no values, so SQLite would use NULL; write the value itself",
                        sql: sql).at(line: position.line, column: position.column)
                }
                let finished = try runScriptStatement(Statement(handle: statement, connection: handle, sql: sql,
                                                                transactionState: transactionState, control: control,
                                                                dateStorage: configuration.dateStorage),
                                                      at: position, beforeEach, onRow)
                guard finished else { return false }
                afterEach?()
                position.advance(over: buffer, from: offset, to: tailOffset)
                offset = tailOffset
            }
            consumed = range.upperBound
            return true
        }

        // The BOM check needs the first three bytes, which a small read may split.
        while buffer.end < 3 && !endOfInput { try readMore() }
        if buffer.startsWithBOM { consumed = 3; scanned = 3 }
        while true {
            if scanned == buffer.end {
                if endOfInput { break }
                try readMore()
                continue
            }
            var index = scanned - buffer.base
            let range = buffer.withReadableBytes { scanner.nextStatement(in: $0, base: buffer.base, index: &index) }
            scanned = buffer.base + index
            if let range, try !run(range) { return }
        }
        if let open = scanner.unterminated {
            var at = position
            at.advance(over: buffer, from: consumed, to: open.start)
            throw DatabaseError(code: SQLITE_ERROR,
                message: "the text ends inside a \(open.what) that starts here; nothing after it could run")
                .at(line: at.line, column: at.column)
        }
        if let last = scanner.finish(at: buffer.end) { _ = try run(last) }
    }

    /// Runs one statement of a script to completion, its rows handed to `onRow`; its error carries the statement's
    /// position. False when `onRow` stopped the script.
    ///
    /// A statement that runs outside any transaction and fails with `SQLITE_BUSY` before its first row did nothing,
    /// and SQLite's documentation says it may be run again. SQLite gives up at once, without waiting the busy
    /// timeout, where waiting could deadlock: `PRAGMA journal_mode = WAL` while another connection holds the write
    /// lock (a second runner checking history, the app writing) fails on the spot. Such a statement is run again
    /// until the busy timeout has passed since its first attempt; inside a transaction a busy statement is never
    /// repeated (SQLite may have rolled that transaction back).
    private func runScriptStatement(_ statement: Statement, at position: TextPosition,
                                    _ beforeEach: ((Statement) throws -> Void)?,
                                    _ onRow: ((Row) throws -> ScriptRowAction)?) throws -> Bool {
        let outsideTransaction = sqlite3_get_autocommit(handle) != 0
        let deadline = ContinuousClock.now + configuration.busyTimeout
        var returnedRow = false
        do {
            try beforeEach?(statement)
            while true {
                do {
                    while try statement.step() {
                        returnedRow = true
                        if let onRow, try onRow(statement.currentRow()) == .stop {
                            statement.reset()
                            return false
                        }
                    }
                    return true
                } catch let error as DatabaseError
                            where error.resultCode == SQLITE_BUSY && outsideTransaction && !returnedRow
                                && sqlite3_get_autocommit(handle) != 0 && ContinuousClock.now < deadline {
                    sleepBlocking(for: .milliseconds(10))
                }
            }
        } catch let error as DatabaseError {
            throw error.at(line: position.line, column: position.column)
        }
    }
}

/// What `executeScript(_:onRow:)` does after handing a row to its callback.
public enum ScriptRowAction: Sendable, Equatable {
    /// Go on: the next row, then the next statement.
    case proceed
    /// End the script here, without an error; nothing after this row runs.
    case stop
}

/// The unexecuted part of a SQL text, addressed by absolute offsets into the whole text; bytes before the point
/// already run are dropped when more is read, so it holds at most one statement and one chunk.
struct ScriptBuffer {
    private var storage: [UInt8] = []
    /// The absolute offset of `storage[0]`.
    private(set) var base = 0
    /// The absolute offset just past the last byte read.
    var end: Int { base + storage.count }

    var startsWithBOM: Bool { base == 0 && storage.starts(with: [0xEF, 0xBB, 0xBF]) }

    mutating func append(_ bytes: [UInt8], droppingBefore offset: Int) {
        let drop = offset - base
        if drop > 0 {
            storage.removeFirst(drop)
            base = offset
        }
        storage.append(contentsOf: bytes)
    }

    func withReadableBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try storage.withUnsafeBufferPointer(body)
    }

    /// Calls `body` with a pointer to the byte at absolute `offset`, as SQLite's C strings want it.
    func withBytes<R>(from offset: Int, _ body: (UnsafePointer<CChar>) throws -> R) rethrows -> R {
        try storage.withUnsafeBytes { raw in
            guard let address = raw.baseAddress else { return try body("") }
            return try body(address.advanced(by: offset - base).assumingMemoryBound(to: CChar.self))
        }
    }

    func string(from start: Int, to end: Int) -> String {
        String(decoding: storage[(start - base)..<(end - base)], as: UTF8.self)
    }

    /// The absolute offset of the first byte in `start..<end` that is not whitespace, a comment or a lone `;`.
    func skipTrivia(from start: Int, to end: Int) -> Int {
        var i = start - base
        let limit = end - base
        while i < limit {
            let byte = storage[i]
            if byte == 0x20 || (byte >= 0x09 && byte <= 0x0D) || byte == UInt8(ascii: ";") {
                i += 1
            } else if byte == UInt8(ascii: "-"), i + 1 < limit, storage[i + 1] == UInt8(ascii: "-") {
                while i < limit && storage[i] != 0x0A { i += 1 }
            } else if byte == UInt8(ascii: "/"), i + 1 < limit, storage[i + 1] == UInt8(ascii: "*") {
                i += 2
                while i < limit && !(storage[i] == UInt8(ascii: "*") && i + 1 < limit && storage[i + 1] == UInt8(ascii: "/")) {
                    i += 1
                }
                i = min(i + 2, limit)
            } else {
                break
            }
        }
        return base + i
    }
}

extension TextPosition {
    /// Advances over the buffered bytes between two absolute offsets.
    mutating func advance(over buffer: ScriptBuffer, from start: Int, to end: Int) {
        guard start < end else { return }
        buffer.withReadableBytes { bytes in
            for i in (start - buffer.base)..<(end - buffer.base) { advance(over: bytes[i]) }
        }
    }

    mutating func advance(over bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) {
        guard start < end else { return }
        for i in start..<end { advance(over: bytes[i]) }
    }
}
