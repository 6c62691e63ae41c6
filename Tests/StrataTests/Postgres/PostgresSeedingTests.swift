import Foundation
import Strata
@testable import StrataCore
@testable import StrataPostgres
import XCTest

/// Seeds on PostgreSQL where PostgreSQL's own types and rules decide: every type a value can be written as and read
/// back, the checks made before a value is passed on as text (integer ranges, exact numerics within their scale,
/// lengths, timestamp precision), values the server refuses during COPY named by their line in the file, the
/// modes through a temporary table, and `replace` refused when the plan is made. What every backend shares is in
/// the conformance suite (`SeedingTests`).
final class PostgresSeedingTests: XCTestCase {
    /// A project whose one migration creates `schema` and whose manifest lists `seeds` (XML elements), with `files`
    /// under its root, and a connection to a fresh database of its own.
    func project(schema: String, seeds: String, files: [String: String]) throws -> (Migrator, PostgresConnection, URL) {
        let server = try PostgresServer.shared()
        let root = try makeTemporaryDirectory(self)
        try write(schema, to: root.appendingPathComponent("sql/1_schema.sql"))
        for (name, text) in files { try write(text, to: root.appendingPathComponent(name)) }
        try write(#"<manifest version="1"><migrations directory="sql"/><seeds>\#(seeds)</seeds></manifest>"#,
                  to: root.appendingPathComponent("manifest.xml"))
        let connection = try PostgresConnection(url: try server.url(for: root), lockTimeout: .seconds(10))
        let manifest = try Manifest.load(path: root.appendingPathComponent("manifest.xml").path)
        return (Migrator(manifest: manifest, database: connection), connection, root)
    }

    /// Migrates a one-seed project and returns its failure; nil when it loaded.
    func failure(schema: String, seed: String = #"<seed file="csv/t.csv" table="t"/>"#, csv: String) throws -> StepFailure? {
        let (migrator, _, _) = try project(schema: schema, seeds: seed, files: ["csv/t.csv": csv])
        return try migrator.migrate().failure
    }

    /// Every value of a query's rows as the server's text (NULL as nil).
    func texts(_ db: PostgresConnection, _ sql: String) throws -> [[String?]] {
        try db.rows(sql, .none).map { row in try (0..<row.count).map { try row.get($0, as: String?.self) } }
    }

    // MARK: Types

    func testEveryTypeLoadsAsWrittenAndReadsBackAsTheFileSaysIt() throws {
        let (migrator, db, _) = try project(schema: """
            CREATE TYPE mood AS ENUM ('happy', 'sad');
            CREATE DOMAIN positive AS integer CHECK (VALUE > 0);
            CREATE TABLE t (
                id integer PRIMARY KEY, small smallint, big bigint, exact numeric(14, 4), huge numeric, r real,
                d double precision, ok boolean, day date, at timestamp, atz timestamptz, raw bytea, note text,
                code varchar(5), fixed char(3), u uuid, j json, jb jsonb, m mood, p positive, tags text[],
                t0 time, span interval
            );
            """, seeds: #"<seed file="csv/t.csv" table="t"/>"#, files: ["csv/t.csv": #"""
            id,small,big,exact,huge,r,d,ok,day,at,atz,raw,note,code,fixed,u,j,jb,m,p,tags,t0,span
            1,-32768,9223372036854775807,-1234567890.1230,123456789012345678901234567890.123456789012,3.25,0.1,yes,2024-02-29,2010-12-01T21:35:43+0900,2010-12-01 21:35:43.123456-03:30,\x00ff5c,"tab	here, ""quoted"", back\slash \N
            two lines",äbcdé,ab,A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11,"{""a"": [1, ""x\ty""]}","{""k"": ""\u00e9""}",sad,7,"{a,""b c""}",13:45:07,P1DT2H
            2,,,,,,,,,,,AAH/,"","",,,,,,,,,
            3,+07,-1,1e3,.5,-1.5e-3,1E300,F,1970-01-01,2024-01-01 00:00,2024-01-01T00:00:00.25Z,,plain,abcde,abc,,"[]",null,happy,1,{},,
            """#])
        let report = try migrator.migrate()
        XCTAssertNil(report.failure, "\(String(describing: report.failure))")
        XCTAssertEqual(report.applied.last?.rowCount, 3)
        let rows = try texts(db, """
            SELECT small::text, big::text, exact::text, huge::text, r::text, d::text, ok::text, day::text, at::text,
                   atz::text, encode(raw, 'hex'), note, code, fixed::text, u::text, j::text, jb::text, m::text, p::text,
                   tags::text, t0::text, span::text
            FROM t ORDER BY id
            """)
        XCTAssertEqual(rows.count, 3)
        guard rows.count == 3 else { return }
        XCTAssertEqual(rows[0], ["-32768", "9223372036854775807", "-1234567890.1230",
                                 "123456789012345678901234567890.123456789012", "3.25", "0.1", "true", "2024-02-29",
                                 "2010-12-01 12:35:43", "2010-12-02 01:05:43.123456+00", "00ff5c",
                                 "tab\there, \"quoted\", back\\slash \\N\ntwo lines", "äbcdé", "ab",
                                 "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", #"{"a": [1, "x\ty"]}"#, #"{"k": "é"}"#, "sad", "7",
                                 #"{a,"b c"}"#, "13:45:07", "P1DT2H"])
        XCTAssertEqual(rows[1], [nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, "0001ff", "", "", nil, nil, nil, nil,
                                 nil, nil, nil, nil, nil])
        XCTAssertEqual(rows[2], ["7", "-1", "1000.0000", "0.5", "-0.0015", "1e+300", "false", "1970-01-01",
                                 "2024-01-01 00:00:00", "2024-01-01 00:00:00.25+00", nil, "plain", "abcde", "abc", nil, "[]",
                                 "null", "happy", "1", "{}", nil, nil])
    }

    func testManifestColumnTypesConvertAsOnSQLiteAndRefuseWhatWouldLoseData() throws {
        let schema = "CREATE TABLE t (id integer PRIMARY KEY, flag integer, at_text text, stamp bigint, day date, raw text);"
        let (migrator, db, _) = try project(schema: schema, seeds: """
            <seed file="csv/t.csv" table="t">
              <column name="flag" type="boolean"/>
              <column name="at_text" type="datetime"/>
              <column name="stamp" type="datetime" storage="unix"/>
            </seed>
            """, files: ["csv/t.csv": "id,flag,at_text,stamp\n1,yes,2010-12-01T21:35:43+0900,1970-01-02T00:00:00Z\n"])
        XCTAssertNil(try migrator.migrate().failure)
        XCTAssertEqual(try texts(db, "SELECT flag::text, at_text, stamp::text FROM t"), [["1", "2010-12-01T12:35:43Z", "86400"]])

        let lossy = try failure(schema: schema, seed: #"<seed file="csv/t.csv" table="t"><column name="day" type="datetime"/></seed>"#,
                                csv: "id,day\n1,2010-12-01T21:35:43Z\n")
        XCTAssertTrue(lossy?.message.contains("would drop part of each value") ?? false, "\(String(describing: lossy))")
        let blob = try failure(schema: schema, seed: #"<seed file="csv/t.csv" table="t"><column name="raw" type="blob"/></seed>"#,
                               csv: "id,raw\n1,\\x00\n")
        XCTAssertTrue(blob?.message.contains("type=\"blob\" needs a bytea column") ?? false, "\(String(describing: blob))")

        // A numeric column keeps values exact: through a double they would round, as text the server would round
        // them to the scale; neither happens without a word.
        let exact = "CREATE TABLE t (id integer PRIMARY KEY, amount numeric(20, 2));"
        let real = try failure(schema: exact, seed: #"<seed file="csv/t.csv" table="t"><column name="amount" type="real"/></seed>"#,
                               csv: "id,amount\n1,12345678901234567.25\n")
        XCTAssertTrue(real?.message.contains("would pass each value through a binary double") ?? false, "\(String(describing: real))")
        let text = try failure(schema: exact, seed: #"<seed file="csv/t.csv" table="t"><column name="amount" type="text"/></seed>"#,
                               csv: "id,amount\n1,1.25\n2,1.239\n")
        XCTAssertEqual(text?.line, 3, "\(String(describing: text))")
        XCTAssertTrue(text?.message.contains("1.239") ?? false, "\(String(describing: text))")
        let (kept, keptDB, _) = try project(schema: exact, seeds: #"<seed file="csv/t.csv" table="t"><column name="amount" type="text"/></seed>"#,
                                            files: ["csv/t.csv": "id,amount\n1,12345678901234567.25\n"])
        XCTAssertNil(try kept.migrate().failure)
        XCTAssertEqual(try texts(keptDB, "SELECT amount::text FROM t"), [["12345678901234567.25"]])
    }

    func testNullVersusEmptyStringAndTheNullToken() throws {
        let (migrator, db, _) = try project(schema: "CREATE TABLE t (id integer PRIMARY KEY, s text, v varchar(3), n integer);",
                                            seeds: #"<seed file="csv/t.csv" table="t" null="\N"/>"#,
                                            files: ["csv/t.csv": "id,s,v,n\n1,,,\n2,\"\",\"\",\\N\n3,\\N,\\N,5\n4,\"\\N\",\"\\N\",\n"])
        XCTAssertNil(try migrator.migrate().failure)
        XCTAssertEqual(try texts(db, "SELECT s, v, n::text FROM t ORDER BY id"),
                       [[nil, nil, nil], ["", "", nil], [nil, nil, "5"], ["\\N", "\\N", nil]])
    }

    func testBooleansInEverySpellingStrataAccepts() throws {
        let spellings = ["1", "0", "true", "false", "yes", "no", "t", "f", "TRUE", "No", "T", "fAlSe"]
        let (migrator, db, _) = try project(schema: "CREATE TABLE t (id integer PRIMARY KEY, ok boolean);",
                                            seeds: #"<seed file="csv/t.csv" table="t"/>"#,
                                            files: ["csv/t.csv": "id,ok\n" + spellings.enumerated().map { "\($0),\($1)\n" }.joined()])
        XCTAssertNil(try migrator.migrate().failure)
        XCTAssertEqual(try db.rows("SELECT ok FROM t ORDER BY id").map { try $0.get(0, as: Bool.self) },
                       [true, false, true, false, true, false, true, false, true, false, true, false])
        // PostgreSQL also reads "on" and "y"; Strata's rule is the same on every backend.
        let on = try failure(schema: "CREATE TABLE t (ok boolean);", csv: "ok\non\n")
        XCTAssertTrue(on?.message.contains("column 'ok': 'on' is not a boolean") ?? false, "\(String(describing: on))")
    }

    func testTimestampsWithOffsetsAreStoredInUTCAndPrecisionIsNeverRoundedAway() throws {
        let (migrator, db, _) = try project(schema: "CREATE TABLE t (id integer PRIMARY KEY, at timestamp, atz timestamptz, ms timestamp(3));",
                                            seeds: #"<seed file="csv/t.csv" table="t"/>"#, files: ["csv/t.csv": """
            id,at,atz,ms
            1,2010-12-01T21:35:43+0900,2010-12-01T21:35:43+0900,2010-12-01T21:35:43.123+0900
            2,2010-12-01 12:35,2010-12-01T12:35:43.5-05:00,2010-12-01T12:35:43Z
            3,2024-03-31T01:30:00Z,1999-12-31T23:59:59.999999Z,2024-01-01T00:00:00.1Z
            """])
        XCTAssertNil(try migrator.migrate().failure)
        XCTAssertEqual(try texts(db, "SELECT at::text, atz::text, ms::text FROM t ORDER BY id"), [
            ["2010-12-01 12:35:43", "2010-12-01 12:35:43+00", "2010-12-01 12:35:43.123"],
            ["2010-12-01 12:35:00", "2010-12-01 17:35:43.5+00", "2010-12-01 12:35:43"],
            ["2024-03-31 01:30:00", "1999-12-31 23:59:59.999999+00", "2024-01-01 00:00:00.1"],
        ])
        // The same instant, whatever the session's zone: timestamptz is stored as UTC.
        try db.execute("SET TimeZone = 'Asia/Tokyo'")
        XCTAssertEqual(try texts(db, "SELECT atz::text FROM t WHERE id = 1"), [["2010-12-01 21:35:43+09"]])
        try db.execute("SET TimeZone = 'UTC'")

        for (column, value, message) in [("ms", "2010-12-01T12:35:43.1234Z", "more digits of a second than the column keeps (3)"),
                                         ("at", "2010-12-01T12:35:43.1234567Z", "more digits of a second than the column keeps (6)"),
                                         ("at", "01/12/2010 10:00", "is not an ISO-8601 datetime")] {
            let failure = try XCTUnwrap(try failure(schema: "CREATE TABLE t (id integer, at timestamp, ms timestamp(3));",
                                                    csv: "id,\(column)\n1,\(value)\n"), value)
            XCTAssertEqual(failure.line, 2)
            XCTAssertTrue(failure.message.contains("column '\(column)': '\(value)'") && failure.message.contains(message),
                          failure.message)
        }
    }

    func testChecksBeforeAValueIsPassedOnNameLineColumnValueAndType() throws {
        let cases: [(type: String, value: String, message: String)] = [
            ("smallint", "32768", "'32768' is not an integer from -32768 to 32767"),
            ("integer", "-2147483649", "is not an integer from -2147483648 to 2147483647"),
            ("bigint", "9223372036854775808", "is not an integer"),
            ("integer", "0x1F", "'0x1F' is not an integer"),
            ("numeric(6, 2)", "1.005", "'1.005' is not a number with at most 2 digits after the point"),
            ("numeric(6, 2)", "1.5e-3", "is not a number with at most 2 digits after the point"),
            ("numeric", "NaN", "'NaN' is not a number"),
            ("numeric", "1,5", "is not a number"),
            ("real", "1e39", "is not a real number (within real's range"),
            ("double precision", "Infinity", "is not a real number"),
            ("varchar(3)", "abcd", "'abcd' is not text of at most 3 characters"),
            ("char(2)", "ab ", "is not text of at most 2 characters"),
            ("bytea", "\\xZZ", "is not bytes"),
            ("date", "2019-02-29", "is not an ISO-8601 date"),
        ]
        for (type, value, message) in cases {
            // A quoted line break first: the line named is the file's, not the row's number.
            let failure = try XCTUnwrap(try failure(schema: "CREATE TABLE t (id integer, note text, v \(type));",
                                                    csv: "id,note,v\n1,\"two\nlines\",\n2,,\"\(value)\"\n"), "\(type) \(value)")
            XCTAssertEqual(failure.line, 4, "\(type) \(value)")
            XCTAssertTrue(failure.description.contains("csv/t.csv:4: column 'v': '") && failure.message.contains(message),
                          "\(type): \(failure.description)")
        }
        // At the limit is fine: characters, not bytes.
        XCTAssertNil(try failure(schema: "CREATE TABLE t (v varchar(3), n numeric(6, 2));", csv: "v,n\näöü,1.500\n"))
        // PostgreSQL text cannot hold NUL.
        let nul = try XCTUnwrap(try failure(schema: "CREATE TABLE t (id integer, s text);", csv: "id,s\n1,a\u{0}b\n"))
        XCTAssertEqual(nul.line, 2)
        XCTAssertTrue(nul.message.contains("column 's': the value holds a NUL byte"), nul.message)
    }

    // MARK: Values the server refuses

    func testValuesTheServerRefusesDuringCopyNameTheFileLineColumnValueAndType() throws {
        let schema = """
            CREATE TYPE mood AS ENUM ('happy', 'sad');
            CREATE DOMAIN positive AS integer CHECK (VALUE > 0);
            CREATE TABLE t (id integer PRIMARY KEY, note text, m mood, u uuid, j jsonb, p positive, v integer CHECK (v < 10));
            """
        // Line 2 holds a field with two line breaks and line 5 is blank: the COPY's row 3 is the file's line 6.
        let before = "id,note,m,u,j,p,v\n1,\"a\nb\nc\",happy,,,,\n\n"
        let cases: [(row: String, message: String)] = [
            ("2,,meh,,,,", #"column 'm': 'meh' is not a valid mood (PostgreSQL: invalid input value for enum mood: "meh")"#),
            ("2,,,not-a-uuid,,,", "column 'u': 'not-a-uuid' is not a valid uuid (PostgreSQL: invalid input syntax for type uuid"),
            ("2,,,,\"{bad\",,", "column 'j': '{bad' is not a valid jsonb (PostgreSQL: invalid input syntax for type json"),
            ("2,,,,,0,", "column 'p': '0' is not a valid positive (PostgreSQL: value for domain positive violates check constraint"),
            ("2,,,,,,10", #"new row for relation "t" violates check constraint "t_v_check""#),
        ]
        for mode in [#"mode="insert""#, #"mode="upsert" key="id""#] {
            for (row, message) in cases {
                let failure = try XCTUnwrap(try failure(schema: schema, seed: #"<seed file="csv/t.csv" table="t" \#(mode)/>"#,
                                                        csv: before + row + "\n3,,sad,,,,\n"), row)
                XCTAssertEqual(failure.line, 6, "\(mode) \(row): \(failure)")
                XCTAssertTrue(failure.description.contains("csv/t.csv:6: ") && failure.message.contains(message),
                              "\(mode): \(failure.description)")
                if !message.hasPrefix("column") {
                    XCTAssertTrue(failure.message.hasPrefix(mode.contains("key") ? "row rejected (id = '2'): " : "row rejected: "), failure.message)
                }
            }
        }
    }

    func testABadValueOnDataRow50000Of100000RollsBackTheWholeSeedAndNamesLine50001() throws {
        var csv = "id,u,note\n"
        csv.reserveCapacity(6_000_000)
        for i in 1...100_000 {
            let uuid = i == 50_000 ? "not-a-uuid" : String(format: "%08x-0000-4000-8000-%012x", i, i)
            csv += "\(i),\(uuid),row \(i)\n"
        }
        let (migrator, db, _) = try project(schema: "CREATE TABLE t (id integer PRIMARY KEY, u uuid, note text); INSERT INTO t VALUES (0, NULL, 'before');",
                                            seeds: #"<seed file="csv/t.csv" table="t"/>"#, files: ["csv/t.csv": csv])
        let failure = try XCTUnwrap(try migrator.migrate().failure)
        XCTAssertEqual(failure.line, 50_001)
        XCTAssertTrue(failure.message.contains("column 'u': 'not-a-uuid' is not a valid uuid"), failure.message)
        XCTAssertEqual(try texts(db, "SELECT id::text, note FROM t"), [["0", "before"]])
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM strata_history WHERE kind = 'seed'", as: Int.self), 0)
        XCTAssertEqual(try migrator.status().last?.state, .pending)
    }

    func testRowsRefusedAfterTheCopyByForeignKeysAndTriggersNameTheirLine() throws {
        let schema = """
            CREATE TABLE author (id integer PRIMARY KEY);
            INSERT INTO author VALUES (1), (2);
            CREATE TABLE book (id integer PRIMARY KEY, author_id integer REFERENCES author (id), title text);
            CREATE FUNCTION no_drafts() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF NEW.title LIKE 'draft%' THEN RAISE EXCEPTION 'no drafts: %', NEW.title; END IF;
                RETURN NEW;
            END $$;
            CREATE TRIGGER no_drafts AFTER INSERT OR UPDATE ON book FOR EACH ROW EXECUTE FUNCTION no_drafts();
            """
        var csv = "id,author_id,title\n"
        for i in 1...300 { csv += "\(i),\(i % 2 + 1),\"title\n\(i)\"\n" }
        for (badRow, message) in [(137, "violates foreign key constraint \"book_author_id_fkey\""), (300, "no drafts: draft")] {
            let rows = csv.replacingOccurrences(of: "\(badRow),\(badRow % 2 + 1),\"title\n\(badRow)\"",
                                                with: message.hasPrefix("no") ? "\(badRow),1,\"draft\n\(badRow)\"" : "\(badRow),3,\"title\n\(badRow)\"")
            for mode in [#"mode="insert""#, #"mode="ignore""#, #"mode="upsert" key="id""#] {
                let failure = try XCTUnwrap(try failure(schema: schema, seed: #"<seed file="csv/t.csv" table="book" \#(mode)/>"#, csv: rows),
                                            "\(badRow) \(mode)")
                XCTAssertEqual(failure.line, 2 * badRow, "\(badRow) \(mode)")
                XCTAssertTrue(failure.message.hasPrefix(mode.contains("key") ? "row rejected (id = '\(badRow)'): " : "row rejected: ")
                              && failure.message.contains(message), failure.message)
            }
        }
    }

    // MARK: Modes

    func testEachModeThroughCopy() throws {
        let schema = "CREATE TABLE t (code text PRIMARY KEY, v integer, extra text DEFAULT 'kept'); INSERT INTO t VALUES ('a', 0, 'old'), ('z', 9, 'old');"
        let file = ["csv/t.csv": "code,v\na,1\nb,2\n"]
        let expectations: [(String, Int, [[String?]])] = [
            (#"mode="ignore" key="code""#, 1, [["a", "0", "old"], ["b", "2", "kept"], ["z", "9", "old"]]),
            (#"mode="ignore""#, 1, [["a", "0", "old"], ["b", "2", "kept"], ["z", "9", "old"]]),
            (#"mode="upsert" key="code""#, 2, [["a", "1", "old"], ["b", "2", "kept"], ["z", "9", "old"]]),
            (#"mode="sync" key="code""#, 2, [["a", "1", "old"], ["b", "2", "kept"]]),
        ]
        for (attributes, count, expected) in expectations {
            let (migrator, db, _) = try project(schema: schema, seeds: #"<seed file="csv/t.csv" table="t" \#(attributes)/>"#, files: file)
            let report = try migrator.migrate()
            XCTAssertNil(report.failure, "\(attributes): \(String(describing: report.failure))")
            XCTAssertEqual(report.applied.last?.rowCount, count, attributes)
            XCTAssertEqual(try texts(db, "SELECT code, v::text, extra FROM t ORDER BY code"), expected, attributes)
        }
        // insert copies straight into the table; a key already there names the row.
        let (migrator, db, _) = try project(schema: schema, seeds: #"<seed file="csv/t.csv" table="t" key="code"/>"#, files: file)
        let failure = try XCTUnwrap(try migrator.migrate().failure)
        XCTAssertEqual(failure.line, 2)
        XCTAssertTrue(failure.message.contains(#"row rejected (code = 'a'): duplicate key value violates unique constraint "t_pkey""#),
                      failure.message)
        XCTAssertEqual(try texts(db, "SELECT code FROM t ORDER BY code"), [["a"], ["z"]])
    }

    func testSyncDeletesTableRowsWithANullKeyAndRefusesANullKeyInTheFile() throws {
        let schema = "CREATE TABLE t (code text UNIQUE, v integer); INSERT INTO t VALUES ('a', 0), (NULL, 1), ('z', 2), (NULL, 3);"
        let (migrator, db, _) = try project(schema: schema, seeds: #"<seed file="csv/t.csv" table="t" mode="sync" key="code"/>"#,
                                            files: ["csv/t.csv": "code,v\na,5\nb,6\n"])
        XCTAssertNil(try migrator.migrate().failure)
        XCTAssertEqual(try texts(db, "SELECT code, v::text FROM t ORDER BY code"), [["a", "5"], ["b", "6"]])

        let failure = try XCTUnwrap(try failure(schema: schema, seed: #"<seed file="csv/t.csv" table="t" mode="sync" key="code"/>"#,
                                                csv: "code,v\na,5\n,6\n"))
        XCTAssertEqual(failure.line, 3)
        XCTAssertTrue(failure.message.contains("key column 'code' is NULL"), failure.message)
    }

    func testSyncRefusesToDeleteRowsAForeignKeyReferencesAndDeletesATreeOfItsOwn() throws {
        let (migrator, db, _) = try project(schema: """
            CREATE TABLE author (id integer PRIMARY KEY, name text);
            CREATE TABLE book (id integer PRIMARY KEY, author_id integer REFERENCES author (id) ON DELETE CASCADE);
            INSERT INTO author VALUES (1, 'Le Guin'), (2, 'Jemisin'), (3, 'Butler');
            INSERT INTO book VALUES (10, 1), (11, 2), (12, 2);
            """, seeds: #"<seed file="csv/a.csv" table="author" mode="sync" key="id"/>"#, files: ["csv/a.csv": "id,name\n1,Le Guin\n"])
        let failure = try XCTUnwrap(try migrator.migrate().failure)
        XCTAssertTrue(failure.message.contains("sync would delete rows of 'author' that other rows reference: id = 2 (2 rows in book.author_id)"),
                      failure.message)
        XCTAssertEqual(try texts(db, "SELECT count(*)::text FROM book"), [["3"]])
        XCTAssertEqual(try texts(db, "SELECT name FROM author ORDER BY id"), [["Le Guin"], ["Jemisin"], ["Butler"]])

        let (tree, treeDB, _) = try project(schema: """
            CREATE TABLE c (id integer PRIMARY KEY, parent integer REFERENCES c (id));
            INSERT INTO c VALUES (1, NULL), (2, 1), (3, 2), (4, NULL), (5, 4);
            """, seeds: #"<seed file="csv/c.csv" table="c" mode="sync" key="id"/>"#, files: ["csv/c.csv": "id,parent\n4,\n"])
        let treeFailure = try tree.migrate().failure
        // 5 references 4, which stays: 5 is deleted; 1, 2, 3 reference only one another.
        XCTAssertNil(treeFailure, "\(String(describing: treeFailure))")
        XCTAssertEqual(try texts(treeDB, "SELECT id::text FROM c"), [["4"]])
    }

    func testAKeyRepeatedInOneFileIsRefusedNamingBothLines() throws {
        let keyed = "CREATE TABLE t (code text PRIMARY KEY, v integer); INSERT INTO t VALUES ('kept', 0);"
        let cases: [(schema: String, seed: String, csv: String, key: String, rowsBefore: Int)] = [
            (keyed, #"mode="upsert" key="code""#, "code,v\na,1\nb,2\n\"a\",3\n", "key (code = 'a')", 1),
            (keyed, #"mode="sync" key="code""#, "code,v\na,1\nb,2\na,3\n", "key (code = 'a')", 1),
            // Only key columns: ON CONFLICT has nothing to update, and would skip the second row without a word.
            ("CREATE TABLE t (a integer, b text, PRIMARY KEY (a, b));", #"mode="upsert" key="a, b""#, "a,b\n1,x\n1,y\n01,x\n",
             "key (a = '01', b = 'x')", 0),
        ]
        for (schema, seed, csv, key, rowsBefore) in cases {
            let (migrator, db, _) = try project(schema: schema, seeds: #"<seed file="csv/t.csv" table="t" \#(seed)/>"#,
                                                files: ["csv/t.csv": csv])
            let failure = try XCTUnwrap(try migrator.migrate().failure, seed)
            XCTAssertEqual(failure.line, 4, seed)
            XCTAssertTrue(failure.message.contains("\(key) is also on line 2: with mode="), failure.message)
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM t", as: Int.self), rowsBefore, "nothing of the seed stays")
        }
    }

    func testReplaceIsRefusedWhenThePlanIsMadeBeforeAnythingRuns() throws {
        let (migrator, db, root) = try project(schema: "CREATE TABLE t (code text PRIMARY KEY, v integer);",
                                               seeds: #"<seed file="csv/t.csv" table="t" mode="replace" key="code"/>"#,
                                               files: ["csv/t.csv": "code,v\na,1\n"])
        let plan = try migrator.plan()
        XCTAssertEqual(plan.refusals.map(\.reason), [.seedMode])
        XCTAssertTrue(plan.refusals.first?.message.contains(#"seed t.csv: mode="replace" cannot be loaded into PostgreSQL"#) ?? false,
                      "\(plan.refusals)")
        guard case .refused(let refusals)? = assertThrows(MigrationError.self, { try migrator.migrate() }) else {
            return XCTFail("not refused")
        }
        XCTAssertEqual(refusals.map(\.reason), [.seedMode])
        XCTAssertFalse(try db.tableExists("t"), "the migration before the seed did not run either")

        let command = try runStrata(["migrate", "--manifest", root.appendingPathComponent("manifest.xml").path,
                                     "--database", try PostgresServer.shared().url(for: root)], in: root)
        XCTAssertEqual(command.status, 3, command.stderr)
        XCTAssertTrue(command.stderr.contains(#"mode="replace" cannot be loaded into PostgreSQL"#), command.stderr)
        XCTAssertFalse(try db.tableExists("t"))
    }

    func testValidateReportsAReplaceSeedOfAPostgreSQLManifest() throws {
        let root = try makeTemporaryDirectory(self)
        try write("CREATE TABLE t (code text PRIMARY KEY);", to: root.appendingPathComponent("sql/1.sql"))
        try write("code\na\n", to: root.appendingPathComponent("csv/t.csv"))
        try write("""
            <manifest version="1"><database url="postgresql://app@db/app"/><migrations directory="sql"/>
            <seeds><seed file="csv/t.csv" table="t" mode="replace" key="code"/><seed file="csv/t.csv" id="u" table="t" mode="upsert" key="code"/></seeds>
            </manifest>
            """, to: root.appendingPathComponent("manifest.xml"))
        let manifest = try Manifest.load(path: root.appendingPathComponent("manifest.xml").path)
        let (problems, _) = Migrator.lint(manifest) { _ in PostgresDialect() }
        XCTAssertEqual(problems.count, 1, "\(problems)")
        XCTAssertTrue(problems.first?.description.contains(#"manifest.xml:2: seed t.csv: mode="replace" cannot be loaded into PostgreSQL"#) ?? false,
                      "\(problems)")
    }

    // MARK: History, keys, names

    func testMigrateRecordsTheSeedWithItsRowCountAndReappliesAChangedFile() throws {
        let (migrator, db, root) = try project(schema: "CREATE TABLE t (code text PRIMARY KEY, v integer);",
                                               seeds: #"<seed file="csv/t.csv" table="t" mode="sync" key="code" onChange="reapply"/>"#,
                                               files: ["csv/t.csv": "code,v\na,1\nb,2\nc,3\n"])
        let report = try migrator.migrate()
        XCTAssertNil(report.failure)
        XCTAssertEqual(report.applied.map(\.id), ["1_schema.sql", "t.csv"])
        XCTAssertEqual(report.applied.last?.rowCount, 3)
        let record = try XCTUnwrap(try db.history.record(kind: .seed, identity: "t.csv"))
        XCTAssertEqual(record.rowCount, 3)
        XCTAssertEqual(record.state, .applied)
        XCTAssertEqual(record.checksum, try Checksum.ofFile(atPath: root.appendingPathComponent("csv/t.csv").path, content: .csv))
        XCTAssertEqual(try migrator.migrate().applied, [])

        try write("code,v\na,10\n", to: root.appendingPathComponent("csv/t.csv"))
        XCTAssertEqual(try migrator.migrate().applied.map(\.rowCount), [1])
        XCTAssertEqual(try texts(db, "SELECT code, v::text FROM t"), [["a", "10"]])
        XCTAssertEqual(try db.history.record(kind: .seed, identity: "t.csv")?.rowCount, 1)
    }

    func testAKeyWithoutAUniqueIndexIsRefusedBeforeAnyRowIsRead() throws {
        let failure = try XCTUnwrap(try failure(schema: "CREATE TABLE t (code text, v integer);",
                                                seed: #"<seed file="csv/t.csv" table="t" mode="upsert" key="code"/>"#,
                                                csv: "code,v\na,1\nb,oops\n"))
        XCTAssertTrue(failure.message.contains("key (code) must be the primary key or have a UNIQUE index"), failure.message)
    }

    func testHeaderNamesFindTheColumnSpelledExactlyBeforeOneThatDiffersInCase() throws {
        let schema = #"CREATE TABLE "Mixed" (id integer, "ID" integer, "Name" text);"#
        let (migrator, db, _) = try project(schema: schema, seeds: #"<seed file="csv/t.csv" table="mixed"/>"#,
                                            files: ["csv/t.csv": "ID,id,name\n1,2,x\n"])
        XCTAssertNil(try migrator.migrate().failure)
        XCTAssertEqual(try texts(db, #"SELECT id::text, "ID"::text, "Name" FROM "Mixed""#), [["2", "1", "x"]])
        let ambiguous = try XCTUnwrap(try failure(schema: schema, seed: #"<seed file="csv/t.csv" table="Mixed"/>"#, csv: "Id\n1\n"))
        XCTAssertTrue(ambiguous.message.contains("'Id' matches the columns 'id' and 'ID' only by letter case"), ambiguous.message)
    }

    func testATableNameMatchingSeveralTablesOnlyByCaseIsRefused() throws {
        let schema = #"CREATE TABLE items (id integer); CREATE TABLE "Items" (id integer);"#
        let ambiguous = try XCTUnwrap(try failure(schema: schema, seed: #"<seed file="csv/t.csv" table="ITEMS"/>"#, csv: "id\n1\n"))
        XCTAssertTrue(ambiguous.message.contains(#"table name "ITEMS" matches the tables "Items" and "items" only by letter case"#),
                      ambiguous.message)
        XCTAssertNil(try failure(schema: schema, seed: #"<seed file="csv/t.csv" table="Items"/>"#, csv: "id\n1\n"))
    }

    /// `COPY` runs no rules: a table with an INSERT rule (rule-based partitioning, an audit rule) loads through
    /// `INSERT … SELECT`, so the rows go where the same `INSERT` would send them.
    func testATableWithInsertRulesLoadsAsInsertWouldNotAsCopy() throws {
        let (migrator, db, _) = try project(schema: """
            CREATE TABLE measurements (taken_on date NOT NULL, value int NOT NULL);
            CREATE TABLE measurements_2024 (CHECK (taken_on >= '2024-01-01' AND taken_on < '2025-01-01')) INHERITS (measurements);
            CREATE RULE route_2024 AS ON INSERT TO measurements WHERE new.taken_on >= '2024-01-01' AND new.taken_on < '2025-01-01'
                DO INSTEAD INSERT INTO measurements_2024 VALUES (new.*);
            CREATE TABLE accounts (id int PRIMARY KEY, name text NOT NULL);
            CREATE TABLE audit (what text NOT NULL);
            CREATE RULE audited AS ON INSERT TO accounts DO ALSO INSERT INTO audit VALUES ('account ' || new.id);
            """, seeds: #"<seed file="csv/m.csv" table="measurements"/><seed file="csv/a.csv" table="accounts"/>"#,
            files: ["csv/m.csv": "taken_on,value\n2024-03-01,7\n2023-03-01,6\n", "csv/a.csv": "id,name\n1,ada\n"])
        XCTAssertNil(try migrator.migrate().failure)
        XCTAssertEqual(try texts(db, "SELECT value::text FROM ONLY measurements"), [["6"]])
        XCTAssertEqual(try texts(db, "SELECT value::text FROM measurements_2024"), [["7"]])
        XCTAssertEqual(try texts(db, "SELECT what FROM audit"), [["account 1"]])
    }

    func testIdentityColumnsTakeTheFilesValuesAsCopyDoesInEveryMode() throws {
        for mode in [#"mode="insert""#, #"mode="upsert" key="id""#] {
            let (migrator, db, _) = try project(schema: "CREATE TABLE t (id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text);",
                                                seeds: #"<seed file="csv/t.csv" table="t" \#(mode)/>"#, files: ["csv/t.csv": "id,v\n7,x\n"])
            XCTAssertNil(try migrator.migrate().failure, mode)
            XCTAssertEqual(try texts(db, "SELECT id::text, v FROM t"), [["7", "x"]], mode)
        }
    }

    func testTheCopyContextIsReadForItsRowAndColumn() {
        XCTAssertEqual(PostgresCopyIn.place(inContext: #"COPY t, line 3, column m: "meh""#, relation: "t", columns: ["m", "n"])?.row, 3)
        XCTAssertEqual(PostgresCopyIn.place(inContext: #"COPY t, line 3, column m: "meh""#, relation: "t", columns: ["m", "n"])?.column, "m")
        // A column whose name holds ": " and another that is its prefix.
        let tricky = PostgresCopyIn.place(inContext: "PL/pgSQL function f() line 2 at RAISE\nCOPY my table, line 12, column a: b: \"x\"",
                                          relation: "my table", columns: ["a", "a: b"])
        XCTAssertEqual(tricky?.row, 12)
        XCTAssertEqual(tricky?.column, "a: b")
        XCTAssertEqual(PostgresCopyIn.place(inContext: "COPY t, line 9: \"1\t2\"", relation: "t", columns: ["a"])?.column, nil)
        // A server speaking another language: the row is still found.
        XCTAssertEqual(PostgresCopyIn.place(inContext: "COPY t, Zeile 41, Spalte m: »meh«", relation: "t", columns: ["m"])?.row, 41)
    }
}
