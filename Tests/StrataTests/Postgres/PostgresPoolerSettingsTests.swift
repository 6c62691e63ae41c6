import Foundation
import XCTest

/// Nothing Strata sets outlives its own transaction on a server connection a pooler shares: after `strata status`
/// and `strata migrate` through PgBouncer (one server connection, so the application's client gets the very one
/// Strata used), the application's own queries print intervals, floats and bytea as before.
final class PostgresPoolerSettingsTests: XCTestCase {
    /// What the application sees of the settings Strata's sessions run with, in one line.
    private static let probe = """
        SELECT concat_ws('|', current_setting('IntervalStyle'), interval '1 day 2 hours', current_setting('extra_float_digits'),
                         current_setting('bytea_output'), '\\x01ff'::bytea, current_setting('client_min_messages'),
                         current_setting('TimeZone'), current_setting('DateStyle'), current_setting('search_path'))
        """

    func testStrataLeavesNoSettingOnAPooledConnectionInTransactionMode() throws {
        try checkNothingLeft(mode: .transaction)
    }

    func testStrataLeavesNoSettingOnAPooledConnectionInSessionMode() throws {
        try checkNothingLeft(mode: .session)
    }

    private func checkNothingLeft(mode: PgBouncer.Mode) throws {
        let bouncer = try PgBouncer.start(self, mode: mode, poolSize: 1)
        let project = try Project(self, backend: .postgres, files: [
            "sql/001_t.sql": "CREATE TABLE t (id int PRIMARY KEY, span interval, ratio float8, bytes bytea);",
            "sql/002_rows.sql": "INSERT INTO t VALUES (1, interval '1 day 2 hours', 0.1, '\\x01ff');",
        ])
        let database = try PostgresServer.shared().database(for: project.root)
        let pooled = bouncer.url(database: database)
        let before = try bouncer.psql(database: database, Self.probe)
        XCTAssertTrue(before.hasPrefix("postgres|1 day 02:00:00|"), before)

        let status = try project.strata(["status", "--database", pooled])
        XCTAssertEqual(status.status, 0, status.stderr)
        XCTAssertEqual(try bouncer.psql(database: database, Self.probe), before, "after strata status through pgbouncer in \(mode) mode")

        let migrate = try project.strata(["migrate", "--database", pooled, "--format", "json"])
        XCTAssertEqual(migrate.status, 0, migrate.stderr + migrate.stdout)
        XCTAssertEqual(try bouncer.psql(database: database, Self.probe), before, "after strata migrate through pgbouncer in \(mode) mode")
        XCTAssertEqual(try bouncer.psql(database: database, "SELECT span::text || '|' || ratio::text || '|' || bytes::text FROM t"),
                       "1 day 02:00:00|0.1|\\x01ff")

        // What Strata read back through the pooler is read as its own sessions print it: the history's times and the
        // status of both files.
        let after = try project.strata(["status", "--database", pooled, "--format", "json"])
        XCTAssertEqual(after.status, 0, after.stderr)
        XCTAssertTrue(after.stdout.contains("002_rows.sql"), after.stdout)
        XCTAssertFalse(after.stdout.contains("\"pending\""), after.stdout)
        XCTAssertEqual(try bouncer.psql(database: database, Self.probe), before, "after a second strata status in \(mode) mode")
    }
}
