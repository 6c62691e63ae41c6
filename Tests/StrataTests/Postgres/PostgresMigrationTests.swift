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
                SET lock_timeout = '1ms';
                SET statement_timeout = '1ms';
                CREATE TABLE public.a (id int);
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
        try db.execute("ALTER DATABASE \(quoteIdentifier(name)) SET default_transaction_read_only = on")
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
