import Foundation
import Strata
@testable import StrataCore
@testable import StrataPostgres
import XCTest

/// Statements the server stopped before they finished: by a statement timeout (the run's, the database's, the
/// role's), by a cancel request from another session, or to break a deadlock. Each fails its step with the file
/// (and for a migration the line) and says what happened; none reads as a lock another process held, which is the
/// runner's message for a wait Strata bounded itself. A deadlock victim is rolled back and retried like a step
/// that gave up waiting for a lock. Every wait here ends on an event the test watches for (the step seen running
/// or waiting in `pg_stat_activity`, the server's timeout or deadlock check), never on a guessed delay.
final class PostgresCancellationTests: XCTestCase {
    /// A table whose every insert sleeps a minute (a seed into it runs until something stops it), a migration
    /// creating it, and a one-row seed for it.
    private static let slowTable = """
        CREATE TABLE t (id int PRIMARY KEY);
        CREATE FUNCTION slow_insert() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(60); RETURN NEW; END $$;
        CREATE TRIGGER slow BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION slow_insert();
        """
    private static let seed = #"<seeds><seed file="csv/t.csv" table="t"/></seeds>"#
    private static let pair = ["sql/001_pair.sql": "CREATE TABLE pair (id int PRIMARY KEY, n int); INSERT INTO pair VALUES (1, 0), (2, 0);"]

    /// A project with `files` and a manifest whose migrations are `sql/` and whose seeds are `seeds`.
    private func project(_ files: [String: String], seeds: String = "") throws -> Project {
        _ = try PostgresServer.shared()
        return try Project(self, backend: .postgres, manifestBody: #"<migrations directory="sql"/>"# + seeds, files: files)
    }

    private func migrator(_ project: Project) throws -> Migrator {
        Migrator(manifest: try project.manifest(),
                 database: try PostgresConnection(url: try PostgresServer.shared().url(for: project.root), lockTimeout: .seconds(30)))
    }

    private func admin(_ project: Project) throws -> PostgresConnection {
        try PostgresConnection(url: try PostgresServer.shared().url(for: project.root))
    }

    /// Waits (up to a minute) until `condition` holds, polling; fails the test when it never does.
    private func waitUntil(_ what: String, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(60)
        while try !condition() {
            guard Date() < deadline else { return XCTFail("timed out waiting until \(what)") }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// The server process of another session of the project's database whose query matches `condition` (SQL on
    /// `pg_stat_activity`), once there is one.
    private func session(_ admin: PostgresConnection, where condition: String) throws -> Int64 {
        var pid: Int64?
        try waitUntil("a session with \(condition)") {
            let query = """
                SELECT pid::int8 FROM pg_stat_activity
                WHERE datname = current_database() AND pid <> pg_backend_pid() AND \(condition) LIMIT 1
                """
            pid = try admin.scalar(query, .none, as: Int64.self)
            return pid != nil
        }
        return try XCTUnwrap(pid)
    }

    /// Runs `body` on a thread of its own; `wait()` returns its result once it has finished.
    private final class Background<T>: @unchecked Sendable {
        private let done = DispatchSemaphore(value: 0)
        private var result: Result<T, any Error>?

        init(_ body: @escaping () throws -> T) {
            nonisolated(unsafe) let body = body
            Thread.detachNewThread {
                self.result = Result(catching: body)
                self.done.signal()
            }
        }

        func wait() throws -> T {
            done.wait()
            done.signal()
            guard let result else { throw CancellationError() }
            return try result.get()
        }
    }

    private static let lockMessage = "another process held the database's write lock"

    // MARK: Statement timeouts

    func testTheServersCodeAndWordsDecideWhatStoppedAStatement() {
        XCTAssertEqual(PostgresError.kind(ofSQLState: "57014", message: "canceling statement due to statement timeout"), .statementTimeout)
        XCTAssertEqual(PostgresError.kind(ofSQLState: "57014", message: "canceling statement due to user request"), .interrupted)
        // In another language the server's message is the only word on which it was.
        XCTAssertEqual(PostgresError.kind(ofSQLState: "57014", message: "Anweisung wird abgebrochen wegen Zeitüberschreitung"), .interrupted)
        XCTAssertEqual(PostgresError.kind(ofSQLState: "40P01", message: "deadlock detected"), .deadlock)
        XCTAssertEqual(PostgresError.kind(ofSQLState: "55P03", message: "canceling statement due to lock timeout"), .lockNotAvailable)
        XCTAssertEqual(["0", "1s", "1500ms", "2min", "1h", "1d", "90s"],
                       [0, 1000, 1500, 120_000, 3_600_000, 86_400_000, 90_000].map { PostgresStatementTimeout.showing(milliseconds: $0) })
    }

    func testASeedPastTheStatementTimeoutFailsNamingTheTimeoutNotALock() throws {
        let project = try project(["sql/001_slow.sql": Self.slowTable, "csv/t.csv": "id\n1\n"], seeds: Self.seed)
        let result = try project.strataOnBackend(["migrate", "--statement-timeout", "1", "--format", "json"])
        XCTAssertEqual(result.status, 1, result.stderr)
        XCTAssertFalse(result.stderr.contains(Self.lockMessage), result.stderr)
        XCTAssertTrue(result.stderr.contains("csv/t.csv: canceling statement due to statement timeout"), result.stderr)
        XCTAssertTrue(result.stderr.contains("statement_timeout was 1s as the step began: the run's statement timeout"), result.stderr)
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], result.stdout)
        let failure = try XCTUnwrap(object["failure"] as? [String: Any], result.stdout)
        XCTAssertEqual(failure["kind"] as? String, "seed")
        XCTAssertEqual(failure["file"] as? String, "csv/t.csv")
        XCTAssertEqual((failure["aftermath"] as? [String: Any])?["state"] as? String, "rolled-back")
        XCTAssertEqual(try admin(project).scalar("SELECT count(*) FROM t", as: Int.self), 0)
    }

    func testAMigrationPastTheStatementTimeoutSaysWhichTimeoutItWas() throws {
        let project = try project(["sql/001_wait.sql": "CREATE TABLE t (id int);\nSELECT pg_sleep(60);\n"])
        let result = try project.strataOnBackend(["migrate", "--statement-timeout", "1.5"])
        XCTAssertEqual(result.status, 1, result.stderr)
        XCTAssertTrue(result.stderr.contains("sql/001_wait.sql:2:1: canceling statement due to statement timeout (statement_timeout was 1500ms as the step began: the run's statement timeout)"), result.stderr)
        XCTAssertFalse(result.stderr.contains(Self.lockMessage), result.stderr)
    }

    func testAStatementTimeoutSetForTheDatabaseIsNamedWithItsValue() throws {
        let project = try project(["sql/001_wait.sql": "CREATE TABLE t (id int);\nSELECT pg_sleep(60);\n"])
        let name = try PostgresServer.shared().database(for: project.root)
        try admin(project).executeSimple("ALTER DATABASE \(name) SET statement_timeout = '1s'")
        let report = try migrator(project).migrate()
        let failure = try XCTUnwrap(report.failure)
        XCTAssertEqual(failure.line, 2)
        XCTAssertEqual(failure.databaseError?.code?.value, "57014")
        XCTAssertEqual(failure.databaseError?.kind, .statementTimeout)
        XCTAssertTrue(failure.message.contains("statement_timeout was 1s as the step began: set for database \(name) (ALTER DATABASE … SET statement_timeout)"), failure.message)
    }

    func testAStatementTimeoutSetForTheRoleIsNamedWithItsValue() throws {
        let project = try project(["sql/001_slow.sql": Self.slowTable, "csv/t.csv": "id\n1\n"], seeds: Self.seed)
        let server = try PostgresServer.shared()
        let name = try server.database(for: project.root)
        let role = "timed_" + UUID().uuidString.prefix(8).lowercased()
        let admin = try admin(project)
        // The database's owner: on PostgreSQL 15 its schema public is the owner's to create in.
        try admin.executeSimple("CREATE ROLE \(role) LOGIN PASSWORD 'strata'; ALTER DATABASE \(name) OWNER TO \(role); ALTER ROLE \(role) SET statement_timeout = '1500ms'")
        addTeardownBlock { _ = try? admin.executeSimple("ALTER DATABASE \(name) OWNER TO CURRENT_USER; DROP OWNED BY \(role); DROP ROLE \(role)") }
        let migrator = Migrator(manifest: try project.manifest(),
                                database: try PostgresConnection(url: server.url(database: name, user: role, password: "strata")))
        let report: MigrationReport
        do { report = try migrator.migrate() } catch { return XCTFail("\(error)") }
        XCTAssertEqual(report.applied.map(\.id), ["001_slow.sql"])
        let failure = try XCTUnwrap(report.failure)
        XCTAssertEqual(failure.kind, .seed)
        XCTAssertTrue(failure.file.hasSuffix("/csv/t.csv"), failure.file)
        XCTAssertEqual(failure.databaseError?.kind, .statementTimeout)
        XCTAssertTrue(failure.message.contains("canceling statement due to statement timeout (statement_timeout was 1500ms as the step began: set for role \(role) (ALTER ROLE … SET statement_timeout))"), failure.message)
    }

    // MARK: Cancel requests

    func testACancelRequestFromAnotherSessionFailsTheSeedNamingTheCancel() throws {
        let project = try project(["sql/001_slow.sql": Self.slowTable, "csv/t.csv": "id\n1\n"], seeds: Self.seed)
        let migrator = try migrator(project)
        let run = Background { try migrator.migrate() }
        let admin = try admin(project)
        let pid = try session(admin, where: "wait_event = 'PgSleep'")
        XCTAssertEqual(try admin.scalar("SELECT pg_cancel_backend($1::int4)", [pid], as: Bool.self), true)
        let report: MigrationReport
        do { report = try run.wait() } catch { return XCTFail("\(error)") }
        let failure = try XCTUnwrap(report.failure)
        XCTAssertEqual(failure.kind, .seed)
        XCTAssertTrue(failure.file.hasSuffix("/csv/t.csv"), failure.file)
        XCTAssertEqual(failure.databaseError?.kind, .interrupted)
        XCTAssertTrue(failure.message.contains("canceling statement due to user request (a cancel request: another session's pg_cancel_backend, or a client's cancel)"), failure.message)
        XCTAssertFalse(failure.message.contains(Self.lockMessage), failure.message)
        XCTAssertEqual(failure.aftermath, .rolledBack)
        XCTAssertEqual(try admin.scalar("SELECT count(*) FROM t", as: Int.self), 0)
    }

    // MARK: Deadlocks

    /// Another session that updated `pair` row 2 in an open transaction, and will not look for deadlocks itself for
    /// a minute: in a deadlock with a step, the step's session (waiting first, checking after the server's
    /// `deadlock_timeout`) finds it and is the one cancelled.
    private func rowTwoHolder(_ project: Project) throws -> PostgresConnection {
        let other = try admin(project)
        // Only a superuser may set it; without it the step, which waited first, still checks first.
        _ = try? other.executeSimple("SET deadlock_timeout = '1min'")
        try other.executeSimple("BEGIN; UPDATE pair SET n = n + 1 WHERE id = 2")
        return other
    }

    /// Closes the cycle once the step waits for row 2: the other session's update of row 1 waits for the step.
    /// Its update goes through once the step's transaction is rolled back.
    private func closeTheCycle(_ other: PostgresConnection, _ project: Project) throws -> Background<Void> {
        _ = try session(try admin(project), where: "wait_event_type = 'Lock' AND query LIKE 'UPDATE pair SET n = n + 1 WHERE id = 2%'")
        nonisolated(unsafe) let other = other
        return Background { try other.executeSimple("UPDATE pair SET n = n + 1 WHERE id = 1") }
    }

    private static let bothRows = "sql/002_both.sql"
    private static let bothRowsText = "UPDATE pair SET n = n + 1 WHERE id = 1;\nUPDATE pair SET n = n + 1 WHERE id = 2;\n"

    func testADeadlockVictimFailsNamingTheDeadlockWhenNoRetryIsLeft() throws {
        let project = try project(Self.pair)
        XCTAssertNil(try migrator(project).migrate().failure)
        try project.file(Self.bothRows, Self.bothRowsText)
        let migrator = try migrator(project)
        let other = try rowTwoHolder(project)
        defer { _ = try? other.executeSimple("ROLLBACK") }
        let run = Background { try migrator.migrate(MigrationOptions(lockTimeout: .seconds(30), lockRetries: 0)) }
        let closed = try closeTheCycle(other, project)
        let report: MigrationReport
        do { report = try run.wait() } catch { return XCTFail("\(error)") }
        XCTAssertNoThrow(try closed.wait(), "the other session's update went through once the step was rolled back")
        let failure = try XCTUnwrap(report.failure)
        XCTAssertEqual(failure.line, 2)
        XCTAssertEqual(failure.databaseError?.code?.value, "40P01")
        XCTAssertEqual(failure.databaseError?.kind, .deadlock)
        XCTAssertTrue(failure.message.hasPrefix("deadlock detected (detail: Process "), failure.message)
        XCTAssertFalse(failure.message.contains(Self.lockMessage), failure.message)
        XCTAssertEqual(failure.aftermath, .rolledBack)
        try other.executeSimple("ROLLBACK")
        XCTAssertEqual(try admin(project).scalar("SELECT sum(n) FROM pair", as: Int.self), 0)
        XCTAssertNil(try migrator.database.history.record(kind: .migration, identity: "002_both.sql"))
    }

    func testADeadlockVictimIsRolledBackAndRetried() throws {
        let project = try project(Self.pair)
        XCTAssertNil(try migrator(project).migrate().failure)
        try project.file(Self.bothRows, Self.bothRowsText)
        let migrator = try migrator(project)
        nonisolated(unsafe) let other = try rowTwoHolder(project)
        defer { _ = try? other.executeSimple("ROLLBACK") }
        nonisolated(unsafe) var closed: Background<Void>?
        let handedOver = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var reasons: [String] = []
        let run = Background {
            try migrator.migrate(MigrationOptions(lockTimeout: .seconds(30), lockRetries: 1, lockRetryDelay: .milliseconds(10))) { event in
                guard case .retrying(_, _, _, _, let reason) = event else { return }
                reasons.append(reason)
                // The step was rolled back: the other session's update went through; it commits before the retry.
                handedOver.wait()
                _ = try? closed?.wait()
                _ = try? other.executeSimple("COMMIT")
            }
        }
        closed = try closeTheCycle(other, project)
        handedOver.signal()
        let report: MigrationReport
        do { report = try run.wait() } catch { return XCTFail("\(error)") }
        XCTAssertNil(report.failure, "\(String(describing: report.failure))")
        XCTAssertEqual(report.applied.map(\.id), ["002_both.sql"])
        XCTAssertEqual(reasons.count, 1)
        XCTAssertTrue(reasons.first?.contains("deadlock detected") == true, "\(reasons)")
        XCTAssertEqual(try admin(project).rows("SELECT n FROM pair ORDER BY id", .none).map { try $0.get(0, as: Int.self) }, [2, 2])
    }
}
