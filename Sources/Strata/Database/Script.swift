import CSQLite
import Foundation

extension Database {
    /// Runs a whole SQL text (a migration file, say) statement by statement.
    ///
    /// SQLite's own parser finds each statement's end (`sqlite3_prepare_v2`'s tail), so comments, triggers
    /// with `BEGIN … END;`, and strings or identifiers containing `;` need no care. A failing statement throws
    /// a `DatabaseError` carrying the 1-based line and column where that statement starts.
    ///
    /// - Parameter beforeEach: called with each compiled statement before it runs; throwing stops the script.
    public func executeScript(_ text: String, beforeEach: ((Statement) throws -> Void)? = nil) throws {
        guard !isClosed else { throw DatabaseError.misuse("the database connection is closed") }
        var bytes = Array(text.utf8CString)
        let total = bytes.count - 1
        try bytes.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            var position = TextPosition()
            var offset = 0
            while offset < total {
                let start = Self.skipTrivia(UnsafeBufferPointer(buffer), from: offset, end: total)
                position.advance(over: UnsafeBufferPointer(buffer), from: offset, to: start)
                offset = start
                guard offset < total else { return }
                var statement: OpaquePointer?
                var tail: UnsafePointer<CChar>?
                let code = sqlite3_prepare_v2(handle, base + offset, Int32(total - offset), &statement, &tail)
                let statementEnd = tail.map { $0 - UnsafePointer(base) } ?? total
                let sql = String(decoding: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[offset..<statementEnd]),
                                 as: UTF8.self)
                guard code == SQLITE_OK else {
                    throw lastError(code, sql: sql).at(line: position.line, column: position.column)
                }
                guard let statement else {
                    // An empty statement (a lone `;`) compiles to nothing; anything after it still runs.
                    guard statementEnd > offset else { return }
                    position.advance(over: UnsafeBufferPointer(buffer), from: offset, to: statementEnd)
                    offset = statementEnd
                    continue
                }
                try runScriptStatement(Statement(handle: statement, connection: handle, sql: sql), at: position, beforeEach)
                position.advance(over: UnsafeBufferPointer(buffer), from: offset, to: statementEnd)
                offset = statementEnd
            }
        }
    }

    /// Runs one statement of a script to completion; its error carries the statement's position.
    private func runScriptStatement(_ statement: Statement, at position: TextPosition,
                                    _ beforeEach: ((Statement) throws -> Void)?) throws {
        do {
            try beforeEach?(statement)
            while try statement.step() {}
        } catch let error as DatabaseError {
            throw error.at(line: position.line, column: position.column)
        }
    }

    /// The index of the first byte at or after `offset` that is not whitespace or a comment.
    static func skipTrivia(_ text: UnsafeBufferPointer<CChar>, from offset: Int, end: Int) -> Int {
        scanTrivia(text, from: offset, end: end).end
    }

    /// Like `skipTrivia`, and whether the text ended inside a comment or on a `-` or `/` that may start one, so a
    /// streaming reader knows to read more before deciding.
    static func scanTrivia(_ text: UnsafeBufferPointer<CChar>, from offset: Int, end: Int) -> (end: Int, open: Bool) {
        let dash = CChar(UInt8(ascii: "-")), slash = CChar(UInt8(ascii: "/")), star = CChar(UInt8(ascii: "*"))
        var i = offset
        while i < end {
            let c = UInt8(bitPattern: text[i])
            // A lone `;` is an empty statement: nothing to run, like a blank.
            if c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D || c == 0x0C || c == 0x0B || c == UInt8(ascii: ";") {
                i += 1
            } else if text[i] == dash || text[i] == slash {
                guard i + 1 < end else { return (i, true) }
                if text[i] == dash && text[i + 1] == dash {
                    while i < end, text[i] != 0x0A { i += 1 }
                    if i == end { return (i, true) }
                } else if text[i] == slash && text[i + 1] == star {
                    i += 2
                    while i < end, !(text[i] == star && i + 1 < end && text[i + 1] == slash) { i += 1 }
                    if i >= end - 1 { return (end, true) }
                    i += 2
                } else {
                    break
                }
            } else {
                break
            }
        }
        return (i, false)
    }
}

extension Database {
    /// Runs a SQL file statement by statement, reading it in chunks: memory holds one statement and one chunk,
    /// whatever the file's size. Errors carry the failing statement's 1-based line and column, as
    /// `executeScript(_:)` does. A UTF-8 BOM at the start is skipped.
    /// - Parameter progress: called after each chunk is read with the bytes read so far and the file's size.
    public func executeScript(contentsOfFile path: String, chunkSize: Int = 1 << 20,
                              progress: ((_ bytesRead: Int, _ totalBytes: Int) -> Void)? = nil,
                              beforeEach: ((Statement) throws -> Void)? = nil) throws {
        guard !isClosed else { throw DatabaseError.misuse("the database connection is closed") }
        guard let file = FileHandle(forReadingAtPath: path) else {
            throw DatabaseError(code: SQLITE_CANTOPEN, message: "cannot read \(path)")
        }
        defer { try? file.close() }
        var buffer = ScriptBuffer()
        var endOfFile = false
        var position = TextPosition()
        var atStart = true
        var bytesRead = 0
        let totalBytes = ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0

        func readMore() throws {
            var data = try file.read(upToCount: max(chunkSize, 1)) ?? Data()
            if data.isEmpty { endOfFile = true; return }
            if atStart {
                // The BOM check needs the first three bytes, which a small read may split.
                while data.count < 3, let more = try file.read(upToCount: 3 - data.count), !more.isEmpty { data.append(more) }
            }
            bytesRead += data.count
            progress?(bytesRead, totalBytes)
            if atStart {
                atStart = false
                if data.starts(with: [0xEF, 0xBB, 0xBF]) { data.removeFirst(3) }
            }
            buffer.append(data[...])
        }

        while true {
            // Skip blanks and comments, reading on while a comment may continue past the buffered text.
            var trivia = buffer.withReadableText { Self.scanTrivia($0, from: buffer.start, end: buffer.end) }
            while trivia.open && !endOfFile {
                try readMore()
                trivia = buffer.withReadableText { Self.scanTrivia($0, from: buffer.start, end: buffer.end) }
            }
            position.advance(over: buffer, from: buffer.start, to: trivia.end)
            buffer.consume(upTo: trivia.end)
            if buffer.start == buffer.end {
                if endOfFile { return }
                try readMore()
                continue
            }

            var statement: OpaquePointer?
            var statementEnd = 0
            var code = SQLITE_OK
            var complete = false
            let (from, to) = (buffer.start, buffer.end)
            buffer.withText { text in
                guard let base = text.baseAddress else { return }
                var tail: UnsafePointer<CChar>?
                code = sqlite3_prepare_v2(handle, base + from, Int32(to - from), &statement, &tail)
                statementEnd = tail.map { $0 - UnsafePointer(base) } ?? to
                if code == SQLITE_OK {
                    // A statement that stops at the end of the buffered text may continue in the next chunk
                    // ("SELECT 1" then "0;"): only a statement SQLite calls complete is safe to run early.
                    let saved = text[statementEnd]
                    text[statementEnd] = 0
                    complete = sqlite3_complete(base + from) != 0
                    text[statementEnd] = saved
                }
            }
            if code == SQLITE_OK, let prepared = statement, complete || statementEnd < buffer.end || endOfFile {
                let sql = buffer.string(from: buffer.start, to: statementEnd)
                try runScriptStatement(Statement(handle: prepared, connection: handle, sql: sql), at: position, beforeEach)
                position.advance(over: buffer, from: buffer.start, to: statementEnd)
                buffer.consume(upTo: statementEnd)
                continue
            }
            sqlite3_finalize(statement)
            if code == SQLITE_OK && statement == nil {
                if statementEnd > buffer.start {
                    position.advance(over: buffer, from: buffer.start, to: statementEnd)
                    buffer.consume(upTo: statementEnd)
                    continue
                }
                if endOfFile { return }
            }
            // Incomplete or failing text: read more, unless the failing statement is already complete here.
            if !endOfFile && !buffer.containsCompleteStatement() {
                try readMore()
                continue
            }
            if code == SQLITE_OK { try readMore(); continue }
            throw lastError(code, sql: buffer.string(from: buffer.start, to: min(buffer.end, buffer.start + 200)))
                .at(line: position.line, column: position.column)
        }
    }
}

/// The unexecuted part of a SQL file, NUL-terminated for SQLite; compacted only when more text is read.
struct ScriptBuffer {
    private(set) var storage: [CChar] = [0]
    private(set) var start = 0
    var end: Int { storage.count - 1 }

    mutating func append(_ bytes: Data.SubSequence) {
        if start > 0 {
            storage.removeFirst(start)
            start = 0
        }
        storage.removeLast()
        storage.reserveCapacity(storage.count + bytes.count + 1)
        for byte in bytes { storage.append(CChar(bitPattern: byte)) }
        storage.append(0)
    }

    mutating func consume(upTo offset: Int) {
        start = offset
    }

    mutating func withText<R>(_ body: (UnsafeMutableBufferPointer<CChar>) throws -> R) rethrows -> R {
        try storage.withUnsafeMutableBufferPointer { try body($0) }
    }

    func withReadableText<R>(_ body: (UnsafeBufferPointer<CChar>) throws -> R) rethrows -> R {
        try storage.withUnsafeBufferPointer(body)
    }

    func string(from: Int, to: Int) -> String {
        storage[from..<to].withUnsafeBufferPointer { chars in
            String(decoding: UnsafeRawBufferPointer(chars), as: UTF8.self)
        }
    }

    /// True when the buffered text holds at least one complete statement (trigger-aware, as SQLite sees it).
    /// Used only when a statement fails or spans a chunk boundary.
    func containsCompleteStatement() -> Bool {
        var text = Array(storage[start..<end]) + [0]
        let semicolon = CChar(UInt8(ascii: ";"))
        var index = 0
        while index < text.count - 1, let found = text[index..<(text.count - 1)].firstIndex(of: semicolon) {
            let saved = text[found + 1]
            text[found + 1] = 0
            let complete = sqlite3_complete(text) != 0
            text[found + 1] = saved
            if complete { return true }
            index = found + 1
        }
        return false
    }
}

extension TextPosition {
    mutating func advance(over buffer: ScriptBuffer, from start: Int, to end: Int) {
        buffer.withReadableText { advance(over: $0, from: start, to: end) }
    }
}
