import Foundation
import Strata
@testable import StrataCore
@testable import StrataPostgres
@testable import StrataSQLite
import XCTest

/// Verdicts that must be "not known" because the rehearsal did not run a step as `migrate` would, and verdicts that
/// must be known because nothing stood in the way (issue 26, items 5, 6 and 10): a success after a step that was
/// not rehearsed, a SQLite copy on another filesystem than the database's, a large data load after the first step.
final class RehearsalNotKnownTests: XCTestCase {
    /// A PostgreSQL project whose `001_schema.sql` is migrated, then `pending` files added, with `migrations` inside
    /// its `<migrations>` element.
    private func postgres(_ schema: String, pending: [String: String], migrations: String = "") throws -> Project {
        let project = try Project(self, backend: .postgres, files: ["sql/001_schema.sql": schema])
        XCTAssertNil(try project.migrator().migrate().failure)
        for (name, text) in pending { try project.file("sql/\(name)", text) }
        try project.file("manifest.xml", #"<manifest version="1">"# + project.backend.databaseElement(project.root)
                         + #"<migrations directory="sql">\#(migrations)</migrations></manifest>"#)
        return project
    }

    private func object(_ result: CommandResult, file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        let value = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8))
        return try XCTUnwrap(value as? [String: Any], result.stdout, file: file, line: line)
    }

    // MARK: A success after a step not rehearsed (item 5)

    /// Wrong verdict (would succeed where migrate fails). 002 builds a unique index CONCURRENTLY
    /// (`transaction="none"`, not rehearsed); 003 inserts a second 'Le Guin', which succeeds in the rehearsal only
    /// because the index was not built: exit 0, `"wouldSucceed": true`; migrate fails at 003. Right: 003's success
    /// is not known (exit 4), and the report says which steps' success is not known and why.
    func testASuccessAfterAStepNotRehearsedIsNotKnown() throws {
        let project = try postgres(RehearseTests.schema, pending: [
            "002_index.sql": "CREATE UNIQUE INDEX CONCURRENTLY authors_name ON authors (name);\n",
            "003_duplicate.sql": "INSERT INTO authors (id, name) VALUES (3, 'Le Guin');\n",
        ], migrations: #"<migration file="002_index.sql" transaction="none"/>"#)
        let report = try project.migrator().rehearse()
        XCTAssertEqual(report.steps.map { "\($0.id) \($0.outcome.rawValue)" }, ["002_index.sql not-rehearsed", "003_duplicate.sql applied"])
        XCTAssertFalse(report.wouldSucceed, "003 passed only because 002 did not run")
        XCTAssertFalse(report.wouldFail)

        let text = try project.strataOnBackend(["rehearse"])
        XCTAssertEqual(text.status, 4, text.stdout + text.stderr)
        XCTAssertTrue(text.stderr.contains("003_duplicate.sql ran after 002_index.sql, which was not rehearsed"), text.stderr)
        XCTAssertFalse(text.stdout.contains("migrate would apply"), text.stdout)
        let json = try project.strataOnBackend(["rehearse", "--format", "json"])
        XCTAssertEqual(json.status, 4, json.stderr)
        let object = try object(json)
        XCTAssertEqual(object["wouldSucceed"] as? Bool, false)
        XCTAssertEqual(object["wouldFail"] as? Bool, false)

        let migrated = try project.migrator().migrate()
        XCTAssertEqual(migrated.failure?.id, "003_duplicate.sql", "migrate fails 003 on the index 002 built (the premise)")
    }

    // MARK: A large data load after the first step (item 10)

    /// A `COPY … FROM stdin` of `rows` rows: over `Migrator.lintSizeLimit` for 100 000 of them.
    static func load(rows: Int, word: String = "item") -> String {
        var text = "COPY items (id, name) FROM stdin;\n"
        text.reserveCapacity(rows * 56)
        for row in 1...rows { text += "\(row)\t\(word)-\(row)-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n" }
        return text + "\\.\n"
    }

    /// No verdict, for a false reason. A data load over 4 MiB that is not the plan's first step made the rehearsal
    /// answer "not known" (exit 4), saying constraints declared INITIALLY DEFERRED are checked at once: on a
    /// database without one, and a file that never says DEFERRED (it was not read ahead, so it was taken to).
    /// Right: the file is scanned as it runs, the database asked: the plan would succeed (exit 0).
    func testALargeDataLoadAfterTheFirstStepIsAVerdict() throws {
        let load = Self.load(rows: 100_000)
        XCTAssertGreaterThan(load.utf8.count, Migrator.lintSizeLimit, "the file must be too large to be read ahead")
        let project = try postgres("CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL);\n", pending: [
            "002_tags.sql": "CREATE TABLE tags (id int PRIMARY KEY);\n",
            "003_load.sql": load,
        ])
        let report = try project.migrator().rehearse()
        XCTAssertEqual(report.steps.map { "\($0.id) \($0.outcome.rawValue)" }, ["002_tags.sql applied", "003_load.sql applied"])
        XCTAssertEqual(report.rehearsedUnlikeMigrate, [], "\(report.steps.map { $0.note ?? "-" })")
        XCTAssertTrue(report.wouldSucceed)
        let text = try project.strataOnBackend(["rehearse"])
        XCTAssertEqual(text.status, 0, text.stdout + text.stderr)
        XCTAssertTrue(text.stdout.contains("migrate would apply 2 steps"), text.stdout)
    }

    /// Where it is still not known, the note gives the true reason: the large file's statement past the read-ahead
    /// that says DEFERRED, at its line. Its data saying "deferred" is data, not SQL, and says nothing.
    func testALargeFileSayingDeferredPastTheReadAheadIsNotKnownAndSaysWhere() throws {
        let load = Self.load(rows: 100_000, word: "deferred")
        let lines = load.utf8.filter { $0 == 0x0A }.count
        let project = try postgres("CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL);\n", pending: [
            "002_tags.sql": "CREATE TABLE tags (id int PRIMARY KEY);\n",
            "003_load.sql": load + "ALTER TABLE items ADD CONSTRAINT items_positive CHECK (id > 0);\n"
                + "ALTER TABLE items ADD COLUMN tag int REFERENCES tags DEFERRABLE INITIALLY DEFERRED;\n",
        ])
        let report = try project.migrator().rehearse()
        XCTAssertNil(report.failure)
        XCTAssertEqual(report.rehearsedUnlikeMigrate, ["003_load.sql"])
        let note = report.steps.last?.note ?? ""
        XCTAssertTrue(note.contains("sql/003_load.sql:\(lines + 2)"), note)
        XCTAssertFalse(note.contains(":\(lines + 1)"), "the CHECK says nothing deferred: \(note)")
        XCTAssertFalse(note.contains("not read ahead"), note)
        let text = try project.strataOnBackend(["rehearse"])
        XCTAssertEqual(text.status, 4, text.stdout + text.stderr)
    }

    /// The word, in any case and any quoting, not a longer name holding it.
    func testAStatementSaysDeferredAsAWordOnly() {
        for sql in ["SET CONSTRAINTS ALL DEFERRED", "alter table t add foreign key (a) references p initially deferred",
                    "DO $$BEGIN EXECUTE 'SET CONSTRAINTS ALL DEFERRED'; END$$", "SELECT $q$deferred$q$", "x /* Deferred */"] {
            XCTAssertTrue(PostgresDeferredWatch.saysDeferred(sql), sql)
        }
        for sql in ["ALTER TABLE t ADD COLUMN deferred_until date", "SELECT undeferred FROM t", "SELECT deferre", ""] {
            XCTAssertFalse(PostgresDeferredWatch.saysDeferred(sql), sql)
        }
    }

    /// A constraint declared INITIALLY DEFERRED that exists as the step begins is named in the note.
    func testAnInitiallyDeferredConstraintIsNamedInTheNote() throws {
        let project = try postgres(PostgresRehearseTests.deferred, pending: [
            "002_rows.sql": "INSERT INTO parents VALUES (1);\n",
            "003_more.sql": "INSERT INTO children VALUES (1, 1);\n",
        ])
        let report = try project.migrator().rehearse()
        XCTAssertEqual(report.rehearsedUnlikeMigrate, ["003_more.sql"])
        let note = report.steps.last?.note ?? ""
        XCTAssertTrue(note.contains("children_parent_id_fkey on public.children is declared INITIALLY DEFERRED"), note)
    }

    // MARK: A SQLite copy on another filesystem (item 6)

    /// A database of about 1.3 MiB on a 2 MiB filesystem, so the copy does not fit beside it and goes to `TMPDIR`,
    /// on another filesystem, with `pending` after it.
    private func crampedProject(pending: [String: String], wal: Bool = false) throws -> (Project, URL, URL) {
        let disk = try mountSmallFilesystem(size: "2m")
        let project = try Project(self, manifest: """
            <manifest version="1"><database path="\(disk.path)/db.sqlite"/><migrations directory="sql"/></manifest>
            """, files: ["sql/001_fill.sql": """
                CREATE TABLE fill (pad TEXT);
                WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 6000)
                INSERT INTO fill SELECT printf('%0200d', n) FROM c;
                """])
        let migrated = try project.strata(["migrate"])
        XCTAssertEqual(migrated.status, 0, migrated.stderr)
        if wal {
            let database = try Database(path: disk.path + "/db.sqlite")
            XCTAssertEqual(try database.scalar("PRAGMA journal_mode = WAL", as: String.self), "wal")
            database.close()
        }
        for (name, text) in pending { try project.file("sql/\(name)", text) }
        let bytes = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: disk.path + "/db.sqlite")[.size] as? Int)
        let free = try XCTUnwrap(RehearsalCopy.freeBytes(disk.path))
        XCTAssertLessThan(free, Int64(bytes), "the copy must not fit beside the database (the premise)")
        let temporary = try makeTemporaryDirectory(self)
        return (project, disk, temporary)
    }

    private func rehearse(_ project: Project, temporary: URL, json: Bool = false) throws -> CommandResult {
        let process = Process()
        process.executableURL = try strataExecutable()
        process.arguments = ["rehearse", "--manifest", project.manifestPath] + (json ? ["--format", "json"] : [])
        process.currentDirectoryURL = project.root
        process.environment = ProcessInfo.processInfo.environment.merging(["TMPDIR": temporary.path]) { _, new in new }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return CommandResult(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                             stderr: String(decoding: stderr, as: UTF8.self))
    }

    static let bigInsert = """
        CREATE TABLE big (pad TEXT);
        WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 5000)
        INSERT INTO big SELECT printf('%0200d', n) FROM c;
        """

    /// Wrong verdict (would succeed where migrate fails). The database's filesystem has less room than the database,
    /// so the copy goes to `TMPDIR` on another filesystem, 002 grows it by about 1 MiB there, and rehearse says
    /// "migrate would apply 1 step", exit 0; migrate fails with "database or disk is full". Right: the report says
    /// where the steps ran, and that their growth does not fit the database's filesystem: not known (exit 4).
    func testStepsOnACopyOnAnotherFilesystemThatOutgrowTheDatabasesAreNotKnown() throws {
        let (project, disk, temporary) = try crampedProject(pending: ["002_big.sql": Self.bigInsert])
        let text = try rehearse(project, temporary: temporary)
        XCTAssertEqual(text.status, 4, text.stdout + text.stderr)
        XCTAssertTrue(text.stdout.contains("in \(temporary.path)/.strata-rehearsal-"), text.stdout)
        XCTAssertTrue(text.stdout.contains("another filesystem than the database's"), text.stdout)
        XCTAssertFalse(text.stdout.contains("migrate would apply"), text.stdout)
        XCTAssertTrue(text.stderr.contains("002_big.sql ran unlike migrate"), text.stderr)
        let json = try rehearse(project, temporary: temporary, json: true)
        XCTAssertEqual(json.status, 4, json.stderr)
        let object = try object(json)
        XCTAssertEqual(object["wouldSucceed"] as? Bool, false)
        XCTAssertEqual(object["rehearsedUnlikeMigrate"] as? [String], ["002_big.sql"])
        let note = ((object["steps"] as? [[String: Any]])?.first?["note"] as? String) ?? ""
        XCTAssertTrue(note.contains("\(disk.path) has"), note)

        let migrated = try project.strata(["migrate"])
        XCTAssertEqual(migrated.status, 1, "migrate fails for room (the premise): \(migrated.stderr)")
        XCTAssertTrue(migrated.stderr.contains("database or disk is full"), migrated.stderr)
    }

    /// The same place with a step that fits: a verdict (exit 0), and the report says where the steps ran and what
    /// they need of the database's filesystem.
    func testStepsOnACopyOnAnotherFilesystemThatFitTheDatabasesAreAVerdict() throws {
        let (project, disk, temporary) = try crampedProject(pending: ["002_small.sql": "CREATE TABLE small (x);\nINSERT INTO small VALUES (1);\n"])
        let text = try rehearse(project, temporary: temporary)
        XCTAssertEqual(text.status, 0, text.stdout + text.stderr)
        XCTAssertTrue(text.stdout.contains("another filesystem than the database's"), text.stdout)
        XCTAssertTrue(text.stdout.contains("fits the"), text.stdout)
        XCTAssertTrue(text.stdout.contains("migrate would apply 1 step"), text.stdout)
        let json = try rehearse(project, temporary: temporary, json: true)
        let object = try object(json)
        XCTAssertEqual(object["wouldSucceed"] as? Bool, true)
        XCTAssertTrue((object["room"] as? String)?.contains(disk.path) == true, "\(object["room"] ?? "none")")
        XCTAssertEqual(try project.strata(["migrate"]).status, 0, "migrate applies it")
    }

    /// Wrong verdict (would fail where migrate succeeds). A 4 MiB filesystem with room for the copy beside the
    /// database, not for the copy and 002's 1.8 MiB: 002 fails on the copy with "database or disk is full", and
    /// rehearse says migrate would fail (exit 1); migrate, without a copy beside it, applies 002. Right: a full
    /// disk under the copy says nothing of the database's room: not known (exit 4).
    func testACopyThatRunsOutOfRoomBesideTheDatabaseIsNoVerdict() throws {
        let disk = try mountSmallFilesystem(size: "4m")
        let project = try Project(self, manifest: """
            <manifest version="1"><database path="\(disk.path)/db.sqlite"/><migrations directory="sql"/></manifest>
            """, files: ["sql/001_fill.sql": """
                CREATE TABLE fill (pad TEXT);
                WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 6000)
                INSERT INTO fill SELECT printf('%0200d', n) FROM c;
                """])
        XCTAssertEqual(try project.strata(["migrate"]).status, 0)
        try project.file("sql/002_big.sql", Self.bigInsert.replacingOccurrences(of: "n < 5000", with: "n < 9000"))
        let temporary = try makeTemporaryDirectory(self)
        let text = try rehearse(project, temporary: temporary)
        XCTAssertTrue(text.stdout.contains("in \(disk.path)/.strata-rehearsal-"), "the copy goes beside the database: \(text.stdout)")
        XCTAssertTrue(text.stderr.contains("database or disk is full"), "the copy runs out of room (the premise): \(text.stderr)")
        XCTAssertEqual(text.status, 4, text.stdout + text.stderr)
        XCTAssertTrue(text.stderr.contains("the rehearsal's copy ran out of room in \(disk.path)/.strata-rehearsal-"), text.stderr)
        let migrated = try project.strata(["migrate"])
        XCTAssertEqual(migrated.status, 0, "migrate has the room (the premise): \(migrated.stderr)")
    }

    /// A step that changes the journal mode changes what is measured: not judged, said.
    func testAStepChangingTheJournalModeOnACopyElsewhereIsNotJudged() throws {
        let (project, _, temporary) = try crampedProject(pending: ["002_wal.sql": "PRAGMA journal_mode = WAL;\n"])
        try project.file("manifest.xml", project.manifestXML(none: "002_wal.sql"))
        let json = try rehearse(project, temporary: temporary, json: true)
        XCTAssertEqual(json.status, 4, json.stdout + json.stderr)
        let object = try object(json)
        let note = ((object["steps"] as? [[String: Any]])?.first?["note"] as? String) ?? ""
        XCTAssertTrue(note.contains("the step changed the journal mode to wal"), note)
        XCTAssertTrue((object["room"] as? String)?.contains("from 002_wal.sql on") == true, "\(object["room"] ?? "none")")
    }

    /// In WAL mode the journal is the `-wal`, which holds every page the steps write: judged the same way.
    func testAWALDatabaseOnACrampedFilesystemIsJudgedByItsWAL() throws {
        let (project, disk, temporary) = try crampedProject(pending: ["002_big.sql": Self.bigInsert], wal: true)
        let before = try FileManager.default.contentsOfDirectory(atPath: disk.path).sorted()
        let text = try rehearse(project, temporary: temporary)
        XCTAssertEqual(text.status, 4, text.stdout + text.stderr)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: disk.path).sorted(), before)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: temporary.path), [], "the copy is removed")
        XCTAssertEqual(try project.strata(["migrate"]).status, 1, "migrate fails for room (the premise)")
    }
}

private extension Project {
    /// The manifest of `crampedProject` with `none` marked `transaction="none"`.
    func manifestXML(none: String) throws -> String {
        let text = try String(contentsOfFile: manifestPath, encoding: .utf8)
        return text.replacingOccurrences(of: #"<migrations directory="sql"/>"#,
                                         with: #"<migrations directory="sql"><migration file="\#(none)" transaction="none"/></migrations>"#)
    }
}
