import CSQLite
import Foundation
import XCTest
import Strata
@testable import StrataCore
@testable import StrataPostgres
@testable import StrataSQLite

/// Faults from outside, on every backend: a full disk, a failing commit, a held lock, files vanishing, a manifest
/// changing under a reviewed plan. Each must give a clear error and leave the database as it was before the failed
/// step. The fault is injected by the backend (`TestBackend.limitSpace`, `failingEveryCommit`); faults only a
/// SQLite file meets (a real filesystem filling up, hot journals, read-only files) are in `SQLiteFaultTests`.
final class FaultTests: XCTestCase {
    func fingerprint(_ backend: TestBackend, _ db: any DatabaseConnection) throws -> String {
        try backend.schemaText(db) + "\n" + db.rows("SELECT * FROM strata_history ORDER BY kind, identity")
            .map { row in row.values.enumerated().filter { row.columnNames[$0.offset] != "applied_at" && row.columnNames[$0.offset] != "duration_ms" }
                .map { "\($0.element)" }.joined(separator: "|") }.joined(separator: "\n")
    }

    /// A migration that writes about 4 MB in its statement on line 2.
    static let bigMigration = """
        CREATE TABLE big (pad TEXT);
        WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 20000)
        INSERT INTO big SELECT '\(String(repeating: "0", count: 200))' || n FROM c;
        """

    func testDiskFullDuringAMigrationLeavesTheDatabaseAsBefore() throws {
        try forEachBackend(needing: .sizeLimit) { backend in
            let fresh = try Project(self, backend: backend, files: [
                "sql/1_a.sql": "CREATE TABLE a (x INTEGER); INSERT INTO a VALUES (1);",
                "sql/2_big.sql": Self.bigMigration,
            ])
            let db = try fresh.connection()
            let migrator = Migrator(manifest: try fresh.manifest(), database: db)
            try db.history.create()
            try backend.limitSpace(of: db, toKilobytes: 160) // a tiny disk
            let before = try fingerprint(backend, db)
            let report = try migrator.migrate()
            XCTAssertEqual(report.applied.map(\.id), ["1_a.sql"])
            let failure = try XCTUnwrap(report.failure)
            XCTAssertEqual(failure.id, "2_big.sql")
            XCTAssertTrue(failure.message.contains(backend.diskFullMessage), failure.message)
            XCTAssertEqual(failure.line, 2)
            XCTAssertFalse(try db.tableExists("big"))
            XCTAssertNotEqual(try fingerprint(backend, db), before, "the first file stays applied")
            XCTAssertEqual(try backend.integrityProblems(db), [])
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM strata_history", as: Int.self), 1)
        }
    }

    func testDiskFullDuringASeedLeavesTheTableAsBefore() throws {
        try forEachBackend(needing: .sizeLimit) { backend in
            var csv = "id,pad\n"
            for i in 1...5000 { csv += "\(i),\(String(repeating: "x", count: 100))\n" }
            let project = try Project(self, backend: backend, manifest: """
                <manifest version="1"><migrations directory="sql"/><seeds><seed file="csv/t.csv" table="t"/></seeds></manifest>
                """, files: ["sql/1.sql": "CREATE TABLE t (id INTEGER PRIMARY KEY, pad TEXT); INSERT INTO t VALUES (0, 'kept');",
                             "csv/t.csv": csv])
            let db = try project.connection()
            try db.history.create()
            try backend.limitSpace(of: db, toKilobytes: 120)
            let report = try Migrator(manifest: try project.manifest(), database: db).migrate()
            let failure = try XCTUnwrap(report.failure)
            XCTAssertEqual(failure.kind, .seed)
            XCTAssertTrue(failure.message.contains(backend.diskFullMessage), failure.message)
            XCTAssertEqual(try db.rows("SELECT * FROM t").map(\.values), [[.integer(0), .text("kept")]])
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM strata_history WHERE kind = 'seed'", as: Int.self), 0)
            XCTAssertEqual(try backend.integrityProblems(db), [])
        }
    }

    func testAFailureAtCommitIsReportedNamingTheStep() throws {
        try forEachBackend(needing: .failingCommits) { backend in
            let project = try Project(self, backend: backend, files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);"])
            let db = try project.connection()
            XCTAssertEqual(try Migrator(manifest: try project.manifest(), database: db).migrate().applied.count, 1)
            try project.file("sql/2_b.sql", "CREATE TABLE b (x INTEGER);")
            // Every COMMIT fails while the migrator runs, as one does on a full disk in WAL mode.
            let report = try backend.failingEveryCommit(on: db) {
                try Migrator(manifest: try project.manifest(), database: db).migrate()
            }
            let failure = try XCTUnwrap(report.failure)
            XCTAssertEqual(failure.id, "2_b.sql")
            XCTAssertTrue(failure.file.hasSuffix("sql/2_b.sql"), failure.file)
            XCTAssertTrue(failure.message.contains("COMMIT failed"), failure.message)
            XCTAssertFalse(try db.tableExists("b"))
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM strata_history", as: Int.self), 1)
        }
    }

    func testLockHeldByAnotherProcessPastTheTimeout() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);"])
            // Another connection holds the database's write lock for as long as the command runs.
            let holder = try project.connection()
            let result = try holder.withWriteLock { try project.strataOnBackend(["migrate", "--timeout", "0.3"]) }
            XCTAssertEqual(result.status, 1)
            XCTAssertTrue(result.stderr.contains("write lock"), result.stderr)
            XCTAssertTrue(result.stderr.contains("--timeout"), result.stderr)
            XCTAssertFalse(try project.connection().tableExists("a"))
            XCTAssertEqual(try project.strataOnBackend(["migrate"]).status, 0)
        }
    }

    func testFilesVanishingAfterTheManifestWasLoaded() throws {
        try forEachBackend(needing: .seeds) { backend in
            let project = try Project(self, backend: backend, manifest: """
                <manifest version="1"><migrations directory="sql"/><seeds><seed file="csv/t.csv" table="a"/></seeds></manifest>
                """, files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);", "sql/2_b.sql": "CREATE TABLE b (x INTEGER);", "csv/t.csv": "x\n1\n"])
            let migrator = try project.migrator()
            try FileManager.default.removeItem(at: project.root.appendingPathComponent("sql/2_b.sql"))
            var report = try migrator.migrate()
            XCTAssertEqual(report.applied.map(\.id), ["1_a.sql"])
            XCTAssertEqual(report.failure?.id, "2_b.sql")
            XCTAssertTrue(report.failure?.message.contains("cannot read the migration file") ?? false)
            try write("CREATE TABLE b (x INTEGER);", to: project.root.appendingPathComponent("sql/2_b.sql"))
            try FileManager.default.removeItem(at: project.root.appendingPathComponent("csv/t.csv"))
            report = try migrator.migrate()
            XCTAssertEqual(report.failure?.id, "t.csv")
            XCTAssertTrue(report.failure?.message.contains("cannot open") ?? false, "\(String(describing: report.failure))")
            XCTAssertEqual(try project.connection().scalar("SELECT count(*) FROM a", as: Int.self), 0)
        }
    }

    func testAManifestChangedBetweenPlanAndMigrateIsRefused() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);"])
            let plan = try project.strataOnBackend(["plan", "--format", "json"])
            let id = try XCTUnwrap((JSONSerialization.jsonObject(with: Data(plan.stdout.utf8)) as? [String: Any])?["planId"] as? String)
            try project.file("sql/1_a.sql", "CREATE TABLE a (x INTEGER, y INTEGER);")
            try project.file("sql/2_b.sql", "DROP TABLE a;")
            let refused = try project.strataOnBackend(["migrate", "--plan-id", id])
            XCTAssertEqual(refused.status, 3)
            XCTAssertTrue(refused.stderr.contains("the plan changed since it was reviewed"), refused.stderr)
            XCTAssertEqual(backend.leftoverFiles(project), [])
            XCTAssertFalse(try project.connection().tableExists("a"))
            let newPlan = try project.migrator().plan()
            XCTAssertEqual(try project.strataOnBackend(["migrate", "--plan-id", newPlan.id]).status, 0)
            XCTAssertTrue(try project.connection().tableExists("strata_history"))
        }
    }
}

extension TestBackend {
    /// The database's schema as text in a stable order, to tell two states of one database apart.
    func schemaText(_ db: any DatabaseConnection) throws -> String {
        switch kind {
        case .sqlite: try (db as! Database).canonicalSchema()
        case .postgres: try PostgresTestDatabase.contents(of: db as! PostgresConnection)
        }
    }

    /// What the database's own consistency check finds wrong with its storage: nothing when it is intact.
    func integrityProblems(_ db: any DatabaseConnection) throws -> [String] {
        switch kind {
        case .sqlite:
            let found = try db.rows("PRAGMA integrity_check").map { try $0.get(0, as: String.self) }
            return found == ["ok"] ? [] : found
        // The server keeps its storage consistent itself; there is nothing for a client to check.
        case .postgres: return []
        }
    }

    /// Lets the database on this connection grow to about `kilobytes` only, so a write needing more fails as on a
    /// full disk (SQLite: `max_page_count`).
    func limitSpace(of db: any DatabaseConnection, toKilobytes kilobytes: Int) throws {
        switch kind {
        case .sqlite:
            let pageSize = try XCTUnwrap(try db.scalar("PRAGMA page_size", as: Int.self))
            try db.execute("PRAGMA max_page_count = \(kilobytes * 1024 / pageSize)", .none)
        case .postgres: throw XCTSkip("PostgreSQL has no per-database size limit (tests needing one ask for .sizeLimit)")
        }
    }

    /// The database's message for a write refused because the disk is full.
    var diskFullMessage: String {
        switch kind {
        case .sqlite: "database or disk is full"
        case .postgres: "could not extend file"
        }
    }

    /// Runs `body` with every COMMIT on `db` failing (SQLite: a commit hook that turns each into a rollback).
    func failingEveryCommit<T>(on db: any DatabaseConnection, _ body: () throws -> T) throws -> T {
        switch kind {
        case .sqlite:
            let handle = (db as! Database).handle
            sqlite3_commit_hook(handle, { _ in 1 }, nil)
            defer { sqlite3_commit_hook(handle, nil, nil) }
            return try body()
        case .postgres: throw XCTSkip("no way to fail every COMMIT on PostgreSQL (tests needing one ask for .failingCommits)")
        }
    }

    /// Files beside the project's database that a failed or refused run must not leave (SQLite's rollback journal).
    func leftoverFiles(_ project: Project) -> [String] {
        switch kind {
        case .sqlite: [project.databasePath + "-journal"].filter { FileManager.default.fileExists(atPath: $0) }
        case .postgres: []
        }
    }
}
