import Foundation
import XCTest
import Strata
@testable import StrataCore

/// What a rollback undoes is decided again under the lock, and in the order steps were applied: a step applied
/// after the plan was made, one being applied now, or a hotfix applied out of order is never undone under; an
/// empty down is no down; a seed is pending after a rollback exactly when the down took its rows.
final class RollbackOrderTests: XCTestCase {
    func project(_ backend: TestBackend, _ files: [String: String], seeds: String = "") throws -> Project {
        try Project(self, backend: backend, manifestBody: """
            <migrations directory="sql" format="dbmate"/>
            <seeds>\(seeds)</seeds>
            """, files: files)
    }

    static func migration(_ up: String, _ down: String) -> String { "-- migrate:up\n\(up)\n-- migrate:down\n\(down)\n" }

    static let three: [String: String] = [
        "sql/001_users.sql": migration("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);", "DROP TABLE users;"),
        "sql/002_admin.sql": migration("INSERT INTO users VALUES (1, 'admin');", "DELETE FROM users WHERE id = 1;"),
        "sql/003_posts.sql": migration("CREATE TABLE posts (id INTEGER PRIMARY KEY);", "DROP TABLE posts;"),
    ]

    /// A rollback planned before another run applied a later step does not undo the step under it: the down fails,
    /// nothing rolled back, the message names the later step.
    func testAStepAppliedAfterTheRollbackWasPlannedStopsItBeforeItUndoesAnything() throws {
        try forEachBackend { backend in
            var files = Self.three
            files["sql/004_more.sql"] = Self.migration("CREATE TABLE more (id INTEGER);", "DROP TABLE more;")
            let project = try project(backend, files)
            try FileManager.default.removeItem(at: project.root.appendingPathComponent("sql/004_more.sql"))
            XCTAssertNil(try project.migrator().migrate().failure)
            try project.file("sql/004_more.sql", try XCTUnwrap(files["sql/004_more.sql"]))
            let migrator = try project.migrator()
            let plan = try migrator.rollbackPlan(.steps(1))
            XCTAssertEqual(plan.steps.map(\.step.id), ["003_posts.sql"])
            XCTAssertEqual(try project.migrator().migrate().applied.map(\.id), ["004_more.sql"], "another run, meanwhile")
            let report = try migrator.run(plan.steps, MigrationOptions(), watcher: nil, nil)
            let failure = try XCTUnwrap(report.failure, "the stale plan must not run")
            XCTAssertEqual(failure.id, "003_posts.sql")
            XCTAssertTrue(failure.message.contains("004_more.sql was applied after 003_posts.sql"), failure.message)
            XCTAssertTrue(try project.connection().tableExists("posts"), "nothing was rolled back")
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .applied, .applied, .applied])
        }
    }

    /// A step whose row turned `running` (another run is applying or rolling it back) after the plan was made is
    /// not undone under that run: the step fails, nothing rolled back.
    func testAStepAnotherRunIsAtAfterThePlanWasMadeIsNotUndone() throws {
        try forEachBackend { backend in
            let project = try project(backend, Self.three)
            XCTAssertNil(try project.migrator().migrate().failure)
            let migrator = try project.migrator()
            let plan = try migrator.rollbackPlan(.steps(1))
            let history = try project.connection().history
            let record = try XCTUnwrap(try history.record(kind: .migration, identity: "003_posts.sql"))
            try history.write(record.with(state: .running))
            let report = try migrator.run(plan.steps, MigrationOptions(), watcher: nil, nil)
            let failure = try XCTUnwrap(report.failure)
            XCTAssertTrue(failure.message.contains("is being applied or rolled back by another run right now"), failure.message)
            XCTAssertTrue(try project.connection().tableExists("posts"), "nothing was rolled back")
        }
    }

    /// `--steps` counts the steps in the order they were applied: a hotfix applied out of order after a later
    /// file is the newest. `--to` a step that would leave the hotfix applied over a step it undoes is refused,
    /// nothing run.
    func testStepsAreUndoneNewestAppliedFirstAndAnOutOfOrderStepThatWouldStayIsRefused() throws {
        try forEachBackend { backend in
            var files = Self.three
            files["sql/002_admin.sql"] = Self.migration("CREATE INDEX posts_id ON posts (id);", "DROP INDEX posts_id;")
            let project = try project(backend, files)
            try FileManager.default.removeItem(at: project.root.appendingPathComponent("sql/002_admin.sql"))
            XCTAssertNil(try project.migrator().migrate().failure)
            try project.file("sql/002_admin.sql", try XCTUnwrap(files["sql/002_admin.sql"]))
            XCTAssertEqual(try project.migrator().migrate().applied.map(\.id), ["002_admin.sql"], "the hotfix, out of order")

            guard case .refused(let refusals)? = assertThrows(MigrationError.self, { try project.migrator().rollback(.to("002_admin.sql")) }) else {
                return XCTFail("a rollback that leaves the hotfix over what it undoes must be refused")
            }
            XCTAssertTrue(refusals.contains { $0.reason == .outOfOrder && $0.id == "002_admin.sql" }, "\(refusals)")
            XCTAssertTrue(try project.connection().tableExists("posts"), "nothing ran")

            let plan = try project.migrator().rollbackPlan(.steps(2))
            XCTAssertEqual(plan.steps.map(\.step.id), ["002_admin.sql", "003_posts.sql"], "newest applied first")
            XCTAssertNil(try project.migrator().rollback(.steps(1)).failure)
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .pending, .applied])
            XCTAssertTrue(try project.connection().tableExists("posts"))
        }
    }

    /// A down section that holds no statement (as `strata new` writes it) undoes nothing: it is no down.
    func testAnEmptyDownSectionIsNoDown() throws {
        try forEachBackend { backend in
            var files = Self.three
            files["sql/003_posts.sql"] = "-- migrate:up\nINSERT INTO users VALUES (2, 'ops');\n-- migrate:down\n\n-- nothing yet\n/* to do */ ;\n"
            let project = try project(backend, files)
            XCTAssertNil(try project.migrator().migrate().failure)
            guard case .refused(let refusals)? = assertThrows(MigrationError.self, { try project.migrator().rollback(.steps(1)) }) else {
                return XCTFail("an empty down must be refused")
            }
            XCTAssertTrue(refusals.contains { $0.reason == .noDown && $0.message.contains("holds no statement") }, "\(refusals)")
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .applied, .applied], "nothing ran")
            let command = try project.strataOnBackend(["rollback", "--steps", "1"])
            XCTAssertEqual(command.status, 3, command.stderr)
        }
    }

    /// A step `repair` marked deleted, whose file is back, reads applied; its rollback runs its down and records it.
    func testARestoredFileAfterRepairIsRolledBackForReal() throws {
        try forEachBackend { backend in
            let project = try project(backend, Self.three)
            XCTAssertNil(try project.migrator().migrate().failure)
            let path = project.root.appendingPathComponent("sql/003_posts.sql")
            try FileManager.default.removeItem(at: path)
            XCTAssertEqual(try project.migrator().repair().deleted, ["003_posts.sql"])
            try project.file("sql/003_posts.sql", try XCTUnwrap(Self.three["sql/003_posts.sql"]))
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .applied, .applied])
            let report = try project.migrator().rollback(.steps(1))
            XCTAssertNil(report.failure)
            XCTAssertEqual(report.applied.map(\.id), ["003_posts.sql"])
            XCTAssertFalse(try project.connection().tableExists("posts"), "its down ran")
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .applied, .pending])
        }
    }

    /// A seed reads pending after a rollback exactly when the down took its rows: its table dropped, or a column it
    /// loads dropped (`upsert` loads it again; an `insert` seed would not be put right, so that down fails and
    /// nothing is rolled back). A down that leaves its table alone, or drops a column it does not load, keeps it.
    func testASeedIsPendingAfterARollbackOnlyWhenTheDownTookItsRows() throws {
        try forEachBackend(needing: .seeds) { backend in
            var files = Self.three
            files["sql/004_price.sql"] = Self.migration("CREATE TABLE prices (id INTEGER PRIMARY KEY, amount INTEGER);", "DROP TABLE prices;")
            files["sql/005_currency.sql"] = Self.migration("ALTER TABLE prices ADD COLUMN currency TEXT;", "ALTER TABLE prices DROP COLUMN currency;")
            files["sql/006_note.sql"] = Self.migration("ALTER TABLE prices ADD COLUMN note TEXT;", "ALTER TABLE prices DROP COLUMN note;")
            files["csv/prices.csv"] = "id,amount,currency\n1,5,EUR\n"
            files["csv/users.csv"] = "id,name\n7,guest\n"
            for mode in ["upsert\" key=\"id", "insert"] {
                let project = try project(backend, files, seeds: """
                    <seed file="csv/prices.csv" table="prices" after="005_currency.sql" mode="\(mode)"/>
                    <seed file="csv/users.csv" table="Users" after="001_users.sql"/>
                    """)
                XCTAssertNil(try project.migrator().migrate().failure)
                func seedStates() throws -> [StepStatus.State] {
                    try project.migrator().status().filter { $0.kind == .seed }.map(\.state)
                }
                XCTAssertNil(try project.migrator().rollback(.steps(1)).failure, "006 drops a column the seed does not load")
                XCTAssertEqual(try seedStates(), [.applied, .applied], mode)
                let dropsLoaded = try project.migrator().rollback(.steps(1))
                if mode == "insert" {
                    let failure = try XCTUnwrap(dropsLoaded.failure, "an insert seed cannot be put right by loading it again")
                    XCTAssertTrue(failure.message.contains("which seed prices.csv loaded"), failure.message)
                    XCTAssertEqual(try seedStates(), [.applied, .applied])
                    XCTAssertTrue(try project.connection().columns(in: "prices").contains { $0.name == "currency" }, "nothing rolled back")
                    continue
                }
                XCTAssertNil(dropsLoaded.failure)
                XCTAssertEqual(try seedStates(), [.applied, .pending], "users' seed (plan order: after 001) stays; the prices seed's currency went with the down")
                XCTAssertNil(try project.migrator().migrate().failure)
                XCTAssertEqual(try project.connection().scalar("SELECT currency FROM prices WHERE id = 1", .none, as: String.self), "EUR",
                               "loaded again with its column")
            }
        }
    }

    /// What the command says is true of the state it leaves: the dry run lists its downs; a failed down says its
    /// step stays applied; `--to` with nothing to do does not call the database up to date; `--steps` past what is
    /// applied says so; a rehearsed rollback speaks of undoing; a rollback of a database that does not exist fails
    /// and creates nothing.
    func testTheRollbackCommandSaysWhatIsTrueOfTheStateItLeaves() throws {
        try forEachBackend { backend in
            var files = Self.three
            files["sql/004_more.sql"] = Self.migration("CREATE TABLE more (id INTEGER);", "DROP TABLE more;")
            let project = try project(backend, files)
            XCTAssertEqual(try project.strataOnBackend(["migrate", "--to", "003_posts.sql"]).status, 0)
            let nothing = try project.strataOnBackend(["migrate", "--to", "002_admin.sql"])
            XCTAssertEqual(nothing.status, 0, nothing.stderr)
            XCTAssertTrue(nothing.stdout.contains("every step up to 002_admin.sql is applied"), nothing.stdout)
            XCTAssertFalse(nothing.stdout.contains("up to date"), "004 is pending: \(nothing.stdout)")

            let dry = try project.strataOnBackend(["rollback", "--steps", "2", "--dry-run"])
            XCTAssertEqual(dry.status, 0, dry.stderr)
            let lines = dry.stdout.split(separator: "\n").map(String.init)
            let third = try XCTUnwrap(lines.firstIndex { $0.contains("003_posts.sql") }, "the dry run lists its downs: \(dry.stdout)")
            let second = try XCTUnwrap(lines.firstIndex { $0.contains("002_admin.sql") }, dry.stdout)
            XCTAssertLessThan(third, second, "newest first")

            let rehearsed = try project.strataOnBackend(["rehearse", "--rollback-steps", "1"])
            XCTAssertEqual(rehearsed.status, 0, rehearsed.stderr)
            XCTAssertTrue(rehearsed.stdout.contains("rolled back") && rehearsed.stdout.contains("rollback would undo 1 step"), rehearsed.stdout)
            XCTAssertFalse(rehearsed.stdout.contains("migrate would apply"), rehearsed.stdout)

            try project.file("sql/003_posts.sql", Self.migration("CREATE TABLE posts (id INTEGER PRIMARY KEY);", "DROP TABLE posts;\nDELETE FROM no_such_table;"))
            _ = try project.migrator().repair()
            let failed = try project.strataOnBackend(["rollback", "--steps", "1"])
            XCTAssertEqual(failed.status, 1, failed.stderr)
            XCTAssertTrue(failed.stderr.contains("the down of 003_posts.sql was rolled back and left no trace: 003_posts.sql stays applied"), failed.stderr)
            XCTAssertTrue(try project.connection().tableExists("posts"))

            try project.file("sql/003_posts.sql", Self.migration("CREATE TABLE posts (id INTEGER PRIMARY KEY);", "DROP TABLE posts;"))
            _ = try project.migrator().repair()
            let all = try project.strataOnBackend(["rollback", "--steps", "9"])
            XCTAssertEqual(all.status, 0, all.stderr)
            XCTAssertTrue(all.stdout.contains("3 steps rolled back") && all.stdout.contains("--steps 9 asked for more steps than were applied"), all.stdout)
            guard backend.kind == .sqlite else { return }
            let missing = project.root.appendingPathComponent("nowhere.sqlite").path
            let none = try project.strata(["rollback", "--steps", "1", "--database", missing])
            XCTAssertEqual(none.status, 1, none.stderr)
            XCTAssertTrue(none.stderr.contains("there is no database at"), none.stderr)
            XCTAssertFalse(FileManager.default.fileExists(atPath: missing), "a rollback creates no database")
        }
    }

    /// A down is checked by the same rules as an up before anything runs: a statement that cannot run in the
    /// down's transaction refuses the rollback (`invalid-sql`) rather than failing it half-way, and `validate` says so.
    func testADownThatCannotRunAsWrittenIsRefusedBeforeAnyDownRuns() throws {
        try forEachBackend { backend in
            var files = Self.three
            let outside = backend.kind == .sqlite ? "VACUUM;" : "DROP INDEX CONCURRENTLY IF EXISTS users_name;"
            files["sql/002_admin.sql"] = Self.migration("INSERT INTO users VALUES (1, 'admin');", "DELETE FROM users WHERE id = 1;\n\(outside)")
            let project = try project(backend, files)
            XCTAssertNil(try project.migrator().migrate().failure)
            guard case .refused(let refusals)? = assertThrows(MigrationError.self, { try project.migrator().rollback(.steps(2)) }) else {
                return XCTFail("a down that cannot run in its transaction must be refused up front")
            }
            XCTAssertTrue(refusals.contains { $0.reason == .invalidSQL && $0.id == "002_admin.sql" && $0.message.contains("the down of 002_admin.sql") }, "\(refusals)")
            XCTAssertTrue(try project.connection().tableExists("posts"), "003's down did not run either")
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .applied, .applied])
            let validate = try project.strata(["validate"])
            XCTAssertEqual(validate.status, 3, validate.stdout + validate.stderr)
            XCTAssertTrue((validate.stdout + validate.stderr).contains("sql/002_admin.sql:5"), validate.stdout + validate.stderr)
        }
    }

    /// A down that empties a seed's table (dropped and made again, as many downs of an ALTER are) took the seed's
    /// rows: the seed reads pending, and the next migrate loads it again.
    func testADownThatEmptiesASeedsTableMakesTheSeedPending() throws {
        try forEachBackend(needing: .seeds) { backend in
            var files = Self.three
            files["sql/004_rebuild.sql"] = Self.migration("ALTER TABLE users ADD COLUMN note TEXT;",
                                                         "DROP TABLE users;\nCREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);")
            files["csv/users.csv"] = "id,name\n7,guest\n"
            let project = try project(backend, files, seeds: #"<seed file="csv/users.csv" table="users" after="003_posts.sql"/>"#)
            XCTAssertNil(try project.migrator().migrate().failure)
            XCTAssertNil(try project.migrator().rollback(.steps(1)).failure)
            XCTAssertEqual(try project.migrator().status().filter { $0.kind == .seed }.map(\.state), [.pending])
            XCTAssertNil(try project.migrator().migrate().failure)
            XCTAssertEqual(try project.connection().scalar("SELECT count(*) FROM users WHERE id = 7", .none, as: Int.self), 1)
        }
    }

    /// Under a declared format, a down that is only its own outer BEGIN/COMMIT pair holds no statement: no down.
    func testADownOfOnlyItsOwnBeginAndCommitIsNoDown() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, manifestBody: #"<migrations directory="sql" format="golang-migrate"/>"#, files: [
                "sql/1_a.up.sql": "CREATE TABLE a (id INTEGER);\n",
                "sql/1_a.down.sql": "DROP TABLE a;\n",
                "sql/2_b.up.sql": "BEGIN;\nCREATE TABLE b (id INTEGER);\nCOMMIT;\n",
                "sql/2_b.down.sql": "BEGIN;\n-- TODO\nCOMMIT;\n",
            ])
            XCTAssertNil(try project.migrator().migrate().failure)
            guard case .refused(let refusals)? = assertThrows(MigrationError.self, { try project.migrator().rollback(.steps(1)) }) else {
                return XCTFail("a down of only BEGIN/COMMIT must be refused")
            }
            XCTAssertTrue(refusals.contains { $0.reason == .noDown && $0.id == "2_b.up.sql" }, "\(refusals)")
            XCTAssertTrue(try project.connection().tableExists("b"))
        }
    }

    /// A file is a migration or a down, never both: a down another `<migrations directory>` also scans is a manifest
    /// problem, nothing run; a file of the same directory named as a down leaves the plan with a warning saying so.
    func testAFileThatIsBothAMigrationAndADownIsRefused() throws {
        let slip = try Project(self, backend: .sqlite, manifestBody: #"<migrations directory="sql"><migration file="001_a.sql" down="002_b.sql"/></migrations>"#,
                               files: ["sql/001_a.sql": "CREATE TABLE a (id INTEGER);\n", "sql/002_b.sql": "CREATE TABLE b (id INTEGER);\n"])
        let listed = try slip.strata(["validate"])
        XCTAssertEqual(listed.status, 0, listed.stderr)
        XCTAssertTrue(listed.stderr.contains("sql/002_b.sql in this <migrations> directory is taken as the down of migration '001_a.sql'"),
                      "said, not dropped without a word: \(listed.stderr)")
        XCTAssertTrue(listed.stdout.contains("001_a.sql  down: sql/002_b.sql"), listed.stdout)

        let shared = try Project(self, backend: .sqlite, manifestBody: """
            <migrations directory="sql"><migration file="001_a.sql" down="../shared/001_undo.sql"/></migrations>
            <migrations directory="shared"/>
            """, files: ["sql/001_a.sql": "CREATE TABLE a (id INTEGER);\n", "shared/001_undo.sql": "DROP TABLE a;\n"])
        let migrate = try shared.strata(["migrate"])
        XCTAssertEqual(migrate.status, 3, migrate.stderr)
        XCTAssertTrue(migrate.stderr.contains("which is also migration '001_undo.sql'"), migrate.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: shared.databasePath), "nothing ran")
    }

    /// `X.Down.sql` (a down in another letter case) beside `X.sql` is refused, not run as a migration that undoes X.
    func testADownNamedInAnotherLetterCaseIsRefusedNotRun() throws {
        let project = try Project(self, backend: .sqlite, manifestBody: #"<migrations directory="sql"/>"#,
                                  files: ["sql/003_c.sql": "CREATE TABLE c (id INTEGER);\n", "sql/003_c.Down.sql": "DROP TABLE c;\n"])
        let migrate = try project.strata(["migrate"])
        XCTAssertEqual(migrate.status, 3, migrate.stderr)
        XCTAssertTrue(migrate.stderr.contains("'003_c.Down.sql'") && migrate.stderr.contains("named as a down in another letter case"), migrate.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: project.databasePath), "nothing ran")
    }

    /// Steps applied within one second are ordered by their instants, not by their `applied_at` text: a whole second
    /// is written without a fraction (`…:05Z`), which as text sorts after `…:05.500Z`.
    func testAStepAppliedOnAWholeSecondIsOrderedByItsInstant() throws {
        try forEachBackend { backend in
            let project = try project(backend, Self.three)
            XCTAssertNil(try project.migrator().migrate().failure)
            let history = try project.connection().history
            for (id, at) in [("001_users.sql", "2026-01-01T00:00:04Z"), ("002_admin.sql", "2026-01-01T00:00:05Z"),
                             ("003_posts.sql", "2026-01-01T00:00:05.500Z")] {
                let record = try XCTUnwrap(try history.record(kind: .migration, identity: id))
                try history.write(HistoryRecord(kind: record.kind, identity: record.identity, checksum: record.checksum,
                                                checksumVersion: record.checksumVersion, appliedAt: at, durationMs: record.durationMs,
                                                rowCount: record.rowCount, state: record.state, toolVersion: record.toolVersion,
                                                appliedSQL: record.appliedSQL, runner: record.runner, error: record.error))
            }
            XCTAssertEqual(try project.migrator().rollbackPlan(.steps(1)).steps.map(\.step.id), ["003_posts.sql"])
            let report = try project.migrator().rollback(.steps(1))
            XCTAssertNil(report.failure, "003 was applied last: nothing was applied after it")
            XCTAssertEqual(report.applied.map(\.id), ["003_posts.sql"])
        }
    }
}
