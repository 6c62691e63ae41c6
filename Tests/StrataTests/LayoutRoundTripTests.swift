import Foundation
import XCTest
import Strata
@testable import StrataCore

/// The round trip on every layout (issue 29): migrate all, roll back to any step, migrate again gives the schema
/// and rows one fresh migrate gives; everything rolled back gives an empty database's schema. On both backends.
final class LayoutRoundTripTests: XCTestCase {
    /// Four changes, each with what undoes it: two tables, rows in both, a column.
    static let changes: [(name: String, up: String, down: String)] = [
        ("users", "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);\n", "DROP TABLE users;\n"),
        ("posts", "CREATE TABLE posts (id INTEGER PRIMARY KEY, user_id INTEGER, body TEXT);\n", "DROP TABLE posts;\n"),
        ("admin", "INSERT INTO users VALUES (1, 'admin');\nINSERT INTO posts VALUES (1, 1, 'hello');\n",
         "DELETE FROM posts WHERE id = 1;\nDELETE FROM users WHERE id = 1;\n"),
        ("title", "ALTER TABLE posts ADD COLUMN title TEXT;\nUPDATE posts SET title = 'first';\n",
         "ALTER TABLE posts DROP COLUMN title;\n"),
    ]

    /// A layout: its `<migrations>` element and its files, built from `changes`.
    struct Layout {
        let name: String
        let element: String
        let files: [String: String]
    }

    static func layout(_ name: String, element: String = "", _ file: (Int, String, String, String) -> [String: String]) -> Layout {
        var files: [String: String] = [:]
        for (index, change) in changes.enumerated() {
            files.merge(file(index, change.name, change.up, change.down)) { $1 }
        }
        return Layout(name: name, element: element.isEmpty ? #"<migrations directory="sql" format="\#(name)"/>"# : element, files: files)
    }

    static let layouts: [Layout] = [
        // Versions 1, 2, 3, 10: integer order.
        layout("golang-migrate") { index, name, up, down in
            let version = [1, 2, 3, 10][index]
            return ["sql/\(version)_\(name).up.sql": up, "sql/\(version)_\(name).down.sql": down]
        },
        layout("sqlx") { index, name, up, down in
            ["sql/2024010100000\(index + 1)_\(name).up.sql": up, "sql/2024010100000\(index + 1)_\(name).down.sql": down]
        },
        layout("diesel") { index, name, up, down in
            ["sql/2024-01-0\(index + 1)-000000_\(name)/up.sql": up, "sql/2024-01-0\(index + 1)-000000_\(name)/down.sql": down]
        },
        // Versions 1.1, 1.2, 1.9, 1.10: compared by their numbers.
        layout("flyway") { index, name, up, down in
            let version = ["1.1", "1.2", "1.9", "1.10"][index]
            return ["sql/V\(version)__\(name).sql": up, "sql/U\(version)__\(name).sql": down]
        },
        layout("goose") { index, name, up, down in
            ["sql/00\(index + 1)_\(name).sql": "-- +goose Up\n\(up)-- +goose Down\n\(down)"]
        },
        layout("dbmate") { index, name, up, down in
            ["sql/2024010100000\(index + 1)_\(name).sql": "-- migrate:up\n\(up)\n-- migrate:down\n\(down)"]
        },
        // Strata's own: NAME.down.sql beside NAME.sql, and one pairing by down="…".
        layout("plain", element: #"<migrations directory="sql"><migration file="004_title.sql" down="undo_title.sql"/></migrations>"#) { index, name, up, down in
            index == 3 ? ["sql/004_title.sql": up, "sql/undo_title.sql": down]
                : ["sql/00\(index + 1)_\(name).sql": up, "sql/00\(index + 1)_\(name).down.sql": down]
        },
    ]

    /// The schema as `strata schema` prints it (Strata's history left out) and every row of every table but the
    /// history.
    func state(_ project: Project) throws -> String {
        let schema = try project.strataOnBackend(["schema"])
        XCTAssertEqual(schema.status, 0, schema.stderr)
        let db = try project.connection()
        var text = schema.stdout
        for table in try db.schemaSnapshot().tables.map(\.name) where !table.hasSuffix("strata_history") {
            let rows = try db.rows("SELECT * FROM \(table) ORDER BY 1", .none)
            text += "\n-- \(table)\n" + rows.map { $0.values.map(\.description).joined(separator: "|") }.sorted().joined(separator: "\n")
        }
        return text
    }

    func testEveryLayoutRoundTripsOnEveryBackend() throws {
        try forEachBackend { backend in
            for layout in Self.layouts {
                func project() throws -> Project {
                    try Project(self, backend: backend, manifestBody: layout.element, files: layout.files)
                }
                let fresh = try project()
                let report = try fresh.migrator().migrate()
                XCTAssertNil(report.failure, "\(layout.name): \(String(describing: report.failure))")
                XCTAssertEqual(report.applied.count, 4, layout.name)
                let expected = try state(fresh)
                XCTAssertTrue(expected.contains("admin") && expected.contains("first"), "\(layout.name): \(expected)")
                let ids = try fresh.manifest().migrations.map(\.id)
                XCTAssertTrue(try fresh.manifest().migrations.allSatisfy { $0.down != nil }, layout.name)
                let empty = try project()
                _ = try empty.connection()
                let nothing = try state(empty)

                for count in 1...4 {
                    let project = try project()
                    XCTAssertNil(try project.migrator().migrate().failure, "\(layout.name) \(count)")
                    let rolled = try project.migrator().rollback(.steps(count))
                    XCTAssertNil(rolled.failure, "\(layout.name) \(count): \(String(describing: rolled.failure))")
                    XCTAssertEqual(rolled.applied.map(\.id), ids.suffix(count).reversed(), "\(layout.name): newest first")
                    if count == 4 { XCTAssertEqual(try state(project), nothing, "\(layout.name): everything rolled back") }
                    XCTAssertNil(try project.migrator().migrate().failure, "\(layout.name) \(count)")
                    XCTAssertEqual(try state(project), expected, "\(layout.name): rolled back \(count), migrated again")
                }
                let to = try project()
                XCTAssertNil(try to.migrator().migrate().failure)
                XCTAssertEqual(try to.migrator().rollback(.to(ids[0])).applied.map(\.id), ids.dropFirst().reversed(), layout.name)
                XCTAssertNil(try to.migrator().migrate().failure)
                XCTAssertEqual(try state(to), expected, "\(layout.name): rolled back to the first, migrated again")
            }
        }
    }

    /// A golang-migrate directory without a format is refused by every command, naming its down files; with the
    /// format, migrate never runs a down (were they run, their DROPs would leave no table), and validate and plan
    /// show each up with its down.
    func testAGolangMigrateDirectoryNeedsItsFormatAndThenItsDownsNeverRunOnMigrate() throws {
        try forEachBackend { backend in
            let layout = Self.layouts[0]
            let bare = try Project(self, backend: backend, manifestBody: #"<migrations directory="sql"/>"#, files: layout.files)
            for command in [["validate"], ["plan"], ["migrate"]] {
                let refused = command == ["validate"] ? try bare.strata(command) : try bare.strataOnBackend(command)
                XCTAssertEqual(refused.status, 3, "\(command): \(refused.stderr)")
                XCTAssertTrue(refused.stderr.contains("golang-migrate's down files ('10_title.down.sql', '1_users.down.sql', '2_posts.down.sql', '3_admin.down.sql')"), refused.stderr)
                XCTAssertTrue(refused.stderr.contains(#"declare format="golang-migrate""#), refused.stderr)
            }
            XCTAssertEqual(try bare.connection().history.all().count, 0, "nothing ran")

            let project = try Project(self, backend: backend, manifestBody: layout.element, files: layout.files)
            let validate = try project.strata(["validate"])
            XCTAssertEqual(validate.status, 0, validate.stderr)
            XCTAssertTrue(validate.stdout.contains("1_users.up.sql   down: sql/1_users.down.sql"), validate.stdout)
            let plan = try project.strataOnBackend(["plan"])
            XCTAssertTrue(plan.stdout.contains("down: sql/10_title.down.sql"), plan.stdout)
            let json = try project.strataOnBackend(["plan", "--format", "json"])
            XCTAssertTrue(json.stdout.contains(#""format":"golang-migrate","repeatable":false,"down":"sql/1_users.down.sql""#), json.stdout)
            XCTAssertNil(try project.migrator().migrate().failure)
            let db = try project.connection()
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM posts WHERE title = 'first'", .none, as: Int.self), 1)
            XCTAssertEqual(try db.history.all().map(\.identity).sorted(), ["10_title.up.sql", "1_users.up.sql", "2_posts.up.sql", "3_admin.up.sql"])
        }
    }
}
