import Foundation
import XCTest
import Strata
@testable import StrataPostgres

/// `--wait SECONDS` against a PostgreSQL server that is not up yet: the command retries until the server answers,
/// then runs as usual. Condition-based: the test starts the server once the command says it is waiting.
final class PostgresWaitTests: XCTestCase {
    func testMigrateWaitsForAServerThatStartsLater() throws {
        if ProcessInfo.processInfo.environment["STRATA_TEST_POSTGRES_URL"] != nil {
            throw XCTSkip("wait test skipped: it starts a server of its own, and STRATA_TEST_POSTGRES_URL names an existing server")
        }
        guard let programs = PostgresPrograms.find() else {
            throw XCTSkip("wait test skipped: no PostgreSQL server binaries (install the postgresql package)")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("strata-pg-wait-\(UUID().uuidString.prefix(8))")
        try programs.makeDirectory(directory)
        let server = try PostgresInstance.initdb(programs, data: directory.appendingPathComponent("data"),
                                                 socketDirectory: directory, port: 5432)
        addTeardownBlock {
            server.stop(mode: "immediate")
            try? FileManager.default.removeItem(at: directory)
        }
        let project = try Project(self, manifest: #"<manifest version="1"><migrations directory="sql"/></manifest>"#,
                                  files: ["sql/1_a.sql": "CREATE TABLE a (x integer);"])
        let url = server.url(database: "postgres")
        // Not up yet, and no wait: exit 5 at once.
        let early = try project.strata(["status", "--database", url, "--format", "json"])
        XCTAssertEqual(early.status, 5, early.stderr)

        let (process, _, err) = try startStrata(["migrate", "--manifest", project.manifestPath, "--database", url, "--wait", "600"],
                                                in: project.root)
        let stderr = PipeWatcher(err)
        XCTAssertTrue(stderr.wait(for: "waiting up to 600 s for", from: process), stderr.text)
        XCTAssertTrue(process.isRunning, "still waiting: \(stderr.text)")
        try server.start()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, stderr.text)
        let status = try runStrata(["status", "--database", url, "--manifest", project.manifestPath, "--format", "json"], in: project.root)
        XCTAssertEqual(status.status, 0, status.stderr)
        XCTAssertTrue(status.stdout.contains(#""id":"1_a.sql","state":"applied""#), status.stdout)
    }
}
