import Foundation
import Strata
@testable import StrataCore
@testable import StrataSQLite
import XCTest

/// What `migrate` needs of a filesystem that the SQLite rehearsal's copy does not share (hostile review of issue
/// 26): the peak growth inside a step's transaction, which `auto_vacuum` hides at the commit, and the backup
/// `migrate` takes before its first step.
final class SQLiteRehearsalRoomTests: XCTestCase {
    /// Runs `strata rehearse` on `project` with `TMPDIR` at `temporary`, so a copy that fits nowhere near the
    /// database goes there.
    private func rehearse(_ project: Project, temporary: URL, _ arguments: [String] = []) throws -> CommandResult {
        let process = Process()
        process.executableURL = try strataExecutable()
        process.arguments = ["rehearse", "--manifest", project.manifestPath] + arguments
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

    private func object(_ result: CommandResult, file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        let value = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8))
        return try XCTUnwrap(value as? [String: Any], result.stdout, file: file, line: line)
    }

    // MARK: auto_vacuum hides the peak growth (A)

    /// `scratch` is made of 4000 of `big`'s rows with their bodies doubled, `summary` from it, then `scratch`
    /// dropped: the step's transaction grows the file by about 8 MiB, and its commit gives most of it back.
    static let scratchStep = """
        CREATE TABLE scratch AS SELECT id, body || body AS body FROM big WHERE id <= 4000;
        CREATE TABLE summary (id INTEGER PRIMARY KEY, length INTEGER NOT NULL);
        INSERT INTO summary SELECT id, length(body) FROM scratch;
        DROP TABLE scratch;
        """

    /// An 8 MiB filesystem holding `app.sqlite`, about 5 MiB with `PRAGMA auto_vacuum = mode`, so the copy does not
    /// fit beside it and goes to `TMPDIR`; `pending` added after its first migration.
    private func crampedAutoVacuum(_ mode: String, pending: [String: String], migrations: String = "") throws -> (Project, URL, URL) {
        let disk = try mountSmallFilesystem(size: "8m")
        let path = disk.path + "/app.sqlite"
        let database = try Database(path: path)
        try database.execute("PRAGMA auto_vacuum = \(mode)", .none)
        try database.execute("CREATE TABLE seed_marker (x)")
        database.close()
        let manifest = { (extra: String) in
            #"<manifest version="1"><database path="\#(path)"/><migrations directory="sql">\#(extra)</migrations></manifest>"#
        }
        let project = try Project(self, manifest: manifest(""), files: ["sql/001_big.sql": """
            CREATE TABLE big (id INTEGER PRIMARY KEY, body TEXT NOT NULL);
            WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 4600)
            INSERT INTO big SELECT n, printf('%01000d', n) FROM c;
            """])
        let migrated = try project.strata(["migrate"])
        XCTAssertEqual(migrated.status, 0, migrated.stderr)
        for (name, text) in pending { try project.file("sql/\(name)", text) }
        try project.file("manifest.xml", manifest(migrations))
        let check = try Database(path: path)
        XCTAssertEqual(try check.scalar("PRAGMA auto_vacuum", as: Int.self), ["none": 0, "full": 1, "incremental": 2][mode.lowercased()])
        check.close()
        let bytes = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        let free = try XCTUnwrap(RehearsalCopy.freeBytes(disk.path))
        XCTAssertLessThan(free, Int64(bytes), "the copy must not fit beside the database (the premise)")
        return (project, disk, try makeTemporaryDirectory(self))
    }

    /// Wrong verdict (would succeed where migrate fails). With `auto_vacuum = FULL` the commit truncates the file, so
    /// the page count read after the step hides the peak growth inside its transaction: rehearse said `room: … at
    /// most 40 KiB (growth 4.0 KiB, journal 36 KiB), fits the 3.1 MiB free`, exit 0, and migrate fails with
    /// "database or disk is full", rolled back. Right: the peak (the page count just before the commit) does not
    /// fit: not known (exit 4).
    func testAutoVacuumFullDoesNotHideThePeakGrowthInsideAStep() throws {
        let (project, disk, temporary) = try crampedAutoVacuum("FULL", pending: ["002_summary.sql": Self.scratchStep])
        let text = try rehearse(project, temporary: temporary)
        XCTAssertEqual(text.status, 4, text.stdout + text.stderr)
        XCTAssertTrue(text.stderr.contains("002_summary.sql ran unlike migrate"), text.stderr)
        XCTAssertFalse(text.stdout.contains("migrate would apply"), text.stdout)
        let json = try rehearse(project, temporary: temporary, ["--format", "json"])
        let object = try object(json)
        XCTAssertEqual(object["rehearsedUnlikeMigrate"] as? [String], ["002_summary.sql"])
        let note = ((object["steps"] as? [[String: Any]])?.first?["note"] as? String) ?? ""
        XCTAssertTrue(note.contains("\(disk.path) has"), note)

        let migrated = try project.strata(["migrate"])
        XCTAssertEqual(migrated.status, 1, "migrate fails for room (the premise): \(migrated.stderr)")
        XCTAssertTrue(migrated.stderr.contains("database or disk is full"), migrated.stderr)
    }

    /// The same step without auto_vacuum was already judged right (the freed pages stay in the file): not known.
    func testWithoutAutoVacuumThePeakIsThePageCountAfter() throws {
        let (project, _, temporary) = try crampedAutoVacuum("NONE", pending: ["002_summary.sql": Self.scratchStep])
        let text = try rehearse(project, temporary: temporary)
        XCTAssertEqual(text.status, 4, text.stdout + text.stderr)
    }

    /// A small step on the same database fits, and says so: the peak is measured, not assumed.
    func testAutoVacuumFullWithAStepThatFitsIsAVerdict() throws {
        let (project, _, temporary) = try crampedAutoVacuum("FULL", pending: [
            "002_small.sql": "CREATE TABLE small (x);\nINSERT INTO small VALUES (1);\nDROP TABLE small;\n",
        ])
        let text = try rehearse(project, temporary: temporary)
        XCTAssertEqual(text.status, 0, text.stdout + text.stderr)
        XCTAssertTrue(text.stdout.contains("fits the"), text.stdout)
        XCTAssertEqual(try project.strata(["migrate"]).status, 0, "migrate applies it")
    }

    /// A `transaction="none"` step commits statement by statement, each commit truncating the file under
    /// auto_vacuum=FULL, and no hook reads the page count before those commits: not known, saying why.
    func testAutoVacuumFullWithATransactionNoneStepIsNotKnown() throws {
        let (project, _, temporary) = try crampedAutoVacuum("FULL", pending: ["002_summary.sql": Self.scratchStep],
                                                            migrations: #"<migration file="002_summary.sql" transaction="none"/>"#)
        let json = try rehearse(project, temporary: temporary, ["--format", "json"])
        XCTAssertEqual(json.status, 4, json.stdout + json.stderr)
        let note = ((try object(json)["steps"] as? [[String: Any]])?.first?["note"] as? String) ?? ""
        XCTAssertTrue(note.contains("auto_vacuum"), note)
        XCTAssertEqual(try project.strata(["migrate"]).status, 1, "migrate fails for room (the premise)")
    }

    /// `PRAGMA incremental_vacuum` gives pages back inside the step's transaction, before the count before the
    /// commit is read: not known, saying why.
    func testIncrementalVacuumInsideAStepIsNotKnown() throws {
        let (project, _, temporary) = try crampedAutoVacuum("INCREMENTAL", pending: [
            "002_summary.sql": Self.scratchStep + "PRAGMA incremental_vacuum;\n",
        ])
        let json = try rehearse(project, temporary: temporary, ["--format", "json"])
        XCTAssertEqual(json.status, 4, json.stdout + json.stderr)
        let note = ((try object(json)["steps"] as? [[String: Any]])?.first?["note"] as? String) ?? ""
        XCTAssertTrue(note.contains("incremental_vacuum"), note)
        XCTAssertEqual(try project.strata(["migrate"]).status, 1, "migrate fails for room (the premise)")
    }

    // MARK: The backup migrate takes first (C)

    /// A database of about 1.3 MiB in the project (on the system's disk), migrated, with `002_small.sql` pending,
    /// whose manifest says `database` (its `backup` and `keep`).
    private func backedUpProject(database: String = #"<database path="db.sqlite"/>"#) throws -> Project {
        let project = try Project(self, manifest: #"<manifest version="1"><database path="db.sqlite"/><migrations directory="sql"/></manifest>"#,
                                  files: ["sql/001_fill.sql": """
                                      CREATE TABLE fill (pad TEXT);
                                      WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 6000)
                                      INSERT INTO fill SELECT printf('%0200d', n) FROM c;
                                      """])
        XCTAssertEqual(try project.strata(["migrate"]).status, 0)
        try project.file("sql/002_small.sql", "CREATE TABLE small (x);\n")
        try project.file("manifest.xml", #"<manifest version="1">\#(database)<migrations directory="sql"/></manifest>"#)
        return project
    }

    /// Wrong verdict (would succeed where migrate fails). The manifest's `<database backup="DIR"/>` names a 1 MiB
    /// filesystem, less than the database: rehearse said "migrate would apply 1 step", exit 0, and migrate fails
    /// with "could not back up … database or disk is full; nothing was applied". Right: the backup is a copy of the
    /// database file, which does not fit the free space of the backup directory's filesystem: migrate would fail
    /// before its first step (exit 1), naming the backup.
    func testABackupThatDoesNotFitWouldFailTheRun() throws {
        let disk = try mountSmallFilesystem(size: "1m")
        let backups = disk.path + "/backups"
        let project = try backedUpProject(database: #"<database path="db.sqlite" backup="\#(backups)" keep="2"/>"#)
        let text = try project.strata(["rehearse"])
        XCTAssertEqual(text.status, 1, text.stdout + text.stderr)
        XCTAssertTrue(text.stderr.contains("migrate would fail before its first step"), text.stderr)
        XCTAssertTrue(text.stderr.contains(backups), text.stderr)
        XCTAssertFalse(text.stdout.contains("migrate would apply"), text.stdout)
        let json = try object(try project.strata(["rehearse", "--format", "json"]))
        XCTAssertEqual(json["wouldFail"] as? Bool, true)
        XCTAssertEqual((json["backup"] as? [String: Any])?["outcome"] as? String, "would-fail")
        XCTAssertFalse(FileManager.default.fileExists(atPath: backups), "the rehearsal wrote nothing there")

        let migrated = try project.strata(["migrate"])
        XCTAssertEqual(migrated.status, 1, "migrate fails at the backup (the premise): \(migrated.stderr)")
        XCTAssertTrue(migrated.stderr.contains("could not back up"), migrated.stderr)
        XCTAssertTrue(migrated.stderr.contains("nothing was applied"), migrated.stderr)
    }

    /// `--backup DIR` is migrate's option, so rehearse takes it too, judged the same way; `--no-backup` leaves out
    /// the manifest's.
    func testTheBackupOptionsOfMigrateAreJudgedByRehearse() throws {
        let disk = try mountSmallFilesystem(size: "1m")
        let project = try backedUpProject()
        let option = try project.strata(["rehearse", "--backup", disk.path + "/backups"])
        XCTAssertEqual(option.status, 1, option.stdout + option.stderr)
        XCTAssertTrue(option.stderr.contains("could not back up"), option.stderr)
        try project.file("manifest.xml", #"<manifest version="1"><database path="db.sqlite" backup="\#(disk.path)"/><migrations directory="sql"/></manifest>"#)
        let none = try project.strata(["rehearse", "--no-backup"])
        XCTAssertEqual(none.status, 0, none.stdout + none.stderr)
        XCTAssertEqual(try project.strata(["migrate"]).status, 1, "migrate fails at the backup (the premise)")
    }

    /// A backup that fits is said, with the room it has, and the verdict stands (exit 0); migrate takes it.
    func testABackupThatFitsIsSaidAndTheVerdictStands() throws {
        let disk = try mountSmallFilesystem(size: "4m")
        let project = try backedUpProject(database: #"<database path="db.sqlite" backup="\#(disk.path)/backups"/>"#)
        let text = try project.strata(["rehearse"])
        XCTAssertEqual(text.status, 0, text.stdout + text.stderr)
        XCTAssertTrue(text.stdout.contains("backup: "), text.stdout)
        XCTAssertTrue(text.stdout.contains("fits"), text.stdout)
        XCTAssertTrue(text.stdout.contains("migrate would apply 1 step"), text.stdout)
        let migrated = try project.strata(["migrate"])
        XCTAssertEqual(migrated.status, 0, migrated.stderr)
    }

    /// What `migrate` refuses to back up into is a failure it would meet before its first step too.
    func testABackupDirectoryThatIsAFileWouldFailTheRun() throws {
        let project = try backedUpProject()
        try project.file("backups", "not a directory")
        let report = try project.migrator().rehearse(MigrationOptions(backup: BackupOptions(directory: project.root.path + "/backups")))
        XCTAssertEqual(report.backup?.outcome, .wouldFail)
        XCTAssertTrue(report.wouldFail)
        XCTAssertFalse(report.wouldSucceed)
        XCTAssertTrue(report.backup?.note.contains("not a directory") == true, report.backup?.note ?? "")
        XCTAssertEqual(try project.strata(["migrate", "--backup", "backups"]).status, 1, "migrate fails there (the premise)")
    }
}
