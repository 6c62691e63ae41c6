import Foundation
import Strata
@testable import StrataCore
@testable import StrataPostgres
@testable import StrataSQLite
import XCTest

/// `Migrator.rehearse` on every backend: the pending plan runs where nothing is kept, the report says what each
/// step would do (rows per table, the failure and its place, the schema difference), the database is left exactly
/// as it was, and `migrate` afterwards does what the rehearsal said. What only one backend has (SQLite's copy and
/// its row counting limits; PostgreSQL's locks, sequences and `transaction="none"` steps) is tested after.
final class RehearseTests: XCTestCase {
    static let schema = """
        CREATE TABLE authors (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
        CREATE TABLE books (id INTEGER PRIMARY KEY, title TEXT NOT NULL, author_id INTEGER REFERENCES authors (id),
                            copies INTEGER NOT NULL DEFAULT 1);
        INSERT INTO authors (id, name) VALUES (1, 'Le Guin'), (2, 'Jemisin');
        INSERT INTO books (id, title, author_id) VALUES (1, 'Earthsea', 1), (2, 'The Dispossessed', 1),
                                                        (3, 'The Fifth Season', 2), (4, 'The Obelisk Gate', 2);
        """

    static let change = """
        ALTER TABLE books ADD COLUMN shelf TEXT;
        UPDATE books SET shelf = 'fantasy' WHERE author_id = 1;
        DELETE FROM books WHERE id = 4;
        INSERT INTO authors (id, name) VALUES (3, 'Butler');
        INSERT INTO books (id, title, author_id) VALUES (5, 'Kindred', 3), (6, 'Dawn', 3);
        CREATE INDEX books_shelf ON books (shelf);
        """

    /// A project on `backend` whose first migration is applied and whose `pending` files are not.
    func project(_ backend: TestBackend, pending: [String: String]) throws -> Project {
        let project = try Project(self, backend: backend, files: ["sql/001_books.sql": Self.schema])
        XCTAssertNil(try project.migrator().migrate().failure)
        for (name, text) in pending { try project.file("sql/\(name)", text) }
        return project
    }

    /// A table's name as the backend's reports name it.
    func qualified(_ name: String, _ backend: TestBackend) -> String {
        backend.kind == .postgres ? "public.\(name)" : name
    }

    /// What the database holds, to compare before and after: its schema, its history, and every row of both tables.
    func state(of database: any MigrationDatabase) throws -> [String] {
        var lines = [try String(decoding: database.schemaSnapshot().jsonData(), as: UTF8.self)]
        lines += try database.history.all().map { "\($0.kind) \($0.identity) \($0.state) \($0.checksum)" }
        for table in ["authors", "books"] where try database.tableExists(table) {
            lines += try database.rows("SELECT * FROM \(table) ORDER BY id", .none).map { "\(table) \($0)" }
        }
        return lines
    }

    func testAFailingStepIsReportedAtItsPlaceAndNothingChanges() throws {
        try forEachBackend { backend in
            let project = try self.project(backend, pending: [
                "002_change.sql": Self.change,
                "003_bad.sql": "UPDATE books SET copies = 2;\nINSERT INTO nowhere (id) VALUES (1);\n",
                "004_after.sql": "CREATE TABLE never (id INTEGER);\n",
            ])
            let migrator = try project.migrator()
            let before = try state(of: migrator.database)
            let report = try migrator.rehearse()

            XCTAssertFalse(report.wouldSucceed)
            let failure = try XCTUnwrap(report.failure)
            XCTAssertEqual(failure.id, "003_bad.sql")
            XCTAssertTrue(failure.file.hasSuffix("sql/003_bad.sql"), failure.file)
            XCTAssertEqual(failure.line, 2)
            XCTAssertNotNil(failure.column)
            XCTAssertTrue(failure.message.contains(backend.noSuchTable("nowhere")), failure.message)
            XCTAssertEqual(report.steps.map { "\($0.id) \($0.outcome.rawValue)" }, ["002_change.sql applied", "003_bad.sql failed"])
            XCTAssertEqual(report.notRun, ["004_after.sql"])
            // As migrate would leave it: the step before the failure applied.
            XCTAssertEqual(report.schemaChanges.map { "\($0.action.rawValue) \($0.kind.rawValue) \($0.name)" },
                           ["added column shelf", "added index \(self.qualified("books_shelf", backend))"])
            XCTAssertEqual(try self.state(of: migrator.database), before, "the rehearsal changed the database")
            XCTAssertEqual(try migrator.plan().steps.map(\.step.id), ["002_change.sql", "003_bad.sql", "004_after.sql"])
        }
    }

    func testAPassingPlanReportsRowsPerTableAndTheSchemaDifferenceThatMigrateThenMakes() throws {
        try forEachBackend { backend in
            let project = try self.project(backend, pending: ["002_change.sql": Self.change])
            let migrator = try project.migrator()
            let before = try state(of: migrator.database)
            let snapshot = try migrator.database.schemaSnapshot()
            let report = try migrator.rehearse()

            XCTAssertTrue(report.wouldSucceed, "\(String(describing: report.failure))")
            XCTAssertEqual(report.steps.count, 1)
            let step = try XCTUnwrap(report.steps.first)
            XCTAssertEqual(step.outcome, .applied)
            XCTAssertNotNil(step.durationMs)
            let counted = backend.kind == .sqlite
            XCTAssertEqual(step.tables, [
                TableRowChanges(table: self.qualified("authors", backend), inserted: 1, updated: 0, deleted: 0,
                                rowsBefore: counted ? 2 : nil, rowsAfter: counted ? 3 : nil),
                TableRowChanges(table: self.qualified("books", backend), inserted: 2, updated: 2, deleted: 1,
                                rowsBefore: counted ? 4 : nil, rowsAfter: counted ? 5 : nil),
            ])
            XCTAssertEqual(try self.state(of: migrator.database), before, "the rehearsal changed the database")

            // migrate afterwards does exactly that.
            let migrated = try migrator.migrate()
            XCTAssertNil(migrated.failure)
            XCTAssertEqual(try SchemaDifference(from: snapshot, to: migrator.database.schemaSnapshot()).changes,
                           report.schemaChanges)
            XCTAssertEqual(try migrator.database.scalar("SELECT count(*) FROM books", .none, as: Int.self), 5)
            XCTAssertEqual(try migrator.database.scalar("SELECT count(*) FROM books WHERE shelf = 'fantasy'", .none, as: Int.self), 2)
            XCTAssertEqual(try migrator.database.scalar("SELECT count(*) FROM authors", .none, as: Int.self), 3)
            XCTAssertEqual(try migrator.rehearse().steps, [], "nothing left to rehearse")
        }
    }

    func testWhatWouldStopMigrateStopsTheRehearsalBeforeAnythingRuns() throws {
        try forEachBackend { backend in
            let project = try self.project(backend, pending: ["002_change.sql": Self.change])
            try project.file("sql/001_books.sql", Self.schema + "\n-- edited after it was applied\n")
            let error = assertThrows(MigrationError.self) { try project.migrator().rehearse() }
            guard case .refused(let refusals)? = error else { return XCTFail("\(String(describing: error))") }
            XCTAssertEqual(refusals.map(\.reason), [.drift])
            XCTAssertFalse(try project.connection().hasColumn("shelf", in: "books"))
        }
    }

    /// A rehearsal writes nothing, so a backup asked for is not taken, nor refused where backups cannot be taken
    /// (PostgreSQL).
    func testARehearsalTakesNoBackupWhateverTheOptionsSay() throws {
        try forEachBackend { backend in
            let project = try self.project(backend, pending: ["002_change.sql": Self.change])
            let backups = project.root.appendingPathComponent("backups")
            let report = try project.migrator().rehearse(MigrationOptions(backup: BackupOptions(directory: backups.path)))
            XCTAssertTrue(report.wouldSucceed, "\(String(describing: report.failure))")
            XCTAssertFalse(FileManager.default.fileExists(atPath: backups.path), "the rehearsal wrote a backup")
        }
    }

    func testASeedIsRehearsedWithTheRowsItLoads() throws {
        try forEachBackend(needing: .seeds) { backend in
            let project = try Project(self, backend: backend, manifestBody: """
                <migrations directory="sql"/>
                <seeds><seed file="csv/authors.csv" table="authors" mode="upsert" key="id"/></seeds>
                """, files: ["sql/001_books.sql": Self.schema, "csv/authors.csv": "id,name\n2,N. K. Jemisin\n3,Octavia E. Butler\n"])
            XCTAssertNil(try project.migrator().migrate(MigrationOptions(includeSeeds: false)).failure)
            let migrator = try project.migrator()
            let before = try state(of: migrator.database)
            let report = try migrator.rehearse()
            XCTAssertTrue(report.wouldSucceed, "\(String(describing: report.failure))")
            let seed = try XCTUnwrap(report.steps.first)
            XCTAssertEqual([seed.kind.rawValue, seed.id, seed.outcome.rawValue], ["seed", "authors.csv", "applied"])
            XCTAssertEqual(seed.rowCount, 2)
            let authors = try XCTUnwrap(seed.tables.first { $0.table == self.qualified("authors", backend) }, "\(seed.tables)")
            XCTAssertEqual([authors.inserted, authors.updated, authors.deleted], [1, 1, 0])
            XCTAssertEqual(try self.state(of: migrator.database), before, "the rehearsal changed the database")
            XCTAssertEqual(try migrator.rehearse().steps.map(\.id), ["authors.csv"], "a rehearsed seed is still pending")
        }
    }

    func testACodeStepRunsInTheRehearsalToo() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, manifestBody: """
                <migrations directory="sql"><code name="titles" after="001_books.sql" version="1"/></migrations>
                """, files: ["sql/001_books.sql": Self.schema])
            var migrator = try project.migrator()
            migrator.register("titles") { db in try db.execute("UPDATE books SET title = upper(title)", .none) }
            let report = try migrator.rehearse()
            XCTAssertTrue(report.wouldSucceed, "\(String(describing: report.failure))")
            XCTAssertEqual(report.steps.map(\.id), ["001_books.sql", "code:titles"])
            XCTAssertEqual(report.steps.last?.tables.map(\.table), [self.qualified("books", backend)])
            XCTAssertEqual(report.steps.last?.tables.first?.updated, 4)
            XCTAssertFalse(try migrator.database.tableExists("books"), "the rehearsal created nothing")
        }
    }
}

extension DatabaseConnection {
    func hasColumn(_ column: String, in table: String) throws -> Bool {
        try columns(in: table).contains { $0.name == column }
    }
}
