import Foundation
import Strata
@testable import StrataCore
@testable import StrataPostgres
@testable import StrataSQLite
import XCTest

/// `migrate --backup` and `restore`: a backup is one committed state of a database other processes are writing,
/// checked and synced before any step runs, named so it sorts by time, kept `keep` at a time; a restore puts it
/// back whole. PostgreSQL refuses both before anything runs.
final class BackupTests: XCTestCase {
    // MARK: Helpers

    /// A SQLite project whose manifest is `<manifest>` with `database` as its `<database>` and `sql/` as migrations.
    private func project(database: String = #"<database path="db.sqlite"/>"#, files: [String: String]) throws -> Project {
        try Project(self, manifest: #"<manifest version="1">\#(database)<migrations directory="sql"/></manifest>"#, files: files)
    }

    /// The backup files (`*.backup`) in `directory`, by name.
    private func backups(in directory: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasSuffix(".backup") }.sorted()
    }

    /// Every table's rows, table by table (`strata_history` included), each table in rowid order (or by every column
    /// for a table without rowid).
    private func contents(_ db: Database) throws -> [String: [[DatabaseValue]]] {
        var result: [String: [[DatabaseValue]]] = [:]
        let tables = try db.rows("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name").map { try $0.get(0, as: String.self) }
        for table in tables {
            let quoted = "\"" + table.replacingOccurrences(of: "\"", with: "\"\"") + "\""
            result[table] = try db.rows("SELECT * FROM \(quoted)", .none).map(\.values).sorted { "\($0)" < "\($1)" }
        }
        return result
    }

    private func integrity(_ path: String) throws -> String? {
        try Database(path: path, configuration: Database.Configuration(readOnly: true)).scalar("PRAGMA integrity_check", as: String.self)
    }

    private func json(_ text: String) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], text)
    }

    /// Records the migration at `file` (under the project) as applied, as its runner does once it has run.
    private func recordApplied(_ file: String, of project: Project, in db: Database) throws {
        let checksum = try Checksum.ofFile(atPath: project.root.appendingPathComponent(file).path, content: .sql)
        try db.history.write(HistoryRecord(kind: .migration, identity: PathComponents.last(file), checksum: checksum,
                                           checksumVersion: Checksum.algorithmVersion, appliedAt: HistoryRecord.now(),
                                           durationMs: 1, rowCount: nil, state: .applied, toolVersion: "0",
                                           appliedSQL: nil, runner: nil, error: nil))
    }

    /// Waits until `condition` holds, failing after `timeout` (a guard against a hang, not a measure of time).
    private func wait(_ what: String, timeout: TimeInterval = 120, file: StaticString = #filePath, line: UInt = #line,
                      until condition: () throws -> Bool) rethrows {
        let deadline = Date().addingTimeInterval(timeout)
        while try !condition() {
            guard Date() < deadline else { return XCTFail("timed out waiting for \(what)", file: file, line: line) }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    // MARK: A backup of a database four processes are writing

    func testABackupTakenWhileFourProcessesWriteIsOneOfTheirCommittedStatesInRollbackJournalMode() throws {
        try backupWhileFourProcessesWrite(wal: false)
    }

    func testABackupTakenWhileFourProcessesWriteIsOneOfTheirCommittedStatesInWALMode() throws {
        try backupWhileFourProcessesWrite(wal: true)
    }

    /// Four writer processes commit as fast as they can while `strata migrate --backup` runs; the backup must pass
    /// `integrity_check` and hold exactly the state one logged commit left (rows 1…T, counter T), and the writers
    /// must have committed while the command ran. Then `strata restore` puts it back: the database has the backup's
    /// `strata schema` output, the same rows table by table, and passes `integrity_check`.
    private func backupWhileFourProcessesWrite(wal: Bool) throws {
        let project = try project(files: ["sql/1_tables.sql": WriterProcess.tablesSQL])
        if wal { _ = try Database(path: project.databasePath, configuration: Database.Configuration(walMode: true)) }
        let first = try project.strata(["migrate"])
        XCTAssertEqual(first.status, 0, first.stderr)
        let group = try FourWriters(database: project.databasePath, directory: project.root)
        defer { group.stop() }
        let writers = group.writers
        func stopWriters() { group.stop() }
        func logged() throws -> Int { try group.commits().count }
        XCTAssertTrue(try group.waitForCommits(20), group.printed)

        try project.file("sql/2_after.sql", "CREATE TABLE after_backup (x INTEGER);")
        let before = try logged()
        let migrated = try project.strata(["migrate", "--backup", "backups", "--format", "json"])
        let during = try logged() - before
        XCTAssertEqual(migrated.status, 0, migrated.stderr)
        stopWriters()
        for writer in writers {
            XCTAssertEqual(writer.process.terminationStatus, 0, writer.printed)
        }
        XCTAssertGreaterThan(during, 0, "the writers committed while the backup and the migration ran")

        let object = try json(migrated.stdout)
        let backup = try XCTUnwrap(object["backup"] as? [String: Any], migrated.stdout)
        let relative = try XCTUnwrap(backup["path"] as? String)
        let path = project.root.appendingPathComponent(relative).path
        XCTAssertTrue(relative.hasPrefix("backups/db.sqlite."), relative)
        XCTAssertEqual(backup["planId"] as? String, relative.split(separator: ".").dropLast().last.map(String.init))
        XCTAssertEqual(backup["bytes"] as? Int, try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int))
        for suffix in ["-wal", "-shm", "-journal"] {
            XCTAssertFalse(FileManager.default.fileExists(atPath: path + suffix), "nothing is left beside the backup (\(suffix))")
        }
        XCTAssertEqual((object["applied"] as? [[String: Any]])?.compactMap { $0["id"] as? String }, ["2_after.sql"])
        XCTAssertEqual(try integrity(path), "ok")

        // The backup is the state commit T left, T being its counter: rows 1…T, each as its writer logged it.
        let commits = try group.commits()
        let copy = try Database(path: path, configuration: Database.Configuration(readOnly: true))
        let total = try XCTUnwrap(try copy.scalar("SELECT n FROM counter", as: Int.self))
        XCTAssertGreaterThanOrEqual(total, 80, "the backup holds the commits made before it")
        XCTAssertNotNil(commits[total], "the backup's state is one a writer logged as committed")
        let rows = try copy.rows("SELECT total, writer, seq FROM commits ORDER BY total")
        XCTAssertEqual(try rows.map { try $0.get(0, as: Int.self) }, Array(1...total), "exactly the rows of commits 1…\(total)")
        for row in rows {
            let logged = commits[try row.get(0, as: Int.self)]
            XCTAssertEqual(logged?.writer, try row.get(1, as: Int.self))
            XCTAssertEqual(logged?.seq, try row.get(2, as: Int.self))
        }
        let live = try project.database()
        XCTAssertGreaterThan(try XCTUnwrap(try live.scalar("SELECT n FROM counter", as: Int.self)), total,
                             "the writers went on after the backup")
        XCTAssertFalse(try copy.tableExists("after_backup"), "the backup is taken before the first step")
        XCTAssertEqual(try copy.scalar("SELECT count(*) FROM strata_history", as: Int.self), 1)
        XCTAssertTrue(try live.tableExists("after_backup"))
        if wal {
            XCTAssertEqual(try copy.scalar("PRAGMA journal_mode", as: String.self), "wal", "the copy keeps the journal mode")
        }
        live.close()
        copy.close()

        // Restored, the database is the backup: schema text, every table's rows, integrity.
        let restored = try runStrata(["restore", path, "--database", project.databasePath], in: project.root)
        XCTAssertEqual(restored.status, 0, restored.stderr)
        XCTAssertTrue(restored.stdout.contains("Restored \(project.databasePath) from \(relative)"), restored.stdout)
        let schemaOfBackup = try runStrata(["schema", "--database", path], in: project.root)
        let schemaRestored = try runStrata(["schema", "--database", project.databasePath], in: project.root)
        XCTAssertEqual(schemaOfBackup.status, 0, schemaOfBackup.stderr)
        XCTAssertFalse(schemaRestored.stdout.isEmpty)
        XCTAssertEqual(schemaRestored.stdout, schemaOfBackup.stdout)
        XCTAssertEqual(try contents(try project.database()),
                       try contents(try Database(path: path, configuration: Database.Configuration(readOnly: true))))
        XCTAssertEqual(try integrity(project.databasePath), "ok")
        XCTAssertEqual(try project.database().scalar("SELECT n FROM counter", as: Int.self), total)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: project.root.path).filter { $0.contains("before-restore") || $0.hasPrefix(".") }
        XCTAssertEqual(leftovers, [], "the copy of the database as it was goes once the restore has succeeded")
        let status = try project.strata(["status"])
        XCTAssertTrue(status.stdout.split(separator: "\n").contains { $0.contains("2_after.sql") && $0.contains("pending") },
                      "the restored history is the backup's: \(status.stdout)")
    }

    // MARK: When a backup is taken, and its name

    func testNothingToApplyTakesNoBackup() throws {
        let project = try project(files: ["sql/1_a.sql": "CREATE TABLE a (x);"])
        XCTAssertEqual(try project.strata(["migrate"]).status, 0)
        let again = try project.strata(["migrate", "--backup", "backups", "--format", "json"])
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertTrue(try json(again.stdout)["backup"] is NSNull, again.stdout)
        XCTAssertFalse(FileManager.default.fileExists(atPath: project.root.appendingPathComponent("backups").path),
                       "not even the directory is created")
        let text = try project.strata(["migrate", "--backup", "backups"])
        XCTAssertEqual(text.stdout, "Nothing to do: db.sqlite is up to date.\n")
    }

    func testTheBackupIsNamedWithTheDatabaseTheTimeAndThePlanIdAndTakenBeforeTheFirstStep() throws {
        let project = try project(files: ["sql/1_a.sql": "CREATE TABLE a (x); INSERT INTO a VALUES (1);"])
        XCTAssertEqual(try project.strata(["migrate"]).status, 0)
        try project.file("sql/2_b.sql", "INSERT INTO a VALUES (2);")
        let plan = try project.strata(["plan", "--format", "json"])
        let planID = try XCTUnwrap(try json(plan.stdout)["planId"] as? String)
        let before = Date()
        let migrated = try project.strata(["migrate", "--backup", "nested/backups", "--plan-id", planID])
        XCTAssertEqual(migrated.status, 0, migrated.stderr)
        XCTAssertTrue(migrated.stderr.contains("created the backup directory nested/backups"), migrated.stderr)
        let names = backups(in: project.root.appendingPathComponent("nested/backups"))
        let name = try XCTUnwrap(names.first)
        XCTAssertEqual(names.count, 1)
        let parsed = try XCTUnwrap(BackupName.parse(name, database: "db.sqlite"), name)
        XCTAssertEqual(parsed.planID, planID)
        // The stamp is the time, UTC, to the millisecond.
        let stamp = parsed.stamp
        let iso = "\(stamp.prefix(4))-\(stamp.dropFirst(4).prefix(2))-\(stamp.dropFirst(6).prefix(2))T\(stamp.dropFirst(9).prefix(2)):\(stamp.dropFirst(11).prefix(2)):\(stamp.dropFirst(13).prefix(6))Z"
        let taken = try XCTUnwrap(ISO8601.parse(iso), iso)
        XCTAssertLessThan(abs(taken.timeIntervalSince(before)), 60)
        let lines = migrated.stdout.split(separator: "\n")
        XCTAssertTrue(lines.first?.hasPrefix("  backup   nested/backups/\(name)  (") == true, migrated.stdout)
        XCTAssertTrue(lines.first?.contains("integrity ok, synced") == true, migrated.stdout)
        XCTAssertTrue(lines.dropFirst().first?.contains("applied  migration  2_b.sql") == true, migrated.stdout)
        let copy = try Database(path: project.root.appendingPathComponent("nested/backups/\(name)").path)
        XCTAssertEqual(try copy.scalar("SELECT count(*) FROM a", as: Int.self), 1, "the state before 2_b.sql ran")
    }

    func testTwoBackupsInOneMillisecondGetTwoNamesAndBothSortByTime() throws {
        let directory = try makeTemporaryDirectory(self)
        let db = try Database(path: directory.appendingPathComponent("app.db").path)
        try db.execute("CREATE TABLE t (x)")
        let options = BackupOptions(directory: directory.appendingPathComponent("b").path)
        var taken: [DatabaseBackup] = []
        for _ in 0..<5 { taken.append(try BackupDirectory(options).take(from: db, planID: "0123456789abcdef")) }
        XCTAssertEqual(Set(taken.map(\.path)).count, 5, "no backup replaced another")
        XCTAssertEqual(taken.map(\.path), taken.map(\.path).sorted(), "names sort in the order the backups were taken")
        XCTAssertEqual(backups(in: directory.appendingPathComponent("b")).count, 5)
    }

    // MARK: Retention

    func testKeepLeavesExactlyTheNewestNAndOnlyTouchesThisDatabasesBackups() throws {
        let project = try project(database: #"<database path="db.sqlite" backup="backups" keep="3"/>"#,
                                  files: ["sql/1.sql": "CREATE TABLE a (x);"])
        let directory = project.root.appendingPathComponent("backups")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // Files that are not this database's backups, however alike, stay.
        let strangers = ["notes.txt", "other.sqlite.20200101T000000.000Z.0123456789abcdef.backup",
                         "db.sqlite.20200101T000000.000Z.0123456789abcdef.backup.txt",
                         "db.sqlite.20200101T000000.000Z.0123456789ABCDEF.backup",
                         "db.sqlite.2020-01-01.backup", "xdb.sqlite.20200101T000000.000Z.0123456789abcdef.backup"]
        for name in strangers { _ = FileManager.default.createFile(atPath: directory.appendingPathComponent(name).path, contents: Data("x".utf8)) }
        var made: [String] = []
        for step in 1...5 {
            try project.file("sql/\(step + 1).sql", "INSERT INTO a VALUES (\(step));")
            let migrated = try project.strata(["migrate", "--format", "json"])
            XCTAssertEqual(migrated.status, 0, migrated.stderr)
            let backup = try XCTUnwrap(try json(migrated.stdout)["backup"] as? [String: Any])
            made.append(try XCTUnwrap((backup["path"] as? String).map { PathComponents.last($0) }))
            let removed = try XCTUnwrap(backup["removed"] as? [String])
            XCTAssertEqual(removed, step <= 3 ? [] : ["backups/" + made[step - 4]], "step \(step)")
        }
        XCTAssertEqual(backups(in: directory).filter { BackupName.parse($0, database: "db.sqlite") != nil },
                       Array(made.suffix(3)), "exactly the newest 3")
        for name in strangers {
            XCTAssertTrue(FileManager.default.fileExists(atPath: directory.appendingPathComponent(name).path), name)
        }
        // --keep on the command line counts the same directory.
        try project.file("sql/7.sql", "INSERT INTO a VALUES (7);")
        let kept = try project.strata(["migrate", "--keep", "1"])
        XCTAssertEqual(kept.status, 0, kept.stderr)
        XCTAssertEqual(kept.stdout.components(separatedBy: "  removed  ").count - 1, 3, kept.stdout)
        XCTAssertEqual(backups(in: directory).filter { BackupName.parse($0, database: "db.sqlite") != nil }.count, 1)
    }

    func testKeepNeverRemovesTheBackupJustTakenEvenWhenOlderOnesSortAfterIt() throws {
        let directory = try makeTemporaryDirectory(self)
        let db = try Database(path: directory.appendingPathComponent("app.db").path)
        try db.execute("CREATE TABLE t (x)")
        // Written by a clock that was ahead.
        let future = directory.appendingPathComponent("b/app.db.29991231T235959.999Z.0123456789abcdef.backup")
        try write("x", to: future)
        let backup = try BackupDirectory(BackupOptions(directory: directory.appendingPathComponent("b").path, keep: 1))
            .take(from: db, planID: "fedcba9876543210")
        XCTAssertTrue(FileManager.default.fileExists(atPath: backup.path))
        XCTAssertEqual(backup.removed, [future.path])
    }

    // MARK: Options and the manifest

    func testBackupOptionsOnTheCommandLineAndInTheManifest() throws {
        let project = try project(database: #"<database path="db.sqlite" backup="from-manifest" keep="2"/>"#,
                                  files: ["sql/1.sql": "CREATE TABLE a (x);"])
        let manifest = try project.manifest()
        XCTAssertEqual(manifest.databaseBackup, BackupOptions(directory: project.root.appendingPathComponent("from-manifest").path, keep: 2),
                       "the directory resolves against the manifest's")
        XCTAssertEqual(try project.strata(["migrate", "--no-backup"]).status, 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: project.root.appendingPathComponent("from-manifest").path))
        try project.file("sql/2.sql", "CREATE TABLE b (x);")
        XCTAssertEqual(try project.strata(["migrate", "--backup", "given"]).status, 0)
        XCTAssertEqual(backups(in: project.root.appendingPathComponent("given")).count, 1, "--backup replaces the manifest's")
        XCTAssertFalse(FileManager.default.fileExists(atPath: project.root.appendingPathComponent("from-manifest").path))
        try project.file("sql/3.sql", "CREATE TABLE c (x);")
        let seeded = try project.strata(["seed"])
        XCTAssertEqual(seeded.status, 0, seeded.stderr)
        XCTAssertEqual(backups(in: project.root.appendingPathComponent("from-manifest")).count, 0, "seed had nothing to apply")
        XCTAssertEqual(try project.strata(["migrate"]).status, 0)
        XCTAssertEqual(backups(in: project.root.appendingPathComponent("from-manifest")).count, 1, "the manifest's backup")

        for (arguments, message) in [(["--no-backup", "--backup", "x"], "--no-backup takes no backup"),
                                     (["--keep", "0"], "--keep must be a whole number from 1 to 999999"),
                                     (["--backup", ""], "--backup needs a directory")] {
            let refused = try project.strata(["migrate"] + arguments)
            XCTAssertEqual(refused.status, 2, "\(arguments)")
            XCTAssertTrue(refused.stderr.contains(message), refused.stderr)
        }
        let plain = try self.project(files: ["sql/1.sql": "CREATE TABLE a (x);"])
        let keepAlone = try plain.strata(["migrate", "--keep", "2"])
        XCTAssertEqual(keepAlone.status, 2)
        XCTAssertTrue(keepAlone.stderr.contains("it needs --backup DIR"), keepAlone.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: plain.databasePath), "a usage error creates nothing")
    }

    func testTheManifestRefusesABackupItCannotTake() throws {
        let directory = try makeTemporaryDirectory(self)
        for (database, message) in [
            (#"<database url="postgresql://db/app" backup="b"/>"#, "back up a PostgreSQL database (url=) with pg_dump or point-in-time recovery"),
            (#"<database path="db.sqlite" keep="3"/>"#, #"keep="3" without backup="…""#),
            (#"<database path="db.sqlite" backup="b" keep="0"/>"#, "keep"),
            (#"<database path="db.sqlite" backup="b" keep="many"/>"#, "keep"),
        ] {
            let error = assertThrows(ManifestError.self) {
                try Manifest.load(xml: #"<manifest version="1">\#(database)</manifest>"#, directory: directory.path)
            }
            XCTAssertTrue(error?.description.contains(message) == true, "\(database): \(error?.description ?? "")")
        }
    }

    // MARK: A backup that cannot be taken stops the run before any step

    func testABackupDirectoryThatIsAFileStopsTheRunBeforeAnyStep() throws {
        let project = try project(files: ["sql/1.sql": "CREATE TABLE a (x);"])
        try project.file("backups", "not a directory")
        let failed = try project.strata(["migrate", "--backup", "backups", "--format", "json"])
        XCTAssertEqual(failed.status, 1, failed.stderr)
        XCTAssertTrue(failed.stderr.contains("the backup directory backups is a regular file, not a directory; nothing was applied")
                      || failed.stderr.contains("not a directory; nothing was applied"), failed.stderr)
        XCTAssertEqual(try json(failed.stdout)["command"] as? String, "migrate")
        XCTAssertFalse(try project.database().tableExists("a"), "no step ran")
    }

    func testAFullDiskFailsTheBackupLeavesNoPartialFileAndRunsNothing() throws {
        let disk = try mountSmallFilesystem(size: "256k")
        let project = try project(files: ["sql/1.sql": """
            CREATE TABLE big (pad TEXT);
            WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 4000)
            INSERT INTO big SELECT printf('%0200d', n) FROM c;
            """])
        XCTAssertEqual(try project.strata(["migrate"]).status, 0)
        try project.file("sql/2.sql", "CREATE TABLE after (x);")
        let failed = try project.strata(["migrate", "--backup", disk.path])
        XCTAssertEqual(failed.status, 1, failed.stderr)
        XCTAssertTrue(failed.stderr.contains("could not back up db.sqlite into"), failed.stderr)
        XCTAssertTrue(failed.stderr.contains("full"), failed.stderr)
        XCTAssertTrue(failed.stderr.contains("nothing was applied"), failed.stderr)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: disk.path), [], "no partial backup, no temporary file")
        XCTAssertFalse(try project.database().tableExists("after"))
    }

    /// Another runner holds the write lock (a step in progress, not committed): the backup is still taken, of what
    /// is committed, and this run's step waits for the lock and then runs.
    func testABackupIsTakenWhileAnotherRunnerHoldsTheLockAndHoldsOnlyWhatWasCommitted() throws {
        for wal in [false, true] {
            let project = try project(files: ["sql/1.sql": "CREATE TABLE a (x);"])
            XCTAssertEqual(try project.strata(["migrate"]).status, 0)
            let holder = try Database(path: project.databasePath, configuration: Database.Configuration(walMode: wal))
            try project.file("sql/2.sql", "INSERT INTO a VALUES ('migration');")
            try holder.execute("BEGIN IMMEDIATE")
            try holder.execute("INSERT INTO a VALUES ('uncommitted')")
            let (process, out, err) = try startStrata(["migrate", "--manifest", project.manifestPath, "--backup", "b", "--timeout", "120"],
                                                      in: project.root)
            let stdout = PipeWatcher(out), stderr = PipeWatcher(err)
            XCTAssertTrue(stdout.wait(for: "  backup   b/db.sqlite.", from: process), "wal \(wal): \(stdout.text) \(stderr.text)")
            XCTAssertTrue(process.isRunning, "the step waits for the lock the other runner holds")
            try holder.execute("COMMIT")
            process.waitUntilExit()
            XCTAssertEqual(process.terminationStatus, 0, stderr.text)
            let name = try XCTUnwrap(backups(in: project.root.appendingPathComponent("b")).first)
            let copy = try Database(path: project.root.appendingPathComponent("b/\(name)").path)
            XCTAssertEqual(try copy.scalar("SELECT count(*) FROM a", as: Int.self), 0, "wal \(wal): nothing uncommitted is in the backup")
            XCTAssertEqual(try project.database().rows("SELECT x FROM a ORDER BY x").map { try $0.get(0, as: String.self) },
                           ["migration", "uncommitted"])
        }
    }

    // MARK: A backup is a state between steps

    /// Another runner is applying a `transaction="none"` step (its history row `running`, its lock held; this test
    /// plays it): the database holds that step half-done. The backup waits for it, as the run's own claim would,
    /// and is taken of the state after it, named with the plan that follows; the run says the step was applied by
    /// another run. (Taken right after planning, the backup held table `half` and a `running` row, named as the
    /// database before this run, and `--keep` removed clean older backups for it.)
    func testMigrateBackupWaitsForAStepAnotherRunnerIsApplyingAndCopiesTheStateAfterIt() throws {
        let project = try Project(self, backend: .sqlite, files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);"])
        XCTAssertNil(try project.migrator().migrate().failure)
        try project.file("sql/2_none.sql", "CREATE TABLE half (x INTEGER);\nCREATE TABLE done (x INTEGER);\n")
        try project.file("manifest.xml", #"<manifest version="1"><database path="db.sqlite"/><migrations directory="sql"><migration file="2_none.sql" transaction="none"/></migrations></manifest>"#)
        // 2_none.sql half-applied by a live runner: its first statement committed, its history row running, its
        // lock held.
        let db = try project.database()
        try db.execute("CREATE TABLE half (x INTEGER)")
        try db.history.write(.leftBehind("2_none.sql", state: .running, runner: "deployer-1:4242"))
        let claim = try XCTUnwrap(try db.stepLocks.claim(kind: .migration, id: "2_none.sql"))
        defer { claim.release() }
        try project.file("sql/3_c.sql", "CREATE TABLE c (x INTEGER);")
        let firstPlan = try project.migrator().plan().id
        let backups = project.root.appendingPathComponent("bk")

        let (process, out, err) = try startStrata(["migrate", "--manifest", project.manifestPath, "--backup", backups.path, "--timeout", "60"],
                                                  in: project.root)
        let stdout = PipeWatcher(out), stderr = PipeWatcher(err)
        defer { if process.isRunning { kill(process.processIdentifier, SIGTERM); process.waitUntilExit() } }
        XCTAssertTrue(stderr.wait(for: "is being applied by another process; waiting", from: process), stderr.text)
        for name in self.backups(in: backups) {
            let copy = try Database(path: backups.appendingPathComponent(name).path, configuration: .init(readOnly: true))
            defer { copy.close() }
            let running = try copy.scalar("SELECT count(*) FROM strata_history WHERE state = 'running'", as: Int.self)
            XCTAssertEqual(running, 0, "\(name) was taken while 2_none.sql was half-applied by a live runner: it holds table half and a running row, and is named as the database before this run")
        }
        XCTAssertEqual(self.backups(in: backups), [], "no backup while a step is half-applied")
        XCTAssertTrue(process.isRunning, "it waits, within --timeout")

        // The other runner finishes its step and records it.
        try db.execute("CREATE TABLE done (x INTEGER)")
        try recordApplied("sql/2_none.sql", of: project, in: db)
        claim.release()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, stderr.text)
        XCTAssertTrue(stdout.wait(for: "applied meanwhile by another run", from: process), stdout.text)
        XCTAssertTrue(stdout.text.contains("applied  migration  3_c.sql"), stdout.text)
        let name = try XCTUnwrap(self.backups(in: backups).first, stdout.text)
        XCTAssertEqual(self.backups(in: backups).count, 1)
        let copy = try Database(path: backups.appendingPathComponent(name).path, configuration: .init(readOnly: true))
        defer { copy.close() }
        XCTAssertEqual(try copy.rows("SELECT identity, state FROM strata_history ORDER BY identity").map { "\(try $0.get(0, as: String.self)) \(try $0.get(1, as: String.self))" },
                       ["1_a.sql applied", "2_none.sql applied"], "the state between 2_none.sql and 3_c.sql")
        XCTAssertTrue(try copy.tableExists("done"))
        XCTAssertFalse(try copy.tableExists("c"))
        let planID = try XCTUnwrap(BackupName.parse(name, database: "db.sqlite")?.planID)
        XCTAssertNotEqual(planID, firstPlan, "named with the plan that followed it (3_c.sql alone), not the one made while 2_none.sql ran")
    }

    /// A step another run applies between the backup and this run's step is not in the backup, and the report says
    /// another run applied it: the backup is still the state before every step the run reports.
    func testAStepAnotherRunAppliesAfterTheBackupIsReportedAsAppliedByIt() throws {
        let project = try project(files: ["sql/1.sql": "CREATE TABLE a (x);"])
        XCTAssertEqual(try project.strata(["migrate"]).status, 0)
        try project.file("sql/2.sql", "INSERT INTO a VALUES (2);")
        try project.file("sql/3.sql", "INSERT INTO a VALUES (3);")
        var options = MigrationOptions()
        options.backup = BackupOptions(directory: project.root.appendingPathComponent("b").path)
        var other: Error?
        let report = try project.migrator().migrate(options) { event in
            guard case .backedUp = event else { return }
            // Another run applies 2.sql, as its runner would: the step and its history row in one transaction.
            do {
                let db = try project.database()
                try db.transaction(.immediate) { db in
                    try db.execute("INSERT INTO a VALUES (2)")
                    try self.recordApplied("sql/2.sql", of: project, in: db)
                }
            } catch { other = error }
        }
        XCTAssertNil(other)
        XCTAssertEqual(report.applied.map(\.id), ["3.sql"])
        XCTAssertEqual(report.alreadyApplied, ["2.sql"], "another run applied it after the backup")
        let backup = try XCTUnwrap(report.backup)
        XCTAssertEqual(try Database(path: backup.path).scalar("SELECT count(*) FROM a", as: Int.self), 0)
    }

    /// What the check inside `writeBackup(to:checkingFirst:)` reads is exactly what is copied: a commit another
    /// connection makes after the check is not in the copy (WAL mode, where writers go on during a read).
    func testTheBackupsCheckAndCopyReadOneState() throws {
        let directory = try makeTemporaryDirectory(self)
        let path = directory.appendingPathComponent("app.db").path
        let db = try Database(path: path, configuration: Database.Configuration(walMode: true))
        try db.execute("CREATE TABLE t (x)")
        try db.execute("INSERT INTO t VALUES (1)")
        let writer = try Database(path: path)
        let copy = directory.appendingPathComponent("copy.db").path
        try DurableFiles.createNew(copy, mode: 0o600)
        var seen: Int?
        try db.writeBackup(to: copy) {
            seen = try db.scalar("SELECT count(*) FROM t", as: Int.self)
            try writer.execute("INSERT INTO t VALUES (2)")
        }
        XCTAssertEqual(seen, 1)
        XCTAssertEqual(try Database(path: copy).scalar("SELECT count(*) FROM t", as: Int.self), 1, "the state the check read")
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM t", as: Int.self), 2)
        XCTAssertFalse(db.isInTransaction)
        // What the check throws stops the copy and is thrown as it is.
        let refused = directory.appendingPathComponent("refused.db").path
        try DurableFiles.createNew(refused, mode: 0o600)
        let thrown = assertThrows(MigrationError.self) {
            try db.writeBackup(to: refused) { throw MigrationError.lockTimeout("no") }
        }
        XCTAssertNotNil(thrown)
        XCTAssertEqual(DurableFiles.size(of: refused), 0, "nothing was copied")
    }

    // MARK: The library

    func testDatabaseBackupToIsAConsistentCheckedCopyAndReplacesNothing() throws {
        let directory = try makeTemporaryDirectory(self)
        let db = try Database(path: directory.appendingPathComponent("app.db").path, configuration: Database.Configuration(walMode: true))
        try db.execute("CREATE TABLE t (x)")
        try db.execute("INSERT INTO t VALUES (1), (2)")
        let copy = directory.appendingPathComponent("copy.db").path
        try db.backup(to: copy)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("copy") }.sorted(),
                       ["copy.db"], "no -wal or -shm is left beside a copy of a WAL database")
        XCTAssertEqual(try Database(path: copy).scalar("SELECT sum(x) FROM t", as: Int.self), 3)
        XCTAssertEqual(try integrity(copy), "ok")
        let again = assertThrows(DatabaseError.self) { try db.backup(to: copy) }
        XCTAssertEqual(again?.kind, .misuse)
        XCTAssertTrue(again?.message.contains("replaces none") == true)
        XCTAssertEqual(try Database(path: copy).scalar("SELECT sum(x) FROM t", as: Int.self), 3)
    }

    func testABackupKeepsTheDatabaseFilesPermissions() throws {
        let directory = try makeTemporaryDirectory(self)
        let path = directory.appendingPathComponent("secret.db").path
        let db = try Database(path: path)
        try db.execute("CREATE TABLE t (x)")
        XCTAssertEqual(chmod(path, 0o600), 0)
        let backup = try BackupDirectory(BackupOptions(directory: directory.appendingPathComponent("b").path))
            .take(from: db, planID: "0123456789abcdef")
        XCTAssertEqual(DurableFiles.mode(of: backup.path), 0o600)
    }

    func testTheMigratorTakesTheBackupItIsAskedForAndReportsIt() throws {
        let project = try project(files: ["sql/1.sql": "CREATE TABLE a (x);"])
        var events: [String] = []
        var options = MigrationOptions()
        options.backup = BackupOptions(directory: project.root.appendingPathComponent("b").path, keep: 1)
        let report = try project.migrator().migrate(options) { event in
            switch event {
            case .backedUp(let backup): events.append("backup \(PathComponents.last(backup.path))")
            case .started(let step, _): events.append("started \(step.id)")
            default: break
            }
        }
        let backup = try XCTUnwrap(report.backup)
        XCTAssertEqual(events, ["backup \(PathComponents.last(backup.path))", "started 1.sql"])
        XCTAssertTrue(backup.createdDirectory)
        XCTAssertEqual(backup.size, DurableFiles.size(of: backup.path))
        XCTAssertNil(try project.migrator().migrate(options).backup, "nothing to apply: no backup")
    }

    // MARK: Restore

    func testRestoreRefusesWhileAnotherConnectionWritesAndChangesNothing() throws {
        let project = try project(files: ["sql/1.sql": "CREATE TABLE a (x); INSERT INTO a VALUES (1);"])
        XCTAssertEqual(try project.strata(["migrate", "--backup", "b"]).status, 0)
        let backup = project.root.appendingPathComponent("b/" + (try XCTUnwrap(backups(in: project.root.appendingPathComponent("b")).first))).path
        let writer = try project.database()
        try writer.execute("BEGIN IMMEDIATE")
        try writer.execute("INSERT INTO a VALUES (2)")
        let refused = try runStrata(["restore", backup, "--database", project.databasePath, "--timeout", "0.5", "--format", "json"], in: project.root)
        XCTAssertEqual(refused.status, 1, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("another connection is using"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains("nothing was restored"), refused.stderr)
        XCTAssertNotNil(try json(refused.stdout)["error"] as? String)
        try writer.execute("COMMIT")
        XCTAssertEqual(try project.database().scalar("SELECT count(*) FROM a", as: Int.self), 2, "the database is as it was")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: project.root.path).filter { $0.contains("before-restore") }, [],
                       "no copy is left behind by a restore that did not happen")
    }

    /// A write committed after the copy of the database as it was and before the restore is in neither: the restore
    /// notices it (`data_version`), fails, and keeps the copy.
    func testAWriteCommittedDuringTheRestoreIsNoticedAndTheCopyKept() throws {
        let project = try project(files: ["sql/1.sql": "CREATE TABLE a (x); INSERT INTO a VALUES ('first');"])
        XCTAssertEqual(try project.strata(["migrate"]).status, 0)
        try project.file("sql/2.sql", "INSERT INTO a VALUES ('second');")
        XCTAssertEqual(try project.strata(["migrate", "--backup", "b"]).status, 0)
        let backup = project.root.appendingPathComponent("b/" + (try XCTUnwrap(backups(in: project.root.appendingPathComponent("b")).first))).path
        // Holds the write lock: the restore copies the database as it is (reading), then waits to write.
        let writer = try project.database()
        try writer.execute("BEGIN IMMEDIATE")
        try writer.execute("INSERT INTO a VALUES ('during')")
        let (process, _, err) = try startStrata(["restore", backup, "--database", project.databasePath, "--timeout", "120"], in: project.root)
        let stderr = PipeWatcher(err)
        func keptCopies() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: project.root.path)) ?? []).filter { $0.hasPrefix("db.sqlite.before-restore-") }
        }
        wait("the copy of the database as it was") { keptCopies().count == 1 || !process.isRunning }
        XCTAssertTrue(process.isRunning, stderr.text)
        try writer.execute("COMMIT")
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 1, stderr.text)
        XCTAssertTrue(stderr.wait(for: "committed a write to", from: process), stderr.text)
        XCTAssertTrue(stderr.text.contains("is in neither"), stderr.text)
        let kept = try XCTUnwrap(keptCopies().first)
        XCTAssertEqual(try Database(path: project.root.appendingPathComponent(kept).path).rows("SELECT x FROM a ORDER BY x")
                        .map { try $0.get(0, as: String.self) }, ["first", "second"], "the database as it was before the write")
        XCTAssertEqual(try project.database().rows("SELECT x FROM a ORDER BY x").map { try $0.get(0, as: String.self) },
                       ["first"], "the restored backup")
    }

    func testRestoreKeepsTheCurrentDatabaseWhenAskedAndCreatesAMissingOne() throws {
        let project = try project(files: ["sql/1.sql": "CREATE TABLE a (x); INSERT INTO a VALUES (1);"])
        XCTAssertEqual(try project.strata(["migrate"]).status, 0)
        try project.file("sql/2.sql", "INSERT INTO a VALUES (2);")
        XCTAssertEqual(try project.strata(["migrate", "--backup", "b"]).status, 0)
        let backup = project.root.appendingPathComponent("b/" + (try XCTUnwrap(backups(in: project.root.appendingPathComponent("b")).first))).path

        let kept = try runStrata(["restore", backup, "--manifest", project.manifestPath, "--keep-current", "--format", "json"], in: project.root)
        XCTAssertEqual(kept.status, 0, kept.stderr)
        let object = try json(kept.stdout)
        XCTAssertEqual(object["created"] as? Bool, false)
        let keptPath = try XCTUnwrap(object["keptCurrent"] as? String)
        XCTAssertTrue(keptPath.hasPrefix("db.sqlite.before-restore-"), keptPath)
        let keptURL = project.root.appendingPathComponent(keptPath)
        XCTAssertEqual(try Database(path: keptURL.path).scalar("SELECT count(*) FROM a", as: Int.self), 2, "the database as it was")
        XCTAssertEqual(try project.database().scalar("SELECT count(*) FROM a", as: Int.self), 1, "the backup's state")

        // Into a path where no database is.
        let elsewhere = project.root.appendingPathComponent("fresh.sqlite").path
        let created = try Database.restore(backup: backup, to: elsewhere)
        XCTAssertTrue(created.created)
        XCTAssertNil(created.keptCurrent)
        XCTAssertEqual(try Database(path: elsewhere).scalar("SELECT count(*) FROM a", as: Int.self), 1)
        XCTAssertEqual(try integrity(elsewhere), "ok")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: project.root.path).filter { $0.hasPrefix(".") }, [],
                       "no temporary file is left")
    }

    func testRestoreRefusesWhatIsNotABackupAndStaleJournalsBesideAMissingDatabase() throws {
        let project = try project(files: ["sql/1.sql": "CREATE TABLE a (x); INSERT INTO a VALUES (1);"])
        XCTAssertEqual(try project.strata(["migrate"]).status, 0)
        try project.file("sql/2.sql", "INSERT INTO a VALUES (2);")
        XCTAssertEqual(try project.strata(["migrate", "--backup", "b"]).status, 0)
        let backup = project.root.appendingPathComponent("b/" + (try XCTUnwrap(backups(in: project.root.appendingPathComponent("b")).first))).path
        try project.file("notes.txt", "these are notes, not a database")
        try project.file("empty.backup", "")
        for (file, message) in [("notes.txt", "is not a SQLite database"), ("empty.backup", "is empty"),
                                ("missing.backup", "No such file"), ("sql", "a directory")] {
            let refused = try runStrata(["restore", file, "--database", project.databasePath, "--format", "json"], in: project.root)
            XCTAssertEqual(refused.status, 3, "\(file): \(refused.stderr)")
            XCTAssertTrue(refused.stderr.contains(message), "\(file): \(refused.stderr)")
            XCTAssertEqual((try json(refused.stdout)["refusals"] as? [[String: Any]])?.first?["reason"] as? String, "backup")
        }
        // A damaged backup is refused by its integrity check.
        let damaged = project.root.appendingPathComponent("damaged.backup").path
        try FileManager.default.copyItem(atPath: backup, toPath: damaged)
        let handle = try XCTUnwrap(FileHandle(forUpdatingAtPath: damaged))
        try handle.seek(toOffset: 4096 + 8)   // the second page's cell pointers
        handle.write(Data(repeating: 0xFF, count: 64))
        try handle.close()
        let broken = try runStrata(["restore", damaged, "--database", project.databasePath], in: project.root)
        XCTAssertEqual(broken.status, 3, broken.stderr)
        XCTAssertTrue(broken.stderr.contains("integrity_check") || broken.stderr.contains("cannot be read as a database"), broken.stderr)

        // A -wal left beside a database that is gone would be mixed into the restored one.
        let gone = project.root.appendingPathComponent("gone.sqlite").path
        try project.file("gone.sqlite-wal", "stale")
        let stale = try runStrata(["restore", backup, "--database", gone], in: project.root)
        XCTAssertEqual(stale.status, 3, stale.stderr)
        XCTAssertTrue(stale.stderr.contains("gone.sqlite-wal"), stale.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: gone))
        try FileManager.default.removeItem(atPath: gone + "-wal")
        try project.file("gone.sqlite-journal", "stale")
        let journal = try runStrata(["restore", backup, "--database", gone], in: project.root)
        XCTAssertEqual(journal.status, 3, journal.stderr)
        XCTAssertTrue(journal.stderr.contains("gone.sqlite-journal"), journal.stderr)
        XCTAssertEqual(try project.database().scalar("SELECT count(*) FROM a", as: Int.self), 2, "nothing was restored")
    }

    /// `restore app-a.sqlite.TIME.PLAN.backup --database app-b.sqlite` replaced app-b with app-a's contents,
    /// history included, saying only "Restored app-b.sqlite": a mistyped path in an incident replaces one database
    /// with another. A backup named as another database's is refused over an existing database unless asked for.
    func testRestoreRefusesAnotherDatabasesBackupOverAnExistingDatabase() throws {
        let directory = try makeTemporaryDirectory(self)
        let a = directory.appendingPathComponent("app-a.sqlite").path
        let b = directory.appendingPathComponent("app-b.sqlite").path
        let dbA = try Database(path: a)
        try dbA.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
        let backup = directory.appendingPathComponent("app-a.sqlite.20260301T120000.123Z.0123456789abcdef.backup").path
        try dbA.backup(to: backup)
        dbA.close()
        let dbB = try Database(path: b)
        try dbB.execute("CREATE TABLE patients (id INTEGER PRIMARY KEY)")
        dbB.close()

        let thrown = assertThrows(BackupError.self) { try Database.restore(backup: backup, to: b) }
        XCTAssertEqual(thrown?.kind, .refused)
        XCTAssertTrue(thrown?.message.contains("is named as a backup of app-a.sqlite, not of app-b.sqlite") == true, "\(String(describing: thrown))")
        XCTAssertTrue(thrown?.message.contains("--other-database") == true)
        XCTAssertTrue(try Database(path: b).tableExists("patients"), "app-b.sqlite was replaced with app-a.sqlite's backup")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.contains("before-restore") }, [])

        // The command: exit 3, reason backup; nothing restored.
        let refused = try runStrata(["restore", backup, "--database", b, "--format", "json"], in: directory)
        XCTAssertEqual(refused.status, 3, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("--other-database"), refused.stderr)
        XCTAssertEqual((try json(refused.stdout)["refusals"] as? [[String: Any]])?.first?["reason"] as? String, "backup")
        XCTAssertTrue(try Database(path: b).tableExists("patients"))

        // Asked for: restored, and said whose backup it was.
        let allowed = try runStrata(["restore", backup, "--database", b, "--other-database"], in: directory)
        XCTAssertEqual(allowed.status, 0, allowed.stderr)
        XCTAssertTrue(allowed.stdout.contains("(a backup of app-a.sqlite)"), allowed.stdout)
        XCTAssertTrue(try Database(path: b).tableExists("invoices"))
        XCTAssertFalse(try Database(path: b).tableExists("patients"))
    }

    /// A database reached through a symbolic link is backed up under its file's own name (SQLite opens the link's
    /// target), and restoring that backup through the same link is restoring the same database.
    func testABackupTakenThroughASymbolicLinkRestoresThroughIt() throws {
        let root = try makeTemporaryDirectory(self)
        try write(#"<manifest version="1"><database path="current.sqlite"/><migrations directory="sql"/></manifest>"#,
                  to: root.appendingPathComponent("manifest.xml"))
        try write("CREATE TABLE t (x);\n", to: root.appendingPathComponent("sql/001_a.sql"))
        try FileManager.default.createDirectory(at: root.appendingPathComponent("releases"), withIntermediateDirectories: true)
        let real = try Database(path: root.appendingPathComponent("releases/app-v2.sqlite").path)
        try real.executeScript("CREATE TABLE keep (x); INSERT INTO keep VALUES (1);")
        real.close()
        try FileManager.default.createSymbolicLink(atPath: root.appendingPathComponent("current.sqlite").path,
                                                   withDestinationPath: "releases/app-v2.sqlite")
        let migrated = try runStrata(["migrate", "--manifest", "manifest.xml", "--backup", "b"], in: root)
        XCTAssertEqual(migrated.status, 0, migrated.stderr)
        let backup = try XCTUnwrap(backups(in: root.appendingPathComponent("b")).first, "no backup taken")
        XCTAssertTrue(backup.hasPrefix("app-v2.sqlite."), backup)

        let restored = try runStrata(["restore", "b/" + backup, "--database", "current.sqlite"], in: root)
        XCTAssertEqual(restored.status, 0, restored.stderr)
        let after = try Database(path: root.appendingPathComponent("current.sqlite").path)
        XCTAssertFalse(try after.tableExists("t"), "the state before the migration is back")
        XCTAssertEqual(try after.scalar("SELECT count(*) FROM keep", as: Int.self), 1)
    }

    /// Restoring into a path where no database is replaces nothing (a copy to inspect, a database rebuilt
    /// elsewhere), so another database's backup may be created there; the report says whose it is. A backup the
    /// user renamed carries no database name and is taken as given; the backup of the database itself as always.
    func testAnotherDatabasesBackupMayCreateAMissingDatabaseAndARenamedBackupIsTakenAsGiven() throws {
        let directory = try makeTemporaryDirectory(self)
        let a = directory.appendingPathComponent("app-a.sqlite").path
        let dbA = try Database(path: a)
        try dbA.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
        let backup = directory.appendingPathComponent("app-a.sqlite.20260301T120000.123Z.0123456789abcdef.backup").path
        try dbA.backup(to: backup)
        let renamed = directory.appendingPathComponent("before-the-incident.sqlite").path
        try dbA.backup(to: renamed)
        dbA.close()

        let created = try runStrata(["restore", backup, "--database", "inspect.sqlite", "--format", "json"], in: directory)
        XCTAssertEqual(created.status, 0, created.stderr)
        let object = try json(created.stdout)
        XCTAssertEqual(object["created"] as? Bool, true)
        XCTAssertEqual(object["backupOf"] as? String, "app-a.sqlite")
        let text = try runStrata(["restore", backup, "--database", "inspect-2.sqlite"], in: directory)
        XCTAssertTrue(text.stdout.hasPrefix("Created inspect-2.sqlite from app-a.sqlite.20260301T120000.123Z.0123456789abcdef.backup (a backup of app-a.sqlite) ("),
                      text.stdout)

        let b = directory.appendingPathComponent("app-b.sqlite").path
        try Database(path: b).execute("CREATE TABLE patients (id INTEGER PRIMARY KEY)")
        let report = try Database.restore(backup: renamed, to: b)
        XCTAssertNil(report.backupOf)
        XCTAssertFalse(report.isOtherDatabasesBackup)
        XCTAssertTrue(try Database(path: b).tableExists("invoices"))

        let own = try Database.restore(backup: backup, to: a)
        XCTAssertEqual(own.backupOf, "app-a.sqlite")
        XCTAssertFalse(own.isOtherDatabasesBackup)
        let json = try runStrata(["restore", backup, "--database", a, "--format", "json"], in: directory)
        XCTAssertEqual(json.status, 0, json.stderr)
        XCTAssertEqual(try self.json(json.stdout)["backupOf"] as? String, "app-a.sqlite")
    }

    func testABackupsNameGivesTheDatabaseItWasTakenOf() {
        XCTAssertEqual(BackupName.parse("app-a.sqlite.20260301T120000.123Z.0123456789abcdef.backup"),
                       BackupName(database: "app-a.sqlite", stamp: "20260301T120000.123Z", planID: "0123456789abcdef"))
        XCTAssertEqual(BackupName.parse("a.b.c.20260301T120000.123Z.0123456789abcdef.backup")?.database, "a.b.c")
        XCTAssertEqual(BackupName.parse("bücher.db.20260301T120000.123Z.0123456789abcdef.backup")?.database, "bücher.db")
        for name in [".20260301T120000.123Z.0123456789abcdef.backup", "20260301T120000.123Z.0123456789abcdef.backup",
                     "app.sqlite.20260301T120000.123Z.0123456789ABCDEF.backup", "app.sqlite.20260301T120000.123.0123456789abcdef.backup",
                     "app.sqlite.20260301-120000.123Z.0123456789abcdef.backup", "app.sqlite.20260301T120000.123Z.0123456789abcdef.backup.gz",
                     "app.sqlite.20260301T120000.123Z-0123456789abcdef.backup", "app.sqlite.backup", "x"] {
            XCTAssertNil(BackupName.parse(name), name)
        }
        XCTAssertNil(BackupName.parse("app-a.sqlite.20260301T120000.123Z.0123456789abcdef.backup", database: "app-b.sqlite"))
        XCTAssertNil(BackupName.parse("xapp.sqlite.20260301T120000.123Z.0123456789abcdef.backup", database: "app.sqlite"))
    }

    // MARK: PostgreSQL

    func testPostgreSQLRefusesBackupAndRestoreBeforeAnythingRuns() throws {
        let server = try PostgresServer.shared()
        let project = try Project(self, backend: .postgres, files: ["sql/1.sql": "CREATE TABLE a (x integer);"])
        let url = try server.url(for: project.root)
        let refused = try runStrata(["migrate", "--manifest", project.manifestPath, "--database", url, "--backup", "b", "--format", "json"],
                                    in: project.root)
        XCTAssertEqual(refused.status, 3, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("pg_dump"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains("point-in-time recovery"), refused.stderr)
        let refusal = (try json(refused.stdout)["refusals"] as? [[String: Any]])?.first
        XCTAssertEqual(refusal?["reason"] as? String, "backup")
        XCTAssertFalse(FileManager.default.fileExists(atPath: project.root.appendingPathComponent("b").path))
        let connection = try PostgresConnection(url: url)
        XCTAssertFalse(try connection.history.exists(), "nothing ran")

        // The library refuses on a connection too, nothing pending or not.
        var options = MigrationOptions()
        options.backup = BackupOptions(directory: project.root.appendingPathComponent("b").path)
        let migrator = Migrator(manifest: try project.manifest(), database: connection)
        let error = assertThrows(MigrationError.self) { try migrator.migrate(options) }
        guard case .refused(let refusals)? = error else { return XCTFail("\(String(describing: error))") }
        XCTAssertEqual(refusals.map(\.reason), [.backup])
        XCTAssertFalse(try connection.history.exists())
        XCTAssertEqual(try migrator.migrate().applied.map(\.id), ["1.sql"])
        XCTAssertThrowsError(try migrator.migrate(options), "refused even with nothing to apply")

        let restore = try runStrata(["restore", "x.backup", "--database", url], in: project.root)
        XCTAssertEqual(restore.status, 3, restore.stderr)
        XCTAssertTrue(restore.stderr.contains("pg_restore"), restore.stderr)
    }
}
