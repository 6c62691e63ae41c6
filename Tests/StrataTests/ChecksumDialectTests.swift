import Foundation
import XCTest
@testable import StrataCore
@testable import StrataPostgres
@testable import StrataSQLite

/// Each dialect's files are checksummed by its own lexical rules: version 2 reads SQL as SQLite does, version 3 as
/// PostgreSQL's script reader does. Version 3's CR-by-CR classification, pushed chunks of any size, is compared with
/// one made from `PostgresScript` reading the whole text (its tokens' places and its COPY data), for chosen texts and
/// for generated ones.
final class ChecksumDialectTests: XCTestCase {
    // MARK: The reference: PostgresScript over the whole text

    /// The offsets of the CRs `PostgresScript`, reading all of `bytes` at once, reads as data: inside a string,
    /// quoted identifier or dollar quote token; inside a quoted field of CSV COPY data (every CR of COPY data whose
    /// quoting cannot be told); and, where lines end only at LF (COPY data, the rest of its statement's line, the
    /// rest of a `\copy` line), a CR not followed by LF or the end. Throws where the reader does.
    static func referenceDataCRs(_ bytes: [UInt8]) throws -> Set<Int> {
        var script = PostgresScript(bytes: bytes, chunkSize: max(bytes.count, 1))
        script.recordsTokens = true
        var data = Set<Int>()
        func isLoneCR(_ offset: Int) -> Bool {
            bytes[offset] == 0x0D && offset + 1 < bytes.count && bytes[offset + 1] != 0x0A
        }
        func markLiterals() {
            for token in script.tokens where token.kind == .string || token.kind == .quotedIdentifier {
                for offset in token.range where bytes[offset] == 0x0D { data.insert(offset) }
            }
        }
        func markLoneCRs(_ range: Range<Int>) {
            for offset in range where isLoneCR(offset) { data.insert(offset) }
        }
        func readCopyData(_ lineEndings: PostgresLiterals.CopyLineEndings) throws {
            var offset = script.offset
            var insideQuotes = false
            while let chunk = try script.nextCopyData() {
                for byte in chunk {
                    if byte == 0x22 { insideQuotes.toggle() }
                    let isValue = lineEndings == .data || (lineEndings == .insideDoubleQuotes && insideQuotes)
                    if byte == 0x0D && (isValue || isLoneCR(offset)) { data.insert(offset) }
                    offset += 1
                }
            }
        }
        var before = script.offset
        while let piece = try script.next() {
            switch piece {
            case .statement:
                markLiterals()
            case .copy:
                markLiterals()
                // The `;` follows the last token after blanks and comments; the data starts on the next line.
                let semicolon = Self.skipBlanksAndComments(bytes, from: script.tokens.last?.range.upperBound ?? before)
                markLoneCRs((semicolon + 1)..<script.offset)
                try readCopyData(PostgresLiterals.copyLineEndings(script.tokens))
            case .metaCommand(let command):
                if PostgresScriptRules.readsCopyData(name: command.name, argument: command.argument) {
                    let backslash = Self.skipBlanksAndComments(bytes, from: before)
                    let lineEnd = bytes[backslash...].firstIndex { $0 == 0x0A || $0 == 0x0D } ?? bytes.count
                    markLoneCRs(lineEnd..<script.offset)
                    try readCopyData(.data)
                }
            }
            before = script.offset
        }
        return data
    }

    /// The first offset at or after `start` that is not a blank or inside a comment (`--` to the line's end,
    /// nesting `/* */`): where the text between two tokens ends.
    static func skipBlanksAndComments(_ bytes: [UInt8], from start: Int) -> Int {
        var at = start
        while at < bytes.count {
            switch bytes[at] {
            case 0x20, 0x09, 0x0A, 0x0D, 0x0C, 0x0B:
                at += 1
            case 0x2D where at + 1 < bytes.count && bytes[at + 1] == 0x2D:
                while at < bytes.count && bytes[at] != 0x0A && bytes[at] != 0x0D { at += 1 }
            case 0x2F where at + 1 < bytes.count && bytes[at + 1] == 0x2A:
                var depth = 0
                at += 2
                while at + 1 < bytes.count && !(depth == 0 && bytes[at] == 0x2A && bytes[at + 1] == 0x2F) {
                    if bytes[at] == 0x2F && bytes[at + 1] == 0x2A { depth += 1; at += 2; continue }
                    if bytes[at] == 0x2A && bytes[at + 1] == 0x2F { depth -= 1; at += 2; continue }
                    at += 1
                }
                at += 2
            default:
                return at
            }
        }
        return at
    }

    /// `bytes` with each CR not in `dataCRs` (and the LF of its CRLF) turned into one LF.
    static func normalized(_ bytes: [UInt8], keeping dataCRs: Set<Int>) -> [UInt8] {
        var result: [UInt8] = []
        var afterLayoutCR = false
        for (offset, byte) in bytes.enumerated() {
            if byte == 0x0D {
                let isData = dataCRs.contains(offset)
                result.append(isData ? 0x0D : 0x0A)
                afterLayoutCR = !isData
                continue
            }
            if !(byte == 0x0A && afterLayoutCR) { result.append(byte) }
            afterLayoutCR = false
        }
        return result
    }

    /// What `LineEndingNormalizer` makes of `bytes` pushed in chunks of `chunkSize`, driven as `NormalizingHasher`
    /// drives it (a chunk with nothing to rewrite is passed on as it is).
    static func normalized(_ bytes: [UInt8], version: Int, chunkSize: Int) -> [UInt8] {
        var normalizer = LineEndingNormalizer(content: .sql, version: version)
        var result: [UInt8] = []
        var scratch = [UInt8](repeating: 0, count: chunkSize + 1)
        var offset = 0
        while offset < bytes.count {
            let end = min(offset + chunkSize, bytes.count)
            bytes[offset..<end].withUnsafeBufferPointer { input in
                if normalizer.isUnchanged(input) {
                    normalizer.advance(over: input)
                    result += input
                } else {
                    let written = scratch.withUnsafeMutableBufferPointer { output in
                        output.baseAddress.map { normalizer.normalize(input, into: $0) } ?? 0
                    }
                    result += scratch[0..<written]
                }
            }
            offset = end
        }
        let flushed = scratch.withUnsafeMutableBufferPointer { output in output.baseAddress.map { normalizer.finish(into: $0) } ?? 0 }
        return result + scratch[0..<flushed]
    }

    /// Checks that version 3 keeps exactly the CRs the reference reads as data, in chunks of 1, 2, 3 and 7 bytes and
    /// whole, and that the hasher agrees across chunk sizes. Returns false where `PostgresScript` refuses the text.
    @discardableResult
    func assertMatchesReference(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) throws -> Bool {
        let dataCRs: Set<Int>
        do { dataCRs = try Self.referenceDataCRs(bytes) } catch is DatabaseError { return false }
        let expected = Self.normalized(bytes, keeping: dataCRs)
        let text = String(decoding: bytes, as: UTF8.self).debugDescription
        for chunkSize in [1, 2, 3, 7, max(bytes.count, 1)] {
            let got = Self.normalized(bytes, version: 3, chunkSize: chunkSize)
            if got != expected {
                XCTFail("chunks of \(chunkSize): \(text) normalised to \(String(decoding: got, as: UTF8.self).debugDescription), the reader's literals give \(String(decoding: expected, as: UTF8.self).debugDescription)",
                        file: file, line: line)
                return true
            }
            let hasher = try NormalizingHasher(content: .sql, version: 3)
            var offset = 0
            while offset < bytes.count {
                let end = min(offset + chunkSize, bytes.count)
                bytes[offset..<end].withUnsafeBufferPointer { hasher.update($0) }
                offset = end
            }
            XCTAssertEqual(try hasher.finish(), try Checksum.of(bytes, version: 3), "chunks of \(chunkSize): \(text)",
                           file: file, line: line)
        }
        XCTAssertEqual(Checksum.normalizedText(bytes, version: 3), String(decoding: expected, as: UTF8.self), text,
                       file: file, line: line)
        return true
    }

    // MARK: Version 3 against the reference

    func testVersionThreeKeepsTheCRsPostgresScriptReadsInsideLiterals() throws {
        let texts = [
            // Look-ahead across a CR: a partial closing tag, a quote that may be doubled, a backslash escape.
            "SELECT $ta$a$t\r\nb$ta$;\r\n", "SELECT $ta$x$ta\r$ta$;\r", "SELECT $$a$\r$$, $a$\r$a$;",
            "SELECT 'it''\r\ns';\r\n", "SELECT 'x'\r;\r\n", "SELECT E'\\\r\n', E'a\\\\'\r\n;",
            // Continued constants: the gap between the parts is layout, the parts are data.
            "SELECT 'a'\r\n'b\r\nc';", "SELECT E'a'\r\n'b\r\nc';", "SELECT E'a' -- c's\r\n  'b\r';", "SELECT E'a'\r\r\n\r;",
            // Identifiers, prefixed strings, comments holding quotes.
            "SELECT \"a\r\nb\", U&\"c\r\n\" FROM t;", "SELECT U&'a\r\nb', B'1\r\n0', X'f\r', N'n\r';",
            "SELECT 1 /* a /* nested\r\n */ ' */\r\n, 'x\r\ny';", "-- it's\rSELECT 'a\r\nb';\r\n", "-- x\r\n/* $$ */ SELECT '\r';",
            // Words, numbers and dollars that end at a CR; `$1` and `a$b$` open nothing.
            "SELECT 1e\r\n, 1.\r\n, $\r\n, x$y$\r\n, $1\r\n, 'q\r';", "SELECT U&\r\n'x\r\n';",
            // COPY data: a stray quote opens nothing; CSV quoted fields hold data; the `\.` line.
            "COPY t FROM stdin;\r\nO'Brien\r\n\\.\r\nSELECT 'a\r\nb';\r\n",
            "COPY t FROM stdin; -- it's\r\nx\"y\r\n\\.\r\nSELECT $$\r$$;",
            "COPY t FROM stdin;\n\\.\rX\r\n\\.\n'\r';", "COPY t (a) FROM stdin;\r\n\\\r\n\\.\r\n",
            "COPY t FROM stdin CSV;\r\n1,\"a\r\nb\"\r\n2,c\r\n\\.\r\nSELECT 'x\r\ny';",
            "COPY t FROM stdin WITH (FORMAT csv, HEADER);\r\nv\r\n\"a\"\"\r\n\"\r\n\\.\r\n",
            "COPY t FROM stdin WITH (FORMAT csv, QUOTE '''');\r\n'a\r\nb'\r\n\\.\r\n",
            "COPY t FROM stdin (FORMAT E'csv');\r\n\"a\r\nb\"\r\n\\.\r\n",
            "COPY t FROM stdin (DELIMITER ',', NULL '');\r\n\"a\r\nb\"\r\n\\.\r\n",
            // Meta-command lines, whose quotes open nothing; psql's \copy reads data as COPY does.
            "\\restrict abc'\r\nSELECT 'a\r\nb';\r\n\\unrestrict abc\r\n",
            "\\copy t from stdin csv\r\n\"a\r\nb\r\n\\.\r\nSELECT 'q\r\nr';",
            // After `\.` a CR's meaning waits for the next byte: LF (or the end) ends the data, anything else is data.
            // So does every CR where lines end only at LF: a lone one there moves a line's end.
            "COPY t FROM stdin; \r \r\n1\r2\r\n\\.\r\n", "COPY t FROM stdin; -- c\r\r\nx\r\r", "COPY t FROM stdin CSV;\n\"a\"\rb\r\n",
            "\\copy t from stdin\r x\r\ny\r\n\\.\n", "COPY t /* ; */ FROM stdin -- x\r\n ; \r\n\\.\n",
            "\\copy t from stdin\nx\r\n\\.\rY\r\n\\.\r\nSELECT 1;", "\\copy t from stdin\n\"x\r\n\\.\r",
            "COPY t FROM stdin CSV;\n\"a\n\\.\r", "COPY t FROM stdin CSV;\n\"a\n\\.\r\r\n\\.\n",
            // A function body's semicolons, and plain text.
            "CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 'a\r\nb'; END;\r\nSELECT '\r';",
            "\r\r\n\r", "", "SELECT 1",
        ]
        for text in texts {
            XCTAssertTrue(try assertMatchesReference(Array(text.utf8)), "the reader refused \(text.debugDescription)")
        }
    }

    func testVersionThreeMatchesTheReaderOnGeneratedScripts() throws {
        let pieces = ["'", "''", "E'", "\\", "\\'", "$$", "$a$", "$a", "$1", "\"", "--", "/*", "*/", "-", "/", ";", "\r", "\n",
                      "\r\n", " ", "x", "U&'", "U&\"", "(", ")", "1e", "COPY t FROM stdin;", "COPY t FROM stdin CSV;\n",
                      "COPY t FROM stdin (FORMAT csv, QUOTE '|');\r\n", "\\.", "\n\\.\n", "\\copy t from stdin\n", "\\x",
                      "CREATE FUNCTION f() BEGIN ATOMIC ", "END", "CASE"]
        var generator = SplitMix64(seed: 0x5EED)
        var checked = 0
        for _ in 0..<4000 {
            let count = Int(generator.next() % 30) + 1
            let text = (0..<count).map { _ in pieces[Int(generator.next() % UInt64(pieces.count))] }.joined()
            if try assertMatchesReference(Array(text.utf8)) { checked += 1 }
        }
        XCTAssertGreaterThan(checked, 400, "enough generated scripts read without an error to compare")
    }

    // MARK: What each version reads

    func testSQLiteAndPostgreSQLRulesDifferWhereTheirLiteralsDo() throws {
        let dollar = Array("INSERT INTO t VALUES ($$line1\r\nline2$$);\r\n".utf8)
        let dollarLF = Array("INSERT INTO t VALUES ($$line1\nline2$$);\r\n".utf8)
        XCTAssertEqual(try Checksum.of(dollar, version: 2), try Checksum.of(dollarLF, version: 2), "SQLite has no dollar quotes")
        XCTAssertNotEqual(try Checksum.of(dollar, version: 3), try Checksum.of(dollarLF, version: 3))
        let escape = Array("SELECT E'it\\'s';\r\nSELECT 'a\r\nb';\r\n".utf8)
        let escapeLF = Array("SELECT E'it\\'s';\r\nSELECT 'a\nb';\r\n".utf8)
        XCTAssertEqual(try Checksum.of(escape, version: 2), try Checksum.of(escapeLF, version: 2), "SQLite ends E'it\\' early")
        XCTAssertNotEqual(try Checksum.of(escape, version: 3), try Checksum.of(escapeLF, version: 3))
        // A BOM is no content under either.
        XCTAssertEqual(try Checksum.of([0xEF, 0xBB, 0xBF] + dollar, version: 3), try Checksum.of(dollar, version: 3))
        XCTAssertEqual(Checksum.normalizedText([0xEF, 0xBB, 0xBF] + Array("a\r\n$$b\r\n$$\r".utf8), version: 3), "a\n$$b\r\n$$\n")
        // SQLite's `--` comment runs past a lone CR; PostgreSQL's ends there.
        let comment = Array("-- x\rSELECT 1;".utf8)
        XCTAssertNotEqual(try Checksum.of(comment, version: 2), try Checksum.of(Array("-- x\nSELECT 1;".utf8), version: 2))
        XCTAssertEqual(try Checksum.of(comment, version: 3), try Checksum.of(Array("-- x\nSELECT 1;".utf8), version: 3))
    }

    func testInCopyDataOnlyACRLFIsLayout() throws {
        // psql ends COPY data at a line `\.` that LF or CRLF ends: with lone CRs the data below runs to the end of the
        // file and the INSERT never runs; with LFs it does. So there a lone CR is data, a CRLF layout.
        let lone = Array("COPY t (v) FROM stdin;\na\r\\.\rINSERT INTO t VALUES ('x');\n".utf8)
        let lf = Array("COPY t (v) FROM stdin;\na\n\\.\nINSERT INTO t VALUES ('x');\n".utf8)
        let crlf = Array("COPY t (v) FROM stdin;\r\na\r\n\\.\r\nINSERT INTO t VALUES ('x');\r\n".utf8)
        XCTAssertNotEqual(try Checksum.of(lone, version: 3), try Checksum.of(lf, version: 3))
        XCTAssertEqual(try Checksum.of(crlf, version: 3), try Checksum.of(lf, version: 3))
        // Outside COPY, PostgreSQL ends a line (and a `--` comment) at a lone CR too.
        XCTAssertEqual(try Checksum.of(Array("SELECT 1; -- x\rSELECT 2;\r".utf8), version: 3),
                       try Checksum.of(Array("SELECT 1; -- x\nSELECT 2;\n".utf8), version: 3))
    }

    func testEachBackendRecordsUnderItsOwnVersionAndCSVIsTheSameUnderBoth() throws {
        XCTAssertEqual(SQLiteDialect().checksumVersion, 2)
        XCTAssertEqual(PostgresDialect().checksumVersion, 3)
        let csv = Array("id,v\r\n1,\"a\r\nb\"\r\n".utf8)
        XCTAssertEqual(try Checksum.of(csv, content: .csv, version: 3), try Checksum.of(csv, content: .csv, version: 2))
        XCTAssertThrowsError(try Checksum.of(csv, version: Checksum.newestVersion + 1)) { error in
            XCTAssertTrue("\(error)".contains("checksum version 4 was written by a newer Strata"), "\(error)")
        }
    }

    func testCopyDataLineEndingsFollowTheStatementsFormat() throws {
        func lineEndings(_ statement: String) throws -> PostgresLiterals.CopyLineEndings {
            var script = PostgresScript(bytes: Array(statement.utf8))
            script.recordsTokens = true
            guard case .copy? = try script.next() else {
                XCTFail("not a COPY FROM STDIN: \(statement)")
                return .layout
            }
            return PostgresLiterals.copyLineEndings(script.tokens)
        }
        XCTAssertEqual(try lineEndings("COPY public.t (a, \"B\") FROM stdin;"), .layout)
        XCTAssertEqual(try lineEndings("COPY t FROM stdin WITH (FORMAT text, DELIMITER ',', NULL '');"), .layout)
        for csv in ["COPY t FROM stdin CSV HEADER;", "copy t from stdin with (format csv);", "COPY t FROM stdin (FORMAT 'csv');",
                    "COPY t FROM stdin (FORMAT \"CSV\");", "COPY t FROM stdin (FORMAT E'csv');", "COPY t FROM stdin (FORMAT $$csv$$);"] {
            XCTAssertEqual(try lineEndings(csv), .insideDoubleQuotes, csv)
        }
        for own in ["COPY t FROM stdin CSV QUOTE '|';", "COPY t FROM stdin (FORMAT csv, ESCAPE '\\');",
                    "COPY t FROM stdin (FORMAT csv, \"quote\" '|');"] {
            XCTAssertEqual(try lineEndings(own), .data, own)
        }
    }
}

/// A small deterministic generator (SplitMix64), so a failing generated script is the same on every run.
struct SplitMix64 {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
