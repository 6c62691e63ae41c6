import Foundation
import XCTest
import StrataCore
@testable import StrataPostgres

/// `rehearse`, `migrate` (seeds included), `status` and `plan` through PgBouncer in transaction pooling, and what
/// `--direct-database` accepts.
final class PostgresPoolerCommandsTests: XCTestCase {
    func testTheCommandsWorkThroughATransactionPooler() throws {
        let bouncer = try PgBouncer.start(self, mode: .transaction, poolSize: 2)
        let project = try Project(self, backend: .postgres, manifestBody: """
            <migrations directory="sql"/><seeds><seed file="csv/a.csv" table="a"/></seeds>
            """, files: [
                "sql/001_a.sql": "CREATE TABLE a (id int PRIMARY KEY, name text NOT NULL, at timestamptz);",
                "csv/a.csv": "id,name,at\n1,Ursula,2026-01-02T03:04:05Z\n2,Octavia,\n",
            ])
        let server = try PostgresServer.shared()
        let database = try server.database(for: project.root)
        let pooled = bouncer.url(database: database)
        let direct = server.url(database: database)
        func strata(_ arguments: [String]) throws -> CommandResult {
            try project.strata(arguments + ["--database", pooled, "--format", "json"])
        }

        let rehearsal = try strata(["rehearse"])
        XCTAssertEqual(rehearsal.status, 0, rehearsal.stderr + rehearsal.stdout)
        XCTAssertEqual(try bouncer.psql(database: database, "SELECT to_regclass('public.a') IS NULL"), "t", "the rehearsal kept nothing")

        let migrate = try strata(["migrate"])
        XCTAssertEqual(migrate.status, 0, migrate.stderr + migrate.stdout)
        XCTAssertEqual(try bouncer.psql(database: database, "SELECT string_agg(id || ':' || name || ':' || coalesce(at::text, '-'), ',' ORDER BY id) FROM a"),
                       "1:Ursula:" + (try bouncer.psql(database: database, "SELECT timestamptz '2026-01-02T03:04:05Z'::text")) + ",2:Octavia:-")
        let status = try strata(["status"])
        XCTAssertEqual(status.status, 0, status.stderr + status.stdout)
        XCTAssertEqual(try bouncer.psql(database: database, "SHOW IntervalStyle"), "postgres")

        // A transaction="none" step: planned with the refusal, refused with a pooled --direct-database before anything
        // ran, applied with a direct one.
        try project.file("manifest.xml", #"<manifest version="1">"# + project.backend.databaseElement(project.root) + """
            <migrations directory="sql"><migration file="003_index.sql" transaction="none"/></migrations><seeds><seed file="csv/a.csv" table="a"/></seeds></manifest>
            """)
        try project.file("sql/002_b.sql", "CREATE TABLE b (id int);")
        try project.file("sql/003_index.sql", "CREATE INDEX CONCURRENTLY a_name ON a (name);")
        let plan = try strata(["plan"])
        XCTAssertTrue(plan.stdout.contains("\"pooler\""), plan.stdout)
        let pooledDirect = try project.strata(["migrate", "--database", pooled, "--direct-database", pooled, "--format", "json"])
        XCTAssertEqual(pooledDirect.status, 3, pooledDirect.stderr + pooledDirect.stdout)
        XCTAssertTrue(pooledDirect.stdout.contains("also reaches the server through a connection pooler"), pooledDirect.stdout)
        XCTAssertEqual(try bouncer.psql(database: database, "SELECT to_regclass('public.b') IS NULL"), "t", "nothing ran")
        let withDirect = try project.strata(["migrate", "--database", pooled, "--direct-database", direct, "--format", "json"])
        XCTAssertEqual(withDirect.status, 0, withDirect.stderr + withDirect.stdout)
        XCTAssertEqual(try bouncer.psql(database: database, "SELECT to_regclass('public.a_name') IS NOT NULL AND to_regclass('public.b') IS NOT NULL"), "t")
    }

    /// A `--direct-database` naming a database of the same name on another server is refused before anything runs:
    /// its locks are not the migrated database's.
    func testADirectDatabaseOfTheSameNameOnAnotherServerIsRefused() throws {
        guard let programs = PostgresPrograms.find(), ProcessInfo.processInfo.environment["STRATA_TEST_POSTGRES_URL"] == nil else {
            throw XCTSkip("second-server test skipped: no PostgreSQL server binaries, or STRATA_TEST_POSTGRES_URL names an existing server")
        }
        let bouncer = try PgBouncer.start(self, mode: .transaction, poolSize: 2)
        let project = try Project(self, backend: .postgres, manifestBody: """
            <migrations directory="sql"><migration file="001_index.sql" transaction="none"/></migrations>
            """, files: ["sql/001_index.sql": "CREATE TABLE t (id int);"])
        let database = try PostgresServer.shared().database(for: project.root)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("strata-pg-other-\(UUID().uuidString.prefix(8))")
        try programs.makeDirectory(directory)
        let other = try PostgresInstance.initdb(programs, data: directory.appendingPathComponent("data"), socketDirectory: directory, port: 5432)
        addTeardownBlock {
            other.stop(mode: "immediate")
            try? FileManager.default.removeItem(at: directory)
        }
        try other.start()
        try PostgresConnection(url: other.url(database: "postgres")).executeSimple("CREATE DATABASE " + quoteIdentifier(database))
        let run = try project.strata(["migrate", "--database", bouncer.url(database: database),
                                      "--direct-database", other.url(database: database)])
        XCTAssertEqual(run.status, 3, run.stderr)
        XCTAssertTrue(run.stderr.contains("on another server"), run.stderr)
        XCTAssertEqual(try bouncer.psql(database: database, "SELECT to_regclass('public.t') IS NULL"), "t", "nothing ran")
    }

    /// A session advisory lock a rehearsed step takes and keeps outlives the rollback on the pooled server session the
    /// application gets next: through the pooler it is released inside the rehearsal's transaction, on that session,
    /// and reported; no session is left holding it.
    func testARehearsalThroughATransactionPoolerLeavesNoSessionLock() throws {
        let bouncer = try PgBouncer.start(self, mode: .transaction, poolSize: 1)
        let project = try Project(self, backend: .postgres, files: [
            "sql/001_t.sql": "CREATE TABLE t (id int);",
            "sql/002_lock.sql": "SELECT pg_advisory_lock(424242);\nINSERT INTO t VALUES (1);",
        ])
        let server = try PostgresServer.shared()
        let database = try server.database(for: project.root)
        let rehearsal = try project.strata(["rehearse", "--database", bouncer.url(database: database), "--format", "json"])
        XCTAssertEqual(rehearsal.status, 0, rehearsal.stderr + rehearsal.stdout)
        XCTAssertTrue(rehearsal.stdout.contains("424242 (exclusive)"), rehearsal.stdout)
        XCTAssertTrue(rehearsal.stdout.contains("released by the rehearsal"), rehearsal.stdout)
        XCTAssertEqual(try bouncer.psql(database: database, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 424242"), "0")
        XCTAssertEqual(try bouncer.psql(database: database, "SELECT to_regclass('public.t') IS NULL"), "t")
    }

    func testADirectDatabaseIsForAPostgreSQLDatabase() throws {
        let project = try Project(self, files: ["sql/001_t.sql": "CREATE TABLE t (id int);"])
        let result = try project.strata(["migrate", "--database", project.databasePath, "--direct-database", "postgresql:///x"])
        XCTAssertEqual(result.status, 2, result.stderr)
        XCTAssertTrue(result.stderr.contains("--direct-database"), result.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: project.databasePath))
    }
}
