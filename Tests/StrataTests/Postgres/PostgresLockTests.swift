import Foundation
import Strata
@testable import StrataCore
@testable import StrataPostgres
import XCTest

/// Migrations on a busy PostgreSQL server: a step whose statement waits for a lock another session holds gives up
/// at the lock timeout, is rolled back, retried with a growing pause, and finally fails naming that session; steps
/// outside a transaction are never retried; statement timeouts bound every step. The other session here is an
/// application's long transaction, held open by the test; every wait in these tests ends on an event (the runner's
/// retry, the server's timeout), and the clock is read only to check the bounds the options set.
final class PostgresLockTests: XCTestCase {
    /// A project with `files` under `sql/` and a manifest listing them, and a connection to a fresh database.
    private func project(_ files: [String: String], migrations: String = "") throws -> (Migrator, PostgresConnection, URL) {
        let server = try PostgresServer.shared()
        let root = try makeTemporaryDirectory(self)
        for (name, text) in files { try write(text, to: root.appendingPathComponent("sql/\(name)")) }
        try write(#"<manifest version="1"><migrations directory="sql">\#(migrations)</migrations></manifest>"#,
                  to: root.appendingPathComponent("manifest.xml"))
        let connection = try PostgresConnection(url: try server.url(for: root), lockTimeout: .seconds(10))
        let manifest = try Manifest.load(path: root.appendingPathComponent("manifest.xml").path)
        return (Migrator(manifest: manifest, database: connection), connection, root)
    }

    /// The project's migrator after `name` was added to its `sql/` directory.
    private func adding(_ name: String, _ text: String, to migrator: Migrator) throws -> Migrator {
        try write(text, to: migrator.manifest.directoryURL.appendingPathComponent("sql/\(name)"))
        return Migrator(manifest: try Manifest.load(path: migrator.manifest.path), database: migrator.database)
    }

    /// Another session of the project's database inside an open transaction that ran `sql`: an application's long
    /// report, holding the locks `sql` took until the test ends it.
    private func longTransaction(_ root: URL, _ sql: String) throws -> (session: PostgresConnection, pid: Int64) {
        let session = try PostgresConnection(url: try PostgresServer.shared().url(for: root))
        try session.executeSimple("SET application_name = 'nightly report'")
        // Asked first, so that `sql` is the session's last query.
        let pid = try XCTUnwrap(try session.scalar("SELECT pg_backend_pid()", as: Int64.self))
        try session.executeSimple("BEGIN")
        try session.executeSimple(sql)
        return (session, pid)
    }

    private func columnExists(_ db: PostgresConnection, _ table: String, _ column: String) throws -> Bool {
        try db.scalar("SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_name = $1 AND column_name = $2)",
                      [table, column], as: Bool.self) ?? false
    }

    private static let accounts = ["001_accounts.sql": "CREATE TABLE accounts (id int PRIMARY KEY, balance int); INSERT INTO accounts VALUES (1, 10);"]

    func testAStepBehindALongTransactionGivesUpAfterItsRetriesNamingTheBlockerAndChangesNothing() throws {
        let (first, db, root) = try project(Self.accounts)
        XCTAssertNil(try first.migrate().failure)
        let migrator = try adding("002_note.sql", "\n  ALTER TABLE accounts ADD COLUMN note text;\n", to: first)
        let blocker = try longTransaction(root, "SELECT count(*) FROM accounts")
        let before = try PostgresTestDatabase.contents(of: db)

        var retries: [(retry: Int, of: Int, delay: Duration)] = []
        let options = MigrationOptions(lockTimeout: .milliseconds(300), lockRetries: 2, lockRetryDelay: .milliseconds(100))
        let started = ContinuousClock.now
        let report = try migrator.migrate(options) { event in
            if case .retrying(let id, let retry, let of, let delay, let reason) = event {
                XCTAssertEqual(id, "002_note.sql")
                XCTAssertTrue(reason.contains("lock timeout"), reason)
                retries.append((retry, of, delay))
            }
        }
        let elapsed = ContinuousClock.now - started

        let failure = try XCTUnwrap(report.failure)
        XCTAssertEqual(failure.databaseError?.kind, .lockNotAvailable)
        XCTAssertEqual(failure.databaseError?.code?.value, "55P03")
        XCTAssertEqual(failure.aftermath, .rolledBack)
        XCTAssertEqual(failure.line, 2, "placed at the statement that waited")
        XCTAssertEqual(retries.map(\.retry), [1, 2])
        XCTAssertEqual(retries.map(\.of), [2, 2])
        XCTAssertEqual(retries.map(\.delay), [.milliseconds(100), .milliseconds(200)], "the pause doubles")
        // Three attempts each waited out its lock timeout, with the two pauses between them; the upper bound is
        // only a guard against waiting without a limit.
        XCTAssertGreaterThanOrEqual(elapsed, .milliseconds(3 * 300 + 100 + 200))
        XCTAssertLessThan(elapsed, .seconds(60))
        for expected in ["canceling statement due to lock timeout", "AccessExclusiveLock on accounts",
                         "server process \(blocker.pid)", "application 'nightly report'", "idle in transaction",
                         "in a transaction for", "last query: SELECT count(*) FROM accounts", "gave up after 3 attempts"] {
            XCTAssertTrue(failure.message.contains(expected), "\(expected) in: \(failure.message)")
        }
        // Nothing changed: no column, no history row, every row as it was; the application's transaction goes on.
        XCTAssertFalse(try columnExists(db, "accounts", "note"))
        XCTAssertNil(try db.history.record(kind: .migration, identity: "002_note.sql"))
        XCTAssertEqual(try PostgresTestDatabase.contents(of: db), before)
        XCTAssertTrue(blocker.session.isInTransaction)
        try blocker.session.executeSimple("ROLLBACK")
    }

    func testAStepIsAppliedWhenTheBlockerEndsBetweenRetries() throws {
        let (first, db, root) = try project(Self.accounts)
        XCTAssertNil(try first.migrate().failure)
        let migrator = try adding("002_note.sql", "ALTER TABLE accounts ADD COLUMN note text;", to: first)
        let blocker = try longTransaction(root, "SELECT count(*) FROM accounts")

        var retries = 0
        let options = MigrationOptions(lockTimeout: .milliseconds(300), lockRetries: 5, lockRetryDelay: .milliseconds(100))
        let report = try migrator.migrate(options) { event in
            guard case .retrying = event else { return }
            retries += 1
            // The application's transaction ends once the runner has given up its first attempt.
            if retries == 1 {
                do { try blocker.session.executeSimple("COMMIT") } catch { XCTFail("\(error)") }
            }
        }
        XCTAssertNil(report.failure)
        XCTAssertEqual(report.applied.map(\.id), ["002_note.sql"])
        XCTAssertEqual(retries, 1, "the second attempt found the table free")
        XCTAssertTrue(try columnExists(db, "accounts", "note"))
        XCTAssertEqual(try db.history.record(kind: .migration, identity: "002_note.sql")?.state, .applied)
    }

    func testARowLockWaitNamesTheTransactionThatChangedTheRow() throws {
        let (first, db, root) = try project(Self.accounts)
        XCTAssertNil(try first.migrate().failure)
        let migrator = try adding("002_fix.sql", "UPDATE accounts SET balance = 0 WHERE id = 1;", to: first)
        let blocker = try longTransaction(root, "UPDATE accounts SET balance = balance + 1 WHERE id = 1")
        // One attempt, whose first look also opens the watching session: a timeout long enough for both.
        let report = try migrator.migrate(MigrationOptions(lockTimeout: .seconds(1), lockRetries: 0))
        let failure = try XCTUnwrap(report.failure)
        XCTAssertEqual(failure.databaseError?.kind, .lockNotAvailable)
        XCTAssertTrue(failure.message.contains("server process \(blocker.pid)"), failure.message)
        XCTAssertTrue(failure.message.contains("UPDATE accounts SET balance = balance + 1"), failure.message)
        XCTAssertFalse(failure.message.contains("gave up after"), "with no retries the first failure is the failure")
        try blocker.session.executeSimple("ROLLBACK")
        XCTAssertEqual(try db.scalar("SELECT balance FROM accounts", as: Int.self), 10)
    }

    func testASeedBehindALockIsRetriedAsAMigrationIs() throws {
        let (first, db, root) = try project(Self.accounts)
        XCTAssertNil(try first.migrate().failure)
        try write("id,balance\n2,20\n3,30\n", to: root.appendingPathComponent("csv/more.csv"))
        try write(#"<manifest version="1"><migrations directory="sql"/><seeds><seed file="csv/more.csv" table="accounts"/></seeds></manifest>"#,
                  to: root.appendingPathComponent("manifest.xml"))
        let migrator = Migrator(manifest: try Manifest.load(path: first.manifest.path), database: db)
        // SHARE mode lets others read the table and no one write to it, as a long CREATE INDEX would.
        let blocker = try longTransaction(root, "LOCK TABLE accounts IN SHARE MODE")
        var reasons: [String] = []
        let report = try migrator.migrate(MigrationOptions(lockTimeout: .milliseconds(300), lockRetries: 3,
                                                           lockRetryDelay: .milliseconds(100))) { event in
            guard case .retrying(_, _, _, _, let reason) = event else { return }
            reasons.append(reason)
            if reasons.count == 1 {
                do { try blocker.session.executeSimple("COMMIT") } catch { XCTFail("\(error)") }
            }
        }
        XCTAssertNil(report.failure)
        XCTAssertEqual(report.applied.map(\.id), ["more.csv"])
        XCTAssertEqual(reasons.count, 1)
        XCTAssertTrue(reasons.first?.contains("lock timeout") ?? false, "\(reasons)")
        XCTAssertEqual(try db.scalar("SELECT sum(balance) FROM accounts", as: Int.self), 60)
    }

    func testEachStepRunsWithItsBoundsAndTheSessionIsPutBackAfterIt() throws {
        // Each file fails unless it runs with the settings its kind of step gets.
        func expecting(_ lockTimeout: String, _ statementTimeout: String) -> String {
            """
            DO $$ BEGIN
              IF current_setting('lock_timeout') <> '\(lockTimeout)' OR current_setting('statement_timeout') <> '\(statementTimeout)' THEN
                RAISE EXCEPTION 'lock_timeout %, statement_timeout %', current_setting('lock_timeout'), current_setting('statement_timeout');
              END IF;
            END $$;
            """
        }
        let (migrator, db, _) = try project([
            "001_in_transaction.sql": expecting("1500ms", "7s"),
            "002_none.sql": expecting("0", "7s"),
        ], migrations: #"<migration file="002_none.sql" transaction="none"/>"#)
        let report = try migrator.migrate(MigrationOptions(lockTimeout: .milliseconds(1500), statementTimeout: .seconds(7)))
        XCTAssertNil(report.failure)
        XCTAssertEqual(report.applied.map(\.id), ["001_in_transaction.sql", "002_none.sql"])
        // The settings ended with each step.
        XCTAssertEqual(try db.scalar("SHOW lock_timeout", as: String.self), "0")
        XCTAssertEqual(try db.scalar("SHOW statement_timeout", as: String.self), "0")
        // By default: a lock timeout of 5 s, and the server's own statement timeout (none, on the test server).
        let defaults = try adding("003_defaults.sql", expecting("5s", "0"), to: migrator)
        XCTAssertNil(try defaults.migrate().failure)
    }

    func testANoneStepIsNeverRetried() throws {
        let (first, db, root) = try project(Self.accounts)
        XCTAssertNil(try first.migrate().failure)
        // The file asks for a lock timeout itself; the runner gives none to a step it cannot roll back.
        let migrator = try adding("002_none.sql", "SET lock_timeout = '1s';\nALTER TABLE accounts ADD COLUMN note text;\n",
                                  to: first)
        try write(#"<manifest version="1"><migrations directory="sql"><migration file="002_none.sql" transaction="none"/></migrations></manifest>"#,
                  to: root.appendingPathComponent("manifest.xml"))
        let none = Migrator(manifest: try Manifest.load(path: migrator.manifest.path), database: db)
        let blocker = try longTransaction(root, "SELECT count(*) FROM accounts")
        var retries = 0
        let report = try none.migrate(MigrationOptions(lockTimeout: .milliseconds(200), lockRetries: 5)) { event in
            if case .retrying = event { retries += 1 }
        }
        let failure = try XCTUnwrap(report.failure)
        XCTAssertEqual(retries, 0)
        XCTAssertEqual(failure.databaseError?.kind, .lockNotAvailable)
        XCTAssertEqual(failure.line, 2)
        XCTAssertTrue(failure.message.contains("server process \(blocker.pid)"), failure.message)
        guard case .partlyApplied = failure.aftermath else { return XCTFail("\(failure.aftermath)") }
        XCTAssertEqual(try db.history.record(kind: .migration, identity: "002_none.sql")?.state, .failed)
        try blocker.session.executeSimple("ROLLBACK")
        XCTAssertFalse(try columnExists(db, "accounts", "note"))
    }

    func testAStatementTimeoutFailsTheStepWithoutRetrying() throws {
        let (migrator, db, _) = try project(["001_slow.sql": "CREATE TABLE t (id int);\nSELECT pg_sleep(30);\n"])
        var retries = 0
        let started = ContinuousClock.now
        let report = try migrator.migrate(MigrationOptions(statementTimeout: .milliseconds(200))) { event in
            if case .retrying = event { retries += 1 }
        }
        let failure = try XCTUnwrap(report.failure)
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(25), "the statement was stopped, not run to its end")
        XCTAssertEqual(retries, 0)
        XCTAssertEqual(failure.line, 2)
        XCTAssertTrue(failure.message.contains("statement timeout"), failure.message)
        XCTAssertFalse(try db.tableExists("t"))
    }

    func testTheCommandsLockOptionsReachTheLibrary() throws {
        _ = try PostgresServer.shared()
        let project = try Project(self, backend: .postgres, files: [
            "sql/001_accounts.sql": Self.accounts["001_accounts.sql"] ?? "",
            "sql/002_settings.sql": """
                DO $$ BEGIN
                  IF current_setting('lock_timeout') <> '1500ms' OR current_setting('statement_timeout') <> '7s' THEN
                    RAISE EXCEPTION 'lock_timeout %, statement_timeout %', current_setting('lock_timeout'), current_setting('statement_timeout');
                  END IF;
                END $$;
                """,
        ])
        let applied = try project.strataOnBackend(["migrate", "--lock-timeout", "1.5", "--statement-timeout=7", "--lock-retries", "0"])
        XCTAssertEqual(applied.status, 0, applied.stderr)

        try project.file("sql/003_note.sql", "ALTER TABLE accounts ADD COLUMN note text;")
        let blocker = try longTransaction(project.root, "SELECT count(*) FROM accounts")
        let blocked = try project.strataOnBackend(["migrate", "--lock-timeout", "0.2", "--lock-retries", "1", "--format", "json"])
        XCTAssertEqual(blocked.status, 1, blocked.stderr)
        XCTAssertTrue(blocked.stderr.contains("retrying 003_note.sql in 0.5 s (retry 1 of 1)"), blocked.stderr)
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(blocked.stdout.utf8)) as? [String: Any])
        let failure = try XCTUnwrap(object["failure"] as? [String: Any])
        let message = try XCTUnwrap(failure["message"] as? String)
        XCTAssertTrue(message.contains("server process \(blocker.pid)") && message.contains("gave up after 2 attempts"), message)
        XCTAssertEqual((failure["aftermath"] as? [String: Any])?["state"] as? String, "rolled-back")
        try blocker.session.executeSimple("ROLLBACK")

        for (arguments, complaint) in [(["--lock-retries", "-1"], "--lock-retries must be a whole number"),
                                       (["--lock-timeout", "soon"], "--lock-timeout must be a number of seconds"),
                                       (["--statement-timeout", "nan"], "--statement-timeout must be a number of seconds")] {
            let refused = try project.strataOnBackend(["migrate"] + arguments)
            XCTAssertEqual(refused.status, 2, refused.stderr)
            XCTAssertTrue(refused.stderr.contains(complaint), refused.stderr)
        }
        XCTAssertEqual(try project.strataOnBackend(["status", "--lock-timeout", "1"]).status, 2, "only commands that run steps take them")
        let help = try runStrata(["help", "migrate"], in: project.root)
        XCTAssertTrue(help.stdout.contains("--lock-timeout SECONDS") && help.stdout.contains("--statement-timeout SECONDS"), help.stdout)
        XCTAssertTrue(try runStrata(["seed", "--help"], in: project.root).stdout.contains("--lock-retries N"))

        // SQLite takes the options and has nothing to apply them to.
        let sqlite = try Project(self, backend: .sqlite, files: ["sql/001_t.sql": "CREATE TABLE t (id INTEGER);"])
        let onSQLite = try sqlite.strataOnBackend(["migrate", "--lock-timeout", "1", "--lock-retries", "2", "--statement-timeout", "3"])
        XCTAssertEqual(onSQLite.status, 0, onSQLite.stderr)
    }
}
