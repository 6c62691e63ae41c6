import Foundation
import XCTest
import Strata
@testable import StrataCore

/// `strata new` in a directory with a format names the file that tool's way.
final class NewInFormatTests: XCTestCase {
    func testNewInADbmateDirectoryNamesTheFileByTheTimeNow() throws {
        let project = try Project(self, manifest: #"<manifest version="1"><database path="db.sqlite"/><migrations directory="sql" format="dbmate"/></manifest>"#,
                                  files: ["sql/20240101120000_users.sql": "-- migrate:up\nCREATE TABLE users (id INTEGER);\n"])
        // 2026-01-02T03:04:05Z
        let now = Date(timeIntervalSince1970: 1_767_323_045)
        let path = try MigrationFile.create(named: "Add posts", in: try project.manifest(), now: now)
        XCTAssertEqual(PathComponents.last(path), "20260102030405_add_posts.sql")
        XCTAssertTrue(try String(contentsOfFile: path, encoding: .utf8).contains("-- migrate:up\n\n-- migrate:down\n"))
        // A file named later than the clock (a clock behind): the new one still sorts last.
        try project.file("sql/29991231235959_later.sql", "-- migrate:up\nSELECT 1;\n")
        let after = try MigrationFile.create(named: "next", in: try project.manifest(), now: now)
        XCTAssertEqual(PathComponents.last(after), "29991231235960_next.sql")
        try FileManager.default.removeItem(atPath: after)
        try FileManager.default.removeItem(at: project.root.appendingPathComponent("sql/29991231235959_later.sql"))

        let command = try project.strata(["new", "add tags"])
        XCTAssertEqual(command.status, 0, command.stderr)
        let name = command.stdout.dropFirst("created sql/".count).trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertTrue(name.hasSuffix("_add_tags.sql") && name.prefix(14).allSatisfy(\.isNumber) && name.count == 14 + "_add_tags.sql".count, name)
        XCTAssertEqual(try project.migrator().plan().steps.last?.step.id, name, "sorts after the existing files")
    }

    /// A plain directory keeps Strata's own rule: one more than the highest prefix.
    func testNewInAPlainDirectoryTakesTheNextNumber() throws {
        let project = try Project(self, files: ["sql/20240101120000_users.sql": "CREATE TABLE users (id INTEGER);\n"])
        let path = try MigrationFile.create(named: "posts", in: try project.manifest(), now: Date(timeIntervalSince1970: 1_767_323_045))
        XCTAssertEqual(PathComponents.last(path), "20240101120001_posts.sql")
    }

    /// golang-migrate (and sqlx): the next version, zero-padded as the existing ones, as an up and a down file.
    func testNewInAGolangMigrateDirectoryWritesTheNextVersionsUpAndDown() throws {
        let project = try Project(self, manifest: #"<manifest version="1"><database path="db.sqlite"/><migrations directory="sql" format="golang-migrate"/></manifest>"#,
                                  files: ["sql/000009_users.up.sql": "CREATE TABLE users (id INTEGER);\n",
                                          "sql/000009_users.down.sql": "DROP TABLE users;\n"])
        let command = try project.strata(["new", "Add posts"])
        XCTAssertEqual(command.status, 0, command.stderr)
        XCTAssertEqual(command.stdout, "created sql/000010_add_posts.up.sql\ncreated sql/000010_add_posts.down.sql\n")
        let plan = try project.migrator().plan()
        XCTAssertEqual(plan.steps.map(\.step.id), ["000009_users.up.sql", "000010_add_posts.up.sql"], "the down is no migration")
        guard case .migration(let added) = try XCTUnwrap(plan.steps.last).step, case .file(let down)? = added.down?.source else {
            return XCTFail("the new migration's down is its .down.sql")
        }
        XCTAssertTrue(down.hasSuffix("sql/000010_add_posts.down.sql"), down)
    }

    /// Flyway: `V{next major version}__name.sql`; diesel: a `YYYY-MM-DD-HHMMSS_name` directory with up.sql and down.sql.
    func testNewInFlywayAndDieselDirectoriesNamesTheirWay() throws {
        let flyway = try Project(self, manifest: #"<manifest version="1"><database path="db.sqlite"/><migrations directory="sql" format="flyway"/></manifest>"#,
                                 files: ["sql/V1__users.sql": "CREATE TABLE users (id INTEGER);\n",
                                         "sql/V2.1__posts.sql": "CREATE TABLE posts (id INTEGER);\n"])
        let path = try MigrationFile.create(named: "tags", in: try flyway.manifest())
        XCTAssertEqual(PathComponents.last(path), "V3__tags.sql")
        XCTAssertEqual(try flyway.migrator().plan().steps.last?.step.id, "V3__tags.sql")

        let diesel = try Project(self, manifest: #"<manifest version="1"><database path="db.sqlite"/><migrations directory="sql" format="diesel"/></manifest>"#,
                                 files: ["sql/2024-01-01-000000_users/up.sql": "CREATE TABLE users (id INTEGER);\n",
                                         "sql/2024-01-01-000000_users/down.sql": "DROP TABLE users;\n"])
        let files = try MigrationFile.createFiles(named: "posts", in: try diesel.manifest(), now: Date(timeIntervalSince1970: 1_767_323_045))
        XCTAssertEqual(files.map { $0.split(separator: "/").suffix(2).joined(separator: "/") },
                       ["2026-01-02-030405_posts/up.sql", "2026-01-02-030405_posts/down.sql"])
        XCTAssertEqual(try diesel.migrator().plan().steps.map(\.step.id), ["2024-01-01-000000_users/up.sql", "2026-01-02-030405_posts/up.sql"])
        XCTAssertThrowsError(try MigrationFile.create(named: "old", in: try diesel.manifest(), now: Date(timeIntervalSince1970: 0)),
                             "a name that would sort before the existing ones is refused")
    }
}
