/// A file of another tool that wraps all its statements in its own `BEGIN; … COMMIT;` (golang-migrate runs files as
/// they are, so its users often write them so). Under a declared format such a file runs as the one transaction
/// Strata gives the step, its history row inside it: the outer pair is blanked out of the bytes that run, the
/// checksum staying that of the file as written.
///
/// Only the exact outer pair is taken: the file's first statement is a bare `BEGIN` and its last a bare `COMMIT`
/// (the spellings each database has for them, without options such as an isolation level). Statements are found
/// with the dialect's own lexer, so a `BEGIN` in a string, a comment or a `$$` body is no statement. Anything else
/// that starts or ends a transaction is left in place, to be refused as in any file.
enum OuterTransaction {
    /// `bytes` with the outer pair replaced by blanks (line breaks kept, so every line and column stays the file's),
    /// or nil when the file is not wrapped so.
    static func unwrapped(_ bytes: [UInt8], backend: DatabaseBackend) -> [UInt8]? {
        guard let statements = statements(bytes, backend: backend), statements.count >= 2,
              let first = statements.first, let last = statements.last else { return nil }
        let (starts, ends): (Set<[String]>, Set<[String]>) = switch backend {
        case .sqlite:
            ([["BEGIN"], ["BEGIN", "TRANSACTION"]], [["COMMIT"], ["COMMIT", "TRANSACTION"], ["END"], ["END", "TRANSACTION"]])
        case .postgresql:
            ([["BEGIN"], ["BEGIN", "TRANSACTION"], ["BEGIN", "WORK"], ["START", "TRANSACTION"]],
             [["COMMIT"], ["COMMIT", "TRANSACTION"], ["COMMIT", "WORK"], ["END"], ["END", "TRANSACTION"], ["END", "WORK"]])
        }
        guard let opening = words(bytes[first]), starts.contains(opening),
              let closing = words(bytes[last]), ends.contains(closing) else { return nil }
        var result = bytes
        for range in [first, last] {
            for index in range where result[index] != 0x0A && result[index] != 0x0D { result[index] = 0x20 }
        }
        return result
    }

    /// The statement's words, upper-cased, when it holds nothing but ASCII letters, blanks and a closing `;`.
    private static func words(_ text: ArraySlice<UInt8>) -> [String]? {
        var body = text
        if body.last == UInt8(ascii: ";") { body = body.dropLast() }
        let isLetterOrBlank = { (byte: UInt8) in
            (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || [0x20, 0x09, 0x0A, 0x0D, 0x0C, 0x0B].contains(byte)
        }
        guard body.allSatisfy(isLetterOrBlank) else { return nil }
        return String(decoding: body, as: UTF8.self).uppercased().split(whereSeparator: { $0.isWhitespace }).map(String.init)
    }

    /// Each statement's byte range (first token through its `;`, or its last token), by the backend's lexer; nil
    /// when the text does not end as a script should (an unterminated literal) or holds a psql meta-command.
    static func statements(_ bytes: [UInt8], backend: DatabaseBackend) -> [Range<Int>]? {
        bytes.withUnsafeBufferPointer { buffer in
            switch backend {
            case .sqlite:
                var scanner = SQLScanner()
                var index = 0
                var found: [Range<Int>] = []
                while let range = scanner.nextStatement(in: buffer, base: 0, index: &index) { found.append(range) }
                if scanner.unterminated != nil { return nil }
                if let last = scanner.finish(at: buffer.count) { found.append(last) }
                return found
            case .postgresql:
                var lexer = PostgresLexer()
                var cursor = 0
                var found: [Range<Int>] = []
                while true {
                    switch lexer.scan(buffer, base: 0, cursor: &cursor, limit: buffer.count, isFinal: true) {
                    case .statementEnd(let semicolon):
                        guard let start = lexer.statementStart else { return nil }
                        found.append(start..<(semicolon.map { $0 + 1 } ?? lexer.lastTokenEnd))
                        lexer.resetStatement()
                    case .endOfInput:
                        return found
                    case .metaCommand, .unterminated, .needMore:
                        return nil
                    }
                }
            }
        }
    }
}
