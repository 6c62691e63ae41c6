import Foundation
import XCTest
import Strata
@testable import StrataCore
@testable import StrataSQLite

/// Seeds on every backend: the modes, conversions declared by the manifest or the table, errors naming the file,
/// line, column and value, a failed seed leaving its table as before, row counts, checksums and reapply. Seeding as
/// only SQLite does it (type affinity, typeless columns, conflict clauses, identifier folding) is in
/// `SQLiteSeedingTests`.
final class SeedingTests: XCTestCase {
    /// A project on `backend` whose manifest is its `<database>` element followed by `body`.
    func project(_ backend: TestBackend, manifestBody body: String, files: [String: String]) throws -> Project {
        let project = try Project(self, backend: backend, files: files)
        try project.file("manifest.xml", #"<manifest version="1">\#(backend.databaseElement(project.root))\#(body)</manifest>"#)
        return project
    }

    /// A project on `backend` whose single migration creates `schema` and whose manifest lists `seeds` (XML elements).
    func project(_ backend: TestBackend, schema: String, seeds: String, files: [String: String]) throws -> Project {
        var all = files
        all["sql/1_schema.sql"] = schema
        return try project(backend, manifestBody: #"<migrations directory="sql"/><seeds>\#(seeds)</seeds>"#, files: all)
    }

    func migrate(_ project: Project, _ options: MigrationOptions = MigrationOptions()) throws -> MigrationReport {
        try project.migrator().migrate(options)
    }

    func values(_ project: Project, _ sql: String) throws -> [[DatabaseValue]] {
        try project.connection().rows(sql, .none).map(\.values)
    }

    func count(_ project: Project, _ sql: String) throws -> Int? {
        try project.connection().scalar(sql, .none, as: Int.self)
    }

    /// Conversions every backend makes alike: declared integer, real, text and blob columns, and types the manifest
    /// declares (`<column type=…>`: dates and datetimes stored as ISO-8601 text or unix seconds, booleans as 1/0).
    /// How SQLite classifies other declared types is `SQLiteSeedingTests.testTypedConversionsFromDeclaredTypesAndColumnOverrides`.
    func testTypedConversionsOfPortableColumnTypesAndColumnOverrides() throws {
        try forEachBackend(needing: .seeds) { backend in
            let project = try project(backend, schema: """
                CREATE TABLE t (id INTEGER PRIMARY KEY, price \(backend.seedColumnType(.real)),
                                day TEXT, at TEXT, stamp INTEGER, raw \(backend.seedColumnType(.blob)), note TEXT, seen INTEGER);
                """, seeds: """
                <seed file="csv/t.csv" table="t">
                  <column name="day" type="date"/>
                  <column name="at" type="datetime"/>
                  <column name="stamp" type="datetime" storage="unix"/>
                  <column name="seen" type="boolean"/>
                </seed>
                """, files: ["csv/t.csv": """
                id,price,day,at,stamp,raw,note,seen
                1,9.99,2024-02-29,2010-12-01T21:35:43+0900,2010-12-01T21:35:43+0900,\\x00ff,"a, b",T
                2,-1.5e3,1999-12-31,2024-01-01 00:00:00.250,1970-01-01,AAH/,"",no
                """])
            let report = try migrate(project)
            XCTAssertNil(report.failure, "\(String(describing: report.failure))")
            XCTAssertEqual(report.applied.last?.rowCount, 2)
            let rows = try values(project, "SELECT * FROM t ORDER BY id")
            XCTAssertEqual(rows.count, 2)
            guard rows.count == 2 else { return }
            XCTAssertEqual(rows[0], [.integer(1), .real(9.99), .text("2024-02-29"), .text("2010-12-01T12:35:43Z"),
                                     .integer(1_291_206_943), .blob(Data([0, 255])), .text("a, b"), .integer(1)])
            XCTAssertEqual(rows[1], [.integer(2), .real(-1500), .text("1999-12-31"), .text("2024-01-01T00:00:00.250Z"),
                                     .integer(0), .blob(Data([0, 1, 255])), .text(""), .integer(0)])
        }
    }

    func testEveryConversionErrorNamesLineColumnValueAndType() throws {
        try forEachBackend(needing: .seeds) { backend in
            let cases: [(TestBackend.SeedColumnType, String, String)] = [
                (.integer, "12x", "'12x' is not an integer"),
                (.integer, "99999999999999999999", "is not an integer"),
                (.integer, "1.5", "is not an integer"),
                (.real, "1,5", "is not a real number"),
                (.real, "nan", "is not a real number"),
                (.numeric, "ten", "is not a number"),
                (.boolean, "maybe", "is not a boolean"),
                (.date, "2019-02-29", "is not an ISO-8601 date"),
                (.date, "2019-02-01T10:00:00Z", "is not an ISO-8601 date"),
                (.datetime, "01/12/2010", "is not an ISO-8601 datetime"),
                (.blob, "\\xZZ", "is not bytes"),
                (.integer, "\"\"", "'' is not an integer"),
            ]
            for (kind, value, message) in cases {
                let type = backend.seedColumnType(kind)
                let project = try project(backend, schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, v \(type));",
                                          seeds: #"<seed file="csv/t.csv" table="t"/>"#,
                                          files: ["csv/t.csv": "id,v\n1,\(value == "\"\"" ? "\"\"" : "\"\(value)\"")\n"])
                let failure = try XCTUnwrap(try migrate(project).failure, type + " " + value)
                XCTAssertEqual(failure.line, 2, value)
                XCTAssertTrue(failure.message.contains("column 'v'"), failure.message)
                XCTAssertTrue(failure.message.contains(message), "\(failure.message) should contain \(message)")
                XCTAssertTrue(failure.description.contains("csv/t.csv:2: column 'v'"), failure.description)
                XCTAssertEqual(try count(project, "SELECT count(*) FROM t"), 0)
            }
        }
    }

    func testNullVersusEmptyAndNullToken() throws {
        try forEachBackend(needing: .seeds) { backend in
            let project = try project(backend, schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, s TEXT, n INTEGER);",
                                      seeds: #"<seed file="csv/t.csv" table="t" null="\N"/>"#,
                                      files: ["csv/t.csv": "id,s,n\n1,,\n2,\"\",\\N\n3,\\N,5\n4,\"\\N\",\n"])
            XCTAssertNil(try migrate(project).failure)
            XCTAssertEqual(try values(project, "SELECT s, n FROM t ORDER BY id"),
                           [[.null, .null], [.text(""), .null], [.null, .integer(5)], [.text("\\N"), .null]])
        }
    }

    func testNotNullColumnGetsAClearErrorInsteadOfASilentDefault() throws {
        try forEachBackend(needing: .seeds, .replaceMode) { backend in
            let project = try project(backend, schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL DEFAULT 'x');",
                                      seeds: #"<seed file="csv/t.csv" table="t" mode="replace"/>"#,
                                      files: ["csv/t.csv": "id,name\n1,a\n2,\n"])
            let failure = try XCTUnwrap(try migrate(project).failure)
            XCTAssertEqual(failure.line, 3)
            XCTAssertTrue(failure.message.contains("column 'name' is NOT NULL"), failure.message)
        }
    }

    func testUnknownHeaderColumnsListTheTablesColumnsAndAbsentColumnsTakeDefaults() throws {
        try forEachBackend(needing: .seeds) { backend in
            let bad = try project(backend, schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, kind TEXT DEFAULT 'book');",
                                  seeds: #"<seed file="csv/t.csv" table="t"/>"#, files: ["csv/t.csv": "id,nmae,colour\n1,a,red\n"])
            let failure = try XCTUnwrap(try migrate(bad).failure)
            XCTAssertEqual(failure.line, 1)
            XCTAssertTrue(failure.message.contains("nmae, colour"), failure.message)
            XCTAssertTrue(failure.message.contains("(the table has: id, name, kind)"), failure.message)

            let good = try project(backend, schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, kind TEXT DEFAULT 'book');",
                                   seeds: #"<seed file="csv/t.csv" table="t"/>"#, files: ["csv/t.csv": "ID,Name\n1,a\n"])
            XCTAssertNil(try migrate(good).failure)
            XCTAssertEqual(try values(good, "SELECT * FROM t"), [[.integer(1), .text("a"), .text("book")]])
        }
    }

    func testFieldCountMismatchAndMissingTable() throws {
        try forEachBackend(needing: .seeds) { backend in
            let project = try project(backend, schema: "CREATE TABLE t (a TEXT, b TEXT);",
                                      seeds: #"<seed file="csv/t.csv" table="t"/><seed file="csv/u.csv" table="nope"/>"#,
                                      files: ["csv/t.csv": "a,b\n1,2\n\n3\n", "csv/u.csv": "a\n1\n"])
            let failure = try XCTUnwrap(try migrate(project).failure)
            XCTAssertEqual(failure.line, 4)
            XCTAssertTrue(failure.message.contains("expected 2 fields as in the header, found 1"), failure.message)
            try project.file("csv/t.csv", "a,b\n1,2\n")
            let missing = try XCTUnwrap(try migrate(project).failure)
            XCTAssertTrue(missing.message.contains("table 'nope' does not exist"), missing.message)
        }
    }

    func testInsertModeConflictNamesTheRow() throws {
        try forEachBackend(needing: .seeds) { backend in
            let project = try project(backend, schema: "CREATE TABLE t (code TEXT PRIMARY KEY, v INTEGER); INSERT INTO t VALUES ('b', 0);",
                                      seeds: #"<seed file="csv/t.csv" table="t" key="code"/>"#,
                                      files: ["csv/t.csv": "code,v\na,1\nb,2\n"])
            let failure = try XCTUnwrap(try migrate(project).failure)
            XCTAssertEqual(failure.line, 3)
            XCTAssertTrue(failure.message.contains("row rejected (code = 'b')"), failure.message)
            XCTAssertTrue(failure.message.contains(backend.seedUniqueViolation("t", "code")), failure.message)
            XCTAssertEqual(try values(project, "SELECT * FROM t"), [[.text("b"), .integer(0)]], "the table is as before")
        }
    }

    func testConstraintFailuresInsideAndAfterBatchesNameTheirLine() throws {
        try forEachBackend(needing: .seeds) { backend in
            // Rows go 64 to a statement; a failing row in the middle of a batch, a duplicate within one batch,
            // and a failure in the last partial batch must each name their own line.
            for (failingRow, total) in [(45, 100), (100, 200), (70, 100), (99, 100), (3, 5)] {
                var csv = "code,v\n"
                for i in 1...total { csv += "c\(i == failingRow ? 1 : i),\(i)\n" }
                let project = try project(backend, schema: "CREATE TABLE t (code TEXT PRIMARY KEY, v INTEGER);",
                                          seeds: #"<seed file="csv/t.csv" table="t"/>"#, files: ["csv/t.csv": csv])
                let failure = try XCTUnwrap(try migrate(project).failure, "row \(failingRow)")
                XCTAssertEqual(failure.line, failingRow + 1, "row \(failingRow) of \(total)")
                XCTAssertTrue(failure.message.contains(backend.seedUniqueViolation("t", "code")), failure.message)
                XCTAssertEqual(try count(project, "SELECT count(*) FROM t"), 0)
            }
            let project = try project(backend, schema: "CREATE TABLE t (v INTEGER CHECK (v < 60));",
                                      seeds: #"<seed file="csv/t.csv" table="t"/>"#,
                                      files: ["csv/t.csv": "v\n" + (1...70).map { "\($0)\n" }.joined()])
            XCTAssertEqual(try XCTUnwrap(try migrate(project).failure).line, 61)
        }
    }

    func testBatchesSpanningBufferRefillsLoadEveryRow() throws {
        try forEachBackend(needing: .seeds) { backend in
            var csv = "id,body\n"
            let long = String(repeating: "x", count: 40_000)
            for i in 1...150 { csv += "\(i),\"\(i % 7 == 0 ? long : "short")\"\n" }
            let project = try project(backend, schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT);",
                                      seeds: #"<seed file="csv/t.csv" table="t"/>"#, files: ["csv/t.csv": csv])
            XCTAssertNil(try migrate(project).failure)
            XCTAssertEqual(try values(project, "SELECT count(*), sum(length(body)) FROM t"),
                           [[.integer(150), .integer(Int64(21 * 40_000 + 129 * 5))]])
        }
    }

    func testIgnoreUpsertReplaceAndSyncModes() throws {
        try forEachBackend(needing: .seeds, .replaceMode) { backend in
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
                let project = try project(backend, schema: schema, seeds: #"<seed file="csv/t.csv" table="t" \#(attributes)/>"#, files: file)
                let report = try migrate(project)
                XCTAssertNil(report.failure, "\(attributes): \(String(describing: report.failure))")
                XCTAssertEqual(try values(project, "SELECT * FROM t ORDER BY code"), expected, attributes)
            }
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
        try forEachBackend(needing: .seeds, .replaceMode) { backend in
            let project = try project(backend, schema: Self.authorsAndBooks, seeds: #"<seed file="csv/a.csv" table="author" mode="replace"/>"#,
                                      files: ["csv/a.csv": "id,name\n1,Ursula K. Le Guin\n2,N. K. Jemisin\n3,Butler\n"])
            let report = try migrate(project)
            XCTAssertNil(report.failure, "\(String(describing: report.failure))")
            XCTAssertEqual(try values(project, "SELECT count(*) FROM book"), [[.integer(3)]], "no book was cascaded away")
            // The file's row replaces the old one: its columns from the file, the others their defaults.
            XCTAssertEqual(try values(project, "SELECT * FROM author ORDER BY id"),
                           [[.integer(1), .text("Ursula K. Le Guin"), .integer(1900)],
                            [.integer(2), .text("N. K. Jemisin"), .integer(1900)], [.integer(3), .text("Butler"), .integer(1900)]])
        }
    }

    func testReplaceConflictingWithTwoRowsIsAnErrorNotTwoDeletions() throws {
        try forEachBackend(needing: .seeds, .replaceMode) { backend in
            let project = try project(backend, schema: """
                CREATE TABLE t (id INTEGER PRIMARY KEY, code TEXT UNIQUE, v TEXT);
                INSERT INTO t VALUES (1, 'a', 'one'), (2, 'b', 'two');
                """, seeds: #"<seed file="csv/t.csv" table="t" mode="replace"/>"#, files: ["csv/t.csv": "id,code,v\n1,b,new\n"])
            let failure = try XCTUnwrap(try migrate(project).failure)
            XCTAssertEqual(failure.line, 2)
            XCTAssertTrue(failure.message.contains(backend.seedUniqueViolation("t", "code")), failure.message)
            XCTAssertEqual(try values(project, "SELECT count(*) FROM t"), [[.integer(2)]])
        }
    }

    func testSyncRefusesToDeleteRowsOtherTablesReferenceNamingThem() throws {
        try forEachBackend(needing: .seeds) { backend in
            let project = try project(backend, schema: Self.authorsAndBooks, seeds: #"<seed file="csv/a.csv" table="author" mode="sync" key="id"/>"#,
                                      files: ["csv/a.csv": "id,name\n1,Le Guin\n"])
            let failure = try XCTUnwrap(try migrate(project).failure)
            XCTAssertTrue(failure.message.contains("sync would delete rows of 'author' that other rows reference"), failure.message)
            XCTAssertTrue(failure.message.contains("id = 2 (2 rows in book.author_id)"), failure.message)
            XCTAssertEqual(try values(project, "SELECT count(*) FROM book"), [[.integer(3)]])
            XCTAssertEqual(try values(project, "SELECT name FROM author ORDER BY id"), [[.text("Le Guin")], [.text("Jemisin")]])

            // Unreferenced rows are deleted as before, and a row referenced only by rows being deleted too.
            let tree = try self.project(backend, schema: """
                CREATE TABLE c (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES c(id) ON DELETE CASCADE);
                INSERT INTO c VALUES (1, NULL), (2, 1), (3, 2), (4, NULL);
                """, seeds: #"<seed file="csv/c.csv" table="c" mode="sync" key="id"/>"#, files: ["csv/c.csv": "id,parent\n4,\n"])
            XCTAssertNil(try migrate(tree).failure)
            XCTAssertEqual(try values(tree, "SELECT id FROM c"), [[.integer(4)]])
        }
    }

    func testUpsertAndSyncRefuseANullKeyNamingLineAndColumn() throws {
        try forEachBackend(needing: .seeds) { backend in
            for mode in [#"mode="sync" key="code""#, #"mode="upsert" key="code""#] {
                let project = try project(backend, schema: "CREATE TABLE t (code TEXT UNIQUE, v INTEGER); INSERT INTO t VALUES ('stale', 0);",
                                          seeds: #"<seed file="csv/t.csv" table="t" \#(mode)/>"#, files: ["csv/t.csv": "code,v\na,1\n,2\n"])
                let failure = try XCTUnwrap(try migrate(project).failure, mode)
                XCTAssertEqual(failure.line, 3, mode)
                XCTAssertTrue(failure.message.contains("key column 'code' is NULL"), failure.message)
                XCTAssertEqual(try values(project, "SELECT * FROM t"), [[.text("stale"), .integer(0)]], mode)
            }
        }
    }

    func testUnixSecondsAtTheEdgesOfInt64AreAConversionErrorNotATrap() throws {
        try forEachBackend(needing: .seeds) { backend in
            for value in ["-9223372036854775808", "9223372036854775807", "-9223372036854775807", "-9223372036768375808"] {
                for type in ["date", "datetime"] {
                    let project = try project(backend, schema: "CREATE TABLE t (d TEXT);",
                                              seeds: #"<seed file="csv/t.csv" table="t"><column name="d" type="\#(type)" format="unix"/></seed>"#,
                                              files: ["csv/t.csv": "d\n\(value)\n"])
                    let failure = try XCTUnwrap(try migrate(project).failure, value)
                    XCTAssertEqual(failure.line, 2)
                    XCTAssertTrue(failure.message.contains("column 'd': '\(value)' is not unix seconds"), failure.message)
                }
            }
        }
    }

    func testSyncWithCompositeKey() throws {
        try forEachBackend(needing: .seeds) { backend in
            let project = try project(backend, schema: """
                CREATE TABLE t (a INTEGER, b TEXT, v TEXT, PRIMARY KEY (a, b));
                INSERT INTO t VALUES (1, 'x', 'old'), (1, 'y', 'old'), (2, 'x', 'old');
                """, seeds: #"<seed file="csv/t.csv" table="t" mode="sync" key="a, b"/>"#, files: ["csv/t.csv": "a,b,v\n1,x,new\n2,z,new\n"])
            XCTAssertNil(try migrate(project).failure)
            XCTAssertEqual(try values(project, "SELECT * FROM t ORDER BY a, b"),
                           [[.integer(1), .text("x"), .text("new")], [.integer(2), .text("z"), .text("new")]])
        }
    }

    func testUpsertKeyWithoutUniqueIndexIsAClearError() throws {
        try forEachBackend(needing: .seeds) { backend in
            let project = try project(backend, schema: "CREATE TABLE t (code TEXT, v INTEGER);",
                                      seeds: #"<seed file="csv/t.csv" table="t" mode="upsert" key="code"/>"#, files: ["csv/t.csv": "code,v\na,1\n"])
            let failure = try XCTUnwrap(try migrate(project).failure)
            XCTAssertTrue(failure.message.contains("must be the primary key or have a UNIQUE index"), failure.message)
        }
    }

    func testBadValueOnRow50000LeavesTheTableUntouched() throws {
        try forEachBackend(needing: .seeds) { backend in
            var csv = "id,v\n"
            for i in 1...60_000 { csv += i == 50_000 ? "\(i),oops\n" : "\(i),\(i * 2)\n" }
            let project = try project(backend, schema: "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER); INSERT INTO t VALUES (0, 0);",
                                      seeds: #"<seed file="csv/t.csv" table="t"/>"#, files: ["csv/t.csv": csv])
            let failure = try XCTUnwrap(try migrate(project).failure)
            XCTAssertEqual(failure.line, 50_001)
            XCTAssertTrue(failure.message.contains("'oops' is not an integer"), failure.message)
            XCTAssertEqual(try values(project, "SELECT * FROM t"), [[.integer(0), .integer(0)]])
            XCTAssertEqual(try count(project, "SELECT count(*) FROM strata_history WHERE kind = 'seed'"), 0)
        }
    }

    func testContextsSelectSeeds() throws {
        try forEachBackend(needing: .seeds) { backend in
            // The key numbers the rows as they are inserted, so the order below is the order the seeds ran.
            let project = try project(backend, schema: "CREATE TABLE t (\(backend.seedInsertionOrderKey("id")), v TEXT);", seeds: """
                <seed file="csv/always.csv" table="t"/>
                <seed file="csv/dev.csv" table="t" context="dev"/>
                <seed file="csv/test.csv" table="t" context="test, ci"/>
                """, files: ["csv/always.csv": "v\nalways\n", "csv/dev.csv": "v\ndev\n", "csv/test.csv": "v\ntest\n"])
            XCTAssertEqual(try migrate(project).applied.map(\.id), ["1_schema.sql", "always.csv"])
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .applied, .skipped, .skipped])
            XCTAssertEqual(try migrate(project, MigrationOptions(contexts: ["ci", "dev"])).applied.map(\.id), ["dev.csv", "test.csv"])
            XCTAssertEqual(try values(project, "SELECT v FROM t ORDER BY id"), [[.text("always")], [.text("dev")], [.text("test")]])
        }
    }

    /// A reapply seed of a context (demo data, an admin/admin account) loaded once with `--context dev` and
    /// changed since is reloaded only by a run that names its context again, never by a production run.
    func testAChangedReapplySeedOfAContextIsReloadedOnlyInThatContext() throws {
        try forEachBackend(needing: .seeds) { backend in
            let project = try project(backend, schema: "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, password TEXT);",
                                      seeds: #"<seed file="csv/demo.csv" table="users" mode="upsert" key="id" onChange="reapply" context="dev"/>"#,
                                      files: ["csv/demo.csv": "id,name,password\n1,demo,demo\n"])
            XCTAssertEqual(try migrate(project, MigrationOptions(contexts: ["dev"])).applied.count, 2)
            try project.connection().execute("UPDATE users SET password = 'real-secret'", .none)
            try project.file("csv/demo.csv", "id,name,password\n1,demo,demo2\n2,admin,admin\n")
            XCTAssertEqual(try project.migrator().plan().steps.map(\.step.id), [], "not this run's context")
            XCTAssertEqual(try migrate(project).applied.map(\.id), [])
            XCTAssertEqual(try values(project, "SELECT id, password FROM users ORDER BY id"), [[.integer(1), .text("real-secret")]])
            XCTAssertEqual(try migrate(project, MigrationOptions(contexts: ["dev"])).applied.map(\.reason), [.reapply])
            XCTAssertEqual(try count(project, "SELECT count(*) FROM users"), 2)
        }
    }

    func testChangedSeedIsDriftUnlessReapply() throws {
        try forEachBackend(needing: .seeds) { backend in
            let project = try project(backend, schema: "CREATE TABLE t (code TEXT PRIMARY KEY, v INTEGER);", seeds: """
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
    }

    /// A rolling deploy, or the application rolled back: an instance of the older release meets the newer reapply
    /// seed's record. Loading its older file would put the old rows back (and `sync` delete the new ones), so it is
    /// refused as drift, nothing changed; `repair` lets the next migrate load it on purpose. A file the database
    /// never held is new, and is reapplied as always.
    func testAnOlderReapplySeedIsRefusedNotLoadedOverTheNewerOne() throws {
        try forEachBackend(needing: .seeds) { backend in
            let project = try project(backend, schema: "CREATE TABLE plans (code TEXT PRIMARY KEY, price INTEGER);",
                                      seeds: #"<seed file="csv/plans.csv" table="plans" mode="sync" key="code" onChange="reapply"/>"#,
                                      files: ["csv/plans.csv": "code,price\nbasic,10\npro,20\n"])
            XCTAssertEqual(try migrate(project).applied.count, 2)
            let older = "code,price\nbasic,10\npro,20\n"
            let newer = "code,price\nbasic,12\npro,24\nteam,50\n"
            try project.file("csv/plans.csv", newer)
            XCTAssertEqual(try migrate(project).applied.map(\.reason), [.reapply])

            // The older release's file again.
            try project.file("csv/plans.csv", older)
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .drifted])
            let error = assertThrows(MigrationError.self) { try migrate(project) }
            guard case .refused(let refusals)? = error else { return XCTFail("not refused: \(String(describing: error))") }
            XCTAssertEqual(refusals.map(\.reason), [.drift])
            XCTAssertTrue(refusals.first?.message.contains("plans.csv is a file this database was loaded from before the one loaded at") ?? false,
                          "\(refusals)")
            XCTAssertEqual(try values(project, "SELECT code, price FROM plans ORDER BY code"),
                           [[.text("basic"), .integer(12)], [.text("pro"), .integer(24)], [.text("team"), .integer(50)]],
                           "the newer rows stay")
            let command = try project.strataOnBackend(["migrate"])
            XCTAssertEqual(command.status, 3, command.stderr)

            // Rolling the data back on purpose.
            XCTAssertEqual(try project.migrator().repair().reapplyAllowed, ["plans.csv"])
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .changed])
            XCTAssertEqual(try migrate(project).applied.map(\.reason), [.reapply])
            XCTAssertEqual(try values(project, "SELECT code, price FROM plans ORDER BY code"),
                           [[.text("basic"), .integer(10)], [.text("pro"), .integer(20)]])

            // The newer file is now the earlier one; a third, never held, is simply new.
            try project.file("csv/plans.csv", newer)
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .drifted])
            try project.file("csv/plans.csv", "code,price\nbasic,15\n")
            XCTAssertEqual(try migrate(project).applied.map(\.reason), [.reapply])
            XCTAssertEqual(try values(project, "SELECT code, price FROM plans ORDER BY code"), [[.text("basic"), .integer(15)]])
        }
    }

    func testSeedAfterAMigrationRunsRightAfterIt() throws {
        try forEachBackend(needing: .seeds) { backend in
            let project = try project(backend, manifestBody: """
                <migrations directory="sql"/>
                  <seeds><seed file="csv/t.csv" table="t" after="1_a.sql"/></seeds>
                """, files: ["sql/1_a.sql": "CREATE TABLE t (v TEXT);", "sql/2_b.sql": "CREATE TABLE copy AS SELECT * FROM t;",
                             "csv/t.csv": "v\nx\n"])
            XCTAssertEqual(try migrate(project).applied.map(\.id), ["1_a.sql", "t.csv", "2_b.sql"])
            XCTAssertEqual(try values(project, "SELECT * FROM copy"), [[.text("x")]])
        }
    }

    func testSeedOnlyRunRefusesWhileMigrationsArePending() throws {
        try forEachBackend(needing: .seeds) { backend in
            let project = try project(backend, schema: "CREATE TABLE t (v TEXT);", seeds: #"<seed file="csv/t.csv" table="t"/>"#,
                                      files: ["csv/t.csv": "v\nx\n"])
            let error = assertThrows(MigrationError.self) { try migrate(project, MigrationOptions(includeMigrations: false)) }
            XCTAssertTrue(error?.description.contains("run 'strata migrate' first") ?? false)
            _ = try migrate(project, MigrationOptions(includeSeeds: false))
            XCTAssertEqual(try migrate(project, MigrationOptions(includeMigrations: false)).applied.map(\.id), ["t.csv"])
        }
    }

    /// The CSV reader alone: no database is involved, so it runs once, not per backend.
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
        try forEachBackend(needing: .seeds) { backend in
            let project = try project(backend, schema: "CREATE TABLE t (v TEXT);", seeds: #"<seed file="csv/t.csv" table="t"/>"#,
                                      files: ["csv/t.csv": "v\n\"a\nb\"\nc\n"])
            XCTAssertEqual(try project.migrator().plan().steps.last?.rowCount, 2)
            _ = try migrate(project)
            XCTAssertEqual(try project.migrator().status().last?.record?.rowCount, 2)
            let result = try project.strataOnBackend(["status"])
            XCTAssertTrue(result.stdout.contains("2 rows"), result.stdout)
        }
    }

    func testIgnoreModeCountsTheRowsItInsertedNotTheRowsItSkipped() throws {
        try forEachBackend(needing: .seeds) { backend in
            let rows = (1...100).map { "\($0),name \($0)" }.joined(separator: "\n")
            let project = try project(backend, manifestBody: """
                <migrations directory="sql"/>
                  <seeds><seed file="csv/t.csv" table="t" mode="ignore" key="id" onChange="reapply"/></seeds>
                """, files: ["sql/1_t.sql": "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT);",
                             "csv/t.csv": "id,name\n1,a\n2,b\n"])
            XCTAssertEqual(try project.migrator().migrate().applied.last?.rowCount, 2)
            // 100 rows, two of them already there: a full batch of 64 and a partial one, both counted by what went in.
            try project.file("csv/t.csv", "id,name\n" + rows + "\n")
            let report = try project.migrator().migrate()
            XCTAssertEqual(report.applied.last?.rowCount, 98)
            XCTAssertEqual(try count(project, "SELECT row_count FROM strata_history WHERE kind = 'seed'"), 98)
            XCTAssertEqual(try count(project, "SELECT count(*) FROM t"), 100)
        }
    }
}

extension TestBackend {
    /// What a declared column type is meant to hold, for the seed conversion tests.
    enum SeedColumnType {
        case integer, real, numeric, boolean, date, datetime, blob
    }

    /// The column type this database declares for values of `type`, which seeds convert as that type.
    func seedColumnType(_ type: SeedColumnType) -> String {
        switch kind {
        case .sqlite:
            switch type {
            case .integer: "INTEGER"
            case .real: "REAL"
            case .numeric: "NUMERIC"
            case .boolean: "BOOLEAN"
            case .date: "DATE"
            case .datetime: "DATETIME"
            case .blob: "BLOB"
            }
        case .postgres:
            switch type {
            case .integer: "bigint"
            case .real: "double precision"
            case .numeric: "numeric"
            case .boolean: "boolean"
            case .date: "date"
            case .datetime: "timestamptz"
            case .blob: "bytea"
            }
        }
    }

    /// The database's message for a row rejected by a PRIMARY KEY or UNIQUE constraint on `table.column`.
    func seedUniqueViolation(_ table: String, _ column: String) -> String {
        switch kind {
        case .sqlite: "UNIQUE constraint failed: \(table).\(column)"
        case .postgres: "duplicate key value violates unique constraint"
        }
    }

    /// A column definition for an integer key the database fills itself, increasing in the order rows are inserted.
    func seedInsertionOrderKey(_ name: String) -> String {
        switch kind {
        case .sqlite: "\(name) INTEGER PRIMARY KEY"
        case .postgres: "\(name) bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
        }
    }
}
