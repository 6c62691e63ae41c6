import Foundation
import Strata
@testable import StrataCore
@testable import StrataPostgres
import XCTest

/// `strata diff` on each backend: text and JSON output, exit 0 when the schemas match and 3 when they differ, the
/// schema-file form (`strata schema --format json`), and its errors (a database or file that is not there, a file
/// that is not a snapshot, one schema instead of two, two backends).
final class DiffCommandTests: XCTestCase {
    /// A database migrated with the first migration of `scenario` (and its second when `changed`).
    func database(_ backend: TestBackend, _ scenario: SchemaDiffTests.Scenario, changed: Bool) throws -> Project {
        var files = ["sql/001_books.sql": scenario.first]
        if changed { files["sql/002_change.sql"] = scenario.second }
        let project = try Project(self, backend: backend, files: files)
        let migrate = try project.strataOnBackend(["migrate"])
        XCTAssertEqual(migrate.status, 0, migrate.stderr)
        return project
    }

    func object(_ result: CommandResult, file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        let value = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8))
        return try XCTUnwrap(value as? [String: Any], result.stdout, file: file, line: line)
    }

    func checkDiff(_ backend: TestBackend, _ scenario: SchemaDiffTests.Scenario) throws {
        let before = try database(backend, scenario, changed: false)
        let after = try database(backend, scenario, changed: true)
        let again = try database(backend, scenario, changed: true)
        let books = scenario.qualified("books")

        let text = try runStrata(["diff", "--database", before.location, "--database", after.location], in: before.root)
        XCTAssertEqual(text.status, 3, text.stderr)
        let lines = text.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.first, "4 differences from \(DatabaseURL.redacted(before.location)) to \(DatabaseURL.redacted(after.location)):")
        XCTAssertEqual(lines.dropFirst().first, "  added    column     \(books).isbn: isbn \(backend.kind == .sqlite ? "TEXT" : "text")")
        XCTAssertTrue(lines.contains { $0.hasPrefix("  dropped  index      \(scenario.qualified("books_title")) on \(books): ") }, text.stdout)
        XCTAssertTrue(lines.contains("  changed  view       \(scenario.qualified("titles"))"), text.stdout)
        XCTAssertTrue(lines.contains("  changed  trigger    books_trim on \(books)"), text.stdout)
        XCTAssertEqual(lines.filter { $0 == "      definition:" }.count, 2, text.stdout)

        let json = try runStrata(["diff", "--database", before.location, "--database", after.location, "--format", "json"], in: before.root)
        XCTAssertEqual(json.status, 3, json.stderr)
        XCTAssertTrue(json.stdout.hasPrefix(#"{"command":"diff","from":""#), json.stdout)
        let result = try object(json)
        XCTAssertEqual(result["equal"] as? Bool, false)
        let differences = try XCTUnwrap(result["differences"] as? [[String: Any]])
        XCTAssertEqual(differences.map { "\($0["kind"] ?? "") \($0["action"] ?? "")" },
                       ["column added", "index dropped", "view changed", "trigger changed"])
        XCTAssertEqual(differences[0]["table"] as? String, books)
        XCTAssertEqual(differences[0]["name"] as? String, "isbn")
        XCTAssertEqual((differences[0]["aspects"] as? [Any])?.count, 0)
        XCTAssertTrue(differences[2]["definition"] is NSNull)
        let aspect = try XCTUnwrap((differences[2]["aspects"] as? [[String: Any]])?.first)
        XCTAssertEqual(aspect["aspect"] as? String, "definition")
        XCTAssertTrue((aspect["to"] as? String)?.contains("isbn") ?? false, "\(aspect)")

        // Two databases built by the same manifest: exit 0.
        let same = try runStrata(["diff", "--database", after.location, "--database", again.location], in: after.root)
        XCTAssertEqual(same.status, 0, same.stdout + same.stderr)
        XCTAssertEqual(same.stdout, "no differences: \(DatabaseURL.redacted(after.location)) and \(DatabaseURL.redacted(again.location)) have the same schema\n")
        let sameJSON = try object(try runStrata(["diff", "--database", after.location, "--database", again.location, "--format", "json"], in: after.root))
        XCTAssertEqual(sameJSON["equal"] as? Bool, true)
        XCTAssertEqual((sameJSON["differences"] as? [Any])?.count, 0)

        // The schema-file form: what `strata schema --format json` wrote of the changed database.
        let schema = try runStrata(["schema", "--database", after.location, "--format", "json"], in: after.root)
        XCTAssertEqual(schema.status, 0, schema.stderr)
        XCTAssertNotNil(try object(schema)["snapshot"] as? [String: Any])
        try after.file("expected.json", schema.stdout)
        let expected = after.root.appendingPathComponent("expected.json").path
        let fromFile = try runStrata(["diff", "--database", before.location, "--schema", expected], in: before.root)
        XCTAssertEqual(fromFile.status, 3, fromFile.stderr)
        let fileLines: [String] = fromFile.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(Array(fileLines.dropFirst()), Array(lines.dropFirst()),
                       "the same differences as against the database itself")
        XCTAssertEqual(try runStrata(["diff", "--database", again.location, "--schema", expected], in: again.root).status, 0)
        // The manifest names the database when no --database does.
        let viaManifest = try runStrata(["diff", "--manifest", again.manifestPath, "--schema", expected], in: again.root)
        XCTAssertEqual(viaManifest.status, 0, viaManifest.stdout + viaManifest.stderr)
        // Two files compare too.
        XCTAssertEqual(try runStrata(["diff", "--schema", expected, "--schema", expected], in: again.root).status, 0)
    }

    func testDiffOnSQLite() throws {
        try checkDiff(.sqlite, SchemaDiffTests.sqlite)
    }

    func testDiffOnPostgreSQL() throws {
        _ = try PostgresServer.shared()
        try checkDiff(.postgres, SchemaDiffTests.postgres)
    }

    /// Errors: exit 1 for a database or file that cannot be read (nothing created), 2 for anything but two
    /// schemas; `--format json` prints the error object.
    func testDiffErrors() throws {
        let project = try database(.sqlite, SchemaDiffTests.sqlite, changed: false)
        let dir = project.root
        func run(_ arguments: [String]) throws -> CommandResult { try runStrata(["diff"] + arguments, in: dir) }

        var result = try run(["--database", "db.sqlite", "--database", "nope.sqlite"])
        XCTAssertEqual(result.status, 1)
        XCTAssertEqual(result.stdout, "")
        XCTAssertTrue(result.stderr.contains("nope.sqlite does not exist; diff reads existing databases and creates none"), result.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.appendingPathComponent("nope.sqlite").path))

        result = try run(["--database", "db.sqlite", "--schema", "missing.json"])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("cannot read missing.json: No such file or directory"), result.stderr)
        result = try run(["--database", "db.sqlite", "--schema", "sql"])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("cannot read sql: it is a directory, not a regular file"), result.stderr)

        try project.file("plain.sql", try runStrata(["schema", "--database", "db.sqlite"], in: dir).stdout)
        result = try run(["--database", "db.sqlite", "--schema", "plain.sql", "--format", "json"])
        XCTAssertEqual(result.status, 1)
        let error = try object(result)
        XCTAssertEqual(error["command"] as? String, "diff")
        XCTAssertEqual(error["error"] as? String, "failed")
        XCTAssertTrue((error["message"] as? String)?.hasPrefix("plain.sql: not a schema snapshot: ") ?? false, "\(error)")
        XCTAssertTrue(result.stderr.contains("write one with 'strata schema --format json'"), result.stderr)

        for arguments in [["--database", "db.sqlite"], [], ["--database", "db.sqlite", "--database", "db.sqlite", "--schema", "x.json"]] {
            result = try run(arguments)
            XCTAssertEqual(result.status, 2, "\(arguments): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains("diff compares two schemas"), result.stderr)
        }
        result = try run(["--database", "", "--database", "db.sqlite"])
        XCTAssertEqual(result.status, 2, result.stderr)
        XCTAssertTrue(result.stderr.contains("names no database file"), result.stderr)
    }

    /// A database that is not on the server is an error (exit 1); a SQLite schema and a PostgreSQL one are not
    /// compared (exit 2).
    func testDiffErrorsOnPostgreSQL() throws {
        let server = try PostgresServer.shared()
        let postgres = try database(.postgres, SchemaDiffTests.postgres, changed: false)
        let sqlite = try database(.sqlite, SchemaDiffTests.sqlite, changed: false)
        let missing = server.keywordValue(database: "strata_no_such_database")
        var result = try runStrata(["diff", "--database", postgres.location, "--database", missing], in: postgres.root)
        XCTAssertEqual(result.status, 5, "a database that cannot be connected to: \(result.stderr)")
        XCTAssertTrue(result.stderr.contains("strata_no_such_database"), result.stderr)
        result = try runStrata(["diff", "--database", sqlite.location, "--database", postgres.location], in: postgres.root)
        XCTAssertEqual(result.status, 2, result.stderr)
        XCTAssertTrue(result.stderr.contains("cannot compare a SQLite schema with a PostgreSQL schema"), result.stderr)
    }
}
