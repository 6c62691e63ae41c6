import CSQLite

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
                let start = Self.skipTrivia(buffer, from: offset, end: total)
                position.advance(over: buffer, from: offset, to: start)
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
                guard let statement else { return }
                let compiled = Statement(handle: statement, connection: handle, sql: sql)
                do {
                    try beforeEach?(compiled)
                    while try compiled.step() {}
                } catch let error as DatabaseError {
                    throw error.at(line: position.line, column: position.column)
                }
                position.advance(over: buffer, from: offset, to: statementEnd)
                offset = statementEnd
            }
        }
    }

    /// The index of the first byte at or after `offset` that is not whitespace or a comment.
    static func skipTrivia(_ text: UnsafeMutableBufferPointer<CChar>, from offset: Int, end: Int) -> Int {
        var i = offset
        while i < end {
            let c = UInt8(bitPattern: text[i])
            if c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D || c == 0x0C || c == 0x0B {
                i += 1
            } else if c == UInt8(ascii: "-"), i + 1 < end, text[i + 1] == CChar(UInt8(ascii: "-")) {
                while i < end, text[i] != 0x0A { i += 1 }
            } else if c == UInt8(ascii: "/"), i + 1 < end, text[i + 1] == CChar(UInt8(ascii: "*")) {
                i += 2
                while i < end, !(text[i] == CChar(UInt8(ascii: "*")) && i + 1 < end && text[i + 1] == CChar(UInt8(ascii: "/"))) { i += 1 }
                i = min(i + 2, end)
            } else {
                break
            }
        }
        return i
    }
}

/// A 1-based line and column in a text, advanced over UTF-8 bytes; columns count characters, not bytes.
struct TextPosition {
    var line = 1
    var column = 1
    private var lastWasCR = false

    mutating func advance(over text: UnsafeMutableBufferPointer<CChar>, from start: Int, to end: Int) {
        guard start < end else { return }
        for i in start..<end {
            let c = UInt8(bitPattern: text[i])
            if c == 0x0A {
                if !lastWasCR { line += 1 }
                column = 1
                lastWasCR = false
            } else if c == 0x0D {
                line += 1
                column = 1
                lastWasCR = true
            } else {
                lastWasCR = false
                if c & 0xC0 != 0x80 { column += 1 }
            }
        }
    }
}
