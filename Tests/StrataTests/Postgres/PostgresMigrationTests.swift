import Foundation
import Strata
@testable import StrataCore
@testable import StrataPostgres
import XCTest

/// The runner on PostgreSQL where PostgreSQL's own rules decide: transactional DDL, errors placed by the server's
/// error position, session state reset between files, `COPY … FROM stdin` blocks, advisory-lock claims, and
/// servers that cannot be written. What every backend shares is tested by the conformance suite.
final class PostgresMigrationTests: XCTestCase {
    /// A project with `files` under `sql/` and a manifest listing them (with `migrations` as the
    /// `<migrations>` element's children), and a connection to a fresh database of its own.
    func project(_ files: [String: String], migrations: String = "") throws -> (Migrator, PostgresConnection, URL) {
        let server = try PostgresServer.shared()
        let root = try makeTemporaryDirectory(self)
        for (name, text) in files { try write(text, to: root.appendingPathComponent("sql/\(name)")) }
        try write(#"<manifest version="1"><migrations directory="sql">\#(migrations)</migrations></manifest>"#,
                  to: root.appendingPathComponent("manifest.xml"))
        let url = try server.url(for: root)
        let connection = try PostgresConnection(url: url, lockTimeout: .seconds(10))
        let manifest = try Manifest.load(path: root.appendingPathComponent("manifest.xml").path)
        return (Migrator(manifest: manifest, database: connection), connection, root)
    }

    func testFilesApplyOnceEachInItsOwnTransactionWithATimestampedHistory() throws {
        let (migrator, db, _) = try project([
            "001_authors.sql": "CREATE TABLE authors (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name text NOT NULL);",
            "002_books.sql": """
                CREATE TABLE books (isbn text PRIMARY KEY, author_id bigint REFERENCES authors (id));
                CREATE FUNCTION shout(t text) RETURNS text LANGUAGE plpgsql AS $$ BEGIN RETURN upper(t) || '!'; END $$;
                """,
        ])
        let report = try migrator.migrate()
        XCTAssertNil(report.failure)
        XCTAssertEqual(report.applied.map(\.id), ["001_authors.sql", "002_books.sql"])
        XCTAssertEqual(try db.scalar("SELECT shout('hi')", as: String.self), "HI!")
        XCTAssertEqual(try migrator.migrate().applied, [])
        XCTAssertEqual(try db.scalar("""
            SELECT format_type(atttypid, atttypmod) FROM pg_attribute
            WHERE attrelid = 'public.strata_history'::regclass AND attname = 'applied_at'
            """, as: String.self), "timestamp with time zone")
        let records = try db.history.all()
        XCTAssertEqual(records.map(\.identity), ["001_authors.sql", "002_books.sql"])
        XCTAssertTrue(records[0].appliedAt.hasSuffix("Z"), records[0].appliedAt)
    }

    func testAFailingStatementNamesItsLineAndColumnAndRollsTheFileBack() throws {
        let (migrator, db, _) = try project([
            "001_bad.sql": """
                CREATE TABLE kept_only_if_all_ran (id int);

                INSERT INTO kept_only_if_all_ran
                VALUES (1), (nonsense_column);
                """,
        ])
        let failure = try XCTUnwrap(try migrator.migrate().failure)
        XCTAssertEqual(failure.line, 4)
        XCTAssertEqual(failure.column, 14)
        XCTAssertTrue(failure.message.contains("nonsense_column"), failure.message)
        XCTAssertFalse(try db.tableExists("kept_only_if_all_ran"))
        XCTAssertEqual(try db.history.all().filter { $0.identity == "001_bad.sql" }, [])
    }

    func testSessionStateAMigrationSetsDoesNotReachTheNextStepOrTheHistory() throws {
        // As pg_dump output does: an empty search_path, a lock timeout, a role-less session setting.
        let (migrator, db, _) = try project([
            "001_dump.sql": """
                SELECT pg_catalog.set_config('search_path', '', false);
                CREATE TABLE public.a (id int);
                SET lock_timeout = '1ms';
                SET statement_timeout = '1ms';
                """,
            "002_next.sql": "CREATE TABLE b (id int); SELECT pg_sleep(0.01);",
        ])
        XCTAssertNil(try migrator.migrate().failure)
        XCTAssertTrue(try db.tableExists("b"))
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM public.strata_history", as: Int.self), 2)
        XCTAssertEqual(try db.scalar("SHOW lock_timeout", as: String.self), "0")
        XCTAssertEqual(try db.scalar("SHOW TimeZone", as: String.self), "UTC")
    }

    func testCopyBlocksAsPgDumpWritesThemLoadTheirData() throws {
        let (migrator, db, _) = try project([
            "001_data.sql": """
                CREATE TABLE t (id int, note text);
                COPY public.t (id, note) FROM stdin;
                1\tsemi; colon 'quoted'
                2\t\\N
                \\.
                INSERT INTO t VALUES (3, 'after');
                """,
        ])
        XCTAssertNil(try migrator.migrate().failure)
        XCTAssertEqual(try db.rows("SELECT id, note FROM t ORDER BY id").map { $0["note"] },
                       [.text("semi; colon 'quoted'"), .null, .text("after")])
    }

    func testABadCopyRowIsNamedAndNothingOfTheFileStays() throws {
        let (migrator, db, _) = try project([
            "001_data.sql": """
                CREATE TABLE t (id int);
                COPY t (id) FROM stdin;
                1
                two
                \\.
                """,
        ])
        let failure = try XCTUnwrap(try migrator.migrate().failure)
        XCTAssertTrue(failure.message.contains("two"), failure.message)
        XCTAssertEqual(failure.line, 2)
        XCTAssertFalse(try db.tableExists("t"))
    }

    func testMetaCommandsOtherThanPgDumpsRestrictAreRefusedBeforeAnythingRuns() throws {
        let (migrator, db, _) = try project([
            "001_ok.sql": "\\restrict abc123\nCREATE TABLE t (id int);\n\\unrestrict abc123\n",
            "002_bad.sql": "CREATE TABLE u (id int);\n\\connect other\n",
        ])
        guard case .refused(let refusals)? = assertThrows(MigrationError.self, { try migrator.migrate() }) else {
            return XCTFail("not refused")
        }
        XCTAssertTrue(refusals.contains { "\($0)".contains("002_bad.sql:2:1") && "\($0)".contains("\\connect") }, "\(refusals)")
        XCTAssertFalse(try db.tableExists("t"))
        // Without the bad file, pg_dump's \restrict lines run as nothing.
        try FileManager.default.removeItem(at: migrator.manifest.directoryURL.appendingPathComponent("sql/002_bad.sql"))
        let again = Migrator(manifest: try Manifest.load(path: migrator.manifest.path), database: db)
        XCTAssertEqual(try again.migrate().applied.map(\.id), ["001_ok.sql"])
        XCTAssertTrue(try db.tableExists("t"))
    }

    func testConcurrentIndexBuildsRunOutsideATransactionAndAreClaimedWhileTheyRun() throws {
        let (migrator, db, _) = try project([
            "001_table.sql": "CREATE TABLE t (id int); INSERT INTO t SELECT generate_series(1, 1000);",
            "002_index.sql": "CREATE INDEX CONCURRENTLY t_id ON t (id);",
        ], migrations: #"<migration file="002_index.sql" transaction="none"/>"#)
        XCTAssertNil(try migrator.migrate().failure)
        XCTAssertEqual(try db.scalar("SELECT indisvalid FROM pg_index WHERE indexrelid = 't_id'::regclass", as: Bool.self), true)
        XCTAssertEqual(try db.history.record(kind: .migration, identity: "002_index.sql")?.state, .applied)
        // The claim is an advisory lock: held only while the step ran.
        XCTAssertFalse(PostgresStepLocks(connection: db).isHeld(kind: .migration, id: "002_index.sql"))
        let claim = try XCTUnwrap(try PostgresStepLocks(connection: db).claim(kind: .migration, id: "002_index.sql"))
        let other = try PostgresConnection(url: try PostgresServer.shared().url(for: migrator.manifest.directoryURL))
        XCTAssertTrue(PostgresStepLocks(connection: other).isHeld(kind: .migration, id: "002_index.sql"))
        XCTAssertNil(try PostgresStepLocks(connection: other).claim(kind: .migration, id: "002_index.sql"))
        claim.release()
        XCTAssertFalse(PostgresStepLocks(connection: other).isHeld(kind: .migration, id: "002_index.sql"))
    }

    /// A `CREATE UNIQUE INDEX CONCURRENTLY` that fails on duplicates leaves an INVALID index, as a killed one does:
    /// `status` says so (exit 3, JSON `unfinished`), and neither resolution is accepted until it is dropped.
    func testAnInvalidIndexLeftByAFailedConcurrentBuildIsShownAndBlocksResolve() throws {
        let project = try Project(self, backend: .postgres, manifestBody: """
            <migrations directory="sql"><migration file="002_unique.sql" transaction="none"/></migrations>
            """, files: [
                "sql/001_table.sql": "CREATE TABLE t (x int); INSERT INTO t VALUES (1), (1), (2);",
                "sql/002_unique.sql": "CREATE UNIQUE INDEX CONCURRENTLY t_x ON t (x);",
            ])
        let migrate = try project.strataOnBackend(["migrate"])
        XCTAssertEqual(migrate.status, 1, migrate.stderr)
        let db = try project.connection()
        XCTAssertEqual(try db.scalar("SELECT indisvalid FROM pg_index WHERE indexrelid = 'public.t_x'::regclass", as: Bool.self), false)

        let status = try project.strataOnBackend(["status"])
        XCTAssertEqual(status.status, 3, status.stderr)
        XCTAssertTrue(status.stderr.contains("index public.t_x on public.t is INVALID"), status.stderr)
        XCTAssertTrue(status.stderr.contains("DROP INDEX CONCURRENTLY public.t_x"), status.stderr)
        let json = try project.strataOnBackend(["status", "--format", "json"])
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let unfinished = try XCTUnwrap(object["unfinished"] as? [[String: Any]])
        XCTAssertEqual(unfinished.count, 1)
        XCTAssertEqual(unfinished.first?["name"] as? String, "public.t_x")
        XCTAssertEqual(unfinished.first?["table"] as? String, "public.t")

        for resolution in ["--applied", "--rolled-back"] {
            let resolve = try project.strataOnBackend(["resolve", "002_unique.sql", resolution])
            XCTAssertEqual(resolve.status, 3, resolve.stderr)
            XCTAssertTrue(resolve.stderr.contains("public.t_x"), resolve.stderr)
            XCTAssertEqual(try db.history.record(kind: .migration, identity: "002_unique.sql")?.state, .failed)
        }

        try db.execute("DROP INDEX CONCURRENTLY public.t_x")
        try db.execute("DELETE FROM t WHERE ctid = (SELECT min(ctid) FROM t WHERE x = 1)")
        XCTAssertEqual(try project.strataOnBackend(["resolve", "002_unique.sql", "--rolled-back"]).status, 0)
        let rerun = try project.strataOnBackend(["migrate"])
        XCTAssertEqual(rerun.status, 0, rerun.stderr)
        XCTAssertEqual(try db.scalar("SELECT indisvalid FROM pg_index WHERE indexrelid = 'public.t_x'::regclass", as: Bool.self), true)
        XCTAssertEqual(try project.strataOnBackend(["status"]).status, 0)
    }

    /// `CREATE INDEX CONCURRENTLY IF NOT EXISTS` over an INVALID index of that name does nothing and succeeds, which
    /// would record a step as applied with no usable index: a plan with a pending none step refuses first.
    func testAPendingNoneStepIsRefusedWhileAnInvalidIndexIsThere() throws {
        let (first, db, root) = try project(["001_table.sql": "CREATE TABLE t (x int); INSERT INTO t VALUES (1), (1);"])
        XCTAssertEqual(try first.migrate().applied.map(\.id), ["001_table.sql"])
        XCTAssertThrowsError(try db.execute("CREATE UNIQUE INDEX CONCURRENTLY t_x ON t (x)"))
        try write("CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS t_x ON t (x);", to: root.appendingPathComponent("sql/002_index.sql"))
        try write(#"<manifest version="1"><migrations directory="sql"><migration file="002_index.sql" transaction="none"/></migrations></manifest>"#,
                  to: root.appendingPathComponent("manifest.xml"))
        let migrator = Migrator(manifest: try Manifest.load(path: first.manifest.path), database: db)
        XCTAssertEqual(try migrator.unfinishedObjects().map(\.name), ["public.t_x"])
        guard case .refused(let refusals)? = assertThrows(MigrationError.self, { try migrator.migrate() }) else {
            return XCTFail("not refused")
        }
        XCTAssertEqual(refusals.map(\.reason), [.unfinished])
        XCTAssertNil(try db.history.record(kind: .migration, identity: "002_index.sql"))
    }

    /// A partitioned table's index made `ON ONLY` is invalid by design until each partition's index is attached (the
    /// manual's way to index without locking, often over two releases): not reported, and the release that attaches
    /// them is not refused. The copy an interrupted `REINDEX CONCURRENTLY` leaves is reported with the one fix that
    /// does not leave a duplicate.
    func testIndexesNoInterruptedBuildLeftAreNotReportedAndAReindexCopyIsOnlyDropped() throws {
        let (first, db, root) = try project([
            "001_parts.sql": """
                CREATE TABLE m (day date, v int) PARTITION BY RANGE (day);
                CREATE TABLE m_2024 PARTITION OF m FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
                CREATE INDEX m_v ON ONLY m (v);
                """,
        ])
        XCTAssertNil(try first.migrate().failure)
        XCTAssertEqual(try db.scalar("SELECT indisvalid FROM pg_index WHERE indexrelid = 'm_v'::regclass", as: Bool.self), false)
        XCTAssertEqual(try first.unfinishedObjects(), [])
        try write("CREATE INDEX CONCURRENTLY m_2024_v ON m_2024 (v);\nALTER INDEX m_v ATTACH PARTITION m_2024_v;",
                  to: root.appendingPathComponent("sql/002_attach.sql"))
        try write(#"<manifest version="1"><migrations directory="sql"><migration file="002_attach.sql" transaction="none"/></migrations></manifest>"#,
                  to: root.appendingPathComponent("manifest.xml"))
        let migrator = Migrator(manifest: try Manifest.load(path: first.manifest.path), database: db)
        let second = try migrator.migrate()
        XCTAssertNil(second.failure, "\(String(describing: second.failure))")
        XCTAssertEqual(second.applied.map(\.id), ["002_attach.sql"])
        XCTAssertEqual(try db.scalar("SELECT indisvalid FROM pg_index WHERE indexrelid = 'm_v'::regclass", as: Bool.self), true)

        try db.execute("CREATE TABLE t (x int)")
        try db.execute("INSERT INTO t VALUES (1), (1)")
        XCTAssertThrowsError(try db.execute("CREATE UNIQUE INDEX CONCURRENTLY t_x_ccnew ON t (x)"))
        let copy = try XCTUnwrap(try migrator.unfinishedObjects().first)
        XCTAssertEqual(copy.name, "public.t_x_ccnew")
        XCTAssertEqual(copy.fixes, ["DROP INDEX CONCURRENTLY public.t_x_ccnew"])
    }

    /// An index another session is building is invalid until it finishes; it is not reported as left behind.
    func testAnIndexBeingBuiltNowIsNotReportedAsUnfinished() throws {
        let (migrator, db, root) = try project(["001_table.sql": "CREATE TABLE t (x int); INSERT INTO t VALUES (1);"])
        XCTAssertNil(try migrator.migrate().failure)
        let url = try PostgresServer.shared().url(for: root)
        // An open transaction with a snapshot: the build commits its INVALID index, then waits for it to end.
        let holder = try PostgresConnection(url: url)
        try holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        XCTAssertEqual(try holder.scalar("SELECT count(*) FROM t", as: Int.self), 1)
        nonisolated(unsafe) let builder = try PostgresConnection(url: url)
        let built = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var buildError: (any Error)?
        Thread.detachNewThread {
            do { try builder.execute("CREATE INDEX CONCURRENTLY t_x ON t (x)") } catch { buildError = error }
            built.signal()
        }
        let deadline = Date().addingTimeInterval(60)
        while try db.scalar("SELECT count(*) FROM pg_class WHERE relname = 't_x'", as: Int.self) == 0, Date() < deadline {
            Thread.sleep(forTimeInterval: 0.02)
        }
        XCTAssertEqual(try db.scalar("SELECT indisvalid FROM pg_index WHERE indexrelid = 't_x'::regclass", as: Bool.self), false)
        XCTAssertEqual(try migrator.unfinishedObjects(), [])
        try holder.execute("COMMIT")
        built.wait()
        XCTAssertNil(buildError)
        XCTAssertEqual(try migrator.unfinishedObjects(), [])
    }

    func testADeployerWaitsForAnotherAndNamesItWhenItGivesUp() throws {
        let (_, db, root) = try project(["001.sql": "CREATE TABLE t (id int);"])
        let url = try PostgresServer.shared().url(for: root)
        let impatient = try PostgresConnection(url: url, lockTimeout: .milliseconds(300))
        try db.withWriteLock {
            XCTAssertThrowsError(try impatient.withWriteLock {}) { error in
                XCTAssertEqual((error as? DatabaseError)?.kind, .busy)
                XCTAssertTrue("\(error)".contains("held by server process"), "\(error)")
            }
        }
        XCTAssertNoThrow(try impatient.withWriteLock {})
    }

    func testAFunctionThatWritesTheHistoryIsStoppedByTheTablesGuard() throws {
        // The lint cannot see into a function body; the history table's own trigger refuses the write.
        let (migrator, db, _) = try project([
            "001_a.sql": "CREATE TABLE a (id int);",
            "002_launder.sql": """
                CREATE FUNCTION launder() RETURNS void LANGUAGE plpgsql AS $$ BEGIN DELETE FROM strata_history; END $$;
                SELECT launder();
                """,
        ])
        let report = try migrator.migrate()
        XCTAssertEqual(report.applied.map(\.id), ["001_a.sql"])
        let failure = try XCTUnwrap(report.failure)
        XCTAssertTrue(failure.message.contains("Strata's record of what was applied"), failure.message)
        XCTAssertEqual(try db.history.all().map(\.identity), ["001_a.sql"])
        XCTAssertThrowsError(try db.execute("TRUNCATE strata_history")) { error in
            XCTAssertEqual((error as? DatabaseError)?.kind, .authorization)
        }
        XCTAssertThrowsError(try db.execute("UPDATE strata_history SET state = 'applied'"))
        // Strata's own writes pass: resolving and rerunning work as before.
        XCTAssertNoThrow(try db.history.delete(kind: .migration, identity: "001_a.sql"))
        XCTAssertEqual(try db.history.all(), [])
    }

    func testTheExampleDatabaseMigratesOnPostgreSQLAndARerunDoesNothing() throws {
        let root = try makeTemporaryDirectory(self)
        let url = try PostgresServer.shared().url(for: root)
        let arguments = ["migrate", "--manifest", "manifests/example.xml", "--database", url, "--context", "dev"]
        let first = try runStrata(arguments, in: repositoryRoot())
        XCTAssertEqual(first.status, 0, first.stderr)
        let db = try PostgresConnection(url: url)
        XCTAssertEqual(try db.history.all().map(\.identity), ["001_create_authors.sql", "authors.csv", "002_create_books.sql",
                                                            "003_create_members_and_loans.sql", "004_vacuum.sql",
                                                            "books.csv", "members.csv", "demo_loans.csv"])
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM current_loans", as: Int.self),
                       try db.scalar("SELECT count(*) FROM loans WHERE returned_at IS NULL", as: Int.self))
        XCTAssertEqual(try db.scalar("SELECT in_print FROM books WHERE isbn = '9780547773742'", as: Bool.self), true)
        let again = try runStrata(arguments, in: repositoryRoot())
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertTrue(again.stdout.contains("Nothing to do"), again.stdout)
    }

    func testAServerThatCannotBeWrittenIsRefusedBeforeAnythingRuns() throws {
        let (_, db, root) = try project(["001.sql": "CREATE TABLE t (id int);"])
        let url = try PostgresServer.shared().url(for: root)
        let name = try XCTUnwrap(try db.scalar("SELECT current_database()", as: String.self))
        try db.execute("ALTER DATABASE \(quoteIdentifier(name)) SET default_transaction_read_only = on", .none)
        XCTAssertThrowsError(try PostgresTarget(url: url).openForWriting(timeout: .seconds(1))) { error in
            XCTAssertEqual((error as? DatabaseError)?.kind, .readOnly)
        }
        XCTAssertFalse(try db.tableExists("strata_history"))
    }
}

extension Manifest {
    /// The directory the manifest is in (a test project's root).
    var directoryURL: URL { URL(fileURLWithPath: path).deletingLastPathComponent() }
}
