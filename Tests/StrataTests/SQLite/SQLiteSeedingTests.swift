import CSQLite
import Foundation
import XCTest
import Strata
@testable import StrataCore
@testable import StrataSQLite

/// Seeding as only SQLite does it: type affinity and typeless columns, constraints that declare their own conflict
/// resolution (`ON CONFLICT REPLACE`), `INSERT OR …` in triggers, `COLLATE NOCASE` keys (and NULL in a primary
/// key), identifiers compared folding ASCII only, and SQLite rolling a transaction back by itself. What every
/// backend does with seeds is tested in `SeedingTests`.
final class SQLiteSeedingTests: XCTestCase {
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
        try project.database().query(sql, .none).all().map(\.values)
    }

    /// Declared types classified by SQLite's affinity rules (NUMERIC keeps 12 an integer and 2.5 a real), Strata's
    /// BOOLEAN, DATE and DATETIME names, and a typeless column keeping its text as written; with column overrides.
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

    // MARK: constraints with their own conflict clauses, and triggers' own conflict handling

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

    func testSyncDeletesEveryRowMissingFromTheFileUnderTheKeysCollation() throws {
        let project = try project(schema: """
            CREATE TABLE t (code TEXT COLLATE NOCASE PRIMARY KEY, v INTEGER);
            INSERT INTO t VALUES ('a', 0), ('gone', 0), (NULL, 0);
            """, seeds: #"<seed file="csv/t.csv" table="t" mode="sync" key="code"/>"#, files: ["csv/t.csv": "code,v\nA,1\n"])
        XCTAssertNil(try migrate(project).failure)
        XCTAssertEqual(try values(project, "SELECT * FROM t"), [[.text("a"), .integer(1)]])
    }

    /// In the modes that match rows by key, a later row with an earlier row's key would overwrite it without a word
    /// (SQLite's ON CONFLICT DO UPDATE updates the row the same statement or batch wrote): refused, naming both
    /// lines, with keys compared under the column's collation, across batches, and for `replace` without a key on
    /// every PRIMARY KEY and UNIQUE column set the file has. `ignore` keeps the first row, as before.
    func testAKeyRepeatedInOneFileIsRefusedNamingBothLines() throws {
        let keyed = "CREATE TABLE t (code TEXT PRIMARY KEY, v INTEGER); INSERT INTO t VALUES ('kept', 0);"
        let twoKeys = "CREATE TABLE t (id INTEGER PRIMARY KEY, code TEXT UNIQUE, v TEXT); INSERT INTO t VALUES (9, 'kept', 'x');"
        let many = "code,v\n" + (1...150).map { "c\($0 == 100 ? 3 : $0),\($0)" }.joined(separator: "\n") + "\n"
        let cases: [(schema: String, seed: String, csv: String, line: Int, message: String)] = [
            (keyed, #"mode="upsert" key="code""#, "code,v\na,1\nb,2\na,3\n", 4, "key (code = 'a') is also on line 2"),
            (keyed, #"mode="sync" key="code""#, "code,v\na,1\nb,2\na,3\n", 4, "key (code = 'a') is also on line 2"),
            (keyed, #"mode="replace" key="code""#, "code,v\na,1\nb,2\n\"a\",3\n", 4, "key (code = 'a') is also on line 2"),
            (keyed, #"mode="upsert" key="code""#, many, 101, "key (code = 'c3') is also on line 4"),
            (twoKeys, #"mode="replace""#, "id,code,v\n1,a,x\n2,b,y\n1,c,z\n", 4, "key (id = '1') is also on line 2"),
            (twoKeys, #"mode="replace""#, "id,code,v\n1,a,x\n2,a,y\n", 3, "key (code = 'a') is also on line 2"),
            ("CREATE TABLE t (code TEXT COLLATE NOCASE PRIMARY KEY, v INTEGER); INSERT INTO t VALUES ('kept', 0);",
             #"mode="upsert" key="code""#, "code,v\na,1\nA,2\n", 3, "key (code = 'A') is also on line 2"),
        ]
        for (schema, seed, csv, line, message) in cases {
            let project = try project(schema: schema, seeds: #"<seed file="csv/t.csv" table="t" \#(seed)/>"#, files: ["csv/t.csv": csv])
            let failure = try XCTUnwrap(try migrate(project).failure, seed)
            XCTAssertEqual(failure.line, line, "\(seed): \(failure)")
            XCTAssertTrue(failure.message.contains(message) && failure.message.contains("each key may appear once in the file"),
                          "\(seed): \(failure.message)")
            XCTAssertEqual(try values(project, "SELECT count(*) FROM t"), [[.integer(1)]], "nothing of the seed stays")
        }
        // NULL is no key: two rows with a NULL in a UNIQUE column do not conflict, in the file as in the table.
        let nulls = try project(schema: twoKeys, seeds: #"<seed file="csv/t.csv" table="t" mode="replace"/>"#,
                                files: ["csv/t.csv": "id,code,v\n1,,x\n2,,y\n"])
        XCTAssertNil(try migrate(nulls).failure)
        let ignore = try project(schema: keyed, seeds: #"<seed file="csv/t.csv" table="t" mode="ignore" key="code"/>"#,
                                 files: ["csv/t.csv": "code,v\na,1\na,2\n"])
        XCTAssertNil(try migrate(ignore).failure)
        XCTAssertEqual(try values(ignore, "SELECT * FROM t ORDER BY code"), [[.text("a"), .integer(1)], [.text("kept"), .integer(0)]])
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

    /// A project whose single migration creates `schema` and whose manifest lists `seeds`.
    private func seedProject(schema: String, seeds: String, files: [String: String]) throws -> Project {
        var all = files
        all["sql/1_schema.sql"] = schema
        let project = try Project(self, files: all)
        try project.file("manifest.xml", #"<manifest version="1"><database path="db.sqlite"/><migrations directory="sql"/><seeds>\#(seeds)</seeds></manifest>"#)
        return project
    }

    /// README: a constraint failure inside a batch "is replayed row by row so the error still names its line". A
    /// trigger's `RAISE(FAIL, …)` ends the multi-row INSERT but keeps the rows before it in that statement; the
    /// replay then inserts those rows again, and the step fails naming line 2 with "UNIQUE constraint failed:
    /// t.id", a row that is fine, instead of line 11 and the trigger's message. (Nothing is kept: the step rolls
    /// back.)
    func testARowATriggerFailsWithRAISEFAILIsTheRowNamed() throws {
        let csv = "id,name\n" + (1...100).map { $0 == 10 ? "10,bad" : "\($0),n\($0)" }.joined(separator: "\n") + "\n"
        let project = try seedProject(schema: """
            CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
            CREATE TRIGGER t_check BEFORE INSERT ON t WHEN new.name = 'bad' BEGIN SELECT RAISE(FAIL, 'name may not be bad'); END;
            """, seeds: #"<seed file="csv/t.csv" table="t"/>"#, files: ["csv/t.csv": csv])
        let failure = try XCTUnwrap(try project.migrator().migrate().failure)
        XCTAssertEqual(failure.line, 11, failure.message)
        XCTAssertTrue(failure.message.contains("name may not be bad"), failure.message)
        XCTAssertEqual(try project.database().scalar("SELECT count(*) FROM t", as: Int.self), 0)
    }
}
