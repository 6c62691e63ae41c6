import Foundation
import XCTest
@testable import StrataCore
@testable import StrataPostgres

/// Splitting PostgreSQL scripts as psql does: where statements end, what is COPY data and what a meta-command,
/// where each piece starts, and the same pieces whatever the chunks the text is read in.
final class PostgresScriptTests: XCTestCase {
    /// A piece as the tests compare it, COPY data included.
    enum Read: Equatable, CustomStringConvertible {
        case statement(String, line: Int, column: Int)
        case copy(String, line: Int, column: Int, dataLine: Int, data: String)
        case meta(String, String, line: Int, column: Int)

        var description: String {
            switch self {
            case .statement(let sql, let line, let column): "statement \(line):\(column) \(sql.debugDescription)"
            case .copy(let sql, let line, let column, let dataLine, let data):
                "copy \(line):\(column) \(sql.debugDescription) data@\(dataLine) \(data.debugDescription)"
            case .meta(let name, let argument, let line, let column): "meta \(line):\(column) \\\(name) \(argument.debugDescription)"
            }
        }
    }

    /// Reads every piece (and all COPY data) of a script held in memory, in chunks of `chunkSize`.
    static func readAll(_ script: inout PostgresScript) throws -> [Read] {
        var result: [Read] = []
        while let piece = try script.next() {
            switch piece {
            case .statement(let text):
                result.append(.statement(text.sql, line: text.line, column: text.column))
            case .copy(let text, let dataLine):
                var data: [UInt8] = []
                while let chunk = try script.nextCopyData() { data += chunk }
                result.append(.copy(text.sql, line: text.line, column: text.column, dataLine: dataLine,
                                    data: String(decoding: data, as: UTF8.self)))
            case .metaCommand(let command):
                result.append(.meta(command.name, command.argument, line: command.line, column: command.column))
            }
        }
        return result
    }

    /// The pieces of `text`, checked to be the same when it is read in chunks of 1, 2, 3, 5 and 7 bytes, so every
    /// rule is also tested with the text cut at every place.
    func read(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> [Read] {
        try read(Array(text.utf8), file: file, line: line)
    }

    func read(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) throws -> [Read] {
        var whole = PostgresScript(bytes: bytes)
        let expected = try Self.readAll(&whole)
        for chunkSize in [1, 2, 3, 5, 7] {
            var script = PostgresScript(bytes: bytes, chunkSize: chunkSize)
            XCTAssertEqual(try Self.readAll(&script), expected, "chunks of \(chunkSize)", file: file, line: line)
        }
        return expected
    }

    /// The SQL texts only.
    func statements(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        try read(text, file: file, line: line).map {
            switch $0 {
            case .statement(let sql, _, _), .copy(let sql, _, _, _, _): sql
            case .meta(let name, _, _, _): "\\" + name
            }
        }
    }

    /// The error reading `text` ends in, checked to be the same in every chunking, with the pieces before it.
    func failure(_ text: String, file: StaticString = #filePath, line: UInt = #line)
        -> (error: DatabaseError?, before: [Read]) {
        func attempt(chunkSize: Int) -> (DatabaseError?, [Read]) {
            var script = PostgresScript(bytes: Array(text.utf8), chunkSize: chunkSize)
            var before: [Read] = []
            do {
                while let piece = try script.next() {
                    if case .statement(let text) = piece { before.append(.statement(text.sql, line: text.line, column: text.column)) }
                    while try script.nextCopyData() != nil {}
                }
                XCTFail("no error reading \(text.debugDescription)", file: file, line: line)
                return (nil, before)
            } catch {
                return (error as? DatabaseError, before)
            }
        }
        let (error, before) = attempt(chunkSize: 1 << 16)
        for chunkSize in [1, 2, 3, 7] {
            let (other, otherBefore) = attempt(chunkSize: chunkSize)
            XCTAssertEqual(other, error, "chunks of \(chunkSize)", file: file, line: line)
            XCTAssertEqual(otherBefore, before, "chunks of \(chunkSize)", file: file, line: line)
        }
        return (error, before)
    }

    // MARK: Statements

    func testStatementsEndAtSemicolonsOrTheEndWithTheirLineAndColumn() throws {
        let text = "CREATE TABLE a (x int);\n  INSERT INTO a VALUES (1);;\n\n; -- note\n\tSELECT 1 /* tail */ -- end\n"
        XCTAssertEqual(try read(text), [
            .statement("CREATE TABLE a (x int)", line: 1, column: 1),
            .statement("INSERT INTO a VALUES (1)", line: 2, column: 3),
            .statement("SELECT 1", line: 5, column: 2),
        ])
        XCTAssertEqual(try read("  -- only a comment\n/* and another */\n;;\n"), [])
        XCTAssertEqual(try read(""), [])
    }

    func testSemicolonsInsideStringsIdentifiersAndCommentsDoNotEndAStatement() throws {
        let text = """
            INSERT INTO "odd;""name" VALUES ('it''s; here', -- a; comment
            /* outer; /* nested; */ still comment; */ 2);
            SELECT 3;
            """
        XCTAssertEqual(try statements(text), [
            "INSERT INTO \"odd;\"\"name\" VALUES ('it''s; here', -- a; comment\n/* outer; /* nested; */ still comment; */ 2)",
            "SELECT 3",
        ])
        // `*/` ends only the innermost comment: without nesting, `still;` would be SQL and split the statement.
        XCTAssertEqual(try statements("SELECT /* a /* b */ still; */ 1; SELECT 2;"), ["SELECT /* a /* b */ still; */ 1", "SELECT 2"])
        // Operators around comment starts: `+--` is `+` and a comment, `*/*` is `*` and a comment.
        XCTAssertEqual(try statements("SELECT 1+--;\n2; SELECT 2*/*;*/3;"), ["SELECT 1+--;\n2", "SELECT 2*/*;*/3"])
    }

    func testParenthesesKeepASemicolonInsideTheStatementAsPsqlDoes() throws {
        XCTAssertEqual(try statements("SELECT (1;\n2); SELECT 3;"), ["SELECT (1;\n2)", "SELECT 3"])
        // An unbalanced `)` does not go below zero.
        XCTAssertEqual(try statements("SELECT 1); SELECT 2;"), ["SELECT 1)", "SELECT 2"])
    }

    func testBackslashEscapesOnlyInEStrings() throws {
        // In E'…' a backslash escapes the quote; in '…' (standard-conforming) it is a character and '…' ends.
        XCTAssertEqual(try statements(#"SELECT E'it\'s; \\'; SELECT e'\''; SELECT 'a\'; SELECT 2;"#),
                       [#"SELECT E'it\'s; \\'"#, #"SELECT e'\''"#, #"SELECT 'a\'"#, "SELECT 2"])
        // `fee'…'` is the identifier fee and a standard string, not an E-string.
        XCTAssertEqual(try statements(#"SELECT fee'\'; SELECT 2;"#), [#"SELECT fee'\'"#, "SELECT 2"])
        // A constant continued on the next line keeps its escapes: the second part is still E'…'.
        XCTAssertEqual(try statements("SELECT E'a'\n  -- joined\n'b\\'c;'; SELECT 2;"),
                       ["SELECT E'a'\n  -- joined\n'b\\'c;'", "SELECT 2"])
        // Without a line break between them there is no continuation: 'b\' is a standard string.
        XCTAssertEqual(try statements(#"SELECT E'a' 'b\'; SELECT 2;"#), [#"SELECT E'a' 'b\'"#, "SELECT 2"])
    }

    func testPrefixedLiteralsAndUnicodeIdentifiers() throws {
        XCTAssertEqual(try statements(#"SELECT U&'d\0061t;a', B'01;', X'1F;', N'n;', U&"i;d"; SELECT 2;"#),
                       [#"SELECT U&'d\0061t;a', B'01;', X'1F;', N'n;', U&"i;d""#, "SELECT 2"])
    }

    func testDollarQuotesWithTagsAndOtherTagsInside() throws {
        let text = """
            CREATE FUNCTION f() RETURNS text AS $body$
              SELECT $$;$$ || $x$ $body ; $x$;
            $body$ LANGUAGE sql;
            DO $$ BEGIN PERFORM 1; END $$;
            SELECT $_$a;b$_$, $é$;$é$;
            """
        XCTAssertEqual(try statements(text), [
            "CREATE FUNCTION f() RETURNS text AS $body$\n  SELECT $$;$$ || $x$ $body ; $x$;\n$body$ LANGUAGE sql",
            "DO $$ BEGIN PERFORM 1; END $$",
            "SELECT $_$a;b$_$, $é$;$é$",
        ])
        // `$a$x$b$a$`: `$b$` is not the delimiter, and its last `$` starts the `$a$` that closes the body.
        XCTAssertEqual(try statements("SELECT $a$x$b$a$; SELECT 2;"), ["SELECT $a$x$b$a$", "SELECT 2"])
    }

    func testParametersAndDollarsInsideIdentifiersOpenNoQuote() throws {
        // `$1` is a parameter and `a$b$c` one identifier: read as quote openers, they would swallow the rest.
        XCTAssertEqual(try statements("PREPARE p AS SELECT $1; SELECT a$b$c; SELECT $2$; SELECT 3;"),
                       ["PREPARE p AS SELECT $1", "SELECT a$b$c", "SELECT $2$", "SELECT 3"])
        // A tag cannot start with a digit, and `$tag` without a closing `$` opens nothing.
        XCTAssertEqual(try statements("SELECT $1$x; SELECT $abc; SELECT 4;"), ["SELECT $1$x", "SELECT $abc", "SELECT 4"])
        // A number ends where `$$` begins.
        XCTAssertEqual(try statements("SELECT 1$$;$$; SELECT 5;"), ["SELECT 1$$;$$", "SELECT 5"])
    }

    func testBeginAtomicBodiesKeepTheirSemicolonsAndCaseEndInsideDoesNotCloseThem() throws {
        let text = """
            CREATE FUNCTION sign_of(x int) RETURNS int LANGUAGE sql
            BEGIN ATOMIC
              SELECT CASE WHEN x > 0 THEN 1 ELSE 0 END;
              SELECT CASE x WHEN 0 THEN 0 END;
            END;
            CREATE OR REPLACE PROCEDURE p() LANGUAGE sql BEGIN ATOMIC INSERT INTO t VALUES (1); END;
            BEGIN;
            SELECT 1;
            END;
            """
        XCTAssertEqual(try statements(text), [
            "CREATE FUNCTION sign_of(x int) RETURNS int LANGUAGE sql\nBEGIN ATOMIC\n  SELECT CASE WHEN x > 0 THEN 1 ELSE 0 END;\n  SELECT CASE x WHEN 0 THEN 0 END;\nEND",
            "CREATE OR REPLACE PROCEDURE p() LANGUAGE sql BEGIN ATOMIC INSERT INTO t VALUES (1); END",
            "BEGIN", "SELECT 1", "END",
        ])
        // Only CREATE [OR REPLACE] FUNCTION|PROCEDURE has a body: elsewhere CASE … END and BEGIN change nothing.
        XCTAssertEqual(try statements("SELECT CASE WHEN true THEN 1 END; CREATE TABLE begin_log (x int); SELECT 2;"),
                       ["SELECT CASE WHEN true THEN 1 END", "CREATE TABLE begin_log (x int)", "SELECT 2"])
        // A quoted "begin" is no key word.
        XCTAssertEqual(try statements(#"CREATE FUNCTION "begin"() RETURNS int AS 'SELECT 1' LANGUAGE sql; SELECT 2;"#),
                       [#"CREATE FUNCTION "begin"() RETURNS int AS 'SELECT 1' LANGUAGE sql"#, "SELECT 2"])
    }

    func testCRLFIsOneLineBreakAndLoneCRIsOne() throws {
        XCTAssertEqual(try read("SELECT 1;\r\n\r\n  SELECT 2;\rSELECT\r\n 3;"), [
            .statement("SELECT 1", line: 1, column: 1),
            .statement("SELECT 2", line: 3, column: 3),
            .statement("SELECT\r\n 3", line: 4, column: 1),
        ])
        // A `--` comment ends at CR as well.
        XCTAssertEqual(try statements("SELECT 1 -- c\rSELECT 2;"), ["SELECT 1 -- c\rSELECT 2"])
    }

    func testColumnsAndPositionsCountCharactersNotBytes() throws {
        let text = "-- é\n  /* ü */ SELECT 'é€😀',\r\n  bogus;"
        let pieces = try read(text)
        XCTAssertEqual(pieces, [.statement("SELECT 'é€😀',\r\n  bogus", line: 2, column: 11)])
        var script = PostgresScript(bytes: Array(text.utf8))
        guard case .statement(let statement)? = try script.next() else { return XCTFail("no statement") }
        // PostgreSQL's position counts characters of the text sent, CR and LF one each: `bogus` is the 18th.
        XCTAssertEqual(Array(statement.sql.unicodeScalars).count, 22)
        XCTAssertTrue(statement.location(ofPosition: 18) == (3, 3), "bogus")
        XCTAssertTrue(statement.location(ofPosition: 1) == (2, 11))
        XCTAssertTrue(statement.location(ofPosition: 11) == (2, 21), "the 😀, one character after the €")
        XCTAssertTrue(statement.location(ofPosition: 12) == (2, 22), "the quote after the four bytes of 😀")
        XCTAssertTrue(statement.location(ofPosition: 23) == (3, 8), "just past the end")
    }

    func testAByteOrderMarkIsSkipped() throws {
        XCTAssertEqual(try read([0xEF, 0xBB, 0xBF] + Array("SELECT 1;\nSELECT 2;".utf8)), [
            .statement("SELECT 1", line: 1, column: 1), .statement("SELECT 2", line: 2, column: 1),
        ])
    }

    // MARK: Meta-commands

    func testBackslashLinesAtStatementBoundariesAreMetaCommands() throws {
        let text = """
            \\restrict AbC123
            SET x = 1; \\connect other db
              \\set ON_ERROR_STOP on\t
            SELECT 'a\\b'
            ;\\unrestrict AbC123
            """
        XCTAssertEqual(try read(text), [
            .meta("restrict", "AbC123", line: 1, column: 1),
            .statement("SET x = 1", line: 2, column: 1),
            .meta("connect", "other db", line: 2, column: 12),
            .meta("set", "ON_ERROR_STOP on", line: 3, column: 3),
            .statement("SELECT 'a\\b'", line: 4, column: 1),
            .meta("unrestrict", "AbC123", line: 5, column: 2),
        ])
    }

    func testABackslashInsideAStatementIsPartOfItAndNoted() throws {
        var script = PostgresScript(bytes: Array("SELECT 1\n  \\gset\n;".utf8))
        guard case .statement(let statement)? = try script.next() else { return XCTFail("no statement") }
        XCTAssertEqual(statement.sql, "SELECT 1\n  \\gset")
        XCTAssertTrue(script.strayBackslash.map { $0 == (2, 3) } ?? false)
    }

    // MARK: COPY

    func testCopyFromStdinDataRunsToTheBackslashDotLine() throws {
        let text = """
            COPY public.t (a, b) FROM stdin;
            1\t;'"$$ /*
            \\.x
            \\\\.
            \\.
            SELECT 1;
            """
        XCTAssertEqual(try read(text), [
            .copy("COPY public.t (a, b) FROM stdin", line: 1, column: 1, dataLine: 2,
                  data: "1\t;'\"$$ /*\n\\.x\n\\\\.\n"),
            .statement("SELECT 1", line: 6, column: 1),
        ])
    }

    func testCopyVariants() throws {
        // Options after STDIN, a comment after the `;`, CRLF lines and a `\.` CRLF line; key words in any case.
        XCTAssertEqual(try read("copy t from STDIN with (format csv); -- data follows\r\na,\"b;\"\r\n\\.\r\nSELECT 2;"), [
            .copy("copy t from STDIN with (format csv)", line: 1, column: 1, dataLine: 2, data: "a,\"b;\"\r\n"),
            .statement("SELECT 2", line: 4, column: 1),
        ])
        // The last line `\.` without a line end ends the data; so does the end of the file.
        XCTAssertEqual(try read("COPY t FROM stdin;\n1\n\\."), [.copy("COPY t FROM stdin", line: 1, column: 1, dataLine: 2, data: "1\n")])
        XCTAssertEqual(try read("COPY t FROM stdin;\n1\n2"), [.copy("COPY t FROM stdin", line: 1, column: 1, dataLine: 2, data: "1\n2")])
        // Only FROM STDIN reads data from the script: these are ordinary statements.
        XCTAssertEqual(try statements("COPY t TO STDOUT; COPY t FROM '/tmp/stdin'; COPY (SELECT 'from stdin') TO STDOUT; SELECT 'COPY t FROM stdin';"),
                       ["COPY t TO STDOUT", "COPY t FROM '/tmp/stdin'", "COPY (SELECT 'from stdin') TO STDOUT", "SELECT 'COPY t FROM stdin'"])
    }

    func testCopyDataComesInWholeLinesAndNextSkipsWhatIsNotRead() throws {
        let rows = (1...5000).map { "\($0)\tsome text for row \($0)\n" }.joined()
        let text = "COPY t FROM stdin;\n" + rows + "\\.\nSELECT 2;"
        var script = PostgresScript(bytes: Array(text.utf8), chunkSize: 4096)
        guard case .copy? = try script.next() else { return XCTFail("no COPY") }
        var data: [UInt8] = []
        var chunks = 0
        while let chunk = try script.nextCopyData() {
            XCTAssertEqual(chunk.last, 0x0A, "whole lines")
            XCTAssertLessThan(chunk.count, 4096 + 64)
            data += chunk
            chunks += 1
        }
        XCTAssertEqual(String(decoding: data, as: UTF8.self), rows)
        XCTAssertGreaterThan(chunks, 10)
        XCTAssertNil(try script.nextCopyData())
        guard case .statement(let after)? = try script.next() else { return XCTFail("no statement after the data") }
        XCTAssertEqual([after.sql, "\(after.line)"], ["SELECT 2", "5003"])

        var skipping = PostgresScript(bytes: Array(text.utf8), chunkSize: 4096)
        _ = try skipping.next()
        _ = try skipping.nextCopyData()
        guard case .statement(let skipped)? = try skipping.next() else { return XCTFail("next() did not skip the data") }
        XCTAssertEqual(skipped.line, 5003)
    }

    func testTextAfterCopyOnItsLineIsRefused() throws {
        let (error, before) = failure("SELECT 0;\nCOPY t FROM stdin; SELECT 1;\n1\n\\.\n")
        XCTAssertEqual([error?.line, error?.column], [2, 20])
        XCTAssertTrue(error?.message.contains("after the data") ?? false, String(describing: error))
        XCTAssertEqual(before, [.statement("SELECT 0", line: 1, column: 1)])
    }

    func testPsqlCopyFromStdinReadsItsDataToo() throws {
        XCTAssertEqual(try read("\\copy t (a) from stdin with csv\nx;'y\n\\.\nSELECT 1;"), [
            .meta("copy", "t (a) from stdin with csv", line: 1, column: 1), .statement("SELECT 1", line: 4, column: 1),
        ])
    }

    // MARK: Errors

    func testTextEndingInsideALiteralOrCommentIsAnErrorAtItsStart() throws {
        let cases: [(String, [Int], String)] = [
            ("SELECT 1;\nSELECT 'never closed;\nSELECT 2;", [2, 8], "string constant"),
            ("SELECT 1;\nSELECT E'it\\'s;", [2, 8], "E'…' string constant"),
            ("SELECT 1;\n  SELECT \"ident;", [2, 10], "quoted identifier"),
            ("SELECT 1;\nDO $body$ BEGIN END $$;", [2, 4], "dollar-quoted string ($body$)"),
            ("SELECT 1;\nSELECT 2 /* a /* b */ c;", [2, 10], "/* comment"),
            ("SELECT 1;\n/* between\n statements", [2, 1], "/* comment"),
        ]
        for (text, place, what) in cases {
            let (error, before) = failure(text)
            XCTAssertEqual([error?.line, error?.column], place, text)
            XCTAssertTrue(error?.message.contains("ends inside a \(what) that starts here") ?? false, String(describing: error))
            XCTAssertEqual(before, [.statement("SELECT 1", line: 1, column: 1)], "the statement before it is read first")
        }
    }

    func testNULBytesAndInvalidUTF8AreErrorsAtTheirPlace() throws {
        let nul = failure("SELECT 1;\nSELECT 'a\0b';")
        XCTAssertEqual([nul.error?.line, nul.error?.column], [2, 10])
        XCTAssertTrue(nul.error?.message.contains("NUL byte") ?? false)
        XCTAssertEqual(nul.before, [.statement("SELECT 1", line: 1, column: 1)])

        for (bytes, column) in [([0xC3, 0x28], 10), ([0xE2, 0x82], 10), ([0xED, 0xA0, 0x80], 10), ([0xF8], 10), ([0xC0, 0xAF], 10)] as [([UInt8], Int)] {
            let text = Array("SELECT 1;\nSELECT 'é".utf8) + bytes + Array("';".utf8)
            var errors: [DatabaseError?] = []
            for chunkSize in [1, 2, 3, 1 << 16] {
                var script = PostgresScript(bytes: text, chunkSize: chunkSize)
                XCTAssertNotNil(try script.next())
                XCTAssertThrowsError(try script.next()) { errors.append($0 as? DatabaseError) }
            }
            XCTAssertEqual(errors.map { [$0?.line, $0?.column] }, Array(repeating: [2, column], count: 4), "\(bytes)")
            XCTAssertTrue(errors.first??.message.contains("not valid UTF-8") ?? false)
        }
        // Cut at the end of the file.
        let cut = Array("SELECT 'x".utf8) + [0xE2, 0x82]
        var script = PostgresScript(bytes: cut, chunkSize: 1)
        XCTAssertThrowsError(try script.next()) { XCTAssertEqual(($0 as? DatabaseError)?.column, 10) }
        // In COPY data too.
        let data = Array("COPY t FROM stdin;\n1\n".utf8) + [0xFF] + Array("\n\\.\n".utf8)
        var copy = PostgresScript(bytes: data, chunkSize: 3)
        _ = try copy.next()
        XCTAssertEqual(try copy.nextCopyData(), Array("1\n".utf8))
        XCTAssertThrowsError(try copy.nextCopyData()) { XCTAssertEqual([($0 as? DatabaseError)?.line, ($0 as? DatabaseError)?.column], [3, 1]) }
    }

    func testOpeningAFileThatIsNotRegularNamesThePath() throws {
        let directory = try makeTemporaryDirectory(self)
        XCTAssertThrowsError(try PostgresScript(path: directory.path)) {
            XCTAssertTrue("\($0)".contains(directory.path) && "\($0)".contains("a directory"), "\($0)")
        }
        let missing = directory.appendingPathComponent("missing.sql").path
        XCTAssertThrowsError(try PostgresScript(path: missing)) { XCTAssertTrue("\($0)".contains(missing), "\($0)") }
    }

    // MARK: Streaming

    /// A file several chunks long, with a `$$`, a multi-byte character, a statement and a `\.` line each cut by a
    /// chunk boundary, reads as the same pieces from disk in 64 KiB chunks as from memory at once, and holds
    /// no more than a chunk or two in memory.
    func testALargeFileReadsTheSameInChunksAsWhole() throws {
        let chunk = PostgresScript.defaultChunkSize
        var text: [UInt8] = []
        func append(_ string: String) { text += Array(string.utf8) }
        /// Pads with a line (a comment, or a data row inside COPY data) so that byte `offsetInString` of `string`
        /// lands on `boundary`.
        func place(_ string: String, straddling boundary: Int, at offsetInString: Int, inData: Bool = false) {
            let target = boundary - offsetInString
            let padding = String(repeating: "x", count: max(0, target - text.count - 4))
            append(inData ? "00\t" + padding + "\n" : "--" + padding + "\n\n")
            XCTAssertEqual(text.count, target, "the text before \(boundary) is too long")
            append(string)
        }
        append("CREATE TABLE t (a int, b text);\n")
        for i in 0..<500 { append("INSERT INTO t VALUES (\(i), 'row ''\(i)'' ; é');\n") }
        place("SELECT $$body;$$;\n", straddling: chunk, at: 8)                      // `$$` cut after its first `$`
        place("SELECT 'é';\n", straddling: 2 * chunk, at: 9)                        // inside the é
        place("SELECT 'semi';\n", straddling: 3 * chunk, at: 13)                    // the `;` is the first byte after
        append("COPY t (a, b) FROM stdin;\n")
        var rows = 0
        while text.count < 4 * chunk + 3000 {
            append("\(rows)\tdata ; '$$' é \\.x\n")
            rows += 1
        }
        place("5\tlast\n\\.\nSELECT 'after copy';\n", straddling: 5 * chunk, at: 8, inData: true) // `\.` cut after `\`
        while text.count < 5 << 20 {
            append("CREATE FUNCTION f\(text.count)() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT CASE WHEN true THEN 1 END; END;\n")
            append("DO $x$ BEGIN RAISE NOTICE 'é;'; END $x$;\n")
        }
        append("SELECT 'the end'")

        let path = try makeTemporaryDirectory(self).appendingPathComponent("big.sql").path
        try Data(text).write(to: URL(fileURLWithPath: path))
        var whole = PostgresScript(bytes: text, chunkSize: text.count + 1)
        let expected = try Self.readAll(&whole)
        var fromDisk = try PostgresScript(path: path)
        var pieces = 0
        var largestBuffer = 0
        var read: [Read] = []
        while let piece = try fromDisk.next() {
            largestBuffer = max(largestBuffer, fromDisk.bufferedByteCount)
            pieces += 1
            switch piece {
            case .statement(let s): read.append(.statement(s.sql, line: s.line, column: s.column))
            case .copy(let s, let dataLine):
                var data: [UInt8] = []
                while let part = try fromDisk.nextCopyData() {
                    largestBuffer = max(largestBuffer, fromDisk.bufferedByteCount)
                    data += part
                }
                read.append(.copy(s.sql, line: s.line, column: s.column, dataLine: dataLine, data: String(decoding: data, as: UTF8.self)))
            case .metaCommand(let m): read.append(.meta(m.name, m.argument, line: m.line, column: m.column))
            }
        }
        XCTAssertEqual(read.count, expected.count)
        XCTAssertTrue(read == expected, "the pieces differ")
        XCTAssertLessThanOrEqual(largestBuffer, 2 * chunk + 1024, "memory holds a chunk and a statement, not the file")
        XCTAssertTrue(expected.contains(.statement("SELECT $$body;$$", line: expected.firstLine(of: "SELECT $$body;$$"), column: 1)))
        XCTAssertTrue(expected.contains { if case .statement("SELECT 'é'", _, _) = $0 { true } else { false } })
        XCTAssertTrue(expected.contains { if case .statement("SELECT 'semi'", _, _) = $0 { true } else { false } })
        guard let copy = expected.first(where: { if case .copy = $0 { true } else { false } }),
              case .copy(_, _, _, _, let data) = copy else { return XCTFail("no COPY") }
        XCTAssertEqual(data.split(separator: "\n").count, rows + 2, "the rows, the padding row and the last")
        XCTAssertTrue(data.hasSuffix("5\tlast\n"))
        XCTAssertTrue(expected.contains { if case .statement("SELECT 'after copy'", _, _) = $0 { true } else { false } })
        XCTAssertEqual(expected.last, .statement("SELECT 'the end'", line: expected.lastLine, column: 1))
    }

    // MARK: pg_dump

    func testAPgDumpSchemaAndDataExcerpt() throws {
        let dump = #"""
            --
            -- PostgreSQL database dump
            --

            \restrict 8mPpDZsWDTzWv0cRnQ4OgqFhBzrBEaAV5gwlC3ydkjHA3nQHY8cAIb1Oc8FG0TJ

            -- Dumped from database version 17.6
            -- Dumped by pg_dump version 17.6

            SET statement_timeout = 0;
            SET lock_timeout = 0;
            SET client_encoding = 'UTF8';
            SET standard_conforming_strings = on;
            SELECT pg_catalog.set_config('search_path', '', false);
            SET check_function_bodies = false;

            --
            -- Name: slugify(text); Type: FUNCTION; Schema: public; Owner: app
            --

            CREATE FUNCTION public.slugify(value text) RETURNS text
                LANGUAGE sql IMMUTABLE
                AS $_$
              SELECT trim(both '-' from regexp_replace(lower($1), '[^a-z0-9]+', '-', 'g'));
            $_$;


            ALTER FUNCTION public.slugify(value text) OWNER TO app;

            SET default_table_access_method = heap;

            --
            -- Name: t; Type: TABLE; Schema: public; Owner: app
            --

            CREATE TABLE public.t (
                a integer NOT NULL,
                b text
            );

            --
            -- Data for Name: t; Type: TABLE DATA; Schema: public; Owner: app
            --

            COPY public.t (a, b) FROM stdin;
            1	it's; here
            2	\N
            3	tab\there "quoted" $$
            \.


            --
            -- PostgreSQL database dump complete
            --

            \unrestrict 8mPpDZsWDTzWv0cRnQ4OgqFhBzrBEaAV5gwlC3ydkjHA3nQHY8cAIb1Oc8FG0TJ

            """#
        let pieces = try read(dump)
        XCTAssertEqual(pieces.count, 13)
        XCTAssertEqual(pieces.first, .meta("restrict", "8mPpDZsWDTzWv0cRnQ4OgqFhBzrBEaAV5gwlC3ydkjHA3nQHY8cAIb1Oc8FG0TJ", line: 5, column: 1))
        XCTAssertEqual(pieces[5], .statement("SELECT pg_catalog.set_config('search_path', '', false)", line: 14, column: 1))
        XCTAssertEqual(pieces[7], .statement("""
            CREATE FUNCTION public.slugify(value text) RETURNS text
                LANGUAGE sql IMMUTABLE
                AS $_$
              SELECT trim(both '-' from regexp_replace(lower($1), '[^a-z0-9]+', '-', 'g'));
            $_$
            """, line: 21, column: 1))
        XCTAssertEqual(pieces[11], .copy("COPY public.t (a, b) FROM stdin", line: 45, column: 1, dataLine: 46,
                                        data: "1\tit's; here\n2\t\\N\n3\ttab\\there \"quoted\" $$\n"))
        XCTAssertEqual(pieces[12], .meta("unrestrict", "8mPpDZsWDTzWv0cRnQ4OgqFhBzrBEaAV5gwlC3ydkjHA3nQHY8cAIb1Oc8FG0TJ", line: 56, column: 1))
        XCTAssertEqual(PostgresLint.findings(in: Array(dump.utf8), insideTransaction: true), [])
    }
}

extension Array where Element == PostgresScriptTests.Read {
    func firstLine(of sql: String) -> Int {
        for piece in self { if case .statement(sql, let line, _) = piece { return line } }
        return 0
    }

    var lastLine: Int {
        if case .statement(_, let line, _)? = last { return line }
        return 0
    }
}
