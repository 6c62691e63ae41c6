import Foundation
import CSQLite
import XCTest
import Strata
@testable import StrataCore
@testable import StrataSQLite

final class SeedingTests: XCTestCase {
    /// A project whose single migration creates `schema` and whose manifest lists `seeds` (XML elements).
    func project(schema: String, seeds: String, files: [String: String]) throws -> Project {
        var all = files
        all["sql/1_schema.sql"] = schema
        return try Project(self, manifest: """
            <manifest version="1"><database path="db.sqlite"/><migrations directory="sql"/><seeds>\(seeds)</seeds></manifest>
            """, files: all)
    }

    func migrate(_ project: Project, _ options: MigrationOptions = MigrationOptions()) throws -> MigrationReport {
        try project.migrator().migrate(options)
    }

    func values(_ project: Project, _ sql: String) throws -> [[DatabaseValue]] {
        try project.database().query(sql).all().map(\.values)
    }

    func testTypedConversionsFromDeclaredTypesAndColumnOverrides() throws {
        let project = try project(schema: """
            CREATE TABLE t (id INTEGER PRIMARY KEY, price REAL, amount NUMERIC, flag BOOLEAN, day DATE, at DATETIME,
                            stamp INTEGER, raw BLOB, note TEXT, anything, seen INTEGER);
            """, seeds: """
            <seed file="csv/t.csv" table="t">
              <column name="stamp" type="datetime" storage="unix"/>
              <column name="seen" type="boolean"/>
            </seed>
            """, files: ["csv/t.csv": """
            id,price,amount,flag,day,at,stamp,raw,note,anything,seen
            1,9.99,12,yes,2024-02-29,2010-12-01T21:35:43+0900,2010-12-01T21:35:43+0900,\\x00ff,"a, b",007,T
            2,-1.5e3,2.5,FALSE,1999-12-31,2024-01-01 00:00:00.250,1970-01-01,AAH/,"",,no
            """])
        let report = try migrate(project)
        XCTAssertNil(report.failure, "\(String(describing: report.failure))")
        XCTAssertEqual(report.applied.last?.rowCount, 2)
        let rows = try values(project, "SELECT * FROM t ORDER BY id")
        XCTAssertEqual(rows[0], [.integer(1), .real(9.99), .integer(12), .integer(1), .text("2024-02-29"),
                                 .text("2010-12-01T12:35:43Z"), .integer(1_291_206_943), .blob(Data([0, 255])),
                                 .text("a, b"), .text("007"), .integer(1)])
        XCTAssertEqual(rows[1], [.integer(2), .real(-1500), .real(2.5), .integer(0), .text("1999-12-31"),
                                 .text("2024-01-01T00:00:00.250Z"), .integer(0), .blob(Data([0, 1, 255])),
                                 .text(""), .null, .integer(0)])
    }

    func testEveryConversionErrorNamesLineColumnValueAndType() throws {
        let cases: [(String, String, String)] = [
            ("INTEGER", "12x", "'12x' is not an integer"),
            ("INTEGER", "99999999999999999999", "is not an integer"),
            ("INTEGER", "1.5", "is not an integer"),
            ("REAL", "1,5", "is not a real number"),
            ("REAL", "nan", "is not a real number"),
            ("NUMERIC", "ten", "is not a number"),
            ("BOOLEAN", "maybe", "is not a boolean"),
            ("DATE", "2019-02-29", "is not an ISO-8601 date"),
            ("DATE", "2019-02-01T10:00:00Z", "is not an ISO-8601 date"),
            ("DATETIME", "01/12/2010", "is not an ISO-8601 datetime"),
            ("BLOB", "\\xZZ", "is not bytes"),
            ("INTEGER", "\"\"", "'' is not an integer"),
        ]
        for (type, value, message) in cases {
            let project = try project(schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, v \(type));",
                                      seeds: #"<seed file="csv/t.csv" table="t"/>"#,
                                      files: ["csv/t.csv": "id,v\n1,\(value == "\"\"" ? "\"\"" : "\"\(value)\"")\n"])
            let failure = try XCTUnwrap(try migrate(project).failure, type + " " + value)
            XCTAssertEqual(failure.line, 2, value)
            XCTAssertTrue(failure.message.contains("column 'v'"), failure.message)
            XCTAssertTrue(failure.message.contains(message), "\(failure.message) should contain \(message)")
            XCTAssertTrue(failure.description.contains("csv/t.csv:2: column 'v'"), failure.description)
            XCTAssertEqual(try project.database().scalar("SELECT count(*) FROM t", as: Int.self), 0)
        }
    }

    func testNullVersusEmptyAndNullToken() throws {
        let project = try project(schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, s TEXT, n INTEGER);",
                                  seeds: #"<seed file="csv/t.csv" table="t" null="\N"/>"#,
                                  files: ["csv/t.csv": "id,s,n\n1,,\n2,\"\",\\N\n3,\\N,5\n4,\"\\N\",\n"])
        XCTAssertNil(try migrate(project).failure)
        XCTAssertEqual(try values(project, "SELECT s, n FROM t ORDER BY id"),
                       [[.null, .null], [.text(""), .null], [.null, .integer(5)], [.text("\\N"), .null]])
    }

    func testNotNullColumnGetsAClearErrorInsteadOfASilentDefault() throws {
        let project = try project(schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL DEFAULT 'x');",
                                  seeds: #"<seed file="csv/t.csv" table="t" mode="replace"/>"#,
                                  files: ["csv/t.csv": "id,name\n1,a\n2,\n"])
        let failure = try XCTUnwrap(try migrate(project).failure)
        XCTAssertEqual(failure.line, 3)
        XCTAssertTrue(failure.message.contains("column 'name' is NOT NULL"), failure.message)
    }

    func testUnknownHeaderColumnsListTheTablesColumnsAndAbsentColumnsTakeDefaults() throws {
        let bad = try project(schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, kind TEXT DEFAULT 'book');",
                              seeds: #"<seed file="csv/t.csv" table="t"/>"#, files: ["csv/t.csv": "id,nmae,colour\n1,a,red\n"])
        let failure = try XCTUnwrap(try migrate(bad).failure)
        XCTAssertEqual(failure.line, 1)
        XCTAssertTrue(failure.message.contains("nmae, colour"), failure.message)
        XCTAssertTrue(failure.message.contains("(the table has: id, name, kind)"), failure.message)

        let good = try project(schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, kind TEXT DEFAULT 'book');",
                               seeds: #"<seed file="csv/t.csv" table="t"/>"#, files: ["csv/t.csv": "ID,Name\n1,a\n"])
        XCTAssertNil(try migrate(good).failure)
        XCTAssertEqual(try values(good, "SELECT * FROM t"), [[.integer(1), .text("a"), .text("book")]])
    }

    func testFieldCountMismatchAndMissingTable() throws {
        let project = try project(schema: "CREATE TABLE t (a, b);", seeds: #"<seed file="csv/t.csv" table="t"/><seed file="csv/u.csv" table="nope"/>"#,
                                  files: ["csv/t.csv": "a,b\n1,2\n\n3\n", "csv/u.csv": "a\n1\n"])
        let failure = try XCTUnwrap(try migrate(project).failure)
        XCTAssertEqual(failure.line, 4)
        XCTAssertTrue(failure.message.contains("expected 2 fields as in the header, found 1"), failure.message)
        try project.file("csv/t.csv", "a,b\n1,2\n")
        let missing = try XCTUnwrap(try migrate(project).failure)
        XCTAssertTrue(missing.message.contains("table 'nope' does not exist"), missing.message)
    }

    func testInsertModeConflictNamesTheRow() throws {
        let project = try project(schema: "CREATE TABLE t (code TEXT PRIMARY KEY, v INTEGER); INSERT INTO t VALUES ('b', 0);",
                                  seeds: #"<seed file="csv/t.csv" table="t" key="code"/>"#,
                                  files: ["csv/t.csv": "code,v\na,1\nb,2\n"])
        let failure = try XCTUnwrap(try migrate(project).failure)
        XCTAssertEqual(failure.line, 3)
        XCTAssertTrue(failure.message.contains("row rejected (code = 'b')"), failure.message)
        XCTAssertTrue(failure.message.contains("UNIQUE constraint failed"), failure.message)
        XCTAssertEqual(try values(project, "SELECT * FROM t"), [[.text("b"), .integer(0)]], "the table is as before")
    }

    func testConstraintFailuresInsideAndAfterBatchesNameTheirLine() throws {
        // Rows go 64 to a statement; a failing row in the middle of a batch, a duplicate within one batch,
        // and a failure in the last partial batch must each name their own line.
        for (failingRow, total) in [(45, 100), (100, 200), (70, 100), (99, 100), (3, 5)] {
            var csv = "code,v\n"
            for i in 1...total { csv += "c\(i == failingRow ? 1 : i),\(i)\n" }
            let project = try project(schema: "CREATE TABLE t (code TEXT PRIMARY KEY, v INTEGER);",
                                      seeds: #"<seed file="csv/t.csv" table="t"/>"#, files: ["csv/t.csv": csv])
            let failure = try XCTUnwrap(try migrate(project).failure, "row \(failingRow)")
            XCTAssertEqual(failure.line, failingRow + 1, "row \(failingRow) of \(total)")
            XCTAssertTrue(failure.message.contains("UNIQUE constraint failed: t.code"), failure.message)
            XCTAssertEqual(try project.database().scalar("SELECT count(*) FROM t", as: Int.self), 0)
        }
        let project = try project(schema: "CREATE TABLE t (v INTEGER CHECK (v < 60));",
                                  seeds: #"<seed file="csv/t.csv" table="t"/>"#,
                                  files: ["csv/t.csv": "v\n" + (1...70).map { "\($0)\n" }.joined()])
        XCTAssertEqual(try XCTUnwrap(try migrate(project).failure).line, 61)
    }

    func testBatchesSpanningBufferRefillsLoadEveryRow() throws {
        var csv = "id,text\n"
        let long = String(repeating: "x", count: 40_000)
        for i in 1...150 { csv += "\(i),\"\(i % 7 == 0 ? long : "short")\"\n" }
        let project = try project(schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, text TEXT);",
                                  seeds: #"<seed file="csv/t.csv" table="t"/>"#, files: ["csv/t.csv": csv])
        XCTAssertNil(try migrate(project).failure)
        XCTAssertEqual(try values(project, "SELECT count(*), sum(length(text)) FROM t"),
                       [[.integer(150), .integer(Int64(21 * 40_000 + 129 * 5))]])
    }

    func testIgnoreUpsertReplaceAndSyncModes() throws {
        let schema = "CREATE TABLE t (code TEXT PRIMARY KEY, v INTEGER, extra TEXT DEFAULT 'kept'); INSERT INTO t VALUES ('a', 0, 'old'), ('z', 9, 'old');"
        let file = ["csv/t.csv": "code,v\na,1\nb,2\n"]
        let expectations: [(String, [[DatabaseValue]])] = [
            (#"mode="ignore" key="code""#, [[.text("a"), .integer(0), .text("old")], [.text("b"), .integer(2), .text("kept")], [.text("z"), .integer(9), .text("old")]]),
            (#"mode="ignore""#, [[.text("a"), .integer(0), .text("old")], [.text("b"), .integer(2), .text("kept")], [.text("z"), .integer(9), .text("old")]]),
            (#"mode="upsert" key="code""#, [[.text("a"), .integer(1), .text("old")], [.text("b"), .integer(2), .text("kept")], [.text("z"), .integer(9), .text("old")]]),
            (#"mode="replace""#, [[.text("a"), .integer(1), .text("kept")], [.text("b"), .integer(2), .text("kept")], [.text("z"), .integer(9), .text("old")]]),
            (#"mode="sync" key="code""#, [[.text("a"), .integer(1), .text("old")], [.text("b"), .integer(2), .text("kept")]]),
        ]
        for (attributes, expected) in expectations {
            let project = try project(schema: schema, seeds: #"<seed file="csv/t.csv" table="t" \#(attributes)/>"#, files: file)
            let report = try migrate(project)
            XCTAssertNil(report.failure, "\(attributes): \(String(describing: report.failure))")
            XCTAssertEqual(try values(project, "SELECT * FROM t ORDER BY code"), expected, attributes)
        }
    }

    // MARK: replace and sync never lose other tables' rows

    static let authorsAndBooks = """
        CREATE TABLE author (id INTEGER PRIMARY KEY, name TEXT, born INTEGER DEFAULT 1900);
        CREATE TABLE book (id INTEGER PRIMARY KEY, author_id INTEGER REFERENCES author(id) ON DELETE CASCADE, title TEXT);
        INSERT INTO author VALUES (1, 'Le Guin', 1929), (2, 'Jemisin', 1972);
        INSERT INTO book VALUES (10, 1, 'Earthsea'), (11, 2, 'Fifth Season'), (12, 2, 'Obelisk Gate');
        """

    func testReplaceDoesNotDeleteChildRowsOfReplacedParents() throws {
        let project = try project(schema: Self.authorsAndBooks, seeds: #"<seed file="csv/a.csv" table="author" mode="replace"/>"#,
                                  files: ["csv/a.csv": "id,name\n1,Ursula K. Le Guin\n2,N. K. Jemisin\n3,Butler\n"])
        let report = try migrate(project)
        XCTAssertNil(report.failure, "\(String(describing: report.failure))")
        XCTAssertEqual(try values(project, "SELECT count(*) FROM book"), [[.integer(3)]], "no book was cascaded away")
        // The file's row replaces the old one: its columns from the file, the others their defaults.
        XCTAssertEqual(try values(project, "SELECT * FROM author ORDER BY id"),
                       [[.integer(1), .text("Ursula K. Le Guin"), .integer(1900)],
                        [.integer(2), .text("N. K. Jemisin"), .integer(1900)], [.integer(3), .text("Butler"), .integer(1900)]])
    }

    func testReplaceConflictingWithTwoRowsIsAnErrorNotTwoDeletions() throws {
        let project = try project(schema: """
            CREATE TABLE t (id INTEGER PRIMARY KEY, code TEXT UNIQUE, v TEXT);
            INSERT INTO t VALUES (1, 'a', 'one'), (2, 'b', 'two');
            """, seeds: #"<seed file="csv/t.csv" table="t" mode="replace"/>"#, files: ["csv/t.csv": "id,code,v\n1,b,new\n"])
        let failure = try XCTUnwrap(try migrate(project).failure)
        XCTAssertEqual(failure.line, 2)
        XCTAssertTrue(failure.message.contains("UNIQUE constraint failed: t.code"), failure.message)
        XCTAssertEqual(try values(project, "SELECT count(*) FROM t"), [[.integer(2)]])
    }

    /// Constraints with their own conflict clauses: without an explicit one in the statement, REPLACE deletes the
    /// conflicting row (cascading to its books and tag links) and IGNORE drops the file's row without a word.
    static let conflictClauseTables = """
        CREATE TABLE author (id INTEGER PRIMARY KEY, email TEXT UNIQUE ON CONFLICT REPLACE, name TEXT);
        CREATE TABLE book (id INTEGER PRIMARY KEY, author_id INTEGER REFERENCES author(id) ON DELETE CASCADE, title TEXT);
        CREATE TABLE tag (id INTEGER PRIMARY KEY ON CONFLICT REPLACE, name TEXT UNIQUE ON CONFLICT IGNORE,
                          note TEXT NOT NULL ON CONFLICT IGNORE);
        CREATE TABLE book_tag (book_id INTEGER, tag_id INTEGER REFERENCES tag(id) ON DELETE CASCADE);
        INSERT INTO author VALUES (1, 'ann@x', 'Ann'), (3, 'cy@x', 'Cy');
        INSERT INTO book VALUES (10, 1, 'Ann''s book'), (30, 3, 'Cy''s book');
        INSERT INTO tag VALUES (1, 'red', 'r');
        INSERT INTO book_tag VALUES (10, 1);
        """

    func testTableLevelConflictClausesNeverDeleteOrSkipRowsInAnyMode() throws {
        let before: [String: [[DatabaseValue]]] = [
            "author": [[.integer(1), .text("ann@x"), .text("Ann")], [.integer(3), .text("cy@x"), .text("Cy")]],
            "tag": [[.integer(1), .text("red"), .text("r")]],
        ]
        // (table, attributes, file, the error expected (nil: loads), the table's rows after a load)
        let cases: [(String, String, String, String?, [[DatabaseValue]]?)] = [
            // insert: a conflict on any constraint is an error naming the row.
            ("author", "", "id,email,name\n2,ann@x,Ann Two\n", "UNIQUE constraint failed: author.email", nil),
            ("tag", "", "id,name,note\n1,blue,b\n", "UNIQUE constraint failed: tag.id", nil),
            ("tag", "", "id,name,note\n2,red,b\n", "UNIQUE constraint failed: tag.name", nil),
            ("tag", "", "id,name\n2,blue\n", "NOT NULL constraint failed: tag.note", nil),
            // ignore skips conflicts on its key only (without a key, on any uniqueness constraint).
            ("author", #"mode="ignore" key="id""#, "id,email,name\n2,ann@x,Ann Two\n", "UNIQUE constraint failed: author.email", nil),
            ("author", #"mode="ignore" key="id""#, "id,email,name\n1,new@x,Ann One\n", nil, before["author"]),
            ("author", #"mode="ignore""#, "id,email,name\n2,ann@x,Ann Two\n", nil, before["author"]),
            ("tag", #"mode="ignore" key="name""#, "id,name,note\n1,blue,b\n", "UNIQUE constraint failed: tag.id", nil),
            ("tag", #"mode="ignore" key="name""#, "id,name,note\n5,red,b\n", nil, before["tag"]),
            ("tag", #"mode="ignore" key="name""#, "id,name\n5,blue\n", "NOT NULL constraint failed: tag.note", nil),
            // upsert, replace and sync update the keyed row; a conflict on another constraint is an error.
            ("author", #"mode="upsert" key="id""#, "id,email,name\n1,new@x,Ann New\n", nil,
             [[.integer(1), .text("new@x"), .text("Ann New")], [.integer(3), .text("cy@x"), .text("Cy")]]),
            ("author", #"mode="upsert" key="id""#, "id,email,name\n2,ann@x,Ann Two\n", "UNIQUE constraint failed: author.email", nil),
            ("author", #"mode="upsert" key="id""#, "id,email,name\n3,ann@x,Cy\n", "UNIQUE constraint failed: author.email", nil),
            ("author", #"mode="upsert" key="email""#, "id,email,name\n1,ann@x,Ann New\n", nil,
             [[.integer(1), .text("ann@x"), .text("Ann New")], [.integer(3), .text("cy@x"), .text("Cy")]]),
            ("tag", #"mode="upsert" key="id""#, "id,name,note\n1,crimson,c\n", nil, [[.integer(1), .text("crimson"), .text("c")]]),
            ("tag", #"mode="upsert" key="name""#, "id,name,note\n1,blue,b\n", "UNIQUE constraint failed: tag.id", nil),
            ("author", #"mode="replace" key="id""#, "id,email,name\n2,ann@x,Ann Two\n", "UNIQUE constraint failed: author.email", nil),
            ("author", #"mode="replace""#, "id,email,name\n1,new@x,Ann New\n", nil,
             [[.integer(1), .text("new@x"), .text("Ann New")], [.integer(3), .text("cy@x"), .text("Cy")]]),
            ("tag", #"mode="replace""#, "id,name,note\n1,crimson,c\n", nil, [[.integer(1), .text("crimson"), .text("c")]]),
            ("author", #"mode="sync" key="id""#, "id,email,name\n1,ann@x,Ann\n3,cy@x,Cy\n4,ann@x,Dup\n",
             "UNIQUE constraint failed: author.email", nil),
            ("tag", #"mode="sync" key="name""#, "id,name,note\n1,blue,b\n", "UNIQUE constraint failed: tag.id", nil),
        ]
        for (table, attributes, csv, error, after) in cases {
            let label = "\(table) \(attributes) \(csv.debugDescription)"
            let project = try project(schema: Self.conflictClauseTables,
                                      seeds: #"<seed file="csv/s.csv" table="\#(table)" \#(attributes)/>"#, files: ["csv/s.csv": csv])
            let report = try migrate(project)
            if let error {
                guard let failure = report.failure else {
                    XCTFail("\(label): loaded without an error")
                    continue
                }
                XCTAssertTrue(failure.message.contains(error), "\(label): \(failure.message)")
                XCTAssertEqual(failure.line, csv.split(separator: "\n").count, label)
                XCTAssertTrue(failure.message.contains("row rejected"), "\(label): \(failure.message)")
            } else {
                XCTAssertNil(report.failure, "\(label): \(String(describing: report.failure))")
            }
            XCTAssertEqual(try values(project, "SELECT * FROM \(table) ORDER BY id"), after ?? before[table], label)
            XCTAssertEqual(try values(project, "SELECT id FROM book ORDER BY id"), [[.integer(10)], [.integer(30)]], label)
            XCTAssertEqual(try values(project, "SELECT * FROM book_tag"), [[.integer(10), .integer(1)]], label)
        }
    }

    func testTriggersOfTablesWithoutConflictClausesKeepTheirOwnConflictHandling() throws {
        // The seed's statement names no conflict resolution for a table that declares none, so a trigger's own
        // INSERT OR IGNORE still ignores (an OR clause in the seed's statement would override it).
        let project = try project(schema: """
            CREATE TABLE item (id INTEGER PRIMARY KEY, tag TEXT);
            CREATE TABLE tag (name TEXT PRIMARY KEY);
            CREATE TRIGGER item_tag AFTER INSERT ON item BEGIN INSERT OR IGNORE INTO tag VALUES (new.tag); END;
            """, seeds: #"<seed file="csv/i.csv" table="item"/>"#, files: ["csv/i.csv": "id,tag\n1,red\n2,red\n3,blue\n"])
        XCTAssertNil(try migrate(project).failure)
        XCTAssertEqual(try values(project, "SELECT name FROM tag ORDER BY name"), [[.text("blue")], [.text("red")]])
    }

    func testSyncRefusesToDeleteRowsOtherTablesReferenceNamingThem() throws {
        let project = try project(schema: Self.authorsAndBooks, seeds: #"<seed file="csv/a.csv" table="author" mode="sync" key="id"/>"#,
                                  files: ["csv/a.csv": "id,name\n1,Le Guin\n"])
        let failure = try XCTUnwrap(try migrate(project).failure)
        XCTAssertTrue(failure.message.contains("sync would delete rows of 'author' that other rows reference"), failure.message)
        XCTAssertTrue(failure.message.contains("id = 2 (2 rows in book.author_id)"), failure.message)
        XCTAssertEqual(try values(project, "SELECT count(*) FROM book"), [[.integer(3)]])
        XCTAssertEqual(try values(project, "SELECT name FROM author ORDER BY id"), [[.text("Le Guin")], [.text("Jemisin")]])

        // Unreferenced rows are deleted as before, and a row referenced only by rows being deleted too.
        let tree = try self.project(schema: """
            CREATE TABLE c (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES c(id) ON DELETE CASCADE);
            INSERT INTO c VALUES (1, NULL), (2, 1), (3, 2), (4, NULL);
            """, seeds: #"<seed file="csv/c.csv" table="c" mode="sync" key="id"/>"#, files: ["csv/c.csv": "id,parent\n4,\n"])
        XCTAssertNil(try migrate(tree).failure)
        XCTAssertEqual(try values(tree, "SELECT id FROM c"), [[.integer(4)]])
    }

    func testUpsertAndSyncRefuseANullKeyNamingLineAndColumn() throws {
        for mode in [#"mode="sync" key="code""#, #"mode="upsert" key="code""#] {
            let project = try project(schema: "CREATE TABLE t (code TEXT UNIQUE, v INTEGER); INSERT INTO t VALUES ('stale', 0);",
                                      seeds: #"<seed file="csv/t.csv" table="t" \#(mode)/>"#, files: ["csv/t.csv": "code,v\na,1\n,2\n"])
            let failure = try XCTUnwrap(try migrate(project).failure, mode)
            XCTAssertEqual(failure.line, 3, mode)
            XCTAssertTrue(failure.message.contains("key column 'code' is NULL"), failure.message)
            XCTAssertEqual(try values(project, "SELECT * FROM t"), [[.text("stale"), .integer(0)]], mode)
        }
    }

    func testSyncDeletesEveryRowMissingFromTheFileUnderTheKeysCollation() throws {
        let project = try project(schema: """
            CREATE TABLE t (code TEXT COLLATE NOCASE PRIMARY KEY, v INTEGER);
            INSERT INTO t VALUES ('a', 0), ('gone', 0), (NULL, 0);
            """, seeds: #"<seed file="csv/t.csv" table="t" mode="sync" key="code"/>"#, files: ["csv/t.csv": "code,v\nA,1\n"])
        XCTAssertNil(try migrate(project).failure)
        XCTAssertEqual(try values(project, "SELECT * FROM t"), [[.text("a"), .integer(1)]])
    }

    func testHeaderNamesMatchColumnsFoldingASCIIOnlyAsSQLiteDoes() throws {
        let project = try project(schema: #"CREATE TABLE t ("Ä" TEXT, "ID" INTEGER);"#,
                                  seeds: #"<seed file="csv/t.csv" table="t"/>"#, files: ["csv/t.csv": "ä,id\nx,1\n"])
        let failure = try XCTUnwrap(try migrate(project).failure)
        XCTAssertTrue(failure.message.contains("not in table 't': ä (the table has: Ä, ID)"), failure.message)
        try project.file("csv/t.csv", "Ä,id\nx,1\n")
        XCTAssertNil(try migrate(project).failure)
        XCTAssertEqual(try values(project, #"SELECT "Ä", "ID" FROM t"#), [[.text("x"), .integer(1)]])
    }

    func testKeyAndColumnElementsMatchFoldingASCIIOnly() throws {
        let key = try project(schema: #"CREATE TABLE t ("Ä" TEXT PRIMARY KEY, v INTEGER);"#,
                              seeds: #"<seed file="csv/t.csv" table="t" mode="upsert" key="ä"/>"#, files: ["csv/t.csv": "Ä,v\nx,1\n"])
        XCTAssertTrue(try XCTUnwrap(try migrate(key).failure).message.contains("key column 'ä' is not in the header"))
        let column = try project(schema: #"CREATE TABLE t ("Ä" TEXT, v INTEGER);"#,
                                 seeds: #"<seed file="csv/t.csv" table="t"><column name="ä" type="integer"/></seed>"#,
                                 files: ["csv/t.csv": "Ä,v\nx,1\n"])
        XCTAssertTrue(try XCTUnwrap(try migrate(column).failure).message.contains(#"<column name="ä"> is not in the header"#))
    }

    func testUnixSecondsAtTheEdgesOfInt64AreAConversionErrorNotATrap() throws {
        for value in ["-9223372036854775808", "9223372036854775807", "-9223372036854775807", "-9223372036768375808"] {
            for type in ["date", "datetime"] {
                let project = try project(schema: "CREATE TABLE t (d TEXT);",
                                          seeds: #"<seed file="csv/t.csv" table="t"><column name="d" type="\#(type)" format="unix"/></seed>"#,
                                          files: ["csv/t.csv": "d\n\(value)\n"])
                let failure = try XCTUnwrap(try migrate(project).failure, value)
                XCTAssertEqual(failure.line, 2)
                XCTAssertTrue(failure.message.contains("column 'd': '\(value)' is not unix seconds"), failure.message)
            }
        }
    }

    func testSQLiteRollingBackTheTransactionStopsTheSeed() throws {
        // SQLite rolls the whole transaction back when a write inside it is interrupted (as after SQLITE_FULL or
        // SQLITE_IOERR); the rows replayed after that must not be committed one by one in autocommit mode.
        let project = try project(schema: """
            CREATE TABLE t (v INTEGER);
            CREATE TRIGGER stop AFTER INSERT ON t WHEN NEW.v = 30 BEGIN SELECT interrupt_once(); END;
            """, seeds: #"<seed file="csv/t.csv" table="t"/>"#, files: ["csv/t.csv": "v\n" + (1...100).map { "\($0)\n" }.joined()])
        // Without the function the seed fails; the migration stays applied.
        XCTAssertTrue(try XCTUnwrap(try migrate(project).failure).message.contains("no such function"))
        let database = try project.database()
        let handle = database.handle
        var interrupted = false
        try database.createFunction("interrupt_once", argumentCount: 0) { _ in
            if !interrupted { interrupted = true; sqlite3_interrupt(handle) }
            return nil as Int?
        }
        let report = try Migrator(manifest: try project.manifest(), database: database).migrate()
        let failure = try XCTUnwrap(report.failure)
        XCTAssertTrue(failure.message.contains("SQLite rolled the transaction back"), failure.message)
        XCTAssertEqual(try database.scalar("SELECT count(*) FROM t", as: Int.self), 0)
    }

    func testSyncWithCompositeKey() throws {
        let project = try project(schema: """
            CREATE TABLE t (a INTEGER, b TEXT, v, PRIMARY KEY (a, b));
            INSERT INTO t VALUES (1, 'x', 'old'), (1, 'y', 'old'), (2, 'x', 'old');
            """, seeds: #"<seed file="csv/t.csv" table="t" mode="sync" key="a, b"/>"#, files: ["csv/t.csv": "a,b,v\n1,x,new\n2,z,new\n"])
        XCTAssertNil(try migrate(project).failure)
        XCTAssertEqual(try values(project, "SELECT * FROM t ORDER BY a, b"),
                       [[.integer(1), .text("x"), .text("new")], [.integer(2), .text("z"), .text("new")]])
    }

    func testUpsertKeyWithoutUniqueIndexIsAClearError() throws {
        let project = try project(schema: "CREATE TABLE t (code TEXT, v INTEGER);",
                                  seeds: #"<seed file="csv/t.csv" table="t" mode="upsert" key="code"/>"#, files: ["csv/t.csv": "code,v\na,1\n"])
        let failure = try XCTUnwrap(try migrate(project).failure)
        XCTAssertTrue(failure.message.contains("must be the primary key or have a UNIQUE index"), failure.message)
    }

    func testBadValueOnRow50000LeavesTheTableUntouched() throws {
        var csv = "id,v\n"
        for i in 1...60_000 { csv += i == 50_000 ? "\(i),oops\n" : "\(i),\(i * 2)\n" }
        let project = try project(schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER); INSERT INTO t VALUES (0, 0);",
                                  seeds: #"<seed file="csv/t.csv" table="t"/>"#, files: ["csv/t.csv": csv])
        let failure = try XCTUnwrap(try migrate(project).failure)
        XCTAssertEqual(failure.line, 50_001)
        XCTAssertTrue(failure.message.contains("'oops' is not an integer"), failure.message)
        XCTAssertEqual(try values(project, "SELECT * FROM t"), [[.integer(0), .integer(0)]])
        XCTAssertEqual(try project.database().scalar("SELECT count(*) FROM strata_history WHERE kind = 'seed'", as: Int.self), 0)
    }

    func testContextsSelectSeeds() throws {
        let project = try project(schema: "CREATE TABLE t (v TEXT);", seeds: """
            <seed file="csv/always.csv" table="t"/>
            <seed file="csv/dev.csv" table="t" context="dev"/>
            <seed file="csv/test.csv" table="t" context="test, ci"/>
            """, files: ["csv/always.csv": "v\nalways\n", "csv/dev.csv": "v\ndev\n", "csv/test.csv": "v\ntest\n"])
        XCTAssertEqual(try migrate(project).applied.map(\.id), ["1_schema.sql", "always.csv"])
        XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .applied, .skipped, .skipped])
        XCTAssertEqual(try migrate(project, MigrationOptions(contexts: ["ci", "dev"])).applied.map(\.id), ["dev.csv", "test.csv"])
        XCTAssertEqual(try values(project, "SELECT v FROM t ORDER BY rowid"), [[.text("always")], [.text("dev")], [.text("test")]])
    }

    func testChangedSeedIsDriftUnlessReapply() throws {
        let project = try project(schema: "CREATE TABLE t (code TEXT PRIMARY KEY, v INTEGER);", seeds: """
            <seed file="csv/fixed.csv" table="t"/>
            <seed file="csv/ref.csv" table="t" mode="sync" key="code" onChange="reapply"/>
            """, files: ["csv/fixed.csv": "code,v\nf,1\n", "csv/ref.csv": "code,v\na,1\nb,2\n"])
        XCTAssertEqual(try migrate(project).applied.count, 3)
        XCTAssertEqual(try migrate(project).applied.count, 0, "applied seeds are skipped")

        try project.file("csv/ref.csv", "code,v\na,10\nf,1\n")
        XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .applied, .changed])
        let report = try migrate(project)
        XCTAssertEqual(report.applied.map(\.id), ["ref.csv"])
        XCTAssertEqual(report.applied.first?.reason, .reapply)
        XCTAssertEqual(try values(project, "SELECT * FROM t ORDER BY code"), [[.text("a"), .integer(10)], [.text("f"), .integer(1)]])

        try project.file("csv/fixed.csv", "code,v\nf,2\n")
        let error = assertThrows(MigrationError.self) { try migrate(project) }
        XCTAssertTrue(error?.description.contains("fixed.csv has changed") ?? false, "\(String(describing: error))")
    }

    func testSeedAfterAMigrationRunsRightAfterIt() throws {
        let project = try Project(self, manifest: """
            <manifest version="1"><database path="db.sqlite"/><migrations directory="sql"/>
              <seeds><seed file="csv/t.csv" table="t" after="1_a.sql"/></seeds></manifest>
            """, files: ["sql/1_a.sql": "CREATE TABLE t (v);", "sql/2_b.sql": "CREATE TABLE copy AS SELECT * FROM t;",
                         "csv/t.csv": "v\nx\n"])
        XCTAssertEqual(try migrate(project).applied.map(\.id), ["1_a.sql", "t.csv", "2_b.sql"])
        XCTAssertEqual(try values(project, "SELECT * FROM copy"), [[.text("x")]])
    }

    func testSeedOnlyRunRefusesWhileMigrationsArePending() throws {
        let project = try project(schema: "CREATE TABLE t (v);", seeds: #"<seed file="csv/t.csv" table="t"/>"#, files: ["csv/t.csv": "v\nx\n"])
        let error = assertThrows(MigrationError.self) { try migrate(project, MigrationOptions(includeMigrations: false)) }
        XCTAssertTrue(error?.description.contains("run 'strata migrate' first") ?? false)
        _ = try migrate(project, MigrationOptions(includeSeeds: false))
        XCTAssertEqual(try migrate(project, MigrationOptions(includeMigrations: false)).applied.map(\.id), ["t.csv"])
    }

    func testLargeFileStreamsInConstantMemory() throws {
        let dir = try makeTemporaryDirectory(self)
        let url = dir.appendingPathComponent("big.csv")
        XCTAssertTrue(FileManager.default.createFile(atPath: url.path, contents: nil))
        let handle = try FileHandle(forWritingTo: url)
        try handle.write(contentsOf: Data("id,text\n".utf8))
        var chunk = ""
        for i in 0..<400_000 {
            chunk += "\(i),\"some text, with a comma and \"\"quotes\"\" padding padding\"\n"
            if i % 50_000 == 49_999 { try handle.write(contentsOf: Data(chunk.utf8)); chunk = "" }
        }
        try handle.close()
        let size = try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int ?? 0
        XCTAssertGreaterThan(size, 20_000_000)
        let reader = try CSVReader(path: url.path)
        var records = 0
        while try reader.readRecord() { records += 1 }
        XCTAssertEqual(records, 400_001)
        XCTAssertEqual(reader.bufferCapacity, 2 * CSVReader.chunkSize, "the buffer never grew with the file")
    }

    func testPlanAndStatusShowSeedRowCounts() throws {
        let project = try project(schema: "CREATE TABLE t (v);", seeds: #"<seed file="csv/t.csv" table="t"/>"#,
                                  files: ["csv/t.csv": "v\n\"a\nb\"\nc\n"])
        XCTAssertEqual(try project.migrator().plan().steps.last?.rowCount, 2)
        _ = try migrate(project)
        XCTAssertEqual(try project.migrator().status().last?.record?.rowCount, 2)
        let result = try project.strata(["status"])
        XCTAssertTrue(result.stdout.contains("2 rows"), result.stdout)
    }

    func testIgnoreModeCountsTheRowsItInsertedNotTheRowsItSkipped() throws {
        let rows = (1...100).map { "\($0),name \($0)" }.joined(separator: "\n")
        let project = try Project(self, manifest: """
            <manifest version="1"><database path="db.sqlite"/><migrations directory="sql"/>
              <seeds><seed file="csv/t.csv" table="t" mode="ignore" key="id" onChange="reapply"/></seeds></manifest>
            """, files: ["sql/1_t.sql": "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT);",
                         "csv/t.csv": "id,name\n1,a\n2,b\n"])
        XCTAssertEqual(try project.migrator().migrate().applied.last?.rowCount, 2)
        // 100 rows, two of them already there: a full batch of 64 and a partial one, both counted by what went in.
        try project.file("csv/t.csv", "id,name\n" + rows + "\n")
        let report = try project.migrator().migrate()
        XCTAssertEqual(report.applied.last?.rowCount, 98)
        XCTAssertEqual(try project.database().scalar("SELECT row_count FROM strata_history WHERE kind = 'seed'", as: Int.self), 98)
        XCTAssertEqual(try project.database().scalar("SELECT count(*) FROM t", as: Int.self), 100)
    }
}
