import CSQLite
import Foundation
import Strata
@testable import StrataCore
@testable import StrataSQLite
import XCTest

/// Rehearsals on SQLite: the copy (made with the backup API, placed where it fits, removed with everything SQLite
/// put beside it, never touching the database's own file), and how rows are counted on it (the update hook, DELETE
/// without WHERE, REPLACE, WITHOUT ROWID tables, rebuilt and renamed tables), and what cannot be rehearsed.
final class SQLiteRehearseTests: XCTestCase {
    /// A fresh, empty directory as `TMPDIR` for the test, put back afterwards.
    func temporaryDirectory() throws -> URL {
        let directory = try makeTemporaryDirectory(self)
        let previous = ProcessInfo.processInfo.environment["TMPDIR"]
        setenv("TMPDIR", directory.path, 1)
        addTeardownBlock {
            if let previous { setenv("TMPDIR", previous, 1) } else { unsetenv("TMPDIR") }
        }
        return directory
    }

    func listing(_ directory: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
    }

    /// A project whose `001_books.sql` (`RehearseTests.schema`, or `schema`) is applied, with `pending` beside it.
    func project(schema: String = RehearseTests.schema, pending: [String: String],
                 migrations: String = "") throws -> Project {
        let project = try Project(self, backend: .sqlite, files: ["sql/001_books.sql": schema])
        XCTAssertNil(try project.migrator().migrate().failure)
        for (name, text) in pending { try project.file("sql/\(name)", text) }
        try project.file("manifest.xml", #"<manifest version="1"><database path="db.sqlite"/><migrations directory="sql">\#(migrations)</migrations></manifest>"#)
        return project
    }

    func rehearse(_ project: Project) throws -> RehearsalReport {
        let migrator = try project.migrator()
        defer { (migrator.database as? Database)?.close() }
        return try migrator.rehearse()
    }

    func testTheDatabaseFileIsOnlyReadAndNothingIsLeftBehind() throws {
        let project = try project(pending: [
            "002_change.sql": RehearseTests.change,
            "003_wal.sql": "PRAGMA journal_mode = WAL;\nVACUUM;\n",
            "004_more.sql": "INSERT INTO authors (id, name) VALUES (4, 'Tolkien');\n",
        ], migrations: #"<migration file="003_wal.sql" transaction="none"/>"#)
        let temporary = try temporaryDirectory()
        let bytes = try Data(contentsOf: URL(fileURLWithPath: project.databasePath))
        let files = try listing(project.root)
        let report = try rehearse(project)
        XCTAssertTrue(report.wouldSucceed, "\(String(describing: report.failure))")
        XCTAssertEqual(report.steps.map { "\($0.id) \($0.outcome.rawValue)" },
                       ["002_change.sql applied", "003_wal.sql applied", "004_more.sql applied"],
                       "a transaction=\"none\" step runs on the copy like any other")
        XCTAssertTrue(report.stage.contains(temporary.path), "the temporary directory is on the database's filesystem: \(report.stage)")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: project.databasePath)), bytes, "the database's bytes changed")
        XCTAssertEqual(try listing(project.root), files, "files appeared or went beside the database")
        XCTAssertEqual(try listing(temporary), [], "the copy's directory was left behind")
    }

    func testACopyGoesBesideTheDatabaseWhenTheTemporaryDirectoryIsElsewhere() throws {
        // /dev/shm is a tmpfs: another filesystem than the one holding the tests' temporary directories.
        guard FileManager.default.fileExists(atPath: "/dev/shm") else { throw XCTSkip("no /dev/shm here") }
        let shm = URL(fileURLWithPath: "/dev/shm").appendingPathComponent("strata-rehearse-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: shm, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: shm) }
        let project = try project(pending: ["002_change.sql": RehearseTests.change])
        guard RehearsalCopy.candidates(near: project.databasePath).count == 2 else { throw XCTSkip("one filesystem only") }
        let previous = ProcessInfo.processInfo.environment["TMPDIR"]
        setenv("TMPDIR", shm.path, 1)
        defer { if let previous { setenv("TMPDIR", previous, 1) } else { unsetenv("TMPDIR") } }
        XCTAssertEqual(RehearsalCopy.candidates(near: project.databasePath), [project.root.path, shm.path])
        let files = try listing(project.root)
        let report = try rehearse(project)
        XCTAssertTrue(report.stage.contains(" in \(project.root.path)/.strata-rehearsal-"), report.stage)
        XCTAssertEqual(try listing(project.root), files)
        XCTAssertEqual(try listing(shm), [])
    }

    func testADeleteWithoutWhereIsCountedRowByRow() throws {
        _ = try temporaryDirectory()
        let project = try project(pending: ["002_empty.sql": "DELETE FROM books;\n"])
        let report = try rehearse(project)
        XCTAssertEqual(report.steps.first?.tables, [
            TableRowChanges(table: "books", inserted: 0, updated: 0, deleted: 4, rowsBefore: 4, rowsAfter: 0),
        ], "SQLite's truncate optimisation would have emptied the table without reporting a row")
    }

    func testRowsAReplaceRemovesAreSaidNotHidden() throws {
        _ = try temporaryDirectory()
        let project = try project(pending: [
            "002_replace.sql": "CREATE UNIQUE INDEX books_title ON books (title);\nINSERT OR REPLACE INTO books (id, title) VALUES (9, 'Earthsea');\n",
        ])
        let report = try rehearse(project)
        let books = try XCTUnwrap(report.steps.first?.tables.first)
        XCTAssertEqual(books.table, "books")
        XCTAssertEqual(books.inserted, 1)
        XCTAssertEqual(books.rowsBefore, 4)
        XCTAssertEqual(books.rowsAfter, 4)
        XCTAssertTrue(books.note?.contains("1 more row went than SQLite reported deleted: a REPLACE conflict resolution") == true,
                      "\(books)")
    }

    func testAWithoutRowidTableIsCountedBeforeAndAfterAndNeverGivenNumbersItCannotKnow() throws {
        _ = try temporaryDirectory()
        let project = try project(schema: RehearseTests.schema + """
            CREATE TABLE tags (name TEXT PRIMARY KEY, uses INTEGER NOT NULL) WITHOUT ROWID;
            INSERT INTO tags VALUES ('sf', 1), ('fantasy', 2);
            """, pending: [
                "002_tags.sql": "INSERT INTO tags VALUES ('horror', 0);\n",
                "003_uses.sql": "UPDATE tags SET uses = uses + 1;\n",
            ])
        let report = try rehearse(project)
        XCTAssertEqual(report.steps.map(\.tables.first?.table), ["tags", "tags"])
        let inserted = try XCTUnwrap(report.steps.first?.tables.first)
        XCTAssertEqual([inserted.inserted, inserted.updated, inserted.deleted], [nil, nil, nil])
        XCTAssertEqual([inserted.rowsBefore, inserted.rowsAfter], [2, 3])
        XCTAssertTrue(inserted.note?.contains("WITHOUT ROWID") == true, "\(inserted)")
        let updated = try XCTUnwrap(report.steps.last?.tables.first)
        XCTAssertEqual([updated.updated, updated.rowsBefore, updated.rowsAfter], [nil, 3, 3],
                       "an update that changes no count is still reported, as not known")
    }

    func testARebuiltAndARenamedTableAreNamed() throws {
        _ = try temporaryDirectory()
        let project = try project(pending: [
            "002_rebuild.sql": """
                CREATE TABLE books_new (id INTEGER PRIMARY KEY, title TEXT NOT NULL, author_id INTEGER, copies INTEGER NOT NULL DEFAULT 1);
                INSERT INTO books_new SELECT * FROM books WHERE id <> 4;
                DROP TABLE books;
                ALTER TABLE books_new RENAME TO books;
                """,
            "003_rename.sql": "ALTER TABLE authors RENAME TO writers;\nINSERT INTO writers (id, name) VALUES (3, 'Butler');\n",
            "004_again.sql": """
                CREATE VIEW titles AS SELECT title FROM books;
                CREATE TRIGGER books_touch AFTER UPDATE ON books BEGIN SELECT 1; END;
                CREATE INDEX books_title ON books (title);
                DROP VIEW titles;
                DROP TRIGGER books_touch;
                DROP INDEX books_title;
                DROP TABLE writers;
                CREATE TABLE writers (id INTEGER PRIMARY KEY, name TEXT);
                """,
        ])
        let report = try rehearse(project)
        XCTAssertTrue(report.wouldSucceed, "\(String(describing: report.failure))")
        guard report.steps.count == 3 else { return XCTFail("\(report.steps)") }
        let rebuild = report.steps[0].tables
        guard rebuild.count == 2 else { return XCTFail("\(rebuild)") }
        XCTAssertEqual(rebuild.map(\.table), ["books", "books_new"])
        XCTAssertEqual([rebuild[0].rowsBefore, rebuild[0].rowsAfter], [4, 3])
        XCTAssertTrue(rebuild[0].note?.hasPrefix("rebuilt by this step") == true, "\(rebuild[0])")
        XCTAssertEqual(rebuild[1].inserted, 3)
        XCTAssertTrue(rebuild[1].note?.hasPrefix("created by this step and gone by its end") == true, "\(rebuild[1])")
        XCTAssertEqual(report.steps[1].tables, [
            TableRowChanges(table: "writers", inserted: 1, updated: 0, deleted: 0, rowsBefore: 2, rowsAfter: 3,
                            note: "renamed from authors by this step"),
        ])
        let again = try XCTUnwrap(report.steps[2].tables.first)
        XCTAssertEqual([again.rowsBefore, again.rowsAfter], [3, 0], "\(again)")
        XCTAssertNotNil(again.note, "a table dropped and created again is said to be so")
        // Every DROP ran: SQLITE_IGNORE for the delete SQLite asks about during a DROP would have skipped it.
        XCTAssertEqual(report.schemaChanges.map { "\($0.action.rawValue) \($0.kind.rawValue) \($0.name)" }, [
            "dropped table authors", "added table writers",
            "dropped constraint FOREIGN KEY (author_id) REFERENCES authors (id) ON UPDATE NO ACTION ON DELETE NO ACTION",
        ], "the view, trigger and index 004 made and dropped are gone, and books_new with them")
    }

    func testAFileThatAttachesAnotherDatabaseIsNotRehearsed() throws {
        _ = try temporaryDirectory()
        let project = try project(pending: [
            "002_attach.sql": "ATTACH 'other.sqlite' AS other;\nCREATE TABLE other.t (id INTEGER);\n",
            "003_export.sql": "VACUUM INTO 'export.sqlite';\n",
            "004_next.sql": "INSERT INTO authors (id, name) VALUES (3, 'Butler');\n",
        ], migrations: #"<migration file="002_attach.sql" transaction="none"/><migration file="003_export.sql" transaction="none"/>"#)
        let report = try rehearse(project)
        XCTAssertEqual(report.steps.map { "\($0.id) \($0.outcome.rawValue)" },
                       ["002_attach.sql not-rehearsed", "003_export.sql not-rehearsed", "004_next.sql applied"])
        XCTAssertTrue(report.steps[0].note?.contains("002_attach.sql:1: ATTACH would open") == true, "\(report.steps[0])")
        XCTAssertTrue(report.steps[1].note?.contains("VACUUM INTO") == true, "\(report.steps[1])")
        XCTAssertFalse(report.wouldSucceed, "004 ran without what 002 and 003 do: not known")
        XCTAssertEqual(report.rehearsedAfterNotRehearsed, ["004_next.sql"])
        XCTAssertEqual(report.steps[2].notRehearsedBefore, ["002_attach.sql", "003_export.sql"])
        XCTAssertEqual(report.notRehearsed.count, 2)
        for name in ["other.sqlite", "export.sqlite"] {
            XCTAssertFalse(FileManager.default.fileExists(atPath: project.root.appendingPathComponent(name).path), name)
        }
    }

    /// The authorizer's rule stops what the read-ahead cannot see (a file over 4 MiB): ATTACH of a file, and VACUUM
    /// INTO, which attaches its target.
    func testTheCopyRefusesToAttachAFileWhateverTheStatement() throws {
        let directory = try temporaryDirectory()
        let source = try Database(path: directory.appendingPathComponent("source.sqlite").path)
        try source.execute("CREATE TABLE t (id INTEGER)", .none)
        let copy = try RehearsalCopy(of: source)
        let watch = try RowChangeWatch(copy.database)
        defer {
            watch.uninstall()
            try? copy.remove()
        }
        let target = directory.appendingPathComponent("elsewhere.sqlite").path
        // SQLite names the file to the authorizer only when it is a literal: an expression or a parameter may name
        // any file (the real database among them), and is refused too.
        for (sql, arguments) in [("ATTACH '\(target)' AS elsewhere", StatementArguments.none),
                                 ("VACUUM INTO '\(target)'", .none),
                                 ("ATTACH '\(target.dropLast(7))' || '.sqlite' AS elsewhere", .none),
                                 ("ATTACH ? AS elsewhere", .positional([.text(target)])),
                                 ("VACUUM INTO '\(target.dropLast(7))' || '.sqlite'", .none)] {
            let error = assertThrows(DatabaseError.self) { try copy.database.execute(sql, arguments) }
            XCTAssertEqual(error?.kind, .authorization, sql)
            XCTAssertTrue(error?.message.contains("outside the rehearsal's copy") == true, "\(String(describing: error))")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: target))
        try copy.database.execute("ATTACH ':memory:' AS scratch", .none)
        try copy.database.execute("VACUUM", .none)
    }

    func testAnAbandonedCopyIsRemovedAndOneInUseIsNot() throws {
        let project = try project(pending: ["002_change.sql": RehearseTests.change])
        let temporary = try temporaryDirectory()
        func leftover(_ name: String) throws -> URL {
            let directory = temporary.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700]) // as mkdtemp makes it
            try Data("x".utf8).write(to: directory.appendingPathComponent("db.sqlite"))
            try Data().write(to: directory.appendingPathComponent(".lock"))
            return directory
        }
        let abandoned = try leftover(".strata-rehearsal-AbCd12")
        let inUse = try leftover(".strata-rehearsal-XyZw34")
        let held = open(inUse.appendingPathComponent(".lock").path, O_RDWR)
        XCTAssertEqual(flock(held, LOCK_EX | LOCK_NB), 0)
        defer { close(held) }
        let other = temporary.appendingPathComponent("not-ours")
        try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
        XCTAssertTrue(try rehearse(project).wouldSucceed)
        XCTAssertEqual(try listing(temporary), [".strata-rehearsal-XyZw34", "not-ours"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: abandoned.path))
    }

    /// Anyone can plant a name like an abandoned copy's in a shared temporary directory: a symbolic link to a
    /// directory holding a `.lock` must not lead the clean-up into it, nor may a directory others can enter (no
    /// rehearsal made it) be emptied.
    func testOnlyARealPrivateDirectoryIsRemovedAsAnAbandonedCopy() throws {
        let project = try project(pending: ["002_change.sql": RehearseTests.change])
        let victim = try makeTemporaryDirectory(self)
        let temporary = try temporaryDirectory()
        try Data().write(to: victim.appendingPathComponent(".lock"))
        try Data("precious".utf8).write(to: victim.appendingPathComponent("important.db"))
        try FileManager.default.createSymbolicLink(atPath: temporary.appendingPathComponent(".strata-rehearsal-zzzzzz").path,
                                                   withDestinationPath: victim.path)
        let shared = temporary.appendingPathComponent(".strata-rehearsal-yyyyyy")
        try FileManager.default.createDirectory(at: shared, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o755])
        try Data().write(to: shared.appendingPathComponent(".lock"))
        try Data("kept".utf8).write(to: shared.appendingPathComponent("notes.txt"))

        XCTAssertTrue(try rehearse(project).wouldSucceed)
        XCTAssertEqual(try listing(victim), [".lock", "important.db"], "the symbolic link was followed")
        XCTAssertEqual(try listing(shared), [".lock", "notes.txt"])
        XCTAssertEqual(try listing(temporary), [".strata-rehearsal-yyyyyy", ".strata-rehearsal-zzzzzz"])
    }

    /// SQLite does not report to the update hook the rows `CREATE TABLE … AS SELECT` writes: a table the step
    /// created holds only rows it wrote, so with nothing else reported they are its rows after; with other writes
    /// reported too, which came how cannot be told, and no number is given.
    func testRowsCreateTableAsSelectWritesAreCountedOrSaidUnknown() throws {
        _ = try temporaryDirectory()
        let project = try project(pending: [
            "002_copy.sql": "CREATE TABLE books_copy AS SELECT * FROM books;\n",
            "003_mixed.sql": "CREATE TABLE titles AS SELECT title FROM books;\nINSERT INTO titles VALUES ('Kindred');\nDELETE FROM titles WHERE rowid = 1;\n",
        ])
        let report = try rehearse(project)
        let copy = try XCTUnwrap(report.steps.first?.tables.first { $0.table == "books_copy" }, "\(report.steps)")
        XCTAssertEqual(copy.inserted, 4)
        XCTAssertEqual(copy.rowsAfter, 4)
        XCTAssertTrue(copy.note?.contains("CREATE TABLE … AS SELECT") == true, "\(copy)")
        let titles = try XCTUnwrap(report.steps.last?.tables.first { $0.table == "titles" }, "\(report.steps)")
        XCTAssertEqual([titles.inserted, titles.updated, titles.deleted], [nil, nil, nil], "\(titles)")
        XCTAssertEqual(titles.rowsAfter, 4)
        XCTAssertTrue(titles.note?.contains("do not add up to the 4 it holds after") == true, "\(titles)")
    }

    /// A step that fails after a step that was not rehearsed may fail only for lack of what that step does: the
    /// report does not say migrate would fail there.
    func testAFailureAfterAStepThatWasNotRehearsedIsNoVerdict() throws {
        _ = try temporaryDirectory()
        let project = try project(pending: [
            "002_attach.sql": "ATTACH 'other.sqlite' AS other;\nCREATE TABLE other.t (id INTEGER);\nDETACH other;\n",
            "003_fails.sql": "INSERT INTO nowhere VALUES (1);\n",
        ], migrations: #"<migration file="002_attach.sql" transaction="none"/>"#)
        let report = try rehearse(project)
        XCTAssertEqual(report.steps.map(\.outcome), [.notRehearsed, .failed])
        XCTAssertNotNil(report.failure)
        XCTAssertEqual(report.notRehearsedUpToFailure, ["002_attach.sql"])
        XCTAssertFalse(report.wouldSucceed)
        XCTAssertFalse(report.wouldFail, "not known: 003 may need what 002 does")

        // With every step before it rehearsed, the failure is a verdict.
        let plain = try self.project(pending: ["002_fails.sql": "INSERT INTO nowhere VALUES (1);\n"])
        let failing = try rehearse(plain)
        XCTAssertTrue(failing.wouldFail)
        XCTAssertEqual(failing.notRehearsedUpToFailure, [])
    }

    /// One backup step copies inside one read transaction: while another connection commits two rows at a time,
    /// every copy holds an even number of them.
    func testTheCopyIsOneCommitsStateWhileAnotherConnectionWrites() throws {
        _ = try temporaryDirectory()
        let project = try project(schema: "CREATE TABLE pairs (id INTEGER PRIMARY KEY, n INTEGER);\n",
                                  pending: ["002_touch.sql": "UPDATE pairs SET n = n;\n"])
        let stop = MigrationCancellation()
        let path = project.databasePath
        let writer = Thread {
            guard let db = try? Database(path: path, configuration: .init(busyTimeout: .seconds(10))) else { return }
            var n = 0
            while !stop.isCancelled {
                n += 1
                try? db.transaction(.immediate) { db in
                    try db.execute("INSERT INTO pairs (n) VALUES (\(n))")
                    try db.execute("INSERT INTO pairs (n) VALUES (\(n))")
                }
                // A writer that never pauses starves readers in rollback-journal mode (SQLite's rule, not the copy's).
                usleep(2_000)
            }
        }
        writer.start()
        defer { stop.cancel() }
        // Wait for the writer's first commit: the step touches no row of an empty table, so it reports none.
        let reader = try Database(path: path)
        let started = Date().addingTimeInterval(60)
        while try reader.scalar("SELECT count(*) FROM pairs", as: Int.self) ?? 0 == 0, Date() < started { usleep(1_000) }
        var seen: [Int] = []
        let deadline = Date().addingTimeInterval(60)
        while seen.count < 5 || Set(seen).count < 2, Date() < deadline {
            let report = try rehearse(project)
            seen.append(try XCTUnwrap(report.steps.first?.tables.first?.rowsBefore))
        }
        XCTAssertGreaterThan(Set(seen).count, 1, "the writer committed nothing between the copies: \(seen)")
        XCTAssertEqual(seen.filter { $0 % 2 != 0 }, [], "a copy held half a transaction: \(seen)")
    }
}
