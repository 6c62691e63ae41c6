import Foundation
import XCTest
@testable import StrataCore

/// Directory layouts (issue 29, item 1): each format's directory is read as its tool reads it, every up with its
/// down and no down ever a migration; a directory without a format that holds another tool's downs is refused up
/// front, naming the files and the format that fits; names that cannot be taken are manifest problems naming them.
final class MigrationLayoutTests: XCTestCase {
    private var root: URL!

    override func setUpWithError() throws {
        root = try makeTemporaryDirectory(self)
    }

    private func files(_ files: [String: String]) throws {
        for (path, text) in files { try write(text, to: root.appendingPathComponent(path)) }
    }

    private func manifest(_ format: String?, _ inner: String = "") throws -> String {
        let attribute = format.map { " format=\"\($0)\"" } ?? ""
        let xml = "<manifest version=\"1\"><migrations directory=\"sql\"\(attribute)>\(inner)</migrations></manifest>"
        try write(xml, to: root.appendingPathComponent("manifest.xml"))
        return root.appendingPathComponent("manifest.xml").path
    }

    private func load(_ format: String?, _ inner: String = "") throws -> Manifest {
        try Manifest.load(path: try manifest(format, inner))
    }

    private func problems(_ format: String?, _ inner: String = "", file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        do {
            _ = try Manifest.load(path: try manifest(format, inner))
            XCTFail("expected the manifest to be refused", file: file, line: line)
            return []
        } catch let error as ManifestError {
            return error.problems.map(\.message)
        }
    }

    private func downs(_ manifest: Manifest) -> [String?] {
        manifest.migrations.map { migration in
            switch migration.down?.source {
            case nil: nil
            case .section?: "section"
            case .file(let path)?: String(path.dropFirst(root.appendingPathComponent("sql").path.count + 1))
            }
        }
    }

    private let create = "CREATE TABLE t (x);\n"

    func testGolangMigratePairsUpsWithDownsByIntegerVersion() throws {
        try files(["sql/1_users.up.sql": create, "sql/1_users.down.sql": create, "sql/2_posts.up.sql": create,
                   "sql/10_title.up.sql": create, "sql/10_title.down.sql": create, "sql/README.md": "notes"])
        let manifest = try load("golang-migrate")
        XCTAssertEqual(manifest.migrations.map(\.id), ["1_users.up.sql", "2_posts.up.sql", "10_title.up.sql"], "integer order; downs are no migrations")
        XCTAssertEqual(downs(manifest), ["1_users.down.sql", nil, "10_title.down.sql"])
        XCTAssertEqual(manifest.migrations.map(\.format), [.golangMigrate, .golangMigrate, .golangMigrate])
        XCTAssertTrue(manifest.migrations.allSatisfy { $0.runsInTransaction && !$0.repeatable })
    }

    func testGolangMigrateRefusesWhatItCannotPair() throws {
        try files(["sql/1_users.up.sql": create, "sql/001_again.up.sql": create, "sql/2_posts.down.sql": create,
                   "sql/x_bad.up.sql": create, "sql/3_plain.sql": create,
                   "sql/99999999999999999999_huge.up.sql": create])
        let found = try problems("golang-migrate")
        XCTAssertTrue(found.contains { $0.contains("'1_users.up.sql' and '001_again.up.sql'") || $0.contains("'001_again.up.sql'") && $0.contains("two migrations of version 1") }, "\(found)")
        XCTAssertTrue(found.contains { $0.contains("'2_posts.down.sql'") && $0.contains("a down without its up") }, "\(found)")
        XCTAssertTrue(found.contains { $0.contains("'x_bad.up.sql'") && $0.contains("'x' is not a golang-migrate version") }, "\(found)")
        XCTAssertTrue(found.contains { $0.contains("'99999999999999999999_huge.up.sql'") && $0.contains("is not a golang-migrate version") }, "\(found)")
        XCTAssertTrue(found.contains { $0.contains("'3_plain.sql'") && $0.contains("is not a golang-migrate migration") }, "\(found)")
        XCTAssertEqual(found.count, 5, "\(found)")
    }

    func testSqlxTakesReversiblePairsAndSimpleFilesAndItsNoTransactionLine() throws {
        try files(["sql/20240101000001_users.up.sql": create, "sql/20240101000001_users.down.sql": create,
                   "sql/20240101000002_seed.sql": create,
                   "sql/20240101000003_index.sql": "-- no-transaction\nCREATE INDEX i ON t (x);\n"])
        let manifest = try load("sqlx")
        XCTAssertEqual(manifest.migrations.map(\.id), ["20240101000001_users.up.sql", "20240101000002_seed.sql", "20240101000003_index.sql"])
        XCTAssertEqual(downs(manifest), ["20240101000001_users.down.sql", nil, nil])
        XCTAssertEqual(manifest.migrations.map(\.runsInTransaction), [true, true, false])
        try files(["sql/20240101000002_seed.down.sql": create])
        let found = try problems("sqlx")
        XCTAssertTrue(found.contains { $0.contains("'20240101000002_seed.down.sql'") }, "a simple file has no down: \(found)")
    }

    func testDieselListsOneDirectoryPerMigration() throws {
        try files(["sql/00000000000000_diesel_initial_setup/up.sql": create,
                   "sql/00000000000000_diesel_initial_setup/down.sql": create,
                   "sql/2024-01-02-000000_posts/up.sql": create,
                   "sql/2024-01-02-000000_posts/metadata.toml": "run_in_transaction = false\n",
                   "sql/2024-01-01-000000_users/up.sql": create, "sql/2024-01-01-000000_users/down.sql": create,
                   "sql/.keep": ""])
        let manifest = try load("diesel")
        XCTAssertEqual(manifest.migrations.map(\.id), ["00000000000000_diesel_initial_setup/up.sql",
                                                       "2024-01-01-000000_users/up.sql", "2024-01-02-000000_posts/up.sql"])
        XCTAssertEqual(downs(manifest), ["00000000000000_diesel_initial_setup/down.sql", "2024-01-01-000000_users/down.sql", nil])
        XCTAssertEqual(manifest.migrations.map(\.runsInTransaction), [true, true, false])
        // A manifest line refines what the directory gives; it keeps the migration's down.
        let listed = try load("diesel", #"<migration file="2024-01-01-000000_users/up.sql" foreignKeys="on"/>"#)
        XCTAssertEqual(listed.migrations.map(\.id), manifest.migrations.map(\.id))
        XCTAssertEqual(downs(listed), downs(manifest))
        XCTAssertEqual(listed.migrations.map(\.enforcesForeignKeys), [false, true, false])

        try files(["sql/2024-01-03-000000_empty/down.sql": create, "sql/stray.sql": create,
                   "sql/2024-01-01-000000_again/up.sql": create, "sql/2024-01-02-000000_posts/metadata.toml": "foo = 1\n"])
        let found = try problems("diesel")
        XCTAssertTrue(found.contains { $0.contains("'2024-01-03-000000_empty/'") && $0.contains("holds no up.sql") }, "\(found)")
        XCTAssertTrue(found.contains { $0.contains("'stray.sql'") && $0.contains("is not a diesel migration") }, "\(found)")
        XCTAssertTrue(found.contains { $0.contains("two migrations of version 20240101000000") }, "\(found)")
        XCTAssertTrue(found.contains { $0.contains("metadata.toml") && $0.contains("'foo = 1'") }, "\(found)")
    }

    func testFlywayComparesVersionsByTheirNumbersAndTakesUndosAndRepeatables() throws {
        try files(["sql/V1.9__users.sql": create, "sql/U1.9__users.sql": create, "sql/V1.10__posts.sql": create,
                   "sql/V1.2__admin.sql": create, "sql/R__views.sql": create, "sql/V2_1__later.sql": create])
        let manifest = try load("flyway")
        XCTAssertEqual(manifest.migrations.map(\.id), ["R__views.sql", "V1.2__admin.sql", "V1.9__users.sql", "V1.10__posts.sql", "V2_1__later.sql"])
        XCTAssertEqual(manifest.plan(for: .sqlite).map(\.id), ["V1.2__admin.sql", "V1.9__users.sql", "V1.10__posts.sql", "V2_1__later.sql", "R__views.sql"],
                       "repeatables after the versioned steps")
        XCTAssertEqual(manifest.migrations.map(\.repeatable), [true, false, false, false, false])
        XCTAssertEqual(downs(manifest), [nil, nil, "U1.9__users.sql", nil, nil])

        try files(["sql/V1.2.0__same.sql": create, "sql/U7__orphan.sql": create, "sql/Vx__bad.sql": create, "sql/notes.sql": create])
        let found = try problems("flyway")
        XCTAssertTrue(found.contains { $0.contains("'V1.2__admin.sql'") && $0.contains("two migrations of version 1.2") }, "\(found)")
        XCTAssertTrue(found.contains { $0.contains("'U7__orphan.sql'") && $0.contains("an undo without its migration") }, "\(found)")
        XCTAssertTrue(found.contains { $0.contains("'Vx__bad.sql'") && $0.contains("'x' is not a Flyway version") }, "\(found)")
        XCTAssertTrue(found.contains { $0.contains("'notes.sql'") && $0.contains("is not a Flyway migration name") }, "\(found)")
    }

    /// Strata runs by name: where Flyway's version order and the names' order disagree, the directory is refused
    /// rather than run in another order than Flyway's.
    func testAnOrderStrataCannotFollowIsRefused() throws {
        try files(["sql/V1__a.sql": create, "sql/V1.1__b.sql": create])
        let found = try problems("flyway")
        XCTAssertTrue(found.contains { $0.contains("runs 'V1__a.sql' (version 1) before 'V1.1__b.sql' (version 1.1)") }, "\(found)")
    }

    func testStrataOwnLayoutPairsNameDotDownAndTheDownAttribute() throws {
        try files(["sql/001_users.sql": create, "sql/001_users.down.sql": create, "sql/002_posts.sql": create,
                   "undo/002.sql": create])
        let manifest = try load(nil, #"<migration file="002_posts.sql" down="../undo/002.sql"/>"#)
        XCTAssertEqual(manifest.migrations.map(\.id), ["001_users.sql", "002_posts.sql"])
        XCTAssertEqual(downs(manifest)[0], "001_users.down.sql")
        guard case .file(let path)? = manifest.migrations[1].down?.source else { return XCTFail("no down") }
        XCTAssertEqual(path, root.appendingPathComponent("undo/002.sql").path)

        // A down attribute on a file that holds its own down, or naming nothing, is a problem.
        try files(["sql/003_g.sql": "-- +goose Up\nSELECT 1;\n-- +goose Down\nSELECT 1;\n"])
        let found = try problems(nil, #"<migration file="003_g.sql" format="goose" down="001_users.sql"/><migration file="002_posts.sql" down="nope.sql"/>"#)
        XCTAssertTrue(found.contains { $0.contains("holds the down in the file's own down section") }, "\(found)")
        XCTAssertTrue(found.contains { $0.contains("down file 'nope.sql' of migration '002_posts.sql' cannot be read") }, "\(found)")
    }

    /// A directory without a format holding another tool's downs or undos is refused before anything could run them
    /// as migrations, naming them and the format that fits.
    func testAnotherToolsDownsWithoutAFormatAreRefusedNamingTheFormat() throws {
        try files(["sql/000001_users.up.sql": create, "sql/000001_users.down.sql": create,
                   "sql/000002_posts.up.sql": create, "sql/000002_posts.down.sql": create])
        let golang = try problems(nil)
        XCTAssertEqual(golang.count, 1, "\(golang)")
        XCTAssertTrue(golang[0].contains("golang-migrate's down files ('000001_users.down.sql', '000002_posts.down.sql')"), golang[0])
        XCTAssertTrue(golang[0].contains("declare format=\"golang-migrate\" (or \"sqlx\")"), golang[0])

        try FileManager.default.removeItem(at: root.appendingPathComponent("sql"))
        try files(["sql/V1__users.sql": create, "sql/U1__users.sql": create])
        let flyway = try problems(nil)
        XCTAssertTrue(flyway.contains { $0.contains("Flyway's undo files ('U1__users.sql')") && $0.contains("format=\"flyway\"") }, "\(flyway)")

        try FileManager.default.removeItem(at: root.appendingPathComponent("sql"))
        try files(["sql/2024-01-01-000000_users/up.sql": create, "sql/2024-01-01-000000_users/down.sql": create])
        let diesel = try problems(nil)
        XCTAssertTrue(diesel.contains { $0.contains("diesel's down files ('2024-01-01-000000_users/down.sql')") && $0.contains("format=\"diesel\"") }, "\(diesel)")

        try FileManager.default.removeItem(at: root.appendingPathComponent("sql"))
        try files(["sql/3_x.down.sql": create])
        let orphan = try problems(nil)
        XCTAssertTrue(orphan.contains { $0.contains("'3_x.down.sql'") && $0.contains("a down without its up") }, "\(orphan)")
    }

    func testTheSchemaAcceptsEveryFormat() throws {
        for format in MigrationFormat.allCases {
            try FileManager.default.createDirectory(at: root.appendingPathComponent("sql"), withIntermediateDirectories: true)
            XCTAssertEqual(try load(format.rawValue).migrations, [], format.rawValue)
        }
    }
}
