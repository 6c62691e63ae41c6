import Foundation
import XCTest
import Strata
@testable import StrataCore
@testable import StrataPostgres
@testable import StrataSQLite

/// `rollback` on every backend: the downs of the applied steps it names run newest first, each in its own
/// transaction with its history change; a rolled-back step is pending again and applies as new; what cannot be
/// undone as it was applied is refused before anything runs; and migrate, rollback, migrate again gives the
/// database one fresh migrate gives. `migrate --to` stops at a step.
final class RollbackTests: XCTestCase {
    /// Four dbmate files (their down sections are their downs) and a seed after the second.
    static let files: [String: String] = [
        "sql/001_users.sql": "-- migrate:up\nCREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);\n-- migrate:down\nDROP TABLE users;\n",
        "sql/002_posts.sql": "-- migrate:up\nCREATE TABLE posts (id INTEGER PRIMARY KEY, user_id INTEGER, body TEXT);\n-- migrate:down\nDROP TABLE posts;\n",
        "sql/003_admin.sql": "-- migrate:up\nINSERT INTO users VALUES (1, 'admin');\n-- migrate:down\nDELETE FROM users WHERE id = 1;\n",
        "sql/004_title.sql": "-- migrate:up\nALTER TABLE posts ADD COLUMN title TEXT;\n-- migrate:down\nALTER TABLE posts DROP COLUMN title;\n",
        "csv/posts.csv": "id,user_id,body\n1,1,hello\n",
    ]

    func project(_ backend: TestBackend, files: [String: String] = RollbackTests.files, extra: String = "") throws -> Project {
        try Project(self, backend: backend, manifestBody: """
            <migrations directory="sql" format="dbmate">\(extra)</migrations>
            <seeds><seed file="csv/posts.csv" table="posts" after="002_posts.sql"/></seeds>
            """, files: files)
    }

    /// The schema as `strata schema` prints it (Strata's history left out) and every row of every table but the
    /// history: what one state of the database holds for its application.
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

    func testRollbackRunsTheDownsOfTheLastStepsNewestFirstAndTheyApplyAgainAsNew() throws {
        try forEachBackend(needing: .seeds) { backend in
            let project = try project(backend)
            let migrator = try project.migrator()
            XCTAssertEqual(try migrator.migrate().applied.count, 5)
            let plan = try migrator.rollbackPlan(.steps(2))
            XCTAssertEqual(plan.steps.map(\.step.id), ["004_title.sql", "003_admin.sql"])
            XCTAssertEqual(plan.steps.map(\.reason), [.rollback, .rollback])
            let report = try migrator.rollback(.steps(2))
            XCTAssertNil(report.failure)
            XCTAssertEqual(report.applied.map(\.id), ["004_title.sql", "003_admin.sql"])
            XCTAssertEqual(try migrator.status().map(\.state), [.applied, .applied, .applied, .pending, .pending])
            let db = try project.connection()
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM users", .none, as: Int.self), 0)
            XCTAssertFalse(try db.schemaSnapshot().tables.first { $0.name.hasSuffix("posts") }?.columns.contains { $0.name == "title" } ?? true)
            let audit = try db.history.all().filter { $0.identity.hasPrefix("rollback:") }
            XCTAssertEqual(audit.map { String($0.identity.split(separator: ":").last ?? "") }.sorted(), ["003_admin.sql", "004_title.sql"])
            XCTAssertTrue(audit.allSatisfy { $0.state == .deleted }, "\(audit)")
            XCTAssertTrue(audit.first { $0.identity.hasSuffix("003_admin.sql") }?.appliedSQL?.contains("DELETE FROM users WHERE id = 1") ?? false,
                          "the audit keeps the down's SQL")
            XCTAssertEqual(try migrator.migrate().applied.map(\.id), ["003_admin.sql", "004_title.sql"])
            XCTAssertEqual(try migrator.status().map(\.state), [.applied, .applied, .applied, .applied, .applied])
        }
    }

    /// The round trip: migrate all, roll back to any step (or everything), migrate again: the schema and rows one
    /// fresh migrate gives. Everything rolled back: the schema of an empty database.
    func testMigrateRollbackToAnyStepAndMigrateAgainIsOneFreshMigrate() throws {
        try forEachBackend(needing: .seeds) { backend in
            let fresh = try project(backend)
            XCTAssertNil(try fresh.migrator().migrate().failure)
            let expected = try state(fresh)
            let empty = try project(backend)
            _ = try empty.connection()
            let nothing = try state(empty)
            for count in 1...4 {
                let project = try project(backend)
                XCTAssertNil(try project.migrator().migrate().failure)
                XCTAssertNil(try project.migrator().rollback(.steps(count)).failure, "\(count)")
                if count == 4 { XCTAssertEqual(try state(project), nothing, "everything rolled back") }
                XCTAssertNil(try project.migrator().migrate().failure, "\(count)")
                XCTAssertEqual(try state(project), expected, "rolled back \(count), migrated again")
            }
            let to = try project(backend)
            XCTAssertNil(try to.migrator().migrate().failure)
            XCTAssertEqual(try to.migrator().rollback(.to("001_users.sql")).applied.map(\.id),
                           ["004_title.sql", "003_admin.sql", "002_posts.sql"])
            XCTAssertEqual(try to.migrator().status().map(\.state), [.applied, .pending, .pending, .pending, .pending],
                           "the seed of the table the down dropped is pending again")
            XCTAssertNil(try to.migrator().migrate().failure)
            XCTAssertEqual(try state(to), expected)
        }
    }

    /// Each reason a step in the range cannot be undone as it was applied refuses the whole rollback before
    /// anything runs, naming it: no down, changed since applied, gone from the manifest, dirty.
    func testWhatCannotBeUndoneAsAppliedIsRefusedBeforeAnythingRuns() throws {
        try forEachBackend(needing: .seeds) { backend in
            var files = Self.files
            files["sql/005_forever.sql"] = "-- migrate:up\nCREATE TABLE audit (id INTEGER);\n"
            let project = try project(backend, files: files)
            XCTAssertNil(try project.migrator().migrate().failure)
            func refused(_ target: RollbackTarget, _ reason: Refusal.Reason, _ text: String, _ context: String) throws {
                let before = try state(project)
                let history = try project.connection().history.all()
                guard case .refused(let refusals)? = assertThrows(MigrationError.self, { try project.migrator().rollback(target) }) else {
                    return XCTFail("not refused: \(context)")
                }
                XCTAssertTrue(refusals.contains { $0.reason == reason && $0.message.contains(text) }, "\(context): \(refusals)")
                XCTAssertEqual(try state(project), before, "\(context): nothing ran")
                let command = try project.strataOnBackend(["rollback"] + (target == .steps(1) ? ["--steps", "1"] : ["--steps", "2"]))
                XCTAssertEqual(command.status, 3, "\(context): \(command.stderr)")
                XCTAssertEqual(try state(project), before, "\(context): nothing ran")
                XCTAssertEqual(try project.connection().history.all(), history, "\(context): history unchanged")
            }
            try refused(.steps(1), .noDown, "005_forever.sql has no down", "no down")
            try project.file("sql/005_forever.sql", "-- migrate:up\nCREATE TABLE audit (id INTEGER);\n-- migrate:down\nDROP TABLE audit;\n")
            _ = try project.migrator().repair()
            try project.file("sql/004_title.sql", "-- migrate:up\nALTER TABLE posts ADD COLUMN subtitle TEXT;\n-- migrate:down\nALTER TABLE posts DROP COLUMN subtitle;\n")
            try refused(.steps(2), .drift, "004_title.sql has changed since it was applied", "drifted")
            try project.file("sql/004_title.sql", try XCTUnwrap(Self.files["sql/004_title.sql"]))
            try FileManager.default.removeItem(at: project.root.appendingPathComponent("sql/005_forever.sql"))
            try refused(.steps(1), .missing, "005_forever.sql was applied but is no longer in the manifest", "missing")
            try project.file("sql/005_forever.sql", "-- migrate:up\nCREATE TABLE audit (id INTEGER);\n-- migrate:down\nDROP TABLE audit;\n")
            try project.connection().history.write(.leftBehind("006_index.sql", state: .failed, runner: "elsewhere:1", error: "boom"))
            try refused(.steps(1), .dirty, "006_index.sql failed part-way", "dirty")
        }
    }

    /// A down that fails part-way: its transaction rolls back, so its step stays applied and the database is as
    /// before it; the newer steps already rolled back stay rolled back; exit 1.
    func testADownThatFailsLeavesItsStepAppliedAndTheDatabaseAsBeforeIt() throws {
        try forEachBackend(needing: .seeds) { backend in
            var files = Self.files
            files["sql/003_admin.sql"] = "-- migrate:up\nINSERT INTO users VALUES (1, 'admin');\n-- migrate:down\nDELETE FROM users WHERE id = 1;\nDELETE FROM no_such_table;\n"
            let project = try project(backend, files: files)
            XCTAssertNil(try project.migrator().migrate().failure)
            let report = try project.migrator().rollback(.steps(2))
            XCTAssertEqual(report.applied.map(\.id), ["004_title.sql"])
            let failure = try XCTUnwrap(report.failure)
            XCTAssertEqual(failure.id, "003_admin.sql")
            XCTAssertEqual(failure.line, 5, "the line in the file")
            XCTAssertEqual(failure.aftermath, .rolledBack)
            XCTAssertEqual(try project.connection().scalar("SELECT count(*) FROM users", .none, as: Int.self), 1, "the down's DELETE rolled back")
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .applied, .applied, .applied, .pending])
            let command = try project.strataOnBackend(["rollback", "--steps", "1"])
            XCTAssertEqual(command.status, 1, command.stderr)
        }
    }

    func testTheCommandRollsBackPrintsItsDryRunAndRefusesAnUnknownTarget() throws {
        try forEachBackend(needing: .seeds) { backend in
            let project = try project(backend)
            XCTAssertEqual(try project.strataOnBackend(["migrate"]).status, 0)
            let dry = try project.strataOnBackend(["rollback", "--to", "002_posts.sql", "--dry-run"])
            XCTAssertEqual(dry.status, 0, dry.stderr)
            XCTAssertTrue(dry.stdout.contains("rollback would undo 2 steps"), dry.stdout)
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .applied, .applied, .applied, .applied], "dry run")
            let unknown = try project.strataOnBackend(["rollback", "--to", "003_admins.sql"])
            XCTAssertEqual(unknown.status, 2, unknown.stderr)
            XCTAssertTrue(unknown.stderr.contains("003_admins.sql is not a step of"), unknown.stderr)
            XCTAssertTrue(unknown.stderr.contains("003_admin.sql"), "names the nearest: \(unknown.stderr)")
            let run = try project.strataOnBackend(["rollback", "--to", "002_posts.sql", "--format", "json"])
            XCTAssertEqual(run.status, 0, run.stderr)
            XCTAssertTrue(run.stdout.contains(#""command":"rollback""#), run.stdout)
            XCTAssertTrue(run.stdout.contains(#""reason":"rollback""#), run.stdout)
            XCTAssertEqual(try project.strataOnBackend(["rollback", "--steps", "0"]).status, 2)
            XCTAssertEqual(try project.strataOnBackend(["rollback"]).status, 2, "what to roll back is required")
        }
    }

    /// `migrate --to ID` applies the pending steps up to and including ID; the rest stay pending; an ID no step
    /// has is a usage error naming the nearest ones. `plan --to` shows the same.
    func testMigrateToAppliesUpToTheTargetAndTheRestStayPending() throws {
        try forEachBackend(needing: .seeds) { backend in
            let project = try project(backend)
            var options = MigrationOptions()
            options.target = "002_posts.sql"
            XCTAssertEqual(try project.migrator().plan(options).steps.map(\.step.id), ["001_users.sql", "002_posts.sql", "posts.csv"])
            XCTAssertEqual(try project.migrator().migrate(options).applied.map(\.id), ["001_users.sql", "002_posts.sql", "posts.csv"])
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .applied, .applied, .pending, .pending])
            let planned = try project.strataOnBackend(["plan", "--to", "003_admin.sql"])
            XCTAssertTrue(planned.stdout.contains("migrate would apply 1 step"), planned.stdout)
            let unknown = try project.strataOnBackend(["migrate", "--to", "9_nope.sql"])
            XCTAssertEqual(unknown.status, 2, unknown.stderr)
            XCTAssertTrue(unknown.stderr.contains("9_nope.sql is not a step of"), unknown.stderr)
            XCTAssertTrue(unknown.stderr.contains("the nearest are 003_admin.sql, 004_title.sql"), "names the nearest: \(unknown.stderr)")
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .applied, .applied, .pending, .pending], "nothing ran")
            let unknownPlan = try project.strataOnBackend(["plan", "--to", "003_admins.sql"])
            XCTAssertEqual(unknownPlan.status, 2, unknownPlan.stderr)
            XCTAssertTrue(unknownPlan.stderr.contains("003_admin.sql"), unknownPlan.stderr)
            XCTAssertEqual(try project.strataOnBackend(["migrate", "--to", "003_admin.sql"]).status, 0)
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .applied, .applied, .applied, .pending])
        }
    }

    /// `rehearse` takes a rollback's range and rehearses its downs as it rehearses ups: where nothing is kept, with
    /// a verdict, the database left as it was.
    func testRehearseRehearsesTheDownsOfARollback() throws {
        try forEachBackend(needing: .seeds) { backend in
            let project = try project(backend)
            XCTAssertNil(try project.migrator().migrate().failure)
            let before = try state(project)
            var options = MigrationOptions()
            options.rollback = .steps(2)
            let report = try project.migrator().rehearse(options)
            XCTAssertTrue(report.wouldSucceed, "\(report)")
            XCTAssertEqual(report.steps.map(\.id), ["004_title.sql", "003_admin.sql"])
            XCTAssertEqual(try state(project), before, "nothing kept")
            let command = try project.strataOnBackend(["rehearse", "--rollback-steps", "2"])
            XCTAssertEqual(command.status, 0, command.stderr)
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .applied, .applied, .applied, .applied])
        }
    }

    /// Eight `rollback --to` runs at once roll each step after the target back once: one audit row per step, none
    /// twice. (`--steps N` counts from the state each run finds, so eight of them undo more; still each step once.)
    func testConcurrentRollbacksRollEachStepBackOnce() throws {
        try forEachBackend(needing: .seeds) { backend in
            let project = try project(backend)
            XCTAssertEqual(try project.strataOnBackend(["migrate"]).status, 0)
            let runs = try (0..<8).map { _ in
                try startStrata(["rollback", "--to", "002_posts.sql", "--manifest", project.manifestPath, "--database", project.location],
                                in: project.root)
            }
            for (process, _, _) in runs { process.waitUntilExit() }
            XCTAssertTrue(runs.allSatisfy { $0.0.terminationStatus == 0 }, runs.map { "\($0.0.terminationStatus)" }.joined(separator: ","))
            let history = try project.connection().history.all()
            let audits = history.filter { $0.identity.hasPrefix("rollback:") }.map { String($0.identity.split(separator: ":").last ?? "") }
            XCTAssertEqual(audits.sorted(), ["003_admin.sql", "004_title.sql"], "each rolled back once")
            XCTAssertEqual(try project.connection().scalar("SELECT count(*) FROM users", .none, as: Int.self), 0)
        }
    }
}
