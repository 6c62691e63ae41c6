import Foundation
import XCTest
import Strata
@testable import StrataCore
@testable import StrataPostgres
@testable import StrataSQLite

/// Messages that lead somewhere: a refusal names fixes that work (each is tried here), `diff` never lists Strata's
/// own objects, and the files `strata new` writes point to a section that exists.
final class MessageTests: XCTestCase {
    /// The refusal once said to set foreignKeys="on", which gave the same refusal again.
    func testThePragmaForeignKeysRefusalNamesFixesThatWork() throws {
        func project(_ attributes: String, _ sql: String) throws -> Project {
            try Project(self, backend: .sqlite, manifestBody: #"<migrations directory="sql"><migration file="1_a.sql" \#(attributes)/></migrations>"#,
                        files: ["sql/1_a.sql": sql])
        }
        let pragma = "PRAGMA foreign_keys = ON;\nCREATE TABLE a (x INTEGER);"
        let refused = try project(#"foreignKeys="on""#, pragma)
        let result = try refused.strata(["migrate", "--format", "json"])
        XCTAssertEqual(result.status, 3, result.stderr)
        XCTAssertTrue(result.stderr.contains("delete the PRAGMA"), result.stderr)
        XCTAssertTrue(result.stderr.contains(#"mark the file transaction="none""#), result.stderr)
        XCTAssertEqual(try refused.strata(["validate"]).status, 3)
        // Each fix it names works.
        try refused.file("sql/1_a.sql", "CREATE TABLE a (x INTEGER);")
        XCTAssertEqual(try refused.strata(["migrate"]).status, 0, "the PRAGMA deleted, foreignKeys=\"on\" kept")
        let none = try project(#"transaction="none""#, pragma)
        let ran = try none.strata(["migrate"])
        XCTAssertEqual(ran.status, 0, ran.stderr)
    }

    /// `strata new` writes a header naming the README section (the manual's article) that says how a file runs.
    func testNewPointsToASectionThatExists() throws {
        let project = try Project(self, files: [:])
        let created = try project.strata(["new", "add_things"])
        XCTAssertEqual(created.status, 0, created.stderr)
        let path = project.root.appendingPathComponent("sql/001_add_things.sql").path
        let text = try String(contentsOfFile: path, encoding: .utf8)
        XCTAssertTrue(text.contains("see the manual's How Migrations Run article"), text)
        let article = repositoryRoot().appendingPathComponent("Sources/Strata/Strata.docc/HowMigrationsRun.md").path
        let heading = try String(contentsOfFile: article, encoding: .utf8).split(separator: "\n").first.map(String.init) ?? ""
        XCTAssertEqual(heading, "# How Migrations Run", "the article the header names exists")
    }

    /// A history in a schema outside the role's `search_path` is Strata's all the same: `schema` and `diff` leave
    /// out its table, triggers and guard function.
    func testDiffNeverListsStrataObjectsWhereverTheyLive() throws {
        let server = try PostgresServer.shared()
        let project = try Project(self, backend: .postgres, files: ["sql/1_t.sql": "CREATE TABLE t (id integer PRIMARY KEY);"])
        let url = try server.url(for: project.root)
        let admin = try PostgresConnection(url: url)
        try admin.execute("CREATE SCHEMA strata_meta", .none)
        try project.file("manifest.xml", #"<manifest version="1"><database url="\#(url.replacingOccurrences(of: "&", with: "&amp;"))" schema="strata_meta"/><migrations directory="sql"/></manifest>"#)
        let migrated = try project.strata(["migrate"])
        XCTAssertEqual(migrated.status, 0, migrated.stderr)
        XCTAssertEqual(try admin.scalar("SELECT relnamespace::regnamespace::text FROM pg_class WHERE relname = 'strata_history'", as: String.self),
                       "strata_meta")
        // The same table made without Strata.
        let other = try Project(self, backend: .postgres, files: [:])
        let otherURL = try server.url(for: other.root)
        try PostgresConnection(url: otherURL).execute("CREATE TABLE t (id integer PRIMARY KEY)", .none)

        let schema = try runStrata(["schema", "--database", url], in: project.root)
        XCTAssertEqual(schema.status, 0, schema.stderr)
        XCTAssertFalse(schema.stdout.contains("strata_history"), schema.stdout)
        XCTAssertFalse(schema.stdout.contains("strata_meta"), "a schema holding only the history is Strata's: \(schema.stdout)")
        let diff = try runStrata(["diff", "--database", url, "--database", otherURL], in: project.root)
        XCTAssertEqual(diff.status, 0, diff.stdout + diff.stderr)
    }
}
