import CSQLite
import Foundation
import XCTest
import Strata
@testable import StrataCore
@testable import StrataSQLite

/// Faults as only a SQLite file meets them: a database file on a real filesystem that fills up, a hot rollback
/// journal left by a killed writer (read by later commands, or on a filesystem nobody may write), and a file opened
/// read-only. What every backend must do when a step fails is tested in `FaultTests`.
final class SQLiteFaultTests: XCTestCase {
    func testDiskFullOnARealFilesystemIsRolledBackCompletelyAndSaysSo() throws {
        let disk = try mountSmallFilesystem(size: "2m")
        let project = try Project(self, manifest: """
            <manifest version="1"><database path="\(disk.path)/db.sqlite"/><migrations directory="sql"/></manifest>
            """, files: [
                "sql/1_a.sql": "CREATE TABLE a (x); INSERT INTO a VALUES (1);",
                "sql/2_big.sql": "CREATE TABLE big (pad TEXT);\nWITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 20000)\nINSERT INTO big SELECT printf('%0200d', n) FROM c;",
            ])
        let failed = try project.strata(["migrate"])
        XCTAssertEqual(failed.status, 1)
        XCTAssertTrue(failed.stderr.contains("sql/2_big.sql:2:1: database or disk is full"), failed.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: disk.path + "/db.sqlite-journal"),
                       "the rollback is finished by the run that failed, not left as a hot journal")
        XCTAssertTrue(failed.stderr.contains("2_big.sql was rolled back and left no trace"), failed.stderr)
        let status = try project.strata(["status"])
        XCTAssertEqual(status.status, 0, status.stderr)
        XCTAssertTrue(status.stdout.contains("2_big.sql  pending"), status.stdout)
        let db = try Database(path: disk.path + "/db.sqlite")
        XCTAssertEqual(try db.scalar("PRAGMA integrity_check", as: String.self), "ok")
        XCTAssertFalse(try db.tableExists("big"))
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM a", as: Int.self), 1)
    }

    /// Kills `strata migrate` of `project` in the middle of its second file, once that file's journal is hot: SQLite
    /// writes the header's magic number when it syncs the journal, just before it first writes changed pages into
    /// the database file (a cache spill). The project's second file must rewrite more pages than the cache holds.
    func makeHotJournal(_ project: Project, databasePath: String? = nil, file: StaticString = #filePath, line: UInt = #line) throws {
        let (process, _, _) = try startStrata(["migrate", "--manifest", project.manifestPath], in: project.root)
        let databasePath = databasePath ?? project.databasePath
        let journal = databasePath + "-journal"
        let deadline = Date().addingTimeInterval(60)
        func firstFileRecorded() -> Bool {
            (try? Database(path: databasePath, configuration: .init(readOnly: true, busyTimeout: .zero))
                .scalar("SELECT count(*) FROM strata_history", as: Int.self)) == 1
        }
        // In that order: once the writer spills it holds the exclusive lock and nobody can read the history.
        while process.isRunning && Date() < deadline && !firstFileRecorded() { Thread.sleep(forTimeInterval: 0.01) }
        while process.isRunning && Date() < deadline && !Self.isHot(journal) { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertTrue(process.isRunning, "the long file finished before it could be killed; make it longer", file: file, line: line)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        XCTAssertTrue(Self.isHot(journal), "a hot journal is left", file: file, line: line)
    }

    static func isHot(_ journal: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: journal) else { return false }
        defer { try? handle.close() }
        return (try? handle.read(upToCount: 8)).map(Array.init) == [0xD9, 0xD5, 0x05, 0xF9, 0x20, 0xA1, 0x63, 0xD7]
    }

    /// A manifest whose second file, killed part-way, leaves a hot journal (see `makeHotJournal`).
    func hotJournalProject(databasePath: String = "db.sqlite") throws -> Project {
        try Project(self, manifest: """
            <manifest version="1"><database path="\(databasePath)"/><migrations directory="sql"/>
              <models><model type="A" table="a"/></models></manifest>
            """, files: [
                "sql/1_a.sql": """
                    CREATE TABLE a (x); INSERT INTO a VALUES (1);
                    CREATE TABLE big (n INTEGER, pad TEXT);
                    WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 300000)
                    INSERT INTO big SELECT n, printf('%040d', n) FROM c;
                    """,
                // Rewrites every page of an existing table, more than the page cache holds.
                "sql/2_long.sql": String(repeating: "UPDATE big SET pad = upper(pad) || 'x';\n", count: 20),
            ])
    }

    func testReadCommandsWorkOnADatabaseWithAHotJournal() throws {
        let project = try hotJournalProject()
        try makeHotJournal(project)
        let journal = project.databasePath + "-journal"

        let status = try project.strata(["status"])
        XCTAssertEqual(status.status, 0, status.stderr)
        XCTAssertTrue(status.stdout.contains("1_a.sql     applied"), status.stdout)
        XCTAssertTrue(status.stdout.contains("2_long.sql  pending"), status.stdout)
        XCTAssertFalse(FileManager.default.fileExists(atPath: journal), "SQLite rolled the hot journal back")
        for command in [["plan"], ["check"], ["schema"]] {
            let result = try project.strata(command)
            XCTAssertEqual(result.status, 0, "\(command): \(result.stderr)")
        }
        let db = try project.database()
        XCTAssertEqual(try db.scalar("PRAGMA integrity_check", as: String.self), "ok")
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM big WHERE length(pad) <> 40", as: Int.self), 0,
                       "the killed file left no trace")
    }

    func testAHotJournalOnAFileNobodyMayWriteIsExplained() throws {
        let disk = try mountSmallFilesystem(size: "64m")
        let project = try hotJournalProject(databasePath: disk.path + "/db.sqlite")
        try makeHotJournal(project, databasePath: disk.path + "/db.sqlite")
        let remount = Process()
        remount.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        remount.arguments = ["mount", "-o", "remount,ro", disk.path]
        try remount.run()
        remount.waitUntilExit()
        XCTAssertEqual(remount.terminationStatus, 0)
        let status = try project.strata(["status"])
        XCTAssertEqual(status.status, 1)
        XCTAssertTrue(status.stderr.contains("db.sqlite-journal is a hot journal"), status.stderr)
        XCTAssertTrue(status.stderr.contains("needs write access to \(disk.path)/db.sqlite and its directory"), status.stderr)
    }

    func testAReadOnlyConnectionRollsBackAHotJournalButStillCannotWrite() throws {
        let project = try Project(self, files: [:])
        try project.database().execute("CREATE TABLE a (x)")
        let db = try Database(path: project.databasePath, configuration: .init(readOnly: true))
        XCTAssertEqual(assertThrows(DatabaseError.self) { try db.execute("INSERT INTO a VALUES (1)") }?.resultCode, SQLITE_READONLY)
        // With a journal beside the file (hot or not), writes are refused all the same.
        try Data().write(to: URL(fileURLWithPath: project.databasePath + "-journal"))
        let recovering = try Database(path: project.databasePath, configuration: .init(readOnly: true))
        XCTAssertEqual(assertThrows(DatabaseError.self) { try recovering.execute("INSERT INTO a VALUES (1)") }?.resultCode, SQLITE_READONLY)
        XCTAssertEqual(try recovering.scalar("SELECT count(*) FROM a", as: Int.self), 0)
        XCTAssertThrowsError(try Database(path: project.databasePath + ".absent", configuration: .init(readOnly: true)),
                             "read-only never creates a file")
        XCTAssertFalse(FileManager.default.fileExists(atPath: project.databasePath + ".absent"))
    }

    func testReadOnlyDatabaseIsRefusedCleanly() throws {
        let project = try Project(self, files: ["sql/1_a.sql": "CREATE TABLE a (x);"])
        try project.database().execute("CREATE TABLE existing (x)")
        let before = try Data(contentsOf: URL(fileURLWithPath: project.databasePath))
        let migrator = try project.migrator(configuration: .init(readOnly: true))
        let error = assertThrows(DatabaseError.self) { try migrator.migrate() }
        XCTAssertEqual(error?.resultCode, SQLITE_READONLY)
        XCTAssertTrue(error?.message.contains("readonly") ?? false, "\(String(describing: error))")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: project.databasePath)), before)
    }
}
