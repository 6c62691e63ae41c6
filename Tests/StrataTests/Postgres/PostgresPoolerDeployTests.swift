import Foundation
@testable import StrataPostgres
import XCTest

/// Deployers through PgBouncer, in transaction and in session pooling, with a pool smaller than the deployers:
/// 8 concurrent `strata migrate` runs of 40 files and a `transaction="none"` step. Without a direct connection for
/// the step's claim every run is refused before anything ran, saying what to set; with one (`--direct-database`)
/// every run exits 0 and every file is applied once; and nothing is left behind that blocks a later run.
final class PostgresPoolerDeployTests: XCTestCase {
    private static let deployers = 8

    func testEightDeployersThroughATransactionPooler() throws {
        try deploy(mode: .transaction)
    }

    func testEightDeployersThroughASessionPooler() throws {
        try deploy(mode: .session)
    }

    private func deploy(mode: PgBouncer.Mode) throws {
        let bouncer = try PgBouncer.start(self, mode: mode, poolSize: 3)
        var files = ["sql/001_t.sql": "CREATE TABLE t (n int NOT NULL);"]
        for n in 2...40 { files[String(format: "sql/%03d_add.sql", n)] = "INSERT INTO t VALUES (\(n));" }
        files["sql/041_index.sql"] = "CREATE INDEX CONCURRENTLY t_n ON t (n);"
        let project = try Project(self, backend: .postgres, manifestBody: """
            <migrations directory="sql"><migration file="041_index.sql" transaction="none"/></migrations>
            """, files: files)
        let server = try PostgresServer.shared()
        let database = try server.database(for: project.root)
        let pooled = bouncer.url(database: database)
        let direct = server.url(database: database)
        let admin = try PostgresConnection(url: direct)
        XCTAssertTrue(try PostgresConnection(url: pooled).reachesServerThroughPooler, "a PgBouncer in \(mode) mode is detected")
        XCTAssertFalse(admin.reachesServerThroughPooler)

        // 1. No direct connection: every run is refused before anything ran, with the documented reason.
        for result in try concurrently(Self.deployers, project, ["migrate", "--database", pooled, "--format", "json"]) {
            XCTAssertEqual(result.status, 3, result.stderr + result.stdout)
            XCTAssertTrue(result.stdout.contains("\"pooler\""), result.stdout)
            XCTAssertTrue(result.stdout.contains("--direct-database"), result.stdout)
        }
        XCTAssertEqual(try admin.scalar("SELECT to_regclass('public.t') IS NULL", as: Bool.self), true, "nothing ran")
        if try admin.scalar("SELECT to_regclass('public.strata_history') IS NOT NULL", as: Bool.self) == true {
            XCTAssertEqual(try admin.scalar("SELECT count(*)::int8 FROM public.strata_history", as: Int64.self), 0)
        }

        // 2. With one: every run exits 0, every file is applied once.
        let runs = try concurrently(Self.deployers, project, ["migrate", "--database", pooled, "--direct-database", direct, "--format", "json"])
        for result in runs { XCTAssertEqual(result.status, 0, result.stderr + result.stdout) }
        XCTAssertEqual(try admin.scalar("SELECT count(*)::int8 FROM t", as: Int64.self), 39)
        XCTAssertEqual(try admin.scalar("SELECT count(DISTINCT n)::int8 FROM t", as: Int64.self), 39)
        XCTAssertEqual(try admin.scalar("SELECT count(*)::int8 FROM strata_history WHERE state = 'applied'", as: Int64.self), 41)
        XCTAssertEqual(try admin.scalar("SELECT bool_and(indisvalid) FROM pg_index WHERE indexrelid = 't_n'::regclass", as: Bool.self), true)

        // 3. Nothing left behind: no lock of Strata's on any server session once the deployers are gone (a closed
        // session's locks go when its server process ends: waited for, not assumed), and a later run with a short
        // --timeout through the same pool is not blocked.
        let deadline = Date().addingTimeInterval(60)
        var left: Int64 = -1
        while Date() < deadline {
            left = try admin.scalar("SELECT count(*)::int8 FROM pg_locks WHERE locktype = 'advisory' AND classid = $1::int4::oid",
                                    [Int64(PostgresLocks.namespace)], as: Int64.self) ?? -1
            if left == 0 { break }
            Thread.sleep(forTimeInterval: 0.02)
        }
        XCTAssertEqual(left, 0, "advisory locks of Strata's left on the server")
        try project.file("sql/042_more.sql", "INSERT INTO t VALUES (42);")
        let later = try project.strata(["migrate", "--database", pooled, "--direct-database", direct, "--timeout", "2", "--format", "json"])
        XCTAssertEqual(later.status, 0, later.stderr + later.stdout)
        XCTAssertTrue(later.stdout.contains("042_more.sql"), later.stdout)
        let status = try project.strata(["status", "--database", pooled, "--format", "json"])
        XCTAssertEqual(status.status, 0, status.stderr + status.stdout)
        XCTAssertFalse(status.stdout.contains("\"running\""), status.stdout)
    }

    /// Starts `count` runs of `strata` with `arguments` at once (all started before any is waited for) and returns
    /// each one's result, in order.
    private func concurrently(_ count: Int, _ project: Project, _ arguments: [String]) throws -> [CommandResult] {
        let started = try (0..<count).map { _ in try startStrata(arguments + ["--manifest", project.manifestPath], in: project.root) }
        return started.map { process, out, err in
            // Each run writes a few kilobytes at most, well within a pipe's buffer, so reading one at a time blocks none.
            let stdout = out.fileHandleForReading.readDataToEndOfFile()
            let stderr = err.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return CommandResult(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                                 stderr: String(decoding: stderr, as: UTF8.self))
        }
    }
}
