import Foundation
import XCTest
import Strata
@testable import StrataCore
@testable import StrataSQLite

/// What `RollbackTests` leaves out: a Swift code step in a rollback's range (refused without a registered down,
/// nothing run; undone by the one registered), and eight `rollback --steps 1` runs at once.
extension RollbackTests {
    func codeProject(_ backend: TestBackend) throws -> Project {
        try project(backend, extra: #"<code name="fill" after="002_posts.sql" version="1"/>"#)
    }

    func codeMigrator(_ project: Project, down: Bool) throws -> Migrator {
        var migrator = try project.migrator()
        migrator.register("fill") { db in try db.execute("INSERT INTO users VALUES (2, 'filled')", .none) }
        if down { migrator.registerDown("fill") { db in try db.execute("DELETE FROM users WHERE id = 2", .none) } }
        return migrator
    }

    func testACodeStepWithoutADownIsRefusedBeforeAnythingRunsAndItsDownUndoesIt() throws {
        try forEachBackend(needing: .seeds) { backend in
            let project = try codeProject(backend)
            XCTAssertNil(try codeMigrator(project, down: false).migrate().failure)
            let before = try state(project)
            let history = try project.connection().history.all()
            guard case .refused(let refusals)? = assertThrows(MigrationError.self, { try codeMigrator(project, down: false).rollback(.steps(3)) }) else {
                return XCTFail("not refused")
            }
            XCTAssertEqual(refusals.map(\.reason), [.noDown], "\(refusals)")
            XCTAssertTrue(refusals.first?.message.contains("code:fill is a Swift code step") ?? false, "\(refusals)")
            XCTAssertEqual(try state(project), before, "nothing ran: not even the downs of the newer steps")
            XCTAssertEqual(try project.connection().history.all(), history, "history unchanged")
            let command = try project.strataOnBackend(["rollback", "--steps", "3"])
            XCTAssertEqual(command.status, 3, command.stderr)
            XCTAssertEqual(try state(project), before)
            XCTAssertEqual(try project.strataOnBackend(["rollback", "--steps", "2"]).status, 0, "the steps after it roll back")

            let undone = try codeMigrator(project, down: true).rollback(.steps(1))
            XCTAssertNil(undone.failure)
            XCTAssertEqual(undone.applied.map(\.id), ["code:fill"])
            XCTAssertEqual(try project.connection().scalar("SELECT count(*) FROM users WHERE id = 2", .none, as: Int.self), 0)
            XCTAssertEqual(try project.connection().history.all().filter { $0.identity.hasPrefix("rollback:") && $0.identity.hasSuffix(":code:fill") }.count, 1)
            XCTAssertEqual(try codeMigrator(project, down: true).migrate().applied.map(\.id), ["code:fill", "003_admin.sql", "004_title.sql"])
        }
    }

    /// Eight `strata rollback --steps 1` at once: each plans from the state it finds, so together they undo between
    /// one and eight of the newest steps; whatever the interleaving, each is undone once (one audit row each), the
    /// undone ones are the newest, and the history says exactly that.
    func testEightConcurrentRollbacksOfOneStepUndoEachStepOnce() throws {
        try forEachBackend { backend in
            var files: [String: String] = [:]
            let ids = (1...10).map { String(format: "%03d_t%d.sql", $0, $0) }
            for (index, id) in ids.enumerated() {
                files["sql/\(id)"] = "-- migrate:up\nCREATE TABLE t\(index + 1) (id INTEGER);\n-- migrate:down\nDROP TABLE t\(index + 1);\n"
            }
            let project = try Project(self, backend: backend, manifestBody: #"<migrations directory="sql" format="dbmate"/>"#, files: files)
            XCTAssertEqual(try project.strataOnBackend(["migrate"]).status, 0)
            let runs = try (0..<8).map { _ in
                try startStrata(["rollback", "--steps", "1", "--manifest", project.manifestPath, "--database", project.location], in: project.root)
            }
            var outputs: [String] = []
            for (process, _, err) in runs {
                outputs.append(String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
                process.waitUntilExit()
            }
            XCTAssertTrue(runs.allSatisfy { $0.0.terminationStatus == 0 }, "\(runs.map(\.0.terminationStatus)) \(outputs)")
            let history = try project.connection().history.all()
            let audits = history.filter { $0.identity.hasPrefix("rollback:") }.map { String($0.identity.split(separator: ":").last ?? "") }
            XCTAssertEqual(Set(audits).count, audits.count, "each rolled back once: \(audits)")
            XCTAssertTrue((1...8).contains(audits.count), "\(audits)")
            XCTAssertEqual(audits.sorted(), Array(ids.suffix(audits.count)), "the newest steps, none skipped")
            let applied = history.filter(\.isApplied).map(\.identity).sorted()
            XCTAssertEqual(applied, Array(ids.prefix(ids.count - audits.count)), "history consistent with the audit")
            let db = try project.connection()
            for (index, id) in ids.enumerated() {
                XCTAssertEqual(try db.tableExists("t\(index + 1)"), applied.contains(id), id)
            }
        }
    }
}
