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
}
