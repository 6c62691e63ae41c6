import Foundation
import XCTest
import Strata
@testable import StrataCore
@testable import StrataSQLite

/// What every backend keeps a migration from doing, and what a step leaves behind: history no migration or seed
/// may rewrite, `transaction="none"` outcomes, files that change while they wait, line endings that are data. Run
/// on every backend; the rules only SQLite has (foreign keys off while a file runs, its authorizer, pragmas, temp
/// objects, its busy handler) are in `SQLiteMigrationTests`.
final class MigrationRulesTests: XCTestCase {
    // MARK: What no migration or seed may do

    func testAMigrationDeletingItsHistoryRowIsRefusedAndNothingRunsTwice() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend,
                                      files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER); INSERT INTO a VALUES (1);"])
            XCTAssertNil(try project.migrator().migrate().failure)
            try project.file("sql/2_erase.sql", "DELETE FROM \"strata_history\" WHERE identity = '1_a.sql';")
            XCTAssertThrowsError(try project.migrator().migrate(), "validate-time rules refuse before anything runs")
            let result = try project.strataOnBackend(["migrate"])
            XCTAssertEqual(result.status, 3, result.stderr)
            XCTAssertTrue(result.stderr.contains("strata_history"), result.stderr)
            XCTAssertEqual(try project.connection().scalar("SELECT count(*) FROM a", as: Int.self), 1)
            XCTAssertEqual(try project.connection().scalar("SELECT count(*) FROM strata_history", as: Int.self), 1)
        }
    }

    func testASeedIntoATableWhoseTriggerWritesHistoryFails() throws {
        try forEachBackend(needing: .seeds) { backend in
            let project = try Project(self, backend: backend, manifestBody: """
                <migrations directory="sql"/>
                  <seeds><seed file="csv/t.csv" table="t"/></seeds>
                """, files: ["sql/1_t.sql": "CREATE TABLE t (x INTEGER);", "csv/t.csv": "x\n1\n"])
            let db = try project.connection()
            try db.execute("CREATE TABLE t (x INTEGER)")
            try project.migrator().baseline(through: "1_t.sql")
            for statement in backend.triggerDeletingHistory(afterInsertInto: "t") { try db.execute(statement, .none) }
            let failure = try XCTUnwrap(try project.migrator().migrate().failure)
            XCTAssertEqual(failure.id, "t.csv")
            XCTAssertTrue(failure.message.contains("Strata's record of what was applied"), failure.message)
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM strata_history", as: Int.self), 1)
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM t", as: Int.self), 0)
        }
    }

    // MARK: transaction="none" files

    private func noneProject(_ backend: TestBackend, _ sql: String) throws -> Project {
        try Project(self, backend: backend, manifestBody: """
            <migrations directory="sql"><migration file="2_none.sql" transaction="none"/></migrations>
            """, files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);", "sql/2_none.sql": sql,
                         "sql/3_after.sql": "CREATE TABLE c (x INTEGER);"])
    }

    func testANoneFileThatLeavesATransactionOpenFailsAndSaysSo() throws {
        // PostgreSQL's lint refuses BEGIN in any file before a run (PostgresMigrationTests); SQLite's lets it run.
        try forEachBackend(needing: .transactionControlInNoneFiles) { backend in
            let project = try noneProject(backend, "INSERT INTO a VALUES (1);\nBEGIN;\nCREATE TABLE b (x INTEGER);\nINSERT INTO a VALUES (2);\n")
            let migrator = try project.migrator()
            let report = try migrator.migrate()
            XCTAssertEqual(report.applied.map(\.id), ["1_a.sql"])
            let failure = try XCTUnwrap(report.failure)
            XCTAssertEqual(failure.id, "2_none.sql")
            XCTAssertTrue(failure.message.contains("transaction still open"), failure.message)
            XCTAssertTrue(failure.description.contains("strata resolve 2_none.sql"), failure.description)
            XCTAssertFalse(migrator.database.isInTransaction, "the connection is back in autocommit mode")
            let db = try project.connection()
            XCTAssertEqual(try db.rows("SELECT x FROM a ORDER BY x").map { $0[0] }, [.integer(1)], "what ran before BEGIN stays")
            XCTAssertFalse(try db.tableExists("b"))
            XCTAssertFalse(try db.tableExists("c"), "nothing after the failed step ran")
            XCTAssertEqual(try db.scalar("SELECT state FROM strata_history WHERE identity = '2_none.sql'", as: String.self), "failed")
            XCTAssertEqual(try project.migrator().plan().refusals.map(\.reason), [.dirty], "failed is dirty until resolved")
        }
    }

    func testANoneFileFailingPartWaySaysWhichStatementsStayedApplied() throws {
        try forEachBackend { backend in
            let project = try noneProject(backend, "INSERT INTO a VALUES (1);\nINSERT INTO a VALUES (2);\nINSERT INTO nowhere VALUES (3);\nINSERT INTO a VALUES (4);")
            let result = try project.strataOnBackend(["migrate"])
            XCTAssertEqual(result.status, 1)
            // SQLite places an error at the failing statement; PostgreSQL at the token its error position names.
            let column = backend.kind == .sqlite ? 1 : 13
            XCTAssertTrue(result.stderr.contains("sql/2_none.sql:3:\(column): \(backend.noSuchTable("nowhere")); the 2 statements before line 3 stayed applied"),
                          result.stderr)
            XCTAssertTrue(result.stderr.contains("strata resolve 2_none.sql --applied"), result.stderr)
            XCTAssertFalse(result.stderr.contains("left no trace"), result.stderr)
            let json = try project.strataOnBackend(["migrate", "--format", "json"])
            XCTAssertEqual(json.status, 3, "dirty now")
            let transactional = try Project(self, backend: backend,
                                            files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);\nINSERT INTO nowhere VALUES (1);"])
            let rolledBack = try transactional.strataOnBackend(["migrate"])
            XCTAssertTrue(rolledBack.stderr.contains("was rolled back and left no trace"), rolledBack.stderr)
            let object = try transactional.strataOnBackend(["migrate", "--format", "json"]).stdout
            XCTAssertTrue(object.contains(#""aftermath":{"state":"rolled-back"}"#), object)
        }
    }

    // MARK: The bytes that run are the bytes recorded

    func testAFileChangedWhileWaitingForTheLockIsRecordedAsItRan() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);",
                                                                      "sql/2_b.sql": "CREATE TABLE old_b (x INTEGER);"])
            let migrator = try project.migrator()
            let changed = "CREATE TABLE new_b (x INTEGER);"
            _ = try migrator.migrate { event in
                // After the plan was made, before the step takes the lock: an editor saves the file.
                if case .started(let step, _) = event, step.id == "2_b.sql" { try? project.file("sql/2_b.sql", changed) }
            }
            let db = try project.connection()
            XCTAssertTrue(try db.tableExists("new_b"))
            XCTAssertEqual(try db.scalar("SELECT applied_sql FROM strata_history WHERE identity = '2_b.sql'", as: String.self), changed)
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .applied], "the checksum is that of what ran")
        }
    }

    // MARK: Line endings inside data are data

    func testLineEndingsInsideSQLLiteralsAreDataAndOutsideThemLayout() throws {
        try forEachBackend { backend in
            let original = "-- don't mind me\r\nCREATE TABLE t (v TEXT);\r\nINSERT INTO t VALUES ('a\r\nb');\r\n"
            let project = try Project(self, backend: backend, files: ["sql/1_a.sql": original])
            XCTAssertNil(try project.migrator().migrate().failure)
            XCTAssertEqual(try project.connection().scalar("SELECT v FROM t", as: String.self), "a\r\nb")
            try project.file("sql/1_a.sql", "-- don't mind me\nCREATE TABLE t (v TEXT);\nINSERT INTO t VALUES ('a\r\nb');\n")
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied], "layout line endings are not drift")
            try project.file("sql/1_a.sql", "-- don't mind me\nCREATE TABLE t (v TEXT);\nINSERT INTO t VALUES ('a\nb');\n")
            XCTAssertEqual(try project.migrator().status().map(\.state), [.drifted], "the stored value would differ")
        }
        XCTAssertNotEqual(try Checksum.of(Array("SELECT \"a\r\nb\";".utf8)), try Checksum.of(Array("SELECT \"a\nb\";".utf8)))
        XCTAssertEqual(try Checksum.of(Array("SELECT 'a\r\nb'; -- x\r\n".utf8)), try Checksum.of(Array("SELECT 'a\r\nb'; -- x\n".utf8)))
        XCTAssertEqual(Checksum.normalizedText(Array("x\r\n'a\r\nb'\r\n".utf8)), "x\n'a\r\nb'\n")
    }

    func testLineEndingsInsideQuotedCSVFieldsAreData() throws {
        try forEachBackend(needing: .seeds) { backend in
            let project = try Project(self, backend: backend, manifestBody: """
                <migrations directory="sql"/>
                  <seeds><seed file="csv/t.csv" table="t"/></seeds>
                """, files: ["sql/1_t.sql": "CREATE TABLE t (id INTEGER, v TEXT);", "csv/t.csv": "id,v\r\n1,\"a\r\nb\"\r\n2,c\r\n"])
            XCTAssertNil(try project.migrator().migrate().failure)
            try project.file("csv/t.csv", "id,v\n1,\"a\r\nb\"\n2,c\n")
            XCTAssertEqual(try project.migrator().status().last?.state, .applied)
            try project.file("csv/t.csv", "id,v\n1,\"a\nb\"\n2,c\n")
            XCTAssertEqual(try project.migrator().status().last?.state, .drifted)
        }
    }

    func testVersionOneRecordsStillCompareAsTheyWereMade() throws {
        try forEachBackend { backend in
            let text = "INSERT INTO t VALUES ('a\r\nb');\n"
            let project = try Project(self, backend: backend, files: ["sql/1_t.sql": "CREATE TABLE t (v TEXT);", "sql/2_v.sql": text])
            let db = try project.connection()
            try db.execute("CREATE TABLE t (v TEXT)")
            try db.execute("INSERT INTO t VALUES ('a\r\nb')")
            try project.migrator().baseline(through: "2_v.sql")
            // As an older Strata recorded it: every CR normalised, version 1.
            let v1 = try Checksum.of(Array(text.utf8), version: 1)
            XCTAssertEqual(v1, try Checksum.of(Array("INSERT INTO t VALUES ('a\nb');\n".utf8), version: 1))
            let recorded = try XCTUnwrap(try db.history.record(kind: .migration, identity: "2_v.sql"))
            try db.history.write(recorded.with(checksum: v1, version: 1))
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .applied])
            try project.file("sql/2_v.sql", "INSERT INTO t VALUES ('a\nb');\n")
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .applied],
                           "under version 1's rule this edit was never drift")
            try project.file("sql/2_v.sql", "INSERT INTO t VALUES ('a b');\n")
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .drifted])
            XCTAssertEqual(try project.migrator().repair().realigned, ["2_v.sql"])
            XCTAssertEqual(try db.scalar("SELECT checksum_version FROM strata_history WHERE identity = '2_v.sql'", as: Int.self),
                           db.dialect.checksumVersion, "repair re-records under the database's current version")
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .applied])
        }
    }

    func testALoneCRInsideALineCommentIsDataForTheChecksum() throws {
        // SQLite ends a `--` comment only at LF: here `CREATE TABLE b` is comment, and turning the CR into LF runs it.
        // `migrate` on SQLite refuses such a file (SQLiteMigrationTests.testALoneCRInsideALineCommentIsRefusedUpFront);
        // one recorded before that rule (here by baseline) still compares by what SQLite ran. PostgreSQL ends the
        // comment at the CR as at LF, so there both texts run `CREATE TABLE b` and the edit is layout.
        try forEachBackend { backend in
            let project = try Project(self, backend: backend,
                                      files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);\n-- add b\rCREATE TABLE b (x INTEGER);\n"])
            XCTAssertEqual(try project.migrator().baseline(through: "1_a.sql"), ["1_a.sql"])
            try project.file("sql/1_a.sql", "CREATE TABLE a (x INTEGER);\n-- add b\nCREATE TABLE b (x INTEGER);\n")
            XCTAssertEqual(try project.migrator().status().map(\.state), [backend.kind == .sqlite ? .drifted : .applied])
            try project.file("sql/1_a.sql", "CREATE TABLE a (x INTEGER);\r\n-- add b\rCREATE TABLE b (x INTEGER);\r\n")
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied], "CRLF ends a comment as LF does")
        }
        for chunk in 1...4 {
            // The CR's meaning depends on the next byte, which a chunked read may deliver later.
            let bytes = Array("-- c\rX\n-- d\r\nY\r".utf8)
            let hasher = try NormalizingHasher(content: .sql)
            var offset = 0
            while offset < bytes.count {
                let end = min(offset + chunk, bytes.count)
                bytes[offset..<end].withUnsafeBufferPointer { hasher.update($0) }
                offset = end
            }
            XCTAssertEqual(try hasher.finish(), try Checksum.of(Array("-- c\rX\n-- d\nY\n".utf8)), "chunk \(chunk)")
        }
    }
}


extension TestBackend {
    /// Statements creating a trigger that deletes every history row after each insert into `table`: a seed into
    /// that table would rewrite the history through it.
    fileprivate func triggerDeletingHistory(afterInsertInto table: String) -> [String] {
        switch kind {
        case .sqlite: ["CREATE TRIGGER launder AFTER INSERT ON \(table) BEGIN DELETE FROM strata_history; END"]
        case .postgres: ["""
            CREATE FUNCTION launder_history() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN DELETE FROM strata_history; RETURN NEW; END $$
            """, "CREATE TRIGGER launder AFTER INSERT ON \(table) FOR EACH ROW EXECUTE FUNCTION launder_history()"]
        }
    }
}
