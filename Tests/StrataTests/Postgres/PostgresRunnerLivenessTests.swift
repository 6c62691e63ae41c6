import Foundation
import Strata
@testable import StrataCore
@testable import StrataPostgres
import XCTest

/// Whether the runner of a `running` `transaction="none"` step is still at it, once its claim (a lock on an idle
/// session the server may end) is gone: the row names the session running the file, and that session is looked up
/// by pid, user and start. A later session that took the pid is not the runner; where the start cannot be seen, or
/// the catalogs cannot be read, the answer is "not known", said with why, never "gone" on a guess.
final class PostgresRunnerLivenessTests: XCTestCase {
    private struct Setup {
        let project: Project
        let admin: PostgresConnection
        let database: String
        let manifest: Manifest
    }

    /// A project whose `002_none.sql` is left `running` by a runner whose session is `session`, as a role checks
    /// it who may read the history but sees only its own sessions in full.
    private func setup() throws -> Setup {
        let project = try Project.postgresWithPendingNoneStep(self, first: "CREATE TABLE t (id int);", file: "002_none.sql",
                                                              sql: "INSERT INTO t VALUES (1);")
        let admin = try PostgresTestDatabase(project.root).connection
        let database = try XCTUnwrap(try admin.scalar("SELECT current_database()", as: String.self))
        return Setup(project: project, admin: admin, database: database, manifest: try project.manifest())
    }

    /// A login role of this test's own, dropped at the end.
    private func role(_ name: String, _ setup: Setup) throws -> (name: String, oid: Int64, url: String) {
        let role = name + "_" + UUID().uuidString.prefix(8).lowercased()
        try setup.admin.executeSimple("CREATE ROLE \(role) LOGIN PASSWORD 'strata'; GRANT SELECT ON public.strata_history TO \(role)")
        let admin = setup.admin
        addTeardownBlock { _ = try? admin.executeSimple("DROP OWNED BY \(role); DROP ROLE \(role)") }
        let oid = try XCTUnwrap(try setup.admin.scalar("SELECT oid::int8 FROM pg_roles WHERE rolname = $1", [role], as: Int64.self))
        return (role, oid, try PostgresServer.shared().url(database: setup.database, user: role, password: "strata"))
    }

    private func leaveRunning(_ setup: Setup, session: String) throws {
        try setup.admin.history.create()
        try setup.admin.history.write(HistoryRecord(
            kind: .migration, identity: "002_none.sql", checksum: "x", checksumVersion: 3, appliedAt: "2026-01-01T00:00:00Z",
            durationMs: nil, rowCount: nil, state: .running, toolVersion: "0", appliedSQL: nil, runner: "elsewhere:1",
            error: nil, runnerSession: session))
    }

    private func state(_ setup: Setup, as url: String) throws -> StepStatus {
        let status = try Migrator(manifest: setup.manifest, database: try PostgresConnection(url: url)).status()
        return try XCTUnwrap(status.first { $0.id == "002_none.sql" })
    }

    /// The runner was killed; its pid now belongs to another role's session. Neither a role that sees only the pid
    /// and user nor one that sees everything takes that session for the runner: the step is dirty.
    func testAPidTakenByAnotherRolesSessionIsNotTheRunner() throws {
        let setup = try setup()
        let runner = try role("runner", setup)
        let viewer = try role("viewer", setup)
        let checker = try role("checker", setup)
        let other = try PostgresConnection(url: viewer.url)
        let pid = try XCTUnwrap(try other.scalar("SELECT pg_backend_pid()::int8", as: Int64.self))
        try leaveRunning(setup, session: "pid \(pid), user \(runner.oid), connected 2026-01-01 00:00:00+00")
        XCTAssertEqual(try state(setup, as: checker.url).state, .dirty, "another user's session at that pid")
        XCTAssertEqual(try state(setup, as: try PostgresServer.shared().url(database: setup.database)).state, .dirty)
        withExtendedLifetime(other) {}
    }

    /// A session of the runner's own user holds the pid, and the checking role may not see when it started: it
    /// cannot be told from the runner, so the step is running, saying why, and `resolve` refuses saying so. A role
    /// that sees the start tells them apart: dirty.
    func testASessionOfTheRunnersUserWhoseStartCannotBeSeenIsNotKnown() throws {
        let setup = try setup()
        let runner = try role("runner", setup)
        let checker = try role("checker", setup)
        let session = try PostgresConnection(url: runner.url)
        let pid = try XCTUnwrap(try session.scalar("SELECT pg_backend_pid()::int8", as: Int64.self))
        try leaveRunning(setup, session: "pid \(pid), user \(runner.oid), connected 2026-01-01 00:00:00+00")
        let seen = try state(setup, as: checker.url)
        XCTAssertEqual(seen.state, .running)
        guard case .notKnown(let why)? = seen.liveness else { return XCTFail("\(String(describing: seen.liveness))") }
        XCTAssertTrue(why.contains("cannot be told from a later session"), why)
        XCTAssertEqual(try state(setup, as: try PostgresServer.shared().url(database: setup.database)).state, .dirty,
                       "a superuser sees the session started after the runner's")
        withExtendedLifetime(session) {}
    }

    /// A database whose `pg_stat_activity` the role may not read: the runner's session cannot be looked up, so
    /// the step is running, "not known", never dirty on a guess; the message says what to do.
    func testARoleThatMayNotReadTheSessionsSaysNotKnown() throws {
        let setup = try setup()
        let checker = try role("checker", setup)
        try setup.admin.executeSimple("REVOKE SELECT ON pg_catalog.pg_stat_activity FROM PUBLIC")
        let admin = setup.admin
        addTeardownBlock { _ = try? admin.executeSimple("GRANT SELECT ON pg_catalog.pg_stat_activity TO PUBLIC") }
        try leaveRunning(setup, session: "pid 1, user 10, connected 2026-01-01 00:00:00+00")
        let seen = try state(setup, as: checker.url)
        XCTAssertEqual(seen.state, .running)
        guard case .notKnown(let why)? = seen.liveness else { return XCTFail("\(String(describing: seen.liveness))") }
        XCTAssertTrue(why.contains("pg_stat_activity cannot be read"), why)
        let status = try runStrata(["status", "--manifest", setup.project.manifestPath, "--database", checker.url],
                                   in: setup.project.root)
        XCTAssertTrue(status.stderr.contains("which may still be running"), status.stderr)
        XCTAssertFalse(status.stderr.contains("holds its lock"), status.stderr)
    }
}
