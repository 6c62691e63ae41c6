/// Finds statements that cannot run inside the transaction Strata wraps around each migration file.
///
/// Execution never relies on this scanner (SQLite's parser splits statements there); it exists so that
/// `validate` and `migrate` can refuse such a file before anything runs. It understands comments, quoted
/// strings and identifiers, and `CREATE TRIGGER … BEGIN … END` bodies (with `CASE … END` inside them).
public enum SQLLint {
    /// A statement that a transactional migration must not contain.
    public struct Finding: Sendable, Equatable {
        public let line: Int
        public let column: Int
        public let message: String
    }

    public static func findings(in text: String) -> [Finding] {
        var findings: [Finding] = []
        for statement in statements(in: Array(text.utf8)) {
            let words = statement.words
            guard let first = words.first else { continue }
            let message: String?
            switch first {
            case "VACUUM":
                message = "VACUUM cannot run inside a transaction"
            case "PRAGMA":
                // PRAGMA [schema.]name = value | PRAGMA [schema.]name(value)
                let name = words.count > 2 && words[2] == "." ? words.dropFirst(3).first : words.dropFirst().first
                let assigns = statement.hasAssignment
                switch name {
                case "FOREIGN_KEYS" where assigns:
                    message = "PRAGMA foreign_keys is silently ignored inside a transaction"
                case "JOURNAL_MODE" where assigns:
                    message = "PRAGMA journal_mode cannot change inside a transaction"
                default:
                    message = nil
                }
            case "BEGIN", "COMMIT", "END":
                message = "\(first) would end the transaction Strata wraps around the file, breaking all-or-nothing"
            case "ROLLBACK" where !words.contains("TO"):
                message = "ROLLBACK would end the transaction Strata wraps around the file, breaking all-or-nothing"
            default:
                message = nil
            }
            if let message {
                findings.append(Finding(line: statement.line, column: statement.column,
                                        message: message + "; mark the file transaction=\"none\" in the manifest"))
            }
        }
        return findings
    }

    struct Statement {
        var line: Int
        var column: Int
        /// Upper-cased words and the punctuation `.`, `=` and `(` among the first few tokens.
        var words: [String] = []
        var hasAssignment: Bool { words.prefix(5).contains("=") || words.prefix(5).contains("(") }
    }

    static func statements(in bytes: [UInt8]) -> [Statement] {
        var result: [Statement] = []
        var current: Statement?
        var position = TextPosition()
        var index = 0
        var isTrigger = false
        var inTriggerBody = false
        var caseDepth = 0

        func advance(_ count: Int) {
            for _ in 0..<count where index < bytes.count {
                position.advance(over: bytes[index])
                index += 1
            }
        }

        func skip(until terminator: UInt8, escapable: Bool) {
            advance(1)
            while index < bytes.count {
                if bytes[index] == terminator {
                    if escapable && index + 1 < bytes.count && bytes[index + 1] == terminator { advance(2); continue }
                    advance(1)
                    return
                }
                advance(1)
            }
        }

        func token(_ word: String) {
            if current == nil { current = Statement(line: position.line, column: position.column) }
            if (current?.words.count ?? 0) < 8 { current?.words.append(word) }
        }

        while index < bytes.count {
            let byte = bytes[index]
            let next = index + 1 < bytes.count ? bytes[index + 1] : 0
            switch byte {
            case 0x20, 0x09, 0x0A, 0x0D, 0x0C, 0x0B:
                advance(1)
            case UInt8(ascii: "-") where next == UInt8(ascii: "-"):
                while index < bytes.count && bytes[index] != 0x0A { advance(1) }
            case UInt8(ascii: "/") where next == UInt8(ascii: "*"):
                advance(2)
                while index < bytes.count && !(bytes[index] == UInt8(ascii: "*") && index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "/")) {
                    advance(1)
                }
                advance(2)
            case UInt8(ascii: "'"), UInt8(ascii: "\""), UInt8(ascii: "`"):
                token("?")
                skip(until: byte, escapable: true)
            case UInt8(ascii: "["):
                token("?")
                skip(until: UInt8(ascii: "]"), escapable: false)
            case UInt8(ascii: ";"):
                advance(1)
                if !inTriggerBody, let statement = current {
                    result.append(statement)
                    current = nil
                    isTrigger = false
                }
            case _ where isWordByte(byte):
                let start = index
                let wordPosition = position
                while index < bytes.count && isWordByte(bytes[index]) { advance(1) }
                let word = String(decoding: bytes[start..<index], as: UTF8.self).uppercased()
                if current == nil { current = Statement(line: wordPosition.line, column: wordPosition.column) }
                if (current?.words.count ?? 0) < 8 { current?.words.append(word) }
                let words = current?.words ?? []
                if words.count <= 4 && word == "TRIGGER" && words.first == "CREATE" { isTrigger = true }
                if isTrigger {
                    if !inTriggerBody && word == "BEGIN" { inTriggerBody = true; caseDepth = 0 }
                    else if inTriggerBody && word == "CASE" { caseDepth += 1 }
                    else if inTriggerBody && word == "END" {
                        if caseDepth > 0 { caseDepth -= 1 } else { inTriggerBody = false }
                    }
                }
            default:
                token(String(UnicodeScalar(byte)))
                advance(1)
            }
        }
        if let current { result.append(current) }
        return result
    }

    private static func isWordByte(_ byte: UInt8) -> Bool {
        (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122) || (byte >= 48 && byte <= 57)
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "$") || byte >= 0x80
    }
}
