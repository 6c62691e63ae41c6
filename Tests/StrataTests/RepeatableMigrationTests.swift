import Foundation
import XCTest
import Strata
@testable import StrataCore
@testable import StrataSQLite

/// Repeatable migrations (`<migrations repeatable="true">`, `<migration repeatable="true">`) on every backend: applied
/// after the versioned steps of a run, in name order, again whenever the file changed since its last application and
/// never otherwise; never drift, never rolled back.
final class RepeatableMigrationTests: XCTestCase {
    /// Versioned dbmate files (with downs), a directory of repeatable views, and one repeatable file listed on its own.
    /// The repeatables' names sort before the versioned ones they depend on: they run after them all the same.
    static let files: [String: String] = [
        "sql/001_users.sql": "-- migrate:up\nCREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, active INTEGER);\n-- migrate:down\nDROP TABLE users;\n",
        "sql/002_posts.sql": "-- migrate:up\nCREATE TABLE posts (id INTEGER PRIMARY KEY, user_id INTEGER);\n-- migrate:down\nDROP TABLE posts;\n",
        "sql/003_tags.sql": "-- migrate:up\nCREATE TABLE tags (id INTEGER PRIMARY KEY);\n-- migrate:down\nDROP TABLE tags;\n",
        "views/000_active_users.sql": "DROP VIEW IF EXISTS active_users;\nCREATE VIEW active_users AS SELECT id, name FROM users WHERE active = 1;\n",
        "views/counts.sql": counts("n"),
        "more/000_summary.sql": "DROP VIEW IF EXISTS summary;\nCREATE VIEW summary AS SELECT user_id, count(*) AS posts FROM posts GROUP BY user_id;\n",
    ]

    static func counts(_ column: String) -> String {
        "DROP VIEW IF EXISTS counts;\nCREATE VIEW counts AS SELECT count(*) AS \(column) FROM users;\n"
    }

    static let body = """
        <migrations directory="sql" format="dbmate"/>
        <migrations directory="views" repeatable="true"/>
        <migrations directory="more"><migration file="000_summary.sql" repeatable="true"/></migrations>
        """

    static let order = ["001_users.sql", "002_posts.sql", "003_tags.sql", "000_active_users.sql", "000_summary.sql", "counts.sql"]

    func project(_ backend: TestBackend) throws -> Project {
        try Project(self, backend: backend, manifestBody: Self.body, files: Self.files)
    }

    func states(_ project: Project) throws -> [String: StepStatus.State] {
        Dictionary(uniqueKeysWithValues: try project.migrator().status().map { ($0.id, $0.state) })
    }

    func testRepeatablesRunAfterTheVersionedStepsInNameOrderAndAgainOnlyWhenTheyChange() throws {
        try forEachBackend { backend in
            let project = try project(backend)
            let manifest = try project.manifest()
            XCTAssertEqual(manifest.plan(for: .sqlite).map(\.id), Self.order)
            XCTAssertEqual(manifest.migrations.filter(\.repeatable).map(\.id).sorted(), ["000_active_users.sql", "000_summary.sql", "counts.sql"])
            let planned = try project.migrator().plan()
            XCTAssertEqual(planned.steps.map(\.step.id), Self.order)
            let shown = try project.strataOnBackend(["plan"])
            XCTAssertEqual(shown.status, 0, shown.stderr)
            XCTAssertTrue(shown.stdout.split(separator: "\n").contains { $0.contains("counts.sql") && $0.contains("repeatable") }, shown.stdout)
            let json = try project.strataOnBackend(["plan", "--format", "json"])
            XCTAssertTrue(json.stdout.contains(#""id":"counts.sql","reason":"pending","rows":null,"format":"plain","repeatable":true"#), json.stdout)

            // First run: every step, the repeatables last.
            XCTAssertEqual(try project.migrator().migrate().applied.map(\.id), Self.order)
            XCTAssertTrue(try states(project).values.allSatisfy { $0 == .applied })
            let db = try project.connection()
            XCTAssertEqual(try db.scalar("SELECT n FROM counts", .none, as: Int.self), 0)
            let first = try XCTUnwrap(try db.history.record(kind: .migration, identity: "counts.sql"))

            // Unchanged: nothing runs, and the command says so.
            XCTAssertEqual(try project.migrator().migrate().applied.map(\.id), [])
            let again = try project.strataOnBackend(["migrate"])
            XCTAssertEqual(again.status, 0, again.stderr)
            XCTAssertTrue(again.stdout.contains("Nothing to do"), again.stdout)

            // Changed: `changed` in status (not drifted, exit 0), planned and applied once as a reapplication.
            try project.file("views/counts.sql", Self.counts("users"))
            XCTAssertEqual(try states(project)["counts.sql"], .changed)
            XCTAssertEqual(try states(project).values.filter { $0 == .changed }.count, 1)
            let status = try project.strataOnBackend(["status"])
            XCTAssertEqual(status.status, 0, status.stderr)
            XCTAssertTrue(status.stdout.split(separator: "\n").contains { $0.contains("counts.sql") && $0.contains("changed") }, status.stdout)
            let plan = try project.migrator().plan()
            XCTAssertEqual(plan.steps.map(\.step.id), ["counts.sql"])
            XCTAssertEqual(plan.steps.map(\.reason), [.reapply])
            XCTAssertEqual(plan.refusals, [])
            let reapplied = try project.migrator().migrate()
            XCTAssertNil(reapplied.failure)
            XCTAssertEqual(reapplied.applied.map(\.id), ["counts.sql"])
            XCTAssertEqual(reapplied.applied.map(\.reason), [.reapply])
            XCTAssertEqual(try db.scalar("SELECT users FROM counts", .none, as: Int.self), 0, "the new definition")
            XCTAssertEqual(try project.migrator().migrate().applied.map(\.id), [], "applied once")
            XCTAssertTrue(try states(project).values.allSatisfy { $0 == .applied })

            // Each application is recorded: the row holds the latest (its SQL), and the checksums applied before it.
            let second = try XCTUnwrap(try db.history.record(kind: .migration, identity: "counts.sql"))
            XCTAssertNotEqual(second.checksum, first.checksum)
            XCTAssertEqual(second.earlierChecksums, [first.versionedChecksum])
            XCTAssertTrue(second.appliedSQL?.contains("AS users") ?? false, "\(second)")

            // Put back as it was: a changed file like any other, applied again (a view's old definition is no older rows).
            try project.file("views/counts.sql", Self.counts("n"))
            XCTAssertEqual(try states(project)["counts.sql"], .changed)
            XCTAssertEqual(try project.migrator().migrate().applied.map(\.id), ["counts.sql"])
            XCTAssertEqual(try db.scalar("SELECT n FROM counts", .none, as: Int.self), 0)
            let third = try XCTUnwrap(try db.history.record(kind: .migration, identity: "counts.sql"))
            XCTAssertEqual(third.checksum, first.checksum)
            XCTAssertEqual(third.earlierChecksums, [second.versionedChecksum], "the current one is not an earlier one")
        }
    }

    /// A versioned step added later runs before the repeatables that changed with it, in the same run.
    func testANewVersionedStepRunsBeforeTheRepeatablesOfItsRun() throws {
        try forEachBackend { backend in
            let project = try project(backend)
            XCTAssertNil(try project.migrator().migrate().failure)
            try project.file("sql/004_email.sql", "-- migrate:up\nALTER TABLE users ADD COLUMN email TEXT;\n-- migrate:down\nALTER TABLE users DROP COLUMN email;\n")
            try project.file("views/000_active_users.sql", "DROP VIEW IF EXISTS active_users;\nCREATE VIEW active_users AS SELECT id, name, email FROM users WHERE active = 1;\n")
            let report = try project.migrator().migrate()
            XCTAssertNil(report.failure)
            XCTAssertEqual(report.applied.map(\.id), ["004_email.sql", "000_active_users.sql"])
        }
    }

    /// `--to` stops at a versioned step: the repeatables, after every versioned one, wait for a run that reaches them.
    func testMigrateToLeavesTheRepeatablesPending() throws {
        try forEachBackend { backend in
            let project = try project(backend)
            var options = MigrationOptions()
            options.target = "002_posts.sql"
            XCTAssertEqual(try project.migrator().migrate(options).applied.map(\.id), ["001_users.sql", "002_posts.sql"])
            XCTAssertEqual(try states(project)["counts.sql"], .pending)
            XCTAssertEqual(try project.migrator().migrate().applied.map(\.id), ["003_tags.sql", "000_active_users.sql", "000_summary.sql", "counts.sql"])
        }
    }

    /// A rollback undoes versioned steps only: the repeatables are not in its range, whatever it names, and stay
    /// applied (their views with them).
    func testRollbackNeverTouchesRepeatables() throws {
        try forEachBackend { backend in
            let project = try project(backend)
            XCTAssertNil(try project.migrator().migrate().failure)
            XCTAssertEqual(try project.migrator().rollbackPlan(.steps(1)).steps.map(\.step.id), ["003_tags.sql"])
            let report = try project.migrator().rollback(.steps(1))
            XCTAssertNil(report.failure)
            XCTAssertEqual(report.applied.map(\.id), ["003_tags.sql"])
            let states = try states(project)
            XCTAssertEqual(states["003_tags.sql"], .pending)
            for id in ["000_active_users.sql", "000_summary.sql", "counts.sql"] { XCTAssertEqual(states[id], .applied, id) }
            XCTAssertEqual(try project.connection().scalar("SELECT n FROM counts", .none, as: Int.self), 0, "the view is still there")
            let dry = try project.strataOnBackend(["rollback", "--to", "002_posts.sql", "--dry-run"])
            XCTAssertEqual(dry.status, 0, dry.stderr)
            XCTAssertTrue(dry.stdout.contains("Nothing to roll back"), dry.stdout)
            XCTAssertEqual(try project.connection().history.all().filter { $0.identity.hasPrefix("rollback:") }.count, 1)
        }
    }

    // MARK: The manifest

    func testTheManifestSaysWhatARepeatableMayNotBe() throws {
        func problems(_ body: String, _ files: [String: String]) throws -> String {
            let project = try Project(self, backend: .sqlite, manifestBody: body, files: files)
            guard let error = assertThrows(ManifestError.self, { try project.manifest() }) else { return "" }
            return "\(error)"
        }
        let none = try problems(#"<migrations directory="sql"><migration file="v.sql" repeatable="true" transaction="none"/></migrations>"#,
                                ["sql/v.sql": "SELECT 1;\n"])
        XCTAssertTrue(none.contains("migration 'v.sql' is repeatable and asks to run outside a transaction"), none)
        let goose = try problems(#"<migrations directory="sql" format="goose" repeatable="true"/>"#,
                                 ["sql/v.sql": "-- +goose NO TRANSACTION\n-- +goose Up\nSELECT 1;\n"])
        XCTAssertTrue(goose.contains("is repeatable and asks to run outside a transaction"), goose)
        let code = try problems(#"<migrations directory="sql" repeatable="true"><code name="fill" after="v.sql" version="1"/></migrations>"#,
                                ["sql/v.sql": "SELECT 1;\n"])
        XCTAssertTrue(code.contains("code step 'fill': after=\"v.sql\" names a repeatable migration"), code)
        let word = try problems(#"<migrations directory="sql" repeatable="yes"/>"#, ["sql/v.sql": "SELECT 1;\n"])
        XCTAssertTrue(word.contains("repeatable"), word)
        // A listed file may say it is not repeatable inside a repeatable directory.
        let project = try Project(self, backend: .sqlite, manifestBody: #"<migrations directory="sql" repeatable="true"><migration file="a.sql" repeatable="false"/></migrations>"#,
                                  files: ["sql/a.sql": "SELECT 1;\n", "sql/b.sql": "SELECT 2;\n"])
        XCTAssertEqual(try project.manifest().migrations.map { "\($0.id) \($0.repeatable)" }, ["a.sql false", "b.sql true"])
    }
}
