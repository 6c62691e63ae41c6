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
    /// a path that no longer reaches it, or a `<database schema>` added to the manifest, finds no history where it
    /// looks, and another one recording this manifest's steps: refused, not started afresh (every step would run
    /// again). Another application's history, of other steps, is left alone.
    func testAHistoryElsewhereRecordingTheseStepsIsRefusedNotReplaced() throws {
        let (migrator, db, root) = try project(["001_app.sql": "CREATE SCHEMA app; CREATE TABLE app.t (id int);"])
        XCTAssertEqual(try migrator.migrate().applied.count, 1)
        let database = try XCTUnwrap(try db.scalar("SELECT current_database()", as: String.self))
        try db.execute("ALTER DATABASE \(quoteIdentifier(database)) SET search_path = app, public", .none)
        let (first, firstDB) = try reopened(migrator, root)
        XCTAssertEqual(firstDB.historySchema, "public")
        XCTAssertEqual(try first.status().map(\.state), [.applied])

        func assertRefused(_ migrator: Migrator, _ context: String) {
            for attempt in [{ _ = try migrator.status() }, { _ = try migrator.migrate() }] as [() throws -> Void] {
                guard case .refused(let refusals)? = assertThrows(MigrationError.self, attempt) else {
                    return XCTFail("not refused: \(context)")
                }
                XCTAssertEqual(refusals.map(\.reason), [.historyElsewhere], context)
                XCTAssertTrue(refusals.first?.message.contains("strata_history in schema public records 1 step of this manifest (001_app.sql)") ?? false,
                              "\(context): \(refusals)")
            }
        }
        try db.execute("ALTER DATABASE \(quoteIdentifier(database)) SET search_path = app", .none)
        let (second, secondDB) = try reopened(migrator, root)
        XCTAssertEqual(secondDB.historySchema, "app")
        assertRefused(second, "search_path without public")
        XCTAssertEqual(try secondDB.scalar("SELECT to_regclass('app.strata_history') IS NULL", as: Bool.self), true)

        try db.execute("ALTER DATABASE \(quoteIdentifier(database)) RESET search_path", .none)
        let url = try PostgresServer.shared().url(for: root)
        let moved = Migrator(manifest: migrator.manifest, database: try PostgresConnection(url: url, schema: "deploy"))
        assertRefused(moved, "<database schema=\"deploy\"> added")
        XCTAssertEqual(try db.scalar("SELECT to_regnamespace('deploy') IS NULL", as: Bool.self), true, "nothing created")
        // Named in the manifest, the history is used wherever the path points.
        let named = try PostgresConnection(url: url, schema: "public")
        XCTAssertEqual(try Migrator(manifest: migrator.manifest, database: named).status().map(\.state), [.applied])

        // Another application's manifest, with a history of its own in its own schema.
        try write("CREATE TABLE other_app (id int);", to: root.appendingPathComponent("other/001_other.sql"))
        try write(#"<manifest version="1"><migrations directory="other"/></manifest>"#, to: root.appendingPathComponent("other.xml"))
        let other = Migrator(manifest: try Manifest.load(path: root.appendingPathComponent("other.xml").path),
                             database: try PostgresConnection(url: url, schema: "other_app"))
        XCTAssertEqual(try other.migrate().applied.map(\.id), ["001_other.sql"])
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM other_app.strata_history", as: Int.self), 1)
    }

    /// Two applications in one database, each with its history in its own schema, both starting with a file named
    /// `001_init.sql`, each its own: the second's first migrate is not refused as history-elsewhere, because what
    /// the first application applied is not this file.
    func testTwoApplicationsWithTheirOwnHistoriesAndSameNamedFilesBothDeploy() throws {
        let root = try makeTemporaryDirectory(self)
        let url = try PostgresServer.shared().url(for: root)
        var migrators: [Migrator] = []
        for app in ["app_a", "app_b"] {
            try write("CREATE TABLE \(app)_items (id int);", to: root.appendingPathComponent("\(app)/001_init.sql"))
            try write(#"<manifest version="1"><migrations directory="\#(app)"/></manifest>"#, to: root.appendingPathComponent("\(app).xml"))
            migrators.append(Migrator(manifest: try Manifest.load(path: root.appendingPathComponent("\(app).xml").path),
                                      database: try PostgresConnection(url: url, schema: app)))
        }
        XCTAssertEqual(try migrators[0].migrate().applied.map(\.id), ["001_init.sql"])
        XCTAssertEqual(try migrators[1].status().map(\.state), [.pending])
        XCTAssertEqual(try migrators[1].migrate().applied.map(\.id), ["001_init.sql"])
        let db = try PostgresConnection(url: url)
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM app_b.strata_history", as: Int.self), 1)
        XCTAssertTrue(try db.tableExists("app_b_items"))
    }

    /// Two applications whose first files are the same boilerplate (`CREATE EXTENSION …`), each with its own
    /// history schema: the second's first run cannot tell the first's history from its own left behind, so it
    /// refuses, saying how to go on; `--new-history` (`MigrationOptions.newHistory`) says it is another
    /// application's, and once the second has a history of its own it is never asked again.
    func testASecondApplicationWithTheSameFirstFileStartsItsHistoryWhenTold() throws {
        let root = try makeTemporaryDirectory(self)
        let url = try PostgresServer.shared().url(for: root)
        func migrator(_ app: String) throws -> Migrator {
            try write("CREATE EXTENSION IF NOT EXISTS pgcrypto;", to: root.appendingPathComponent("\(app)/001_extensions.sql"))
            try write(#"<manifest version="1"><migrations directory="\#(app)"/></manifest>"#, to: root.appendingPathComponent("\(app).xml"))
            return Migrator(manifest: try Manifest.load(path: root.appendingPathComponent("\(app).xml").path),
                            database: try PostgresConnection(url: url, schema: "hist_\(app)"))
        }
        XCTAssertEqual(try migrator("a").migrate().applied.count, 1)
        let second = try migrator("b")
        guard case .refused(let refusals)? = assertThrows(MigrationError.self, { try second.migrate() }) else {
            return XCTFail("not refused")
        }
        XCTAssertEqual(refusals.map(\.reason), [.historyElsewhere])
        XCTAssertTrue(refusals.first?.message.contains("if it is another application's whose files match these, run once with --new-history") ?? false,
                      "\(refusals)")
        var options = MigrationOptions()
        options.newHistory = true
        XCTAssertEqual(try second.migrate(options).applied.map(\.id), ["001_extensions.sql"])
        XCTAssertEqual(try second.status().map(\.state), [.applied], "no flag needed once it has a history")
    }

    // MARK: Exactly once

    /// `pg_advisory_unlock_all()` in a file releases session locks only: the deployers' lock belongs to the step's
    /// transaction, so no other deployer can take the step while it runs, and the step is applied.
    func testAStepThatReleasesItsSessionsLocksKeepsTheDeployersLock() throws {
        let (migrator, db, _) = try project([
            "001_log.sql": "CREATE TABLE log (who text);",
            "002_backfill.sql": "SELECT pg_advisory_lock(42);\nINSERT INTO log VALUES ('backfill');\nSELECT pg_advisory_unlock_all();\n"
                + "SELECT 1 / count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory' AND classid = 21364::oid;\n",
        ])
        let report = try migrator.migrate()
        XCTAssertNil(report.failure)
        XCTAssertEqual(report.applied.map(\.id), ["001_log.sql", "002_backfill.sql"])
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM log", as: Int.self), 1)
    }

    /// Where the transaction writing a step's history row does not hold the deployers' lock (the server session
    /// changed under the step, as a pooler changes it between transactions), the step is refused saying so, with
    /// the two server processes, and the file is not blamed.
    func testALostDeployersLockNamesTheSessionChangeNotTheFile() throws {
        let (_, connection, _) = try project(["001_log.sql": "CREATE TABLE log (who text);"])
        XCTAssertThrowsError(try connection.withTransaction {
            connection.holdsDeployLock = true
            connection.deployLockSession = 1
            try connection.confirmDeployLockHeld()
        }) { error in
            let message = (error as? DatabaseError)?.message ?? "\(error)"
            XCTAssertTrue(message.contains("server process 1 took it"), message)
            XCTAssertTrue(message.contains("connection pooler"), message)
            XCTAssertFalse(message.contains("in the file"), message)
        }
    }

    /// A `transaction="none"` file that releases every advisory lock of its session does not release its claim,
    /// which lives on a session of its own: while it runs, `status` says `running` (exit 0), not dirty, and `resolve`
    /// refuses; nothing can take it for abandoned and run it again.
    func testANoneStepThatReleasesItsSessionsLocksIsStillKnownToBeRunning() throws {
        let project = try Project.postgresWithPendingNoneStep(self, first: "CREATE TABLE t (id int);", file: "002_none.sql",
            sql: "SELECT pg_advisory_unlock_all();\nSELECT count(*) FROM t;\nINSERT INTO t VALUES (1);")
        let blocker = try PostgresTestDatabase(project.root).connection
        try blocker.execute("BEGIN")
        try blocker.execute("LOCK TABLE t IN ACCESS EXCLUSIVE MODE")
        let (process, _, _) = try startStrata(["migrate", "--manifest", project.manifestPath, "--database", project.location],
                                              in: project.root)
        let watcher = try PostgresTestDatabase(project.root).connection
        let deadline = ContinuousClock.now + .seconds(60)
        while try watcher.scalar("""
            SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT count(*) FROM t%' AND wait_event_type = 'Lock'
            """, as: Int.self) == 0 {
            guard ContinuousClock.now < deadline, process.isRunning else { return XCTFail("the none step never waited for the lock") }
            Thread.sleep(forTimeInterval: 0.02)
        }
        XCTAssertTrue(PostgresStepLocks(connection: watcher).isHeld(kind: .migration, id: "002_none.sql"))
        let status = try project.strataOnBackend(["status", "--format", "json"])
        XCTAssertEqual(status.status, 0, status.stderr)
        XCTAssertTrue(status.stdout.contains(#""id":"002_none.sql","state":"running""#), status.stdout)
        XCTAssertTrue(status.stderr.contains("002_none.sql is being applied now"), status.stderr)
        let resolve = try project.strataOnBackend(["resolve", "002_none.sql", "--rolled-back"])
        XCTAssertEqual(resolve.status, 3, resolve.stderr)
        try blocker.execute("COMMIT")
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
        XCTAssertEqual(try watcher.scalar("SELECT count(*) FROM t", as: Int.self), 1)
        XCTAssertEqual(try watcher.history.record(kind: .migration, identity: "002_none.sql")?.state, .applied)
    }

    /// The claim of a running `transaction="none"` step lives on an idle session of its own, which the server may
    /// end with the runner alive: `idle_session_timeout` on the database, or a script terminating idle sessions.
    /// The step is still `running` (the session running the file is there), `resolve` refuses, and the file runs
    /// once; only when the runner is gone is the step dirty.
    func testANoneStepWhoseClaimSessionTheServerEndedIsStillRunningNotDirty() throws {
        for ending in ["idle_session_timeout", "pg_terminate_backend"] {
            let project = try Project.postgresWithPendingNoneStep(self, first: "CREATE TABLE t (id int);", file: "002_none.sql",
                sql: "SELECT count(*) FROM t;\nINSERT INTO t VALUES (1);")
            let watcher = try PostgresTestDatabase(project.root).connection
            let database = try XCTUnwrap(try watcher.scalar("SELECT current_database()", as: String.self))
            if ending == "idle_session_timeout" {
                try watcher.execute("ALTER DATABASE \(quoteIdentifier(database)) SET idle_session_timeout = '1s'", .none)
            }
            let blocker = try PostgresTestDatabase(project.root).connection
            try blocker.execute("BEGIN")
            try blocker.execute("LOCK TABLE t IN ACCESS EXCLUSIVE MODE")
            let (process, _, _) = try startStrata(["migrate", "--manifest", project.manifestPath, "--database", project.location],
                                                  in: project.root)
            func waitFor(_ what: String, _ condition: () throws -> Bool) throws {
                let deadline = ContinuousClock.now + .seconds(60)
                while try !condition() {
                    guard ContinuousClock.now < deadline, process.isRunning else { throw Project.SetupFailure(description: "\(ending): \(what)") }
                    Thread.sleep(forTimeInterval: 0.02)
                }
            }
            try waitFor("the none step never waited for the lock") {
                try watcher.scalar("""
                    SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT count(*) FROM t%' AND wait_event_type = 'Lock'
                    """, as: Int.self) != 0
            }
            if ending == "pg_terminate_backend" {
                try watcher.execute("""
                    SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                    WHERE datname = current_database() AND application_name = 'strata step claim'
                    """, .none)
            }
            try waitFor("the claim session never ended") {
                try watcher.scalar("""
                    SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'strata step claim'
                    """, as: Int.self) == 0
            }
            XCTAssertFalse(PostgresStepLocks(connection: watcher).isHeld(kind: .migration, id: "002_none.sql"), ending)
            let status = try project.strataOnBackend(["status", "--format", "json"])
            XCTAssertEqual(status.status, 0, "\(ending): \(status.stderr)")
            XCTAssertTrue(status.stdout.contains(#""id":"002_none.sql","state":"running""#), "\(ending): \(status.stdout)")
            let resolve = try project.strataOnBackend(["resolve", "002_none.sql", "--rolled-back"])
            XCTAssertEqual(resolve.status, 3, "\(ending): \(resolve.stderr)")
            XCTAssertTrue(resolve.stderr.contains("is being applied now"), "\(ending): \(resolve.stderr)")
            try blocker.execute("COMMIT")
            process.waitUntilExit()
            XCTAssertEqual(process.terminationStatus, 0, ending)
            try watcher.execute("ALTER DATABASE \(quoteIdentifier(database)) RESET idle_session_timeout", .none)
            XCTAssertEqual(try project.strataOnBackend(["migrate"]).status, 0)
            XCTAssertEqual(try watcher.scalar("SELECT count(*) FROM t", as: Int.self), 1, "\(ending): the file ran once")
            XCTAssertEqual(try watcher.history.record(kind: .migration, identity: "002_none.sql")?.state, .applied, ending)
        }
    }

    /// Once the runner is gone as well, its step is dirty, as before: the record names a session that no longer
    /// exists, and the claim is free.
    func testANoneStepWhoseRunnerSessionIsGoneIsDirty() throws {
        let project = try Project.postgresWithPendingNoneStep(self, first: "CREATE TABLE t (id int);", file: "002_none.sql",
            sql: "INSERT INTO t VALUES (1);")
        let db = try PostgresTestDatabase(project.root).connection
        // A session that ends when its connection is released here.
        let session = try XCTUnwrap(try RunnerSession.current(try PostgresConnection(url: project.location)))
        try db.history.create()
        try db.history.write(HistoryRecord(kind: .migration, identity: "002_none.sql", checksum: "x", checksumVersion: 2,
                                           appliedAt: "2026-01-01T00:00:00Z", durationMs: nil, rowCount: nil, state: .running,
                                           toolVersion: "0", appliedSQL: nil, runner: "elsewhere:1", error: nil,
                                           runnerSession: session))
        let deadline = ContinuousClock.now + .seconds(60)
        while try db.scalar("SELECT count(*) FROM pg_stat_activity WHERE pid = $1::int4",
                            [try XCTUnwrap(RunnerSession(session)).pid], as: Int.self) != 0 {
            guard ContinuousClock.now < deadline else { return XCTFail("the closed session never ended") }
            Thread.sleep(forTimeInterval: 0.02)
        }
        let status = try project.strataOnBackend(["status", "--format", "json"])
        XCTAssertTrue(status.stdout.contains(#""id":"002_none.sql","state":"dirty""#), status.stdout)
        XCTAssertEqual(try project.strataOnBackend(["resolve", "002_none.sql", "--rolled-back"]).status, 0)
    }

    // MARK: Reading strings as the server does

    /// A legacy database whose sessions start with `standard_conforming_strings = off`: Strata's sessions turn it
    /// on, so `'C:\new\table'` is stored as written, as the splitter read it.
    func testBackslashesAreStoredAsWrittenWhateverTheDatabaseDefault() throws {
        let (migrator, db, root) = try project(["001_paths.sql": #"CREATE TABLE paths (p text); INSERT INTO paths VALUES ('C:\new\table');"#])
        let database = try XCTUnwrap(try db.scalar("SELECT current_database()", as: String.self))
        try db.execute("ALTER DATABASE \(quoteIdentifier(database)) SET standard_conforming_strings = off", .none)
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

    /// A file setting `client_encoding` (as `pg_dump` of a LATIN1 database writes) would make the server read the
    /// rest, and the history row, in another encoding: refused up front when written as `SET`, stopped at the
    /// statement when done through `set_config`.
    func testAFileChangingTheClientEncodingIsRefusedOrStopped() throws {
        let (migrator, db, _) = try project(["001_café.sql": "SET client_encoding = 'LATIN1';\nCREATE TABLE t (name text);"])
        guard case .refused(let refusals)? = assertThrows(MigrationError.self, { try migrator.migrate() }) else {
            return XCTFail("not refused")
        }
        XCTAssertTrue(refusals.first?.message.contains("client_encoding to 'LATIN1'") ?? false, "\(refusals)")
        try write("SELECT set_config('client_encoding', 'LATIN1', false);\nCREATE TABLE t (name text);",
                  to: migrator.manifest.directoryURL.appendingPathComponent("sql/001_café.sql"))
        let failure = try XCTUnwrap(try migrator.migrate().failure)
        XCTAssertEqual(failure.line, 1)
        XCTAssertTrue(failure.message.contains("set client_encoding to LATIN1"), failure.message)
        XCTAssertFalse(try db.tableExists("t"))
        XCTAssertEqual(try db.scalar("SHOW client_encoding", as: String.self), "UTF8")
        try write("SET client_encoding = 'UTF8';\nSET NAMES 'utf-8';\nCREATE TABLE t (name text);",
                  to: migrator.manifest.directoryURL.appendingPathComponent("sql/001_café.sql"))
        XCTAssertNil(try migrator.migrate().failure)
        XCTAssertEqual(try db.history.all().map(\.identity), ["001_café.sql"])
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
        try admin.execute("CREATE ROLE \(role)", .none)
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
        try db.execute("DROP OWNED BY \(role)", .none)
        try admin.execute("DROP ROLE \(role)", .none)
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
