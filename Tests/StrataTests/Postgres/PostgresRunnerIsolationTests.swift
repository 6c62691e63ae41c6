import Foundation
import Strata
@testable import StrataCore
@testable import StrataPostgres
import XCTest

/// What a migration file can do to the session, the locks and the history it runs beside, and what the runner
/// does about it: the history stays where it was created, is written as the user Strata connected as, and a step
/// that released the deployers' lock, turned `standard_conforming_strings` off, or hid several statements in one
/// piece is stopped before anything of it is kept. Each case here was once a silent wrong result.
final class PostgresRunnerIsolationTests: XCTestCase {
    /// A project with `files` under `sql/` and a manifest (`migrations` inside `<migrations>`), and a connection.
    private func project(_ files: [String: String], migrations: String = "") throws -> (Migrator, PostgresConnection, URL) {
        let root = try makeTemporaryDirectory(self)
        for (name, text) in files { try write(text, to: root.appendingPathComponent("sql/\(name)")) }
        try write(#"<manifest version="1"><migrations directory="sql">\#(migrations)</migrations></manifest>"#,
                  to: root.appendingPathComponent("manifest.xml"))
        let connection = try PostgresConnection(url: try PostgresServer.shared().url(for: root), lockTimeout: .seconds(10))
        return (Migrator(manifest: try Manifest.load(path: root.appendingPathComponent("manifest.xml").path), database: connection),
                connection, root)
    }

    /// A new session and migrator on the same project, as the next deploy would open them.
    private func reopened(_ migrator: Migrator, _ root: URL) throws -> (Migrator, PostgresConnection) {
        let connection = try PostgresConnection(url: try PostgresServer.shared().url(for: root), lockTimeout: .seconds(10))
        return (Migrator(manifest: try Manifest.load(path: migrator.manifest.path), database: connection), connection)
    }

    // MARK: Where the history is

    /// The default `search_path` is `"$user", public`: a migration creating a schema named after the login role
    /// puts a new schema first. The history stays in `public`, so nothing runs twice.
    func testASchemaNamedAfterTheLoginRoleDoesNotMoveTheHistory() throws {
        let (migrator, db, root) = try project([
            "001_schema.sql": "DO $$ BEGIN EXECUTE format('CREATE SCHEMA %I', current_user); END $$;",
            "002_money.sql": "CREATE TABLE public.accounts (balance int); INSERT INTO public.accounts VALUES (100);",
        ])
        XCTAssertEqual(try migrator.migrate().applied.count, 2)
        XCTAssertEqual(db.historySchema, "public")
        let (next, nextDB) = try reopened(migrator, root)
        XCTAssertEqual(nextDB.historySchema, "public")
        XCTAssertEqual(try next.status().map(\.state), [.applied, .applied])
        XCTAssertEqual(try next.migrate().applied, [])
        XCTAssertEqual(try nextDB.scalar("SELECT balance FROM public.accounts", as: Int.self), 100)
    }

    /// `ALTER DATABASE … SET search_path` putting an application schema first keeps the history found on the path;
    /// a path that no longer includes the history's schema is refused instead of starting an empty history.
    func testAHistoryOutsideTheSearchPathIsRefusedNotReplaced() throws {
        let (migrator, db, root) = try project(["001_app.sql": "CREATE SCHEMA app; CREATE TABLE app.t (id int);"])
        XCTAssertEqual(try migrator.migrate().applied.count, 1)
        let database = try XCTUnwrap(try db.scalar("SELECT current_database()", as: String.self))
        try db.execute("ALTER DATABASE \(quoteIdentifier(database)) SET search_path = app, public")
        let (first, firstDB) = try reopened(migrator, root)
        XCTAssertEqual(firstDB.historySchema, "public")
        XCTAssertEqual(try first.status().map(\.state), [.applied])

        try db.execute("ALTER DATABASE \(quoteIdentifier(database)) SET search_path = app")
        let (second, secondDB) = try reopened(migrator, root)
        let error = assertThrows(DatabaseError.self) { _ = try second.status() }
        XCTAssertTrue(error?.message.contains("strata_history exists in schema public") ?? false, "\(String(describing: error))")
        XCTAssertEqual(try secondDB.scalar("SELECT to_regclass('app.strata_history') IS NULL", as: Bool.self), true)
        XCTAssertThrowsError(try second.migrate())
        XCTAssertEqual(try secondDB.scalar("SELECT to_regclass('app.strata_history') IS NULL", as: Bool.self), true)
        // Named in the manifest, the history is used wherever the path points.
        let named = try PostgresConnection(url: try PostgresServer.shared().url(for: root), schema: "public")
        XCTAssertEqual(try Migrator(manifest: migrator.manifest, database: named).status().map(\.state), [.applied])
    }

    // MARK: Exactly once

    /// `pg_advisory_unlock_all()` in a file releases the deployers' lock too; another deployer could then run the
    /// same step. The step is rolled back, saying why.
    func testAStepThatReleasesTheDeployersLockIsRolledBack() throws {
        let (migrator, db, _) = try project([
            "001_log.sql": "CREATE TABLE log (who text);",
            "002_backfill.sql": "SELECT pg_advisory_lock(42);\nINSERT INTO log VALUES ('backfill');\nSELECT pg_advisory_unlock_all();\n",
        ])
        let report = try migrator.migrate()
        XCTAssertEqual(report.applied.map(\.id), ["001_log.sql"])
        let failure = try XCTUnwrap(report.failure)
        XCTAssertEqual(failure.id, "002_backfill.sql")
        XCTAssertEqual(failure.aftermath, .rolledBack)
        XCTAssertTrue(failure.message.contains("released Strata's deployers' advisory lock"), failure.message)
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM log", as: Int.self), 0)
        XCTAssertNil(try db.history.record(kind: .migration, identity: "002_backfill.sql"))
    }

    // MARK: Reading strings as the server does

    /// A legacy database whose sessions start with `standard_conforming_strings = off`: Strata's sessions turn it
    /// on, so `'C:\new\table'` is stored as written, as the splitter read it.
    func testBackslashesAreStoredAsWrittenWhateverTheDatabaseDefault() throws {
        let (migrator, db, root) = try project(["001_paths.sql": #"CREATE TABLE paths (p text); INSERT INTO paths VALUES ('C:\new\table');"#])
        let database = try XCTUnwrap(try db.scalar("SELECT current_database()", as: String.self))
        try db.execute("ALTER DATABASE \(quoteIdentifier(database)) SET standard_conforming_strings = off")
        let (legacy, legacyDB) = try reopened(migrator, root)
        XCTAssertNil(try legacy.migrate().failure)
        XCTAssertEqual(try legacyDB.scalar("SELECT p FROM paths", as: String.self), #"C:\new\table"#)
    }

    /// A file turning the setting off where the lint cannot see it (`set_config`) is stopped at that statement.
    func testAFileTurningStandardConformingStringsOffIsStoppedThere() throws {
        let (migrator, db, _) = try project([
            "001_paths.sql": "CREATE TABLE paths (p text);\nSELECT set_config('standard_conforming_strings', 'off', false);\nINSERT INTO paths VALUES ('C:\\new');\n",
        ])
        let failure = try XCTUnwrap(try migrator.migrate().failure)
        XCTAssertEqual(failure.line, 2)
        XCTAssertTrue(failure.message.contains("standard_conforming_strings off"), failure.message)
        XCTAssertFalse(try db.tableExists("paths"))
        XCTAssertEqual(try db.scalar("SHOW standard_conforming_strings", as: String.self), "on")
    }

    /// psql's rule counts a column named `begin` in a `BEGIN ATOMIC` body as a block, so the splitter reads the rest
    /// of the file as one piece, a `COMMIT` in it. The server refuses a piece of several statements: nothing of it
    /// runs, the file is rolled back, and the message says why.
    func testSeveralStatementsTakenForOneAreRefusedNotCommittedPartWay() throws {
        let (migrator, db, _) = try project([
            "001_periods.sql": """
                CREATE TABLE periods (id int PRIMARY KEY, begin date NOT NULL);
                CREATE FUNCTION first_begin() RETURNS date LANGUAGE sql
                BEGIN ATOMIC
                  SELECT begin FROM periods ORDER BY id LIMIT 1;
                END;
                INSERT INTO periods VALUES (1, '2024-01-01');
                COMMIT;
                INSERT INTO periods VALUES (2, '2024-02-01');
                """,
        ])
        let failure = try XCTUnwrap(try migrator.migrate().failure)
        XCTAssertEqual(failure.line, 2)
        XCTAssertEqual(failure.aftermath, .rolledBack)
        XCTAssertTrue(failure.message.contains("several statements"), failure.message)
        XCTAssertFalse(try db.tableExists("periods"))
        XCTAssertNil(try db.history.record(kind: .migration, identity: "001_periods.sql"))
    }

    // MARK: Session state and the history

    /// A file that switches role (as `pg_dump --role` writes) or makes its session read-only: the history is still
    /// written as the user Strata connected as, in and outside a transaction, and the next file starts clean.
    func testARoleOrReadOnlySessionAFileSetsDoesNotDecideWhoWritesTheHistory() throws {
        let role = "strata_owner_\(UUID().uuidString.prefix(8).lowercased())"
        let admin = try PostgresConnection(url: try PostgresServer.shared().url(database: "postgres"))
        try admin.execute("CREATE ROLE \(role)")
        let (migrator, db, _) = try project([
            "001_grant.sql": "GRANT CREATE ON SCHEMA public TO \(role);",
            "002_owned.sql": "SET ROLE \(role);\nCREATE TABLE owned (id int);",
            "003_none.sql": "SET ROLE \(role);\nCREATE TABLE owned_too (id int);\nSET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY;",
            "004_after.sql": "CREATE TABLE after (id int);",
            "005_prepare.sql": "PREPARE shown AS SELECT 1;",
            "006_prepare.sql": "PREPARE shown AS SELECT 2;",
        ], migrations: #"<migration file="003_none.sql" transaction="none"/>"#)
        let report = try migrator.migrate()
        XCTAssertNil(report.failure, "\(String(describing: report.failure))")
        XCTAssertEqual(report.applied.count, 6)
        XCTAssertEqual(try db.scalar("SELECT tableowner FROM pg_tables WHERE tablename = 'owned'", as: String.self), role)
        XCTAssertEqual(try db.scalar("SELECT tableowner FROM pg_tables WHERE tablename = 'owned_too'", as: String.self), role)
        XCTAssertNotEqual(try db.scalar("SELECT tableowner FROM pg_tables WHERE tablename = 'after'", as: String.self), role)
        XCTAssertEqual(try db.history.all().filter(\.isApplied).count, 6)
        try db.execute("DROP OWNED BY \(role)")
        try admin.execute("DROP ROLE \(role)")
    }

    /// A `transaction="none"` file that drops the schema holding the history: the failure says the history is gone,
    /// not that it still says `running` or that the step is recorded failed.
    func testANoneFileThatDropsTheHistorySaysSoAndNothingUntrue() throws {
        let (migrator, db, _) = try project([
            "001_t.sql": "CREATE TABLE t (id int);",
            "002_reset.sql": "DROP SCHEMA public CASCADE;\nCREATE SCHEMA public;",
        ], migrations: #"<migration file="002_reset.sql" transaction="none"/>"#)
        let failure = try XCTUnwrap(try migrator.migrate().failure)
        XCTAssertEqual(failure.id, "002_reset.sql")
        guard case .unrecorded(let kept) = failure.aftermath else { return XCTFail("\(failure.aftermath)") }
        XCTAssertTrue(kept.contains("strata_history no longer exists"), kept)
        XCTAssertFalse(failure.description.contains("recorded failed"), failure.description)
        XCTAssertFalse(failure.description.contains("still says running"), failure.description)
        XCTAssertFalse(try db.history.exists())
    }

    /// The runner's server process ended mid-step (`pg_terminate_backend`, a failover): the step's own failure is
    /// reported, with what this run applied before it, not an error from putting the session back.
    func testARunnerWhoseConnectionIsEndedReportsTheStepAndWhatItApplied() throws {
        for transaction in ["", #" transaction="none""#] {
            let project = try Project(self, backend: .postgres, manifestBody: """
                <migrations directory="sql"><migration file="002_slow.sql"\(transaction)/></migrations>
                """, files: [
                    "sql/001_t.sql": "CREATE TABLE t (id int);",
                    "sql/002_slow.sql": "INSERT INTO t VALUES (1);\nSELECT pg_sleep(60);\nINSERT INTO t VALUES (2);",
                ])
            let watcher = try PostgresTestDatabase(project.root).connection
            let (process, out, err) = try startStrata(["migrate", "--format", "json", "--manifest", project.manifestPath,
                                                       "--database", project.location], in: project.root)
            let deadline = ContinuousClock.now + .seconds(60)
            var ended = false
            while !ended, ContinuousClock.now < deadline, process.isRunning {
                ended = try watcher.scalar("""
                    SELECT count(pg_terminate_backend(pid)) > 0 FROM pg_stat_activity
                    WHERE datname = current_database() AND query LIKE 'SELECT pg_sleep(60)%'
                    """, as: Bool.self) ?? false
                if !ended { Thread.sleep(forTimeInterval: 0.02) }
            }
            XCTAssertTrue(ended, "the step never ran its sleep")
            let stdout = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            XCTAssertEqual(process.terminationStatus, 1, stderr)
            let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any], stdout)
            XCTAssertEqual((json["applied"] as? [[String: Any]])?.compactMap { $0["id"] as? String }, ["001_t.sql"], stdout)
            let failure = try XCTUnwrap(json["failure"] as? [String: Any], stdout)
            XCTAssertEqual(failure["id"] as? String, "002_slow.sql")
            XCTAssertEqual(failure["line"] as? Int, 2, stdout + stderr)
            XCTAssertFalse(stderr.contains("RESET ALL"), stderr)
            let state = (failure["aftermath"] as? [String: Any])?["state"] as? String
            XCTAssertEqual(state, transaction.isEmpty ? "rolled-back" : "unrecorded", stdout)
            let rows = try watcher.scalar("SELECT count(*) FROM t", as: Int.self)
            XCTAssertEqual(rows, transaction.isEmpty ? 0 : 1)
        }
    }
}
