import Foundation
@testable import StrataPostgres
import XCTest

/// `strata` given PostgreSQL databases in the forms libpq takes (and forms it does not): a keyword/value string
/// reaches PostgreSQL and creates no file; a password, or any piece of one libpq took for a host or a database
/// name, appears in no output, JSON or error; a URI whose scheme libpq does not read is refused.
final class PostgresConnectionStringCLITests: XCTestCase {
    /// A project directory with one migration; its entries before any command runs.
    private func project() throws -> (URL, [String]) {
        let root = try makeTemporaryDirectory(self)
        try write("CREATE TABLE a (x int);", to: root.appendingPathComponent("sql/001_a.sql"))
        try write(#"<manifest version="1"><migrations directory="sql"/></manifest>"#, to: root.appendingPathComponent("manifest.xml"))
        return (root, try entries(root))
    }

    private func entries(_ root: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: root.path).sorted()
    }

    private func assertNoSecret(_ result: CommandResult, _ secrets: [String], _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        for secret in secrets {
            XCTAssertFalse(result.stdout.contains(secret), "\(what) stdout: \(result.stdout)", file: file, line: line)
            XCTAssertFalse(result.stderr.contains(secret), "\(what) stderr: \(result.stderr)", file: file, line: line)
        }
    }

    func testAKeywordValueStringMigratesThePostgreSQLDatabaseAndCreatesNoFile() throws {
        let server = try PostgresServer.shared()
        let (root, before) = try project()
        let database = try server.database(for: root)
        // The test server trusts its socket, so libpq never sends this password; it must still never be shown.
        let conninfo = server.keywordValue(database: database, extra: server.usesPassword ? "" : "password=secretpw")
        let migrate = try runStrata(["migrate", "--manifest", "manifest.xml", "--database", conninfo], in: root)
        XCTAssertEqual(migrate.status, 0, migrate.stderr)
        XCTAssertTrue(migrate.stdout.contains("dbname='\(database)'"), migrate.stdout)
        if !server.usesPassword { XCTAssertTrue(migrate.stdout.contains("password=•••"), migrate.stdout) }
        assertNoSecret(migrate, ["secretpw"], "migrate")
        XCTAssertEqual(try entries(root), before, "no SQLite file was created")
        let db = try PostgresConnection(url: try server.url(for: root))
        XCTAssertEqual(try db.history.all().map(\.identity), ["001_a.sql"])
        let status = try runStrata(["status", "--manifest", "manifest.xml", "--database", conninfo, "--format", "json"], in: root)
        XCTAssertEqual(status.status, 0, status.stderr)
        assertNoSecret(status, ["secretpw"], "status")
        XCTAssertNoThrow(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)))
        // A keyword libpq does not know: refused (exit 2), not a file named so.
        let unknown = try runStrata(["migrate", "--manifest", "manifest.xml", "--database", "HOST=db password=secretpw dbname=x"], in: root)
        XCTAssertEqual(unknown.status, 2, unknown.stderr)
        XCTAssertTrue(unknown.stderr.contains("invalid connection option \"HOST\""), unknown.stderr)
        assertNoSecret(unknown, ["secretpw"], "unknown keyword")
        XCTAssertEqual(try entries(root), before)
    }

    /// libpq ends the user information at the first `@`: the rest of the password becomes a host or a database
    /// name, which its messages quote.
    func testAPasswordWithARawAtOrSlashLeavesNoPieceInLibpqsMessages() throws {
        let server = try PostgresServer.shared()
        let (root, before) = try project()
        // libpq: password `se`, host `cretpw@127.0.0.1` ("could not translate host name"), no server needed.
        for format in ["text", "json"] {
            let result = try runStrata(["status", "--manifest", "manifest.xml", "--format", format,
                                        "--database", "postgresql://postgres:se@cretpw@127.0.0.1:54330/postgres"], in: root)
            XCTAssertEqual(result.status, 5, "cannot connect: \(result.stderr)")
            XCTAssertTrue(result.stderr.contains("•••@127.0.0.1"), result.stderr)
            assertNoSecret(result, ["cretpw", "se@"], "status --format \(format)")
        }
        // libpq: no user information before the '/', so host `postgres`, port 5432, database `secretpw@x`; the
        // query's host reaches the test server, which answers that the database does not exist.
        let url = "postgresql://postgres:5432/secretpw@x?\(server.hostQuery)&user=postgres"
        let result = try runStrata(["migrate", "--manifest", "manifest.xml", "--database", url, "--format", "json"], in: root)
        XCTAssertEqual(result.status, 5, "cannot connect: \(result.stderr)")
        XCTAssertTrue(result.stderr.contains("database \"•••@x\" does not exist"), result.stderr)
        assertNoSecret(result, ["secretpw"], "migrate")
        XCTAssertEqual(try entries(root), before)
    }

    /// libpq reads `postgresql://` and `postgres://` only, in lower case: any other `scheme://` would have been a
    /// SQLite path quoting the password in full.
    func testAURIWithAnotherSchemeIsRefusedWithoutThePassword() throws {
        let server = try PostgresServer.shared()
        let (root, before) = try project()
        for url in ["PostgreSQL://postgres:secretpw@/x?\(server.hostQuery)", "POSTGRES://postgres:secretpw@127.0.0.1:54330/postgres",
                    " postgresql://postgres:secretpw@/x", "mysql://root:secretpw@db/x"] {
            for format in ["text", "json"] {
                let result = try runStrata(["migrate", "--manifest", "manifest.xml", "--database", url, "--format", format], in: root)
                XCTAssertEqual(result.status, 2, "\(url): \(result.stderr)")
                XCTAssertTrue(result.stderr.contains("postgresql://… or postgres://…"), result.stderr)
                XCTAssertTrue(result.stderr.contains(":•••@"), result.stderr)
                assertNoSecret(result, ["secretpw"], url)
                if format == "json" {
                    let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
                    XCTAssertEqual(object?["error"] as? String, "usage", result.stdout)
                    XCTAssertTrue((object?["message"] as? String)?.contains(":•••@") ?? false, "one JSON object: \(result.stdout)")
                }
            }
        }
        XCTAssertEqual(try entries(root), before, "no SQLite file was created")
    }

    /// The manifest's `<database path>` with the same values: refused when the manifest loads.
    func testAConnectionStringInTheManifestsPathIsRefused() throws {
        let (root, _) = try project()
        for value in ["host=127.0.0.1 port=54330 user=postgres password=secretpw dbname=postgres", "PostgreSQL://postgres:secretpw@h/x"] {
            try write(#"<manifest version="1"><database path="\#(value)"/><migrations directory="sql"/></manifest>"#,
                      to: root.appendingPathComponent("manifest.xml"))
            let before = try entries(root)
            let result = try runStrata(["migrate", "--manifest", "manifest.xml", "--format", "json"], in: root)
            XCTAssertEqual(result.status, 3, result.stderr)
            XCTAssertTrue(result.stderr.contains("not a SQLite file path"), result.stderr)
            assertNoSecret(result, ["secretpw"], value)
            XCTAssertEqual(try entries(root), before)
        }
    }
}
