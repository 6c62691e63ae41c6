import CSQLite
import Foundation
import XCTest
@testable import Strata

/// Faults from outside: a full disk, a read-only database, a held lock, files vanishing, a manifest changing
/// under a reviewed plan. Each must give a clear error and leave the database as it was before the failed step.
final class FaultTests: XCTestCase {
    func fingerprint(_ db: Database) throws -> String {
        try db.canonicalSchema() + "\n" + db.query("SELECT * FROM strata_history ORDER BY kind, identity").all()
            .map { row in row.values.enumerated().filter { row.columnNames[$0.offset] != "applied_at" && row.columnNames[$0.offset] != "duration_ms" }
                .map { "\($0.element)" }.joined(separator: "|") }.joined(separator: "\n")
    }

    func testDiskFullDuringAMigrationLeavesTheDatabaseAsBefore() throws {
        let fresh = try Project(self, files: [
            "sql/1_a.sql": "CREATE TABLE a (x); INSERT INTO a VALUES (1);",
            "sql/2_big.sql": "CREATE TABLE big (pad TEXT);\nWITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 20000)\nINSERT INTO big SELECT printf('%0200d', n) FROM c;",
        ])
        let db = try fresh.database()
        let migrator = Migrator(manifest: try fresh.manifest(), database: db)
        try HistoryStore(database: db).create()
        try db.execute("PRAGMA max_page_count = 40") // a tiny disk: ~160 KB
        let before = try fingerprint(db)
        let report = try migrator.migrate()
        XCTAssertEqual(report.applied.map(\.id), ["1_a.sql"])
        let failure = try XCTUnwrap(report.failure)
        XCTAssertEqual(failure.id, "2_big.sql")
        XCTAssertTrue(failure.message.contains("full"), failure.message)
        XCTAssertEqual(failure.line, 2)
        XCTAssertFalse(try db.tableExists("big"))
        XCTAssertNotEqual(try fingerprint(db), before, "the first file stays applied")
        XCTAssertEqual(try db.scalar("PRAGMA integrity_check", as: String.self), "ok")
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM strata_history", as: Int.self), 1)
    }

    func testDiskFullDuringASeedLeavesTheTableAsBefore() throws {
        var csv = "id,pad\n"
        for i in 1...5000 { csv += "\(i),\(String(repeating: "x", count: 100))\n" }
        let project = try Project(self, manifest: """
            <manifest version="1"><migrations directory="sql"/><seeds><seed file="csv/t.csv" table="t"/></seeds></manifest>
            """, files: ["sql/1.sql": "CREATE TABLE t (id INTEGER PRIMARY KEY, pad TEXT); INSERT INTO t VALUES (0, 'kept');",
                         "csv/t.csv": csv])
        let db = try project.database()
        try HistoryStore(database: db).create()
        try db.execute("PRAGMA max_page_count = 30")
        let report = try Migrator(manifest: try project.manifest(), database: db).migrate()
        let failure = try XCTUnwrap(report.failure)
        XCTAssertEqual(failure.kind, .seed)
        XCTAssertTrue(failure.message.contains("full"), failure.message)
        XCTAssertEqual(try db.query("SELECT * FROM t").all().map(\.values), [[.integer(0), .text("kept")]])
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM strata_history WHERE kind = 'seed'", as: Int.self), 0)
        XCTAssertEqual(try db.scalar("PRAGMA integrity_check", as: String.self), "ok")
    }

    func testReadOnlyDatabaseIsRefusedCleanly() throws {
        let project = try Project(self, files: ["sql/1_a.sql": "CREATE TABLE a (x);"])
        try project.database().execute("CREATE TABLE existing (x)")
        let before = try Data(contentsOf: URL(fileURLWithPath: project.databasePath))
        let migrator = try project.migrator(configuration: .init(readOnly: true))
        let error = assertThrows(DatabaseError.self) { try migrator.migrate() }
        XCTAssertEqual(error?.resultCode, SQLITE_READONLY)
        XCTAssertTrue(error?.message.contains("readonly") ?? false, "\(String(describing: error))")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: project.databasePath)), before)
    }

    func testLockHeldByAnotherProcessPastTheTimeout() throws {
        let project = try Project(self, files: ["sql/1_a.sql": "CREATE TABLE a (x);"])
        let holder = try project.database()
        try holder.execute("BEGIN IMMEDIATE")
        let result = try project.strata(["migrate", "--timeout", "0.3"])
        try holder.execute("ROLLBACK")
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("write lock"), result.stderr)
        XCTAssertTrue(result.stderr.contains("--timeout"), result.stderr)
        XCTAssertFalse(try project.database().tableExists("a"))
        XCTAssertEqual(try project.strata(["migrate"]).status, 0)
    }

    func testFilesVanishingAfterTheManifestWasLoaded() throws {
        let project = try Project(self, manifest: """
            <manifest version="1"><migrations directory="sql"/><seeds><seed file="csv/t.csv" table="a"/></seeds></manifest>
            """, files: ["sql/1_a.sql": "CREATE TABLE a (x);", "sql/2_b.sql": "CREATE TABLE b (x);", "csv/t.csv": "x\n1\n"])
        let migrator = try project.migrator()
        try FileManager.default.removeItem(at: project.root.appendingPathComponent("sql/2_b.sql"))
        var report = try migrator.migrate()
        XCTAssertEqual(report.applied.map(\.id), ["1_a.sql"])
        XCTAssertEqual(report.failure?.id, "2_b.sql")
        XCTAssertTrue(report.failure?.message.contains("cannot read the migration file") ?? false)
        try write("CREATE TABLE b (x);", to: project.root.appendingPathComponent("sql/2_b.sql"))
        try FileManager.default.removeItem(at: project.root.appendingPathComponent("csv/t.csv"))
        report = try migrator.migrate()
        XCTAssertEqual(report.failure?.id, "t.csv")
        XCTAssertTrue(report.failure?.message.contains("cannot open") ?? false, "\(String(describing: report.failure))")
        XCTAssertEqual(try project.database().scalar("SELECT count(*) FROM a", as: Int.self), 0)
    }

    func testAManifestChangedBetweenPlanAndMigrateIsRefused() throws {
        let project = try Project(self, files: ["sql/1_a.sql": "CREATE TABLE a (x);"])
        let plan = try project.strata(["plan", "--format", "json"])
        let id = try XCTUnwrap((JSONSerialization.jsonObject(with: Data(plan.stdout.utf8)) as? [String: Any])?["planId"] as? String)
        try project.file("sql/1_a.sql", "CREATE TABLE a (x, y);")
        try project.file("sql/2_b.sql", "DROP TABLE a;")
        let refused = try project.strata(["migrate", "--plan-id", id])
        XCTAssertEqual(refused.status, 3)
        XCTAssertTrue(refused.stderr.contains("the plan changed since it was reviewed"), refused.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: project.databasePath + "-journal"))
        XCTAssertFalse(try project.database().tableExists("a"))
        let newPlan = try project.migrator().plan()
        XCTAssertEqual(try project.strata(["migrate", "--plan-id", newPlan.id]).status, 0)
        XCTAssertTrue(try project.database().tableExists("strata_history"))
    }
}
