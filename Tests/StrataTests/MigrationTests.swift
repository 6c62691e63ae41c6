import Foundation
import XCTest
import Strata
@testable import StrataCore
@testable import StrataPostgres
@testable import StrataSQLite

/// The runner on every backend: each file exactly once, drift and checksums, history records, plan and status,
/// refusals, repair, resolve and baseline, `transaction="none"` outcomes, runners that meet, cancellation, and the
/// up sections of other tools' files. Tests that need no database (checksums, file formats, `strata new`) run once;
/// what only SQLite does (its lint, the step lock files' place) is in `SQLiteMigrationTests` or asked of the backend.
final class MigrationTests: XCTestCase {
    func testAppliesEachFileOnceInNaturalOrderAndRecordsHistory() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, files: [
                "sql/10_c.sql": "INSERT INTO log SELECT count(*) + 1, '10' FROM log;",
                "sql/2_b.sql": "INSERT INTO log SELECT count(*) + 1, '2' FROM log;",
                "sql/1_a.sql": "CREATE TABLE log (position INTEGER, step TEXT);",
            ])
            let migrator = try project.migrator()
            let report = try migrator.migrate()
            XCTAssertEqual(report.applied.map(\.id), ["1_a.sql", "2_b.sql", "10_c.sql"])
            XCTAssertNil(report.failure)
            XCTAssertEqual(try migrator.migrate().applied, [], "a second run applies nothing")
            let db = try project.connection()
            XCTAssertEqual(try db.rows("SELECT step FROM log ORDER BY position").map { $0[0] }, [.text("2"), .text("10")])
            let history = try db.rows("SELECT * FROM strata_history WHERE identity = '1_a.sql'")
            XCTAssertEqual(history.count, 1)
            let row = try XCTUnwrap(history.first)
            XCTAssertEqual(try row.get("kind", as: String.self), "migration")
            XCTAssertEqual(try row.get("state", as: String.self), "applied")
            XCTAssertEqual(try row.get("checksum_version", as: Int.self), db.dialect.checksumVersion)
            XCTAssertEqual(try row.get("tool_version", as: String.self), Strata.version)
            XCTAssertEqual(try row.get("applied_sql", as: String.self), "CREATE TABLE log (position INTEGER, step TEXT);")
            XCTAssertEqual(try row.get("checksum", as: String.self).count, 64)
            XCTAssertNotNil(ISO8601.parse(try row.get("applied_at", as: String.self)))
            XCTAssertNotNil(try row.get("duration_ms", as: Int?.self))
        }
    }

    func testFailureInThirdStatementLeavesThatFileWithoutTrace() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, files: [
                "sql/1_ok.sql": "CREATE TABLE a (x INTEGER); INSERT INTO a VALUES (1);",
                "sql/2_bad.sql": "CREATE TABLE b (y INTEGER);\nINSERT INTO a VALUES (2);\n  INSERT INTO missing VALUES (3);\nCREATE TABLE c (z INTEGER);",
                "sql/3_after.sql": "CREATE TABLE d (w INTEGER);",
            ])
            let migrator = try project.migrator()
            let report = try migrator.migrate()
            XCTAssertEqual(report.applied.map(\.id), ["1_ok.sql"])
            let failure = try XCTUnwrap(report.failure)
            XCTAssertEqual(failure.id, "2_bad.sql")
            // SQLite places an error at the failing statement; PostgreSQL at the token its error position names.
            let column = backend.kind == .sqlite ? 3 : 15
            XCTAssertEqual(failure.line, 3)
            XCTAssertEqual(failure.column, column)
            XCTAssertTrue(failure.message.contains(backend.noSuchTable("missing")), failure.message)
            XCTAssertTrue(failure.description.hasSuffix("sql/2_bad.sql:3:\(column): " + failure.message), failure.description)
            let db = try project.connection()
            XCTAssertFalse(try db.tableExists("b"), "schema as before the file")
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM a", as: Int.self), 1, "data as before the file")
            XCTAssertFalse(try db.tableExists("d"), "nothing after the failure ran")
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM strata_history", as: Int.self), 1)
            XCTAssertEqual(try migrator.status().map(\.state), [.applied, .pending, .pending])
        }
    }

    func testCRLFAndBOMEditsAreNotDriftButAChangedCharacterIs() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);\n-- note\n"])
            XCTAssertEqual(try project.migrator().migrate().applied.count, 1)
            try project.file("sql/1_a.sql", "\u{FEFF}CREATE TABLE a (x INTEGER);\r\n-- note\r\n")
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied])
            try project.file("sql/1_a.sql", "CREATE TABLE a (x INTEGER);\r-- note\n")
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied], "a lone CR outside a comment is layout")
            try project.file("sql/1_a.sql", "CREATE TABLE a (y INTEGER);\n-- note\n")
            XCTAssertEqual(try project.migrator().status().map(\.state), [.drifted])
            try project.file("sql/2_b.sql", "CREATE TABLE b (x INTEGER);")
            let error = assertThrows(MigrationError.self) { try project.migrator().migrate() }
            guard case .refused(let refusals)? = error else { return XCTFail("expected a refusal") }
            XCTAssertEqual(refusals.map(\.reason), [.drift])
            XCTAssertTrue(refusals[0].message.contains("1_a.sql"))
            XCTAssertFalse(try project.connection().tableExists("b"), "drift refuses before doing anything")
            let repaired = try project.migrator().repair()
            XCTAssertEqual(repaired.realigned, ["1_a.sql"])
            XCTAssertEqual(try project.migrator().migrate().applied.map(\.id), ["2_b.sql"])
            XCTAssertEqual(try project.connection().scalar("SELECT applied_sql FROM strata_history WHERE identity = '1_a.sql'", as: String.self),
                           "CREATE TABLE a (y INTEGER);\n-- note\n")
        }
    }

    func testChecksumNormalisation() throws {
        let lf = try Checksum.of(Array("a\nb\n".utf8))
        XCTAssertEqual(try Checksum.of(Array("a\r\nb\r\n".utf8)), lf)
        XCTAssertEqual(try Checksum.of(Array("a\rb\r".utf8)), lf)
        XCTAssertEqual(try Checksum.of([0xEF, 0xBB, 0xBF] + Array("a\nb\n".utf8)), lf)
        XCTAssertNotEqual(try Checksum.of(Array("a\nb \n".utf8)), lf)
        XCTAssertEqual(try Checksum.of([]), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(Checksum.normalizedText([0xEF, 0xBB, 0xBF] + Array("a\r\nb\rc\n\r\né".utf8)), "a\nb\nc\n\né")
        // Streaming over chunk boundaries gives the same result as hashing at once.
        let dir = try makeTemporaryDirectory(self)
        let big = String(repeating: "line\r\n", count: 400_000)
        try write(big, to: dir.appendingPathComponent("big.sql"))
        XCTAssertEqual(try Checksum.ofFile(atPath: dir.appendingPathComponent("big.sql").path, content: .sql),
                       try Checksum.of(Array(String(repeating: "line\n", count: 400_000).utf8)))
    }

    func testMissingFileIsRefusedAndRepairMarksItDeleted() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);",
                                                                      "sql/2_b.sql": "CREATE TABLE b (x INTEGER);"])
            _ = try project.migrator().migrate()
            try FileManager.default.removeItem(at: project.root.appendingPathComponent("sql/2_b.sql"))
            XCTAssertEqual(try project.migrator().status().last?.state, .missing)
            let error = assertThrows(MigrationError.self) { try project.migrator().migrate() }
            XCTAssertTrue(error?.description.contains("2_b.sql was applied but is no longer in the manifest") ?? false)
            XCTAssertEqual(try project.migrator().repair().deleted, ["2_b.sql"])
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied])
            XCTAssertEqual(try project.migrator().migrate().applied, [])
        }
    }

    func testAFileRestoredAfterRepairIsAppliedNotRunAgain() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);",
                                                                      "sql/2_b.sql": "INSERT INTO a VALUES (1);"])
            _ = try project.migrator().migrate()
            let moved = project.root.appendingPathComponent("2_b.sql.away")
            try FileManager.default.moveItem(at: project.root.appendingPathComponent("sql/2_b.sql"), to: moved)
            XCTAssertEqual(try project.migrator().repair().deleted, ["2_b.sql"])
            try FileManager.default.moveItem(at: moved, to: project.root.appendingPathComponent("sql/2_b.sql"))
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .applied])
            XCTAssertEqual(try project.migrator().plan().steps.map(\.step.id), [])
            XCTAssertEqual(try project.migrator().migrate().applied, [])
            XCTAssertEqual(try project.connection().scalar("SELECT count(*) FROM a", as: Int.self), 1, "applied once")

            // A different file under the deleted name is drift, not a new step.
            try project.file("sql/2_b.sql", "INSERT INTO a VALUES (2);")
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .drifted])
            let error = assertThrows(MigrationError.self) { try project.migrator().migrate() }
            guard case .refused(let refusals)? = error else { return XCTFail("expected a refusal") }
            XCTAssertEqual(refusals.map(\.reason), [.drift])
            XCTAssertEqual(try project.connection().scalar("SELECT count(*) FROM a", as: Int.self), 1)
        }
    }

    func testOutOfOrderIsAppliedAndStrictOrderRefuses() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);",
                                                                      "sql/3_c.sql": "CREATE TABLE c (x INTEGER);"])
            _ = try project.migrator().migrate()
            try project.file("sql/2_b.sql", "CREATE TABLE b (x INTEGER);")
            let error = assertThrows(MigrationError.self) { try project.migrator().migrate(MigrationOptions(strictOrder: true)) }
            guard case .refused(let refusals)? = error else { return XCTFail("expected a refusal") }
            XCTAssertEqual(refusals.first?.reason, .outOfOrder)
            XCTAssertTrue(refusals.first?.message.contains("2_b.sql") ?? false)
            let report = try project.migrator().migrate()
            XCTAssertEqual(report.applied.map(\.id), ["2_b.sql"])
            XCTAssertEqual(report.applied.first?.reason, .outOfOrder)
            XCTAssertTrue(try project.connection().tableExists("b"))
        }
    }

    func testTransactionNoneFileRunsOutsideATransaction() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, manifestBody: """
                <migrations directory="sql"><migration file="2_vacuum.sql" transaction="none"/></migrations>
                """, files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);", "sql/2_vacuum.sql": backend.statementOnlyOutsideATransaction])
            let report = try project.migrator().migrate()
            XCTAssertEqual(report.applied.map(\.id), ["1_a.sql", "2_vacuum.sql"])
            XCTAssertEqual(try project.connection().scalar("SELECT state FROM strata_history WHERE identity = '2_vacuum.sql'", as: String.self),
                           "applied")
        }
    }

    func testDirtyTransactionNoneFileBlocksUntilResolved() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, manifestBody: """
                <migrations directory="sql"><migration file="2_none.sql" transaction="none"/></migrations>
                """, files: [
                    "sql/1_a.sql": "CREATE TABLE a (x INTEGER);",
                    "sql/2_none.sql": "INSERT INTO a VALUES (1);\nINSERT INTO nowhere VALUES (2);",
                    "sql/3_c.sql": "CREATE TABLE c (x INTEGER);",
                ])
            let first = try project.migrator().migrate()
            XCTAssertEqual(first.failure?.id, "2_none.sql")
            XCTAssertEqual(first.failure?.line, 2)
            XCTAssertEqual(try project.connection().scalar("SELECT state FROM strata_history WHERE identity = '2_none.sql'", as: String.self),
                           "failed")
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .dirty, .pending])

            let error = assertThrows(MigrationError.self) { try project.migrator().migrate() }
            XCTAssertTrue(error?.description.contains("strata resolve 2_none.sql --applied") ?? false, "\(String(describing: error))")
            XCTAssertFalse(try project.connection().tableExists("c"))

            // A human removes the partial effect, fixes the file, and tells Strata it was rolled back.
            try project.connection().execute("DELETE FROM a")
            try project.file("sql/2_none.sql", "INSERT INTO a VALUES (1);")
            try project.migrator().resolve("2_none.sql", as: .rolledBack)
            XCTAssertEqual(try project.migrator().migrate().applied.map(\.id), ["2_none.sql", "3_c.sql"])
            XCTAssertEqual(try project.connection().scalar("SELECT count(*) FROM a", as: Int.self), 1)
            XCTAssertThrowsError(try project.migrator().resolve("2_none.sql", as: .applied), "only dirty steps resolve")
        }
    }

    func testCrashedRunnerLeavesDirtyStateAndResolveAppliedRecordsIt() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, manifestBody: noneStepMigrations,
                                      files: ["sql/1_none.sql": "CREATE TABLE a (x INTEGER);"])
            let db = try project.connection()
            try db.history.create()
            // What a process killed during the file leaves behind: a running row whose process is gone.
            try db.history.write(.leftBehind("1_none.sql", state: .running, runner: "\(ProcessInfo.processInfo.hostName):2147483000"))
            XCTAssertEqual(try project.migrator().status().map(\.state), [.dirty])
            let error = assertThrows(MigrationError.self) { try project.migrator().migrate() }
            XCTAssertTrue(error?.description.contains("never finished") ?? false, "\(String(describing: error))")
            try project.migrator().resolve("1_none.sql", as: .applied)
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied])
        }
    }

    /// A `running` step whose runner still holds its lock is being applied: settling it now would be a guess.
    func testResolveRefusesAStepWhoseRunnerIsStillAlive() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, manifestBody: noneStepMigrations,
                                      files: ["sql/1_none.sql": "CREATE TABLE a (x INTEGER);"])
            let runner = try project.connection()
            try runner.history.create()
            let claim = try XCTUnwrap(try runner.stepLocks.claim(kind: .migration, id: "1_none.sql"))
            try runner.history.write(.leftBehind("1_none.sql", state: .running, runner: "deployer-7:4242"))
            for resolution in [Resolution.applied, .rolledBack] {
                guard case .refused(let refusals)? = assertThrows(MigrationError.self, {
                    try project.migrator().resolve("1_none.sql", as: resolution)
                }) else { return XCTFail("not refused") }
                XCTAssertTrue(refusals.first?.message.contains("being applied now by deployer-7:4242") ?? false, "\(refusals)")
            }
            XCTAssertEqual(try runner.history.record(kind: .migration, identity: "1_none.sql")?.state, .running)
            claim.release()
            try project.migrator().resolve("1_none.sql", as: .rolledBack)
            XCTAssertNil(try runner.history.record(kind: .migration, identity: "1_none.sql"))
        }
    }

    /// The history row a runner leaves for a `transaction="none"` step, with `runner` naming a live process.
    private func recordNoneStep(_ project: Project, state: String, runner: String) throws {
        let db = try project.connection()
        try db.history.create()
        try db.history.write(.leftBehind("1_none.sql", state: HistoryRecord.State(rawValue: state) ?? .failed, runner: runner,
                                         error: state == "failed" ? "sql/1_none.sql:1:1: no such table: t" : nil))
    }

    /// The `<migrations>` of a project whose one file runs with `transaction="none"`.
    private var noneStepMigrations: String {
        #"<migrations directory="sql"><migration file="1_none.sql" transaction="none"/></migrations>"#
    }

    func testAFailedStepIsDirtyEvenWhenItsRunnerPIDIsAlive() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, manifestBody: noneStepMigrations,
                                      files: ["sql/1_none.sql": "CREATE TABLE a (x INTEGER);"])
            // Our parent process is alive: pid reuse (small pids in containers) makes a live pid mean nothing.
            try recordNoneStep(project, state: "failed", runner: "\(ProcessInfo.processInfo.hostName):\(getppid())")
            let migrator = try project.migrator()
            let plan = try migrator.plan()
            XCTAssertEqual(plan.steps.map(\.step.id), [], "a failed step is not being applied")
            XCTAssertEqual(plan.refusals.map(\.reason), [.dirty])
            let error = assertThrows(MigrationError.self) { try migrator.migrate(MigrationOptions(waitTimeout: .milliseconds(300))) }
            guard case .refused(let refusals)? = error else { return XCTFail("expected a refusal, got \(String(describing: error))") }
            XCTAssertTrue(refusals.first?.message.contains("failed part-way") ?? false, refusals.first?.message ?? "")
        }
    }

    func testARunningStepWithoutItsLockIsDirtyEvenWhenItsRunnerPIDIsAlive() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, manifestBody: noneStepMigrations,
                                      files: ["sql/1_none.sql": "CREATE TABLE a (x INTEGER);"])
            try recordNoneStep(project, state: "running", runner: "\(ProcessInfo.processInfo.hostName):\(getppid())")
            let error = assertThrows(MigrationError.self) { try project.migrator().migrate(MigrationOptions(waitTimeout: .milliseconds(300))) }
            guard case .refused(let refusals)? = error else { return XCTFail("expected a refusal, got \(String(describing: error))") }
            XCTAssertTrue(refusals.first?.message.contains("never finished") ?? false, refusals.first?.message ?? "")
        }
    }

    func testARunningStepUnderItsLockIsWaitedForWhateverItsPID() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, manifestBody: noneStepMigrations,
                                      files: ["sql/1_none.sql": "CREATE TABLE a (x INTEGER);"])
            // A pid that cannot exist: liveness must come from the lock, not from the pid.
            try recordNoneStep(project, state: "running", runner: "\(ProcessInfo.processInfo.hostName):2147483000")
            let holder = try project.connection()
            let lock = try XCTUnwrap(try holder.stepLocks.claim(kind: .migration, id: "1_none.sql"))
            XCTAssertTrue(try backend.stepLockExists(project, kind: .migration, id: "1_none.sql"))
            XCTAssertNil(try project.connection().stepLocks.claim(kind: .migration, id: "1_none.sql"),
                         "another claim cannot take it, even in this process (on SQLite: a second open file description)")
            let migrator = try project.migrator()
            XCTAssertEqual(try migrator.plan().steps.map(\.step.id), ["1_none.sql"], "being applied: listed, not refused")
            XCTAssertEqual(try migrator.plan().refusals, [])
            let error = assertThrows(MigrationError.self) { try migrator.migrate(MigrationOptions(waitTimeout: .milliseconds(300))) }
            guard case .lockTimeout(let message)? = error else { return XCTFail("expected to wait, got \(String(describing: error))") }
            XCTAssertTrue(message.contains("1_none.sql is being applied by another process"), message)

            lock.release()
            XCTAssertEqual(try migrator.plan().refusals.map(\.reason), [.dirty], "the lock is gone: the runner died")
            withExtendedLifetime(holder) {}
        }
    }

    func testCancellationStopsBetweenStepsAndNamesWhatDidNotRun() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);",
                                                                      "sql/2_b.sql": "CREATE TABLE b (x INTEGER);",
                                                                      "sql/3_c.sql": "CREATE TABLE c (x INTEGER);"])
            let cancellation = MigrationCancellation()
            // Cancelled while step 1 runs (its start event): it finishes and is recorded, nothing after it starts.
            let report = try project.migrator().migrate(MigrationOptions(cancellation: cancellation)) { event in
                if case .started(let step, _) = event, step.id == "1_a.sql" { cancellation.cancel() }
            }
            XCTAssertTrue(report.cancelled)
            XCTAssertEqual(report.applied.map(\.id), ["1_a.sql"])
            XCTAssertEqual(report.notRun, ["2_b.sql", "3_c.sql"])
            XCTAssertNil(report.failure)
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .pending, .pending])

            let again = try project.migrator().migrate(MigrationOptions(cancellation: cancellation))
            XCTAssertEqual(again.applied, [], "already cancelled: nothing starts")
            XCTAssertEqual(again.notRun, ["2_b.sql", "3_c.sql"])
            XCTAssertEqual(try project.migrator().migrate().applied.map(\.id), ["2_b.sql", "3_c.sql"])
        }
    }

    func testLargeFilesAreCheckedStatementByStatementAndRecordedByChecksumOnly() throws {
        try forEachBackend { backend in
            let padding = String(repeating: "-- padding padding padding padding padding padding padding padding\n", count: 70_000)
            let refused = backend.statementRefusedInATransactionalFile
            let project = try Project(self, backend: backend, files: [
                "sql/1_big.sql": "CREATE TABLE a (x INTEGER);\n" + padding + "INSERT INTO a VALUES (1);\n",
                "sql/2_big.sql": "CREATE TABLE b (x INTEGER);\n" + padding + refused.sql + "\n",
            ])
            XCTAssertGreaterThan(padding.utf8.count, Migrator.lintSizeLimit)
            XCTAssertEqual(try project.migrator().lint(), [], "files above the lint limit are not read ahead of time")
            XCTAssertEqual(try project.migrator().lintWarnings().map { ($0.location.path as NSString).lastPathComponent },
                           ["1_big.sql", "2_big.sql"], "but validate says so")
            let validate = try project.strata(["validate"])
            XCTAssertEqual(validate.status, 0)
            XCTAssertTrue(validate.stderr.contains("sql/2_big.sql:1: not checked ahead of time (4 MiB"), validate.stderr)
            let report = try project.migrator().migrate()
            XCTAssertEqual(report.applied.map(\.id), ["1_big.sql"])
            let failure = try XCTUnwrap(report.failure)
            XCTAssertEqual(failure.line, 70_002)
            XCTAssertTrue(failure.message.contains(refused.message), failure.message)
            let db = try project.connection()
            XCTAssertFalse(try db.tableExists("b"))
            XCTAssertEqual(try db.scalar("SELECT applied_sql IS NULL FROM strata_history WHERE identity = '1_big.sql'", as: Bool.self), true)
            XCTAssertEqual(try project.migrator().status().first?.state, .applied)
        }
    }

    func testForeignKeyCheckNamesViolatingRows() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, files: [
                "sql/1_a.sql": "CREATE TABLE parent (id INTEGER PRIMARY KEY);\nCREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED);\nINSERT INTO child VALUES (7, 42);",
            ])
            let report = try project.migrator().migrate()
            let failure = try XCTUnwrap(report.failure)
            XCTAssertTrue(failure.message.contains(backend.foreignKeyViolation(table: "child", key: 7, parent: "parent")), failure.message)
            XCTAssertFalse(try project.connection().tableExists("child"))
        }
    }

    func testBaselineRecordsWithoutRunning() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, files: [
                "sql/1_a.sql": "CREATE TABLE a (x INTEGER);", "sql/2_b.sql": "CREATE TABLE b (x INTEGER);",
                "sql/3_c.sql": "CREATE TABLE c (x INTEGER);",
            ])
            let db = try project.connection()
            try db.execute("CREATE TABLE a (x INTEGER)")
            try db.execute("CREATE TABLE b (x INTEGER)")
            XCTAssertEqual(try project.migrator().baseline(through: "2_b.sql"), ["1_a.sql", "2_b.sql"])
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .applied, .pending])
            XCTAssertEqual(try project.migrator().migrate().applied.map(\.id), ["3_c.sql"])
            XCTAssertEqual(try project.migrator().baseline(through: "3_c.sql"), [])
            XCTAssertThrowsError(try project.migrator().baseline(through: "9_z.sql"))
            XCTAssertEqual(try db.scalar("SELECT state FROM strata_history WHERE identity = '1_a.sql'", as: String.self), "baseline")
        }
    }

    func testPlanAndStatusWriteNothing() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);",
                                                                      "sql/2_b.sql": "CREATE TABLE b (x INTEGER);"])
            try project.connection().execute("CREATE TABLE existing (x INTEGER)")
            let before = try backend.storedContent(project)
            let migrator = Migrator(manifest: try project.manifest(), database: try backend.openReadOnly(project))
            let plan = try migrator.plan()
            XCTAssertEqual(plan.steps.map(\.step.id), ["1_a.sql", "2_b.sql"])
            XCTAssertEqual(plan.refusals, [])
            XCTAssertEqual(try migrator.status().map(\.state), [.pending, .pending])
            XCTAssertEqual(try backend.storedContent(project), before)
            XCTAssertFalse(try project.connection().tableExists("strata_history"))
        }
    }

    /// The plan id a reviewer approved covers everything that decides what runs: a seed's mode, a migration's
    /// `foreignKeys`, and a seed file's bytes even when its size and modification time are kept (reproducible builds,
    /// `tar`, `rsync -a`). It is the same in every process for the same inputs.
    func testThePlanIDChangesWithEveryInputThatChangesWhatRuns() throws {
        try forEachBackend(needing: .seeds) { backend in
            let project = try Project(self, backend: backend, files: [
                "sql/1_a.sql": "CREATE TABLE t (code TEXT PRIMARY KEY, v INTEGER);",
                "sql/2_b.sql": "CREATE TABLE u (id INTEGER);", "csv/t.csv": "code,v\na,1\n",
            ])
            func write(mode: String = #"mode="upsert" key="code""#, foreignKeys: String = "") throws {
                try project.file("manifest.xml", """
                    <manifest version="1">\(backend.databaseElement(project.root))<migrations directory="sql">
                      <migration file="2_b.sql"\(foreignKeys)/></migrations>
                      <seeds><seed file="csv/t.csv" table="t" \(mode)/></seeds></manifest>
                    """)
            }
            func planID() throws -> String { try project.migrator().plan().id }
            // A fixed modification time, as reproducible builds give every file.
            let seed = project.root.appendingPathComponent("csv/t.csv").path
            let fixed = Date(timeIntervalSince1970: 1_700_000_000)
            try FileManager.default.setAttributes([.modificationDate: fixed], ofItemAtPath: seed)
            try write()
            let reviewed = try planID()
            XCTAssertEqual(try planID(), reviewed, "the same inputs, the same id")
            let command = try project.strataOnBackend(["plan", "--format", "json"])
            XCTAssertTrue(command.stdout.contains(#""planId":"\#(reviewed)""#), "another process computes the same id: \(command.stdout)")

            try write(mode: #"mode="sync" key="code""#)
            XCTAssertNotEqual(try planID(), reviewed, "mode upsert → sync")
            try write(foreignKeys: #" foreignKeys="on""#)
            XCTAssertNotEqual(try planID(), reviewed, "foreignKeys added")
            try write()
            XCTAssertEqual(try planID(), reviewed)

            // The seed's bytes change; its size and modification time do not.
            try project.file("csv/t.csv", "code,v\nb,9\n")
            try FileManager.default.setAttributes([.modificationDate: fixed], ofItemAtPath: seed)
            XCTAssertNotEqual(try planID(), reviewed, "same size and mtime, other rows")
            let refused = try project.strataOnBackend(["migrate", "--plan-id", reviewed])
            XCTAssertEqual(refused.status, 3, refused.stderr)
            XCTAssertTrue(refused.stderr.contains("the plan changed since it was reviewed"), refused.stderr)
            XCTAssertEqual(try project.migrator().status().map(\.state), [.pending, .pending, .pending], "nothing ran")
        }
    }

    /// A reviewed plan is the plan that runs, to the last step: a file saved after `migrate --plan-id` checked the
    /// plan, before its step read it (a deploy waiting for another's lock), fails that step with nothing of it
    /// kept, whether it is a transactional file, a `transaction="none"` file or a seed.
    func testAFileChangedAfterTheReviewedPlanWasCheckedDoesNotRun() throws {
        try forEachBackend(needing: .seeds) { backend in
            for changed in ["sql/2_fix.sql", "sql/3_none.sql", "csv/t.csv"] {
                let project = try Project(self, backend: backend, manifestBody: """
                    <migrations directory="sql"><migration file="3_none.sql" transaction="none"/></migrations>
                    <seeds><seed file="csv/t.csv" table="acct" after="3_none.sql"/></seeds>
                    """, files: [
                        "sql/1_acct.sql": "CREATE TABLE acct (id INTEGER, balance INTEGER); INSERT INTO acct VALUES (1, 100);",
                        "sql/2_fix.sql": "UPDATE acct SET balance = balance + 1;",
                        "sql/3_none.sql": "UPDATE acct SET balance = balance + 10;",
                        "csv/t.csv": "id,balance\n2,5\n",
                    ])
                let reviewed = try project.migrator().plan().id
                let id = PathComponents.last(changed)
                let report = try project.migrator().migrate(MigrationOptions(expectedPlanID: reviewed)) { event in
                    guard case .started(let step, _) = event, step.id == id else { return }
                    try? project.file(changed, changed.hasSuffix(".csv") ? "id,balance\n2,999\n" : "DELETE FROM acct;")
                }
                let failure = try XCTUnwrap(report.failure, changed)
                XCTAssertEqual(failure.id, id, changed)
                XCTAssertTrue(failure.message.contains("the file changed after the plan was reviewed"), "\(changed): \(failure.message)")
                XCTAssertEqual(failure.aftermath, .rolledBack, changed)
                let db = try project.connection()
                XCTAssertEqual(try db.scalar("SELECT count(*) FROM acct", .none, as: Int.self), 1, "\(changed): nothing deleted or loaded")
                XCTAssertNil(try db.history.record(kind: changed.hasSuffix(".csv") ? .seed : .migration, identity: id), changed)
            }
        }
    }

    /// A history table made before `earlier_checksums` and `runner_session` existed is read as it is (status writes
    /// nothing) and gets the columns on the next write; its records keep comparing as before.
    func testAHistoryTableFromAnEarlierVersionIsReadAsItIsAndGetsItsNewColumnsOnTheNextWrite() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);"])
            XCTAssertEqual(try project.migrator().migrate().applied.count, 1)
            let db = try project.connection()
            func columns() throws -> Set<String> {
                Set(try db.rows("SELECT * FROM strata_history").first?.columnNames ?? [])
            }
            try db.execute("ALTER TABLE strata_history DROP COLUMN earlier_checksums", .none)
            try db.execute("ALTER TABLE strata_history DROP COLUMN runner_session", .none)
            XCTAssertFalse(try columns().contains("earlier_checksums"))
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied])
            XCTAssertFalse(try columns().contains("earlier_checksums"), "status writes nothing")
            try project.file("sql/2_b.sql", "CREATE TABLE b (x INTEGER);")
            XCTAssertEqual(try project.migrator().migrate().applied.map(\.id), ["2_b.sql"])
            XCTAssertTrue(try columns().isSuperset(of: ["earlier_checksums", "runner_session"]))
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .applied])
        }
    }

    func testNewMigrationTakesTheNextSortablePrefix() throws {
        let project = try Project(self, files: ["sql/0007_a.sql": "", "sql/12_b.sql": ""])
        let path = try MigrationFile.create(named: "Add loans: due date!", in: try project.manifest())
        XCTAssertEqual((path as NSString).lastPathComponent, "0013_add_loans_due_date.sql")
        XCTAssertEqual(try project.manifest().migrations.last?.id, "0013_add_loans_due_date.sql")
        let empty = try Project(self, files: [:])
        XCTAssertEqual((try MigrationFile.create(named: "init", in: try empty.manifest()) as NSString).lastPathComponent, "001_init.sql")
        XCTAssertThrowsError(try MigrationFile.create(named: "!!!", in: try empty.manifest()))
    }

    func testNewRefusesANameWithAControlCharacter() throws {
        let project = try Project(self, files: [:])
        for (name, scalar) in [("a\nb", "U+000A"), ("a\rb", "U+000D"), ("a\tb", "U+0009"), ("a\u{7F}b", "U+007F"), ("a\u{85}b", "U+0085")] {
            let error = assertThrows(MigrationError.self) { try MigrationFile.create(named: name, in: try project.manifest()) }
            XCTAssertTrue(error?.description.contains("control character \(scalar) at position 2") ?? false, "\(String(describing: error))")
        }
        XCTAssertEqual(try project.manifest().migrations.count, 0, "no file created")
    }

    func testNewMigrationInADeclaredFormatHasItsSections() throws {
        let markers: [(MigrationFormat, up: String, down: String)] = [
            (.goose, "-- +goose Up", "-- +goose Down"), (.sqlMigrate, "-- +migrate Up", "-- +migrate Down"),
            (.dbmate, "-- migrate:up", "-- migrate:down"),
        ]
        for (format, up, down) in markers {
            let manifest = "<manifest version=\"1\"><migrations directory=\"sql\" format=\"\(format.rawValue)\"/></manifest>"
            let project = try Project(self, manifest: manifest, files: ["sql/001_a.sql": "\(up)\nCREATE TABLE a (x);\n"])
            let path = try MigrationFile.create(named: "add b", in: try project.manifest())
            let text = try String(contentsOfFile: path, encoding: .utf8)
            XCTAssertTrue(text.contains("\n\(up)\n") && text.contains("\n\(down)\n"), "\(format): \(text)")
            // dbmate names a file by the time it was made (`NewInFormatTests`).
            let id = try XCTUnwrap(try project.manifest().migrations.last?.id)
            if format == .dbmate {
                XCTAssertTrue(id.count == 14 + "_add_b.sql".count && id.prefix(14).allSatisfy(\.isNumber) && id.hasSuffix("_add_b.sql"), id)
            } else {
                XCTAssertEqual(id, "002_add_b.sql", "the new file is a valid \(format) file")
            }
        }
    }

    func testLockHeldByAnotherConnectionTimesOutWithAClearMessage() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);"])
            let holder = try project.connection()
            // The holder's write lock is released when the closure returns; nothing is written under it.
            try holder.withWriteLock {
                let migrator = try project.migrator(timeout: .milliseconds(300))
                let error = assertThrows(MigrationError.self) { try migrator.migrate() }
                guard case .lockTimeout(let message)? = error else {
                    return XCTFail("expected a lock timeout, got \(String(describing: error))")
                }
                XCTAssertTrue(message.contains("write lock"), message)
            }
        }
    }

    // MARK: Files written for goose, sql-migrate and dbmate (issue 11, item 14)

    /// As `goose create add_users sql` writes it, filled in the way goose's documentation shows.
    static let gooseFile = """
        -- +goose Up
        -- +goose StatementBegin
        CREATE TABLE users (
            id INTEGER PRIMARY KEY,
            email TEXT NOT NULL UNIQUE,
            touched_at TEXT
        );
        -- +goose StatementEnd
        -- +goose StatementBegin
        CREATE TRIGGER users_touch AFTER UPDATE OF email ON users BEGIN
            UPDATE users SET touched_at = CURRENT_TIMESTAMP WHERE id = NEW.id;
        END;
        -- +goose StatementEnd

        -- +goose Down
        -- +goose StatementBegin
        DROP TRIGGER users_touch;
        DROP TABLE users;
        -- +goose StatementEnd

        """

    /// As `sql-migrate new` writes it, with a statement block.
    static let sqlMigrateFile = """

        -- +migrate Up
        CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT);
        -- +migrate StatementBegin
        CREATE TRIGGER people_name AFTER INSERT ON people BEGIN
            UPDATE people SET name = trim(name) WHERE id = NEW.id;
        END;
        -- +migrate StatementEnd

        -- +migrate Down
        DROP TABLE people;

        """

    /// `gooseFile` for PostgreSQL, line for line: the trigger is a function and a trigger calling it.
    static let postgresGooseFile = """
        -- +goose Up
        -- +goose StatementBegin
        CREATE TABLE users (
            id INTEGER PRIMARY KEY,
            email TEXT NOT NULL UNIQUE,
            touched_at TEXT
        );
        -- +goose StatementEnd
        -- +goose StatementBegin
        CREATE FUNCTION users_touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
            NEW.touched_at = CURRENT_TIMESTAMP; RETURN NEW;
        END $$; CREATE TRIGGER users_touch BEFORE UPDATE OF email ON users FOR EACH ROW EXECUTE FUNCTION users_touch();
        -- +goose StatementEnd

        -- +goose Down
        -- +goose StatementBegin
        DROP TRIGGER users_touch ON users;
        DROP TABLE users;
        -- +goose StatementEnd

        """

    /// `sqlMigrateFile` for PostgreSQL, line for line.
    static let postgresSQLMigrateFile = """

        -- +migrate Up
        CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT);
        -- +migrate StatementBegin
        CREATE FUNCTION people_name() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
            NEW.name = trim(NEW.name); RETURN NEW;
        END $$; CREATE TRIGGER people_name BEFORE INSERT ON people FOR EACH ROW EXECUTE FUNCTION people_name();
        -- +migrate StatementEnd

        -- +migrate Down
        DROP TABLE people;

        """

    /// As `dbmate new` writes it.
    static let dbmateFile = """
        -- migrate:up
        create table posts (
          id integer primary key,
          title varchar(255) not null
        );

        -- migrate:down
        drop table posts;

        """

    func testUpSectionOfRealGooseSQLMigrateAndDbmateFiles() throws {
        try forEachBackend { backend in
            let files = backend.toolFiles
            let cases: [(MigrationFormat, String, startLine: Int, endMarker: String, table: String)] = [
                (.goose, files.goose, 2, "-- +goose Down", "users"),
                (.sqlMigrate, files.sqlMigrate, 3, "-- +migrate Down", "people"),
                (.dbmate, files.dbmate, 2, "-- migrate:down", "posts"),
            ]
            let db = try Project(self, backend: backend, files: [:]).connection()
            for (format, text, startLine, endMarker, table) in cases {
                let bytes = Array(text.utf8)
                let section = try format.upSection(of: bytes)
                let up = String(decoding: bytes[section.range], as: UTF8.self)
                XCTAssertEqual(section.startLine, startLine, "\(format)")
                XCTAssertTrue(section.runsInTransaction)
                let lines = text.components(separatedBy: "\n")
                let downLine = try XCTUnwrap(lines.firstIndex(of: endMarker))
                XCTAssertEqual(up, lines[(startLine - 1)..<downLine].joined(separator: "\n") + "\n",
                               "the up section is exactly the lines between the markers (\(format))")
                XCTAssertFalse(up.lowercased().contains("drop table"), "\(format)")
                // How the executor runs it: only the up section; the table stays.
                try db.withTransaction {
                    try db.runScript(Array(up.utf8), startLine: 1, insideTransaction: true, afterEach: nil)
                }
                XCTAssertTrue(try db.tableExists(table), "\(format)")
                // Line endings do not move the section's lines, and a BOM before the marker is not SQL.
                let crlf = Array(("\u{FEFF}" + text.replacingOccurrences(of: "\n", with: "\r\n")).utf8)
                let crlfSection = try format.upSection(of: crlf)
                XCTAssertEqual(crlfSection.startLine, startLine)
                XCTAssertEqual(String(decoding: crlf[crlfSection.range], as: UTF8.self), up.replacingOccurrences(of: "\n", with: "\r\n"))
            }
        }
    }

    func testSectionErrorsKeepTheFilesLineNumbers() throws {
        let text = "-- +goose Up\nCREATE TABLE a (x INTEGER);\n\nINSERT INTO missing VALUES (1);\n-- +goose Down\nDROP TABLE a;\n"
        let bytes = Array(text.utf8)
        let section = try MigrationFormat.goose.upSection(of: bytes)
        try forEachBackend { backend in
            let db = try Project(self, backend: backend, files: [:]).connection()
            let error = assertThrows(DatabaseError.self) {
                try db.runScript(Array(bytes[section.range]), startLine: 1, insideTransaction: false, afterEach: nil)
            }
            XCTAssertEqual(error.flatMap { $0.line }.map { $0 + section.startLine - 1 }, 4, "line in the section + startLine - 1 = line in the file")
        }
    }

    func testEachToolsNoTransactionOption() throws {
        let files: [(MigrationFormat, String)] = [
            (.goose, "-- +goose NO TRANSACTION\n-- +goose Up\nVACUUM;\n-- +goose Down\n"),
            (.sqlMigrate, "-- +migrate Up notransaction\nVACUUM;\n-- +migrate Down\n"),
            (.dbmate, "-- migrate:up transaction:false\nVACUUM;\n-- migrate:down\n"),
        ]
        for (format, text) in files {
            XCTAssertFalse(try format.upSection(of: Array(text.utf8)).runsInTransaction, "\(format)")
        }
        XCTAssertTrue(try MigrationFormat.dbmate.upSection(of: Array("-- migrate:up transaction:true\nSELECT 1;\n".utf8)).runsInTransaction)
    }

    func testMalformedSectionsAreRefusedWithTheirLine() {
        let cases: [(MigrationFormat, String, line: Int, message: String)] = [
            (.goose, "CREATE TABLE a (x);\n", 1, "no '-- +goose Up' marker"),
            (.goose, "-- note\nCREATE TABLE a (x);\n-- +goose Up\nSELECT 1;\n", 2, "SQL before the '-- +goose Up' marker on line 3"),
            (.goose, "-- +goose Down\nDROP TABLE a;\n-- +goose Up\n", 1, "'-- +goose Down' before any '-- +goose Up'"),
            (.goose, "-- +goose Up\nSELECT 1;\n-- +goose Up\n", 3, "a second '-- +goose Up' (the first is on line 1)"),
            (.goose, "-- +goose Up\n-- +goose StatementBegin\nSELECT 1;\n", 2, "'-- +goose StatementBegin' has no matching"),
            (.goose, "-- +goose Up\n-- +goose StatementBegin\n-- +goose Down\n", 3, "inside the '-- +goose StatementBegin' of line 2"),
            (.goose, "-- +goose Up\n-- +goose StatementEnd\n", 2, "without a '-- +goose StatementBegin'"),
            (.goose, "-- +goose ENVSUB ON\n-- +goose Up\nSELECT '${X}';\n", 1, "substitute environment variables"),
            (.goose, "-- +goose Up\n-- +goose Sideways\n", 2, "unknown goose annotation '-- +goose Sideways'"),
            (.goose, "-- +goose Up\nSELECT 1;\n-- migrate:down\n", 3, "is a dbmate marker, but the file is declared format=\"goose\""),
            (.sqlMigrate, "-- +migrate Up sometimes\nSELECT 1;\n", 1, "unknown sql-migrate option 'sometimes'"),
            (.sqlMigrate, "-- +migrate Down\nDROP TABLE a;\n", 1, "'-- +migrate Down' before any '-- +migrate Up'"),
            (.sqlMigrate, "-- +migrate Up\nSELECT 1;\n-- +migrate Down\n-- +migrate Up\nSELECT 2;\n", 4, "a second '-- +migrate Up'"),
            (.dbmate, "-- migrate:up lock:yes\nSELECT 1;\n", 1, "unknown dbmate option 'lock:yes'"),
            (.dbmate, "create table a (x);\n-- migrate:up\n", 1, "SQL before the '-- migrate:up' marker on line 2"),
            (.plain, "CREATE TABLE a (x);\n\n  -- +goose down\nDROP TABLE a;\n", 3, "'-- +goose down' is a goose section marker"),
            (.plain, "-- +migrate Up\nCREATE TABLE a (x);\n", 1, "format=\"sql-migrate\""),
            (.plain, "CREATE TABLE a (x);\r\n--migrate:down\r\n", 2, "is a dbmate section marker"),
        ]
        for (format, text, line, message) in cases {
            let error = assertThrows(MigrationFormatError.self) { try format.upSection(of: Array(text.utf8)) }
            XCTAssertEqual(error?.line, line, "\(format): \(text)")
            XCTAssertTrue(error?.message.contains(message) ?? false, "\(format): expected '\(message)' in \(String(describing: error))")
        }
    }

    func testPlainFilesWithoutMarkersRunWhole() throws {
        let text = "\u{FEFF}-- migrate everything: up to date\n-- +gooseberry\nCREATE TABLE a (x);\n"
        XCTAssertEqual(try MigrationFormat.plain.upSection(of: Array(text.utf8)),
                       MigrationSection(range: 0..<text.utf8.count, startLine: 1, endLine: 3, runsInTransaction: true))
    }

    func testReadingTheFileInChunksFindsTheSameSection() throws {
        let directory = try makeTemporaryDirectory(self)
        let file = directory.appendingPathComponent("1_users.sql")
        for (format, fixture) in [(MigrationFormat.goose, Self.gooseFile), (.sqlMigrate, Self.sqlMigrateFile), (.dbmate, Self.dbmateFile)] {
            for lineBreak in ["\n", "\r\n", "\r"] {
                let text = "\u{FEFF}" + fixture.replacingOccurrences(of: "\n", with: lineBreak)
                try write(text, to: file)
                let expected = try format.upSection(of: Array(text.utf8))
                for chunkSize in 1...40 {
                    XCTAssertEqual(try format.upSection(ofFileAt: file.path, chunkSize: chunkSize), expected,
                                   "\(format), \(lineBreak.debugDescription), chunk size \(chunkSize)")
                }
                XCTAssertEqual(try format.upSection(ofFileAt: file.path), expected)
            }
        }
        let missing = assertThrows(MigrationFormatError.self) { try MigrationFormat.goose.upSection(ofFileAt: directory.appendingPathComponent("gone.sql").path) }
        XCTAssertEqual(missing?.line, 0)
        XCTAssertTrue(missing?.message.hasPrefix("cannot read the migration file (no such file") ?? false)
    }

    func testLintReadsOnlyTheUpSectionWithTheFilesLines() throws {
        try forEachBackend { backend in
            let outside = backend.statementOnlyOutsideATransaction
            let project = try Project(self, backend: backend, manifestBody: #"<migrations directory="sql" format="goose"/>"#, files: [
                "sql/1_a.sql": "-- +goose Up\nCREATE TABLE a (x INTEGER);\n-- +goose Down\n\(outside)\n",
                "sql/2_b.sql": "-- +goose Up\n\nCREATE TABLE b (x INTEGER);\n\n  \(outside)\n-- +goose Down\nDROP TABLE b;\n",
            ])
            let problems = try project.migrator().lint()
            XCTAssertEqual(problems.count, 1, "the down section of 1_a.sql is not linted: \(problems)")
            XCTAssertTrue(problems.first?.location.path.hasSuffix("sql/2_b.sql") ?? false)
            XCTAssertEqual(problems.first?.location.line, 5, "the file's line, not the section's")
            XCTAssertEqual(problems.first?.location.column, 3)
        }
    }

    func testAFileInAnotherToolsFormatNeverRunsWhole() throws {
        try forEachBackend { backend in
            let goose = backend.toolFiles.goose
            let project = try Project(self, backend: backend, manifestBody: #"<migrations directory="sql" format="goose"/>"#,
                                      files: ["sql/1_users.sql": goose])
            let migrator = try project.migrator()
            XCTAssertNil(try migrator.migrate().failure)
            let db = try project.connection()
            XCTAssertTrue(try db.tableExists("users"), "the up section ran and the down section did not")
            XCTAssertEqual(try db.scalar("SELECT applied_sql FROM strata_history", as: String.self), goose,
                           "the whole file is recorded")
            XCTAssertEqual(try migrator.status().map(\.state), [.applied], "and its checksum is the whole file's")
        }
    }

    func testAnErrorInAnUpSectionNamesTheFilesOwnLine() throws {
        try forEachBackend { backend in
            let file = backend.toolFiles.goose.replacingOccurrences(of: "    touched_at TEXT\n);",
                                                                    with: "    touched_at TEXT\n);\nINSERT INTO nowhere VALUES (1);")
            let project = try Project(self, backend: backend, manifestBody: #"<migrations directory="sql" format="goose"/>"#,
                                      files: ["sql/1_users.sql": file])
            let failure = try XCTUnwrap(try project.migrator().migrate().failure)
            // SQLite places an error at the failing statement; PostgreSQL at the token its error position names.
            XCTAssertEqual([failure.line, failure.column], [8, backend.kind == .sqlite ? 1 : 13])
            XCTAssertTrue(failure.message.contains(backend.noSuchTable("nowhere")), failure.message)
            XCTAssertFalse(try project.connection().tableExists("users"))
        }
    }
}


/// What the tests above expect that each database spells its own way.
extension TestBackend {
    /// A statement the database cannot run inside a transaction, so a file holding it needs `transaction="none"`
    /// and the lint of a transactional file finds it.
    fileprivate var statementOnlyOutsideATransaction: String {
        switch kind {
        case .sqlite: "VACUUM;"
        case .postgres: "VACUUM;"
        }
    }

    /// A statement a transactional migration may not run, refused by the lint before a run and by the database's
    /// own check as it runs, and what its refusal says.
    fileprivate var statementRefusedInATransactionalFile: (sql: String, message: String) {
        switch kind {
        case .sqlite: ("PRAGMA foreign_keys = OFF;", "PRAGMA foreign_keys is silently ignored")
        case .postgres: ("CREATE DATABASE strata_never_created;", "cannot run inside a transaction")
        }
    }

    /// How a failed foreign key check names the row of `table` with primary key `key` (SQLite: its rowid) whose
    /// parent is missing.
    fileprivate func foreignKeyViolation(table: String, key: Int64, parent: String) -> String {
        switch kind {
        case .sqlite: "\(table) row \(key) references a missing row in \(parent)"
        case .postgres: "violates foreign key constraint"
        }
    }

    /// A new read-only connection to a project's database.
    fileprivate func openReadOnly(_ project: Project) throws -> any MigrationDatabase {
        switch kind {
        case .sqlite: return try Database(path: project.databasePath, configuration: .init(readOnly: true))
        case .postgres:
            let db = try PostgresConnection(url: project.location)
            try db.execute("SET default_transaction_read_only = on")
            return db
        }
    }

    /// What the database holds, to compare before and after a command that must write nothing: SQLite's file,
    /// byte for byte.
    fileprivate func storedContent(_ project: Project) throws -> Data {
        switch kind {
        case .sqlite: try Data(contentsOf: URL(fileURLWithPath: project.databasePath))
        case .postgres: Data(try PostgresTestDatabase(project.root).contents().utf8)
        }
    }

    /// Whether the lock claiming a `transaction="none"` step is where the backend keeps it: on SQLite, its lock
    /// file beside the database.
    fileprivate func stepLockExists(_ project: Project, kind stepKind: StepKind, id: String) throws -> Bool {
        switch kind {
        case .sqlite:
            FileManager.default.fileExists(atPath: StepLock.path(databasePath: project.databasePath, kind: stepKind, id: id))
        case .postgres:
            PostgresStepLocks(connection: try PostgresConnection(url: project.location)).isHeld(kind: stepKind, id: id)
        }
    }

    /// The goose, sql-migrate and dbmate files, as each tool's documentation shows them for this database.
    fileprivate var toolFiles: (goose: String, sqlMigrate: String, dbmate: String) {
        switch kind {
        case .sqlite: (MigrationTests.gooseFile, MigrationTests.sqlMigrateFile, MigrationTests.dbmateFile)
        case .postgres: (MigrationTests.postgresGooseFile, MigrationTests.postgresSQLMigrateFile, MigrationTests.dbmateFile)
        }
    }
}
