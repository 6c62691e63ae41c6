import Foundation
@testable import StrataPostgres
import XCTest

/// The `strata` command against a replicated cluster, as a deploy script runs it in production: a primary and a
/// streaming-replication hot standby (`pg_basebackup -R`), both started by the test from the same binaries as the
/// shared test server, in a directory of their own, and named by one multi-host URI with
/// `target_session_attrs=read-write`.
final class PostgresReplicationTests: XCTestCase {
    /// A primary (port 5432) and its hot standby (port 5433), both running, with a database `app` the standby
    /// replicates; both are stopped and their directory removed when the test ends, however it ends.
    func startCluster() throws -> (primary: PostgresInstance, standby: PostgresInstance) {
        if ProcessInfo.processInfo.environment["STRATA_TEST_POSTGRES_URL"] != nil {
            throw XCTSkip("replicated-cluster test skipped: it starts, stops and promotes servers of its own, and STRATA_TEST_POSTGRES_URL names an existing server")
        }
        guard let programs = PostgresPrograms.find(),
              FileManager.default.isExecutableFile(atPath: programs.directory.appendingPathComponent("pg_basebackup").path) else {
            throw XCTSkip("replicated-cluster test skipped: no PostgreSQL server binaries (initdb, pg_ctl, pg_basebackup; install the postgresql package)")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("strata-pg-cluster-\(UUID().uuidString.prefix(8))")
        try programs.makeDirectory(directory)
        let primary = PostgresInstance(programs: programs, data: directory.appendingPathComponent("primary"),
                                       socketDirectory: directory, port: 5432)
        let standby = PostgresInstance(programs: programs, data: directory.appendingPathComponent("standby"),
                                       socketDirectory: directory, port: 5433)
        addTeardownBlock {
            // Immediate: nothing is left to keep, and a server that never started is just not there to stop.
            standby.stop(mode: "immediate")
            primary.stop(mode: "immediate")
            try? FileManager.default.removeItem(at: directory)
        }
        _ = try PostgresInstance.initdb(programs, data: primary.data, socketDirectory: directory, port: primary.port)
        try primary.start()
        let admin = try PostgresConnection(url: primary.url(database: "postgres"))
        let walLevel = try XCTUnwrap(try admin.scalar("SHOW wal_level", as: String.self))
        guard ["replica", "logical"].contains(walLevel) else {
            throw ClusterError("the primary's wal_level is \(walLevel): a standby needs replica or logical")
        }
        try admin.execute("CREATE DATABASE app")
        _ = try primary.standby(data: standby.data, port: standby.port)
        try standby.start()
        return (primary, standby)
    }

    struct ClusterError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// Polls `condition` until it holds; throws naming `what` if `timeout` (a guard against a hang) passes first.
    func wait(for what: String, timeout: TimeInterval = 90, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while try !condition() {
            guard Date() < deadline else { throw ClusterError("timed out after \(Int(timeout)) s waiting for \(what)") }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// Waits until the standby has replayed everything the primary has written so far.
    func waitForReplay(from primary: PostgresConnection, on standby: PostgresConnection) throws {
        let written = try XCTUnwrap(try primary.scalar("SELECT pg_current_wal_lsn()::text", as: String.self))
        try wait(for: "the standby to replay the primary's WAL up to \(written)") {
            try standby.scalar("SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", [written], as: Bool.self) == true
        }
    }

    func json(_ result: CommandResult) throws -> [String: Any] {
        try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
                      "not a JSON object: \(result.stdout) \(result.stderr)")
    }

    /// The steps `status --format json` lists, by id: their state and applied time.
    func statusSteps(_ result: CommandResult) throws -> [String: (state: String, appliedAt: String)] {
        let steps = try XCTUnwrap(try json(result)["steps"] as? [[String: Any]], result.stdout)
        var byID: [String: (state: String, appliedAt: String)] = [:]
        for step in steps {
            let id = try XCTUnwrap(step["id"] as? String)
            XCTAssertNil(byID[id], "\(id) is listed once")
            byID[id] = (step["state"] as? String ?? "?", step["appliedAt"] as? String ?? "?")
        }
        return byID
    }

    func testMigrateGoesToThePrimaryTheStandbyShowsWhatReplicatedAndRefusesWritesAndAPromotedStandbyCarriesOn() throws {
        let (primary, standby) = try startCluster()
        let socket = primary.socketDirectory.path
        // The standby first: only target_session_attrs=read-write makes libpq pass it over for the primary.
        let clusterURL = "postgresql://postgres@/app?host=\(socket),\(socket)&port=\(standby.port),\(primary.port)&target_session_attrs=read-write"
        let standbyURL = standby.url(database: "app")
        let primaryDB = try PostgresConnection(url: primary.url(database: "app"))
        let standbyDB = try PostgresConnection(url: standbyURL)
        XCTAssertEqual(try standbyDB.scalar("SELECT pg_is_in_recovery()", as: Bool.self), true)

        let root = try makeTemporaryDirectory(self)
        try write(#"<manifest version="1"><migrations directory="sql"/><seeds><seed file="csv/authors.csv" table="authors"/></seeds></manifest>"#,
                  to: root.appendingPathComponent("manifest.xml"))
        try write("CREATE TABLE authors (id integer PRIMARY KEY, name text NOT NULL);", to: root.appendingPathComponent("sql/001_authors.sql"))
        try write("CREATE TABLE books (isbn text PRIMARY KEY, author_id integer REFERENCES authors (id));",
                  to: root.appendingPathComponent("sql/002_books.sql"))
        try write("id,name\n1,Ursula K. Le Guin\n2,Octavia E. Butler\n3,Stanisław Lem\n", to: root.appendingPathComponent("csv/authors.csv"))
        let manifest = root.appendingPathComponent("manifest.xml").path
        func strata(_ arguments: [String], database: String) throws -> CommandResult {
            try runStrata(arguments + ["--manifest", manifest, "--database", database, "--format", "json"], in: root)
        }
        let earlier = ["001_authors.sql", "002_books.sql", "authors.csv"]

        // 1. The multi-host URI reaches the primary.
        let first = try strata(["migrate"], database: clusterURL)
        XCTAssertEqual(first.status, 0, first.stderr)
        XCTAssertEqual((try json(first)["applied"] as? [[String: Any]])?.compactMap { $0["id"] as? String }, earlier)
        XCTAssertEqual(try primaryDB.scalar("SELECT count(*) FROM authors", as: Int.self), 3)

        // 2. status on the standby alone shows what replicated.
        try waitForReplay(from: primaryDB, on: standbyDB)
        let replicated = try strata(["status"], database: standbyURL)
        XCTAssertEqual(replicated.status, 0, replicated.stderr)
        let applied = try statusSteps(replicated)
        XCTAssertEqual(applied.keys.sorted(), earlier.sorted())
        XCTAssertEqual(applied.values.map(\.state), ["applied", "applied", "applied"])
        XCTAssertEqual(try standbyDB.scalar("SELECT count(*) FROM authors", as: Int.self), 3)

        // 3. The reading commands work on the standby; migrate pointed at it alone is refused before anything runs.
        try write("CREATE TABLE loans (isbn text REFERENCES books (isbn), due date);", to: root.appendingPathComponent("sql/003_loans.sql"))
        let plan = try strata(["plan"], database: standbyURL)
        XCTAssertEqual(plan.status, 0, plan.stderr)
        XCTAssertEqual((try json(plan)["steps"] as? [[String: Any]])?.compactMap { $0["id"] as? String }, ["003_loans.sql"])
        let standbySchema = try strata(["schema"], database: standbyURL)
        XCTAssertEqual(standbySchema.status, 0, standbySchema.stderr)
        let schemaText = try XCTUnwrap(try json(standbySchema)["schema"] as? String)
        XCTAssertTrue(schemaText.contains("public.books"), schemaText)
        XCTAssertEqual(schemaText, try json(try strata(["schema"], database: primary.url(database: "app")))["schema"] as? String)
        let standbyBefore = try PostgresTestDatabase.contents(of: standbyDB)
        let primaryBefore = try PostgresTestDatabase.contents(of: primaryDB)
        let refused = try strata(["migrate"], database: standbyURL)
        XCTAssertEqual(refused.status, 3, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("read-only"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains("hot standby"), refused.stderr)
        let refusals = try XCTUnwrap(try json(refused)["refusals"] as? [[String: Any]], refused.stdout)
        XCTAssertEqual(refusals.map { $0["reason"] as? String }, ["read-only"])
        let text = try runStrata(["migrate", "--manifest", manifest, "--database", standbyURL], in: root)
        XCTAssertEqual(text.status, 3, text.stderr)
        XCTAssertFalse(text.stdout.contains("003_loans.sql"), "nothing was started: \(text.stdout)")
        XCTAssertEqual(try PostgresTestDatabase.contents(of: standbyDB), standbyBefore, "the standby is unchanged")
        XCTAssertEqual(try PostgresTestDatabase.contents(of: primaryDB), primaryBefore, "the refused run did not reach the primary")

        // 4. Fail over: the standby is promoted, the old primary goes away, and the same URI migrates the new primary.
        try standby.promote()
        try wait(for: "the promoted standby to leave recovery") {
            try standbyDB.scalar("SELECT pg_is_in_recovery()", as: Bool.self) == false
        }
        primary.stop()
        let afterFailover = try strata(["migrate"], database: clusterURL)
        XCTAssertEqual(afterFailover.status, 0, afterFailover.stderr)
        XCTAssertEqual((try json(afterFailover)["applied"] as? [[String: Any]])?.compactMap { $0["id"] as? String }, ["003_loans.sql"],
                       "only the new migration: the history that replicated is found")
        XCTAssertTrue(try standbyDB.tableExists("loans"))
        XCTAssertEqual(try standbyDB.scalar("SELECT count(*) FROM authors", as: Int.self), 3, "the seed was not loaded twice")

        let final = try strata(["status"], database: clusterURL)
        XCTAssertEqual(final.status, 0, final.stderr)
        let history = try statusSteps(final)
        XCTAssertEqual(history.keys.sorted(), (earlier + ["003_loans.sql"]).sorted())
        for id in earlier {
            XCTAssertEqual(history[id]?.state, "applied", id)
            XCTAssertEqual(history[id]?.appliedAt, applied[id]?.appliedAt, "\(id) keeps the time it was applied on the old primary")
        }
        XCTAssertEqual(history["003_loans.sql"]?.state, "applied")
        XCTAssertEqual(try standbyDB.rows("SELECT identity FROM public.strata_history GROUP BY identity HAVING count(*) > 1").count, 0)
        XCTAssertEqual(try standbyDB.scalar("SELECT count(*) FROM public.strata_history", as: Int.self), 4)
    }

    /// A `transaction="none"` step's runner holds its lock on the primary, where the standby cannot see it: `plan`
    /// on the standby must not call a step that is running right now dead and ask for `resolve`.
    func testAStepRunningOnThePrimaryIsNotCalledAbandonedByPlanOnTheStandby() throws {
        let (primary, standby) = try startCluster()
        let primaryURL = primary.url(database: "app"), standbyURL = standby.url(database: "app")
        let standbyDB = try PostgresConnection(url: standbyURL)
        let root = try makeTemporaryDirectory(self)
        let manifest = root.appendingPathComponent("manifest.xml").path
        try write(#"<manifest version="1"><migrations directory="sql"/></manifest>"#, to: URL(fileURLWithPath: manifest))
        try write("CREATE TABLE t (x int);", to: root.appendingPathComponent("sql/001_t.sql"))
        let created = try runStrata(["migrate", "--manifest", manifest, "--database", primaryURL], in: root)
        XCTAssertEqual(created.status, 0, created.stderr)
        try write("INSERT INTO t VALUES (1);", to: root.appendingPathComponent("sql/002_fill.sql"))
        try write(#"<manifest version="1"><migrations directory="sql"><migration file="002_fill.sql" transaction="none"/></migrations></manifest>"#,
                  to: URL(fileURLWithPath: manifest))

        // The step's INSERT waits behind a lock this session holds: its runner is alive, its row says `running`.
        let blocker = try PostgresConnection(url: primaryURL)
        try blocker.execute("BEGIN")
        try blocker.execute("LOCK TABLE t IN SHARE MODE")
        let (runner, out, err) = try startStrata(["migrate", "--manifest", manifest, "--database", primaryURL], in: root)
        let runnerOut = PipeWatcher(out), runnerErr = PipeWatcher(err)
        defer {
            _ = try? blocker.execute("ROLLBACK")
            if runner.isRunning { runner.terminate() }
            runner.waitUntilExit()
        }
        let primaryDB = try PostgresConnection(url: primaryURL)
        try wait(for: "002_fill.sql to be recorded running on the primary") {
            try primaryDB.scalar("SELECT state FROM public.strata_history WHERE identity = '002_fill.sql'", as: String?.self) == "running"
        }
        try waitForReplay(from: primaryDB, on: standbyDB)
        XCTAssertEqual(try standbyDB.scalar("SELECT state FROM public.strata_history WHERE identity = '002_fill.sql'", as: String?.self), "running")

        for (server, url) in [("primary", primaryURL), ("standby", standbyURL)] {
            let plan = try runStrata(["plan", "--manifest", manifest, "--database", url, "--format", "json"], in: root)
            XCTAssertEqual(plan.status, 0, "\(server): \(plan.stderr)")
            XCTAssertFalse(plan.stderr.contains("never finished"), "\(server): \(plan.stderr)")
            let object = try json(plan)
            XCTAssertEqual((object["steps"] as? [[String: Any]])?.compactMap { $0["id"] as? String }, ["002_fill.sql"],
                           "\(server): the step being applied is still to come")
            XCTAssertEqual((object["refusals"] as? [Any])?.count, 0, "\(server): \(plan.stdout)")
        }

        try blocker.execute("COMMIT")
        runner.waitUntilExit()
        XCTAssertEqual(runner.terminationStatus, 0, runnerOut.text + runnerErr.text)
        try waitForReplay(from: primaryDB, on: standbyDB)
        let after = try runStrata(["plan", "--manifest", manifest, "--database", standbyURL, "--format", "json"], in: root)
        XCTAssertEqual(after.status, 0, after.stderr)
        XCTAssertEqual((try json(after)["steps"] as? [Any])?.count, 0, after.stdout)
    }
}
