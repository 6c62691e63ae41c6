import Foundation
import StrataCore
@testable import StrataPostgres
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

    /// What Strata reads through the pooler, outside any transaction of its own, is read as on a direct
    /// connection: its settings hold for the statement's own transaction.
    func testReadsThroughATransactionPoolerAreReadAsOnADirectConnection() throws {
        let bouncer = try PgBouncer.start(self, mode: .transaction, poolSize: 1)
        let root = try makeTemporaryDirectory(self)
        let database = try PostgresServer.shared().database(for: root)
        let sql = "SELECT interval '1 day 2 hours' AS i, 0.1::float8 AS f, '\\x01ff'::bytea AS b, timestamptz '2026-01-02 03:04:05+02' AS t"
        let direct = try PostgresConnection(url: try PostgresServer.shared().url(database: database)).rows(sql, .none)
        let pooled = try PostgresConnection(url: bouncer.url(database: database))
        // The application's client set the session otherwise; Strata's reads do not depend on it.
        _ = try bouncer.psql(database: database, "SET IntervalStyle = 'sql_standard'; SET extra_float_digits = -3; SET bytea_output = 'escape'; SET TimeZone = 'America/New_York'")
        XCTAssertEqual(try pooled.rows(sql, .none), direct)
        XCTAssertEqual(try pooled.rows(sql, .none), direct, "a second run (binary where it can be) reads the same")
    }

    func testOnlyQueriesAndRowChangesRunInASettingsTransaction() {
        for sql in ["SELECT 1", " (select 1)", "-- c\nWITH x AS (SELECT 1) SELECT * FROM x", "/* c */ insert into t values (1)",
                    "UPDATE t SET a = 1", "DELETE FROM t", "VALUES (1)", "TABLE t", "SHOW TimeZone", "MERGE INTO t USING s ON true WHEN MATCHED THEN DELETE"] {
            XCTAssertTrue(PostgresStatement.runsInATransaction(sql), sql)
        }
        for sql in ["CREATE DATABASE x", "VACUUM", "CREATE INDEX CONCURRENTLY i ON t (a)", "BEGIN", "COMMIT", "SET x = 1", "", "/* unclosed"] {
            XCTAssertFalse(PostgresStatement.runsInATransaction(sql), sql)
        }
    }

    /// What a file leaves on its session stays with it: a transactional file's session advisory lock, prepared
    /// statement and temporary table are gone from the pooled server connection after its step, and a
    /// `transaction="none"` file (run on a direct connection of its own) sets nothing the next step or the
    /// application's sessions see.
    func testWhatAFileLeavesOnItsSessionDoesNotStayOnThePooledConnection() throws {
        let bouncer = try PgBouncer.start(self, mode: .transaction, poolSize: 1)
        let project = try Project(self, backend: .postgres, manifestBody: """
            <migrations directory="sql"><migration file="002_none.sql" transaction="none"/></migrations>
            """, files: [
            "sql/001_leftovers.sql": "SELECT pg_advisory_lock(42); PREPARE leftover AS SELECT 1; CREATE TEMP TABLE scratch (x int); CREATE SCHEMA archive;",
            "sql/002_none.sql": "SET search_path = archive, public; SET lock_timeout = '1234ms'; SELECT pg_advisory_lock(43);",
            "sql/003_b.sql": "CREATE TABLE b (id int);",
        ])
        let database = try PostgresServer.shared().database(for: project.root)
        let direct = try PostgresServer.shared().url(database: database)
        let migrate = try project.strata(["migrate", "--database", bouncer.url(database: database), "--direct-database", direct])
        XCTAssertEqual(migrate.status, 0, migrate.stderr)
        let admin = try PostgresConnection(url: direct)
        XCTAssertEqual(try admin.scalar("SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename = 'b'", as: Int.self), 1,
                       "the none file's search_path did not reach the next step")
        XCTAssertEqual(try bouncer.psql(database: database, "SELECT count(*) FROM pg_prepared_statements"), "0")
        XCTAssertEqual(try bouncer.psql(database: database, "SELECT current_setting('lock_timeout') || '|' || current_setting('search_path')"),
                       "0|\"$user\", public")
        XCTAssertEqual(try admin.scalar("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid IN (42, 43)", as: Int.self), 0,
                       "no session advisory lock left on any server session")
        XCTAssertEqual(try bouncer.psql(database: database, "SELECT count(*) FROM pg_class WHERE relname = 'scratch'"), "0")
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
