import Foundation
import Strata
@testable import StrataCore
import XCTest

/// `strata rehearse`: the example database with a failing and with a passing migration pending (the file's bytes
/// the same afterwards, no file left anywhere, and `migrate` then doing what the rehearsal said), text and JSON
/// output, exit codes on every backend, and the refusal when no place has room for the copy.
final class RehearseCommandTests: XCTestCase {
    /// Runs `strata` with `TMPDIR` set, where the copy goes.
    func strata(_ arguments: [String], in directory: URL, temporary: URL) throws -> CommandResult {
        let process = Process()
        process.executableURL = try strataExecutable()
        process.arguments = arguments
        process.currentDirectoryURL = directory
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

    func object(_ result: CommandResult, file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        let value = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8))
        return try XCTUnwrap(value as? [String: Any], result.stdout, file: file, line: line)
    }

    /// A copy of the example project (`manifests/`, `sql/`, `csv/`) with `library.sqlite` built by `migrate`, as the
    /// Quick start leaves it (with the demo loans).
    func example() throws -> URL {
        let root = try makeTemporaryDirectory(self)
        for folder in ["manifests", "sql", "csv"] {
            try FileManager.default.copyItem(at: repositoryRoot().appendingPathComponent(folder),
                                             to: root.appendingPathComponent(folder))
        }
        let built = try runStrata(["migrate", "--manifest", "manifests/example.xml", "--context", "dev"], in: root)
        XCTAssertEqual(built.status, 0, built.stderr)
        return root
    }

    func listing(_ directory: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
    }

    func testTheExampleWithAFailingMigrationPendingReportsItsPlaceAndLeavesTheFileByteForByte() throws {
        let root = try example()
        let temporary = try makeTemporaryDirectory(self)
        try write("ALTER TABLE members ADD COLUMN phone TEXT;\nUPDATE loans SET nonsense = 1;\n",
                  to: root.appendingPathComponent("sql/005_bad.sql"))
        let database = root.appendingPathComponent("library.sqlite")
        let bytes = try Data(contentsOf: database)
        let files = try listing(root)

        let result = try strata(["rehearse", "--manifest", "manifests/example.xml", "--context", "dev"], in: root, temporary: temporary)
        XCTAssertEqual(result.status, 1, result.stdout + result.stderr)
        XCTAssertTrue(result.stderr.contains("strata rehearse: sql/005_bad.sql:2:1: no such column: nonsense"), result.stderr)
        XCTAssertTrue(result.stderr.contains("migrate would fail at 005_bad.sql: it would apply 0 steps before it and stop there. Nothing was changed."),
                      result.stderr)
        XCTAssertTrue(result.stdout.hasPrefix("Rehearsed on a copy of library.sqlite ("), result.stdout)
        XCTAssertTrue(result.stdout.contains("  failed        migration  005_bad.sql"), result.stdout)

        XCTAssertEqual(try Data(contentsOf: database), bytes, "the database's bytes changed")
        XCTAssertEqual(try listing(root), files)
        XCTAssertEqual(try listing(temporary), [])
        let status = try runStrata(["status", "--manifest", "manifests/example.xml", "--format", "json"], in: root)
        XCTAssertTrue(status.stdout.contains(#""id":"005_bad.sql","state":"pending""#), status.stdout)
    }

    func testTheExampleWithAPassingPlanReportsRowsAndSchemaAndMigrateDoesExactlyThat() throws {
        let root = try example()
        let temporary = try makeTemporaryDirectory(self)
        try write("""
            ALTER TABLE members ADD COLUMN phone TEXT;
            UPDATE members SET phone = '555-0100' WHERE active = 1;
            DELETE FROM loans WHERE returned_at IS NOT NULL;
            UPDATE books SET copies = copies + 1;
            CREATE INDEX members_phone ON members (phone);
            """, to: root.appendingPathComponent("sql/005_phones.sql"))
        let database = root.appendingPathComponent("library.sqlite")
        let bytes = try Data(contentsOf: database)
        let copies = try Database(path: database.path, configuration: .init(readOnly: true))
            .scalar("SELECT sum(copies) FROM books", as: Int.self) ?? 0

        let result = try strata(["rehearse", "--manifest", "manifests/example.xml", "--context", "dev", "--format", "json"],
                                in: root, temporary: temporary)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.hasPrefix(#"{"command":"rehearse","database":"library.sqlite","stage":"on a copy of library.sqlite"#),
                      result.stdout)
        let report = try object(result)
        XCTAssertEqual(report["wouldSucceed"] as? Bool, true)
        XCTAssertTrue(report["failure"] is NSNull)
        let steps = try XCTUnwrap(report["steps"] as? [[String: Any]])
        XCTAssertEqual(steps.map { $0["id"] as? String }, ["005_phones.sql"])
        XCTAssertEqual(steps[0]["outcome"] as? String, "applied")
        XCTAssertNotNil(steps[0]["durationMs"] as? Int)
        let tables = try XCTUnwrap(steps[0]["tables"] as? [[String: Any]])
        func row(_ name: String) -> [String: Any]? { tables.first { $0["table"] as? String == name } }
        XCTAssertEqual(tables.map { $0["table"] as? String }, ["books", "loans", "members"])
        XCTAssertEqual(row("members").map { [$0["inserted"], $0["updated"], $0["deleted"], $0["rowsBefore"], $0["rowsAfter"]] as? [Int] },
                       [0, 2, 0, 3, 3])
        XCTAssertEqual(row("loans").map { [$0["inserted"], $0["updated"], $0["deleted"], $0["rowsBefore"], $0["rowsAfter"]] as? [Int] },
                       [0, 0, 1, 3, 2])
        XCTAssertTrue(row("books")?["updated"] is NSNull, "books is WITHOUT ROWID: SQLite does not report its rows")
        XCTAssertEqual(row("books")?["rowsAfter"] as? Int, 5)
        XCTAssertTrue((row("books")?["note"] as? String)?.contains("WITHOUT ROWID") == true)
        let schema = try XCTUnwrap(report["schemaChanges"] as? [[String: Any]])
        XCTAssertEqual(schema.map { "\($0["action"] ?? "") \($0["kind"] ?? "") \($0["name"] ?? "")" },
                       ["added column phone", "added index members_phone"])
        XCTAssertEqual(try Data(contentsOf: database), bytes, "the database's bytes changed")
        XCTAssertEqual(try listing(temporary), [])

        // migrate afterwards does exactly that: the same schema difference, and those rows.
        try FileManager.default.copyItem(at: database, to: root.appendingPathComponent("before.sqlite"))
        let migrate = try runStrata(["migrate", "--manifest", "manifests/example.xml", "--context", "dev"], in: root)
        XCTAssertEqual(migrate.status, 0, migrate.stderr)
        let diff = try runStrata(["diff", "--database", "before.sqlite", "--database", "library.sqlite", "--format", "json"], in: root)
        XCTAssertEqual(diff.status, 3, diff.stderr)
        let differences = try XCTUnwrap(try object(diff)["differences"] as? [[String: Any]])
        XCTAssertEqual(differences as NSArray, schema as NSArray)
        let db = try Database(path: database.path)
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM members WHERE phone IS NOT NULL", as: Int.self), 2)
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM loans", as: Int.self), 2)
        XCTAssertEqual(try db.scalar("SELECT sum(copies) FROM books", as: Int.self), copies + 5)
    }

    func testOutputAndExitCodesOnEveryBackend() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, files: ["sql/001_books.sql": RehearseTests.schema])
            let temporary = try makeTemporaryDirectory(self)
            func rehearse(_ extra: [String] = []) throws -> CommandResult {
                try strata(["rehearse", "--manifest", project.manifestPath, "--database", project.location] + extra,
                           in: project.root, temporary: temporary)
            }
            let text = try rehearse()
            XCTAssertEqual(text.status, 0, text.stderr)
            let books = backend.kind == .sqlite ? "books" : "public.books"
            XCTAssertTrue(text.stdout.contains("  applied       migration  001_books.sql"), text.stdout)
            XCTAssertTrue(text.stdout.contains("      \(books): 4 inserted, 0 updated, 0 deleted"), text.stdout)
            XCTAssertTrue(text.stdout.contains("schema changes (2):\n  added    table      \(backend.kind == .sqlite ? "authors" : "public.authors")"),
                          text.stdout)
            XCTAssertTrue(text.stdout.hasSuffix("migrate would apply 1 step to \(DatabaseURL.redacted(project.location)). Nothing was changed.\n"),
                          text.stdout)

            XCTAssertEqual(try project.strataOnBackend(["migrate"]).status, 0)
            let nothing = try rehearse()
            XCTAssertEqual(nothing.status, 0)
            XCTAssertEqual(nothing.stdout, "Nothing to rehearse: \(DatabaseURL.redacted(project.location)) is up to date.\n")

            try project.file("sql/002_bad.sql", "CREATE TABLE kept (id INTEGER);\nINSERT INTO missing VALUES (1);\n")
            let failed = try rehearse(["--format", "json"])
            XCTAssertEqual(failed.status, 1, failed.stderr)
            let failure = try XCTUnwrap(try object(failed)["failure"] as? [String: Any])
            XCTAssertEqual(failure["id"] as? String, "002_bad.sql")
            XCTAssertEqual(failure["line"] as? Int, 2)
            XCTAssertEqual((try object(failed)["steps"] as? [[String: Any]])?.first?["outcome"] as? String, "failed")
            XCTAssertFalse(try project.connection().tableExists("kept"))

            try project.file("sql/001_books.sql", RehearseTests.schema + "\n-- changed\n")
            let refused = try rehearse(["--format", "json"])
            XCTAssertEqual(refused.status, 3, refused.stderr)
            XCTAssertTrue(refused.stdout.hasPrefix(#"{"command":"rehearse","error":"refused","message":""#), refused.stdout)
            XCTAssertTrue(refused.stdout.contains(#""refusals":[{"reason":"drift""#), refused.stdout)
            XCTAssertEqual(try listing(temporary), [])
        }
    }

    /// `--backup` is migrate's option on rehearse too: refused on PostgreSQL as migrate refuses it (exit 3, reason
    /// `backup`), before anything is begun.
    func testTheBackupOptionIsRefusedOnPostgreSQLAsMigrateRefusesIt() throws {
        _ = try PostgresServer.shared()
        let project = try Project(self, backend: .postgres, files: ["sql/001_books.sql": RehearseTests.schema])
        let refused = try project.strataOnBackend(["rehearse", "--backup", "backups", "--format", "json"])
        XCTAssertEqual(refused.status, 3, refused.stdout + refused.stderr)
        XCTAssertTrue(refused.stdout.contains(#""reason":"backup""#), refused.stdout)
        XCTAssertEqual(try project.strataOnBackend(["migrate", "--backup", "backups"]).status, 3, "migrate refuses it (the premise)")
    }

    /// A read-only connection to a database in WAL mode would leave the `-wal` and `-shm` files it makes; the
    /// rehearsal's (read-write, `query_only`) is the last to close and takes them away, writing nothing.
    func testADatabaseInWALModeIsLeftAsItWas() throws {
        let project = try Project(self, files: ["sql/001_books.sql": RehearseTests.schema])
        XCTAssertEqual(try project.strata(["migrate"]).status, 0)
        XCTAssertEqual(try project.database().scalar("PRAGMA journal_mode = WAL", as: String.self), "wal")
        try project.file("sql/002_change.sql", RehearseTests.change)
        let temporary = try makeTemporaryDirectory(self)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: project.databasePath))
        let files = try listing(project.root)
        XCTAssertFalse(files.contains("db.sqlite-wal"), "\(files)")
        let result = try strata(["rehearse", "--manifest", project.manifestPath], in: project.root, temporary: temporary)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains("      books: 2 inserted, 2 updated, 1 deleted (rows 4 → 5)"), result.stdout)
        XCTAssertEqual(try listing(project.root), files)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: project.databasePath)), bytes)
        XCTAssertEqual(try listing(temporary), [])
    }

    /// A WAL database whose `-wal` still holds frames (its program killed, or running): the rehearsal's connection,
    /// the last to close, must not checkpoint them into the file, nor remove the `-wal` and `-shm`.
    func testAWALStillHoldingFramesIsNotCheckpointedIntoTheFile() throws {
        let project = try Project(self, files: ["sql/001_books.sql": RehearseTests.schema])
        XCTAssertEqual(try project.strata(["migrate"]).status, 0)
        let crashed = try makeTemporaryDirectory(self)
        let path = crashed.appendingPathComponent("db.sqlite").path
        do {
            // The files as a killed program leaves them: copied while its connection is open and idle.
            let app = try project.database()
            XCTAssertEqual(try app.scalar("PRAGMA journal_mode = WAL", as: String.self), "wal")
            try app.execute("PRAGMA wal_autocheckpoint = 0")
            try app.execute("INSERT INTO authors (id, name) VALUES (3, 'Butler')")
            for suffix in ["", "-wal", "-shm"] {
                try FileManager.default.copyItem(atPath: project.databasePath + suffix, toPath: path + suffix)
            }
            app.close()
        }
        try project.file("sql/002_more.sql", "CREATE TABLE shelves (id INTEGER PRIMARY KEY);\n")
        let files = try listing(crashed)
        XCTAssertEqual(files, ["db.sqlite", "db.sqlite-shm", "db.sqlite-wal"])
        let bytes = try files.map { try Data(contentsOf: crashed.appendingPathComponent($0)) }

        let result = try strata(["rehearse", "--manifest", project.manifestPath, "--database", path], in: project.root,
                                temporary: try makeTemporaryDirectory(self))
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains("Nothing was changed."), result.stdout)
        XCTAssertEqual(try listing(crashed), files, "the -wal was checkpointed and removed")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), bytes[0], "the database file was rewritten")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path + "-wal")), bytes[2])
        // The frames are still the database's: its program, or the next writer, reads them.
        XCTAssertEqual(try Database(path: path).scalar("SELECT count(*) FROM authors", as: Int.self), 3)
    }

    /// A `transaction="none"` file over 4 MiB is not read ahead; the copy's authorizer alone keeps it from attaching
    /// the real database by an expression and writing to it.
    func testALargeFileCannotReachTheRealDatabaseThroughAnAttachByExpression() throws {
        let project = try Project(self, files: ["sql/001_books.sql": RehearseTests.schema])
        XCTAssertEqual(try project.strata(["migrate"]).status, 0)
        let padding = String(repeating: "-- " + String(repeating: "x", count: 100) + "\n", count: (4 << 20) / 104 + 100)
        try project.file("sql/002_attach.sql", padding + """
            ATTACH '\(project.databasePath.dropLast(7))' || '.sqlite' AS real;
            INSERT INTO real.authors (id, name) VALUES (99, 'written by a rehearsal');
            DETACH real;
            """)
        try project.file("manifest.xml", #"<manifest version="1"><database path="db.sqlite"/><migrations directory="sql"><migration file="002_attach.sql" transaction="none"/></migrations></manifest>"#)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: project.databasePath))
        let result = try strata(["rehearse", "--manifest", project.manifestPath], in: project.root,
                                temporary: try makeTemporaryDirectory(self))
        XCTAssertEqual(result.status, 4, result.stdout + result.stderr)
        XCTAssertTrue(result.stderr.contains("outside the rehearsal's copy"), result.stderr)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: project.databasePath)), bytes)
        XCTAssertEqual(try project.database().scalar("SELECT count(*) FROM authors", as: Int.self), 2)
    }

    /// The same statement with a literal file, in a file too large to be read ahead: the rehearsal stops the step at
    /// it, which migrate would run, so the verdict is not known (exit 4), never "migrate would fail".
    func testAStepTheRehearsalStopsIsNoVerdict() throws {
        let project = try Project(self, files: ["sql/001_books.sql": RehearseTests.schema])
        XCTAssertEqual(try project.strata(["migrate"]).status, 0)
        let padding = String(repeating: "-- " + String(repeating: "x", count: 100) + "\n", count: (4 << 20) / 104 + 100)
        try project.file("sql/002_attach.sql", padding + """
            ATTACH 'side.sqlite' AS side;
            CREATE TABLE side.log (x);
            DETACH side;
            CREATE TABLE after_attach (x);
            """)
        try project.file("manifest.xml", #"<manifest version="1"><database path="db.sqlite"/><migrations directory="sql"><migration file="002_attach.sql" transaction="none"/></migrations></manifest>"#)
        let temporary = try makeTemporaryDirectory(self)
        let result = try strata(["rehearse", "--manifest", project.manifestPath, "--format", "json"], in: project.root,
                                temporary: temporary)
        XCTAssertEqual(result.status, 4, result.stdout + result.stderr)
        let object = try object(result)
        XCTAssertEqual(object["wouldFail"] as? Bool, false)
        XCTAssertEqual(object["notRehearsedUpToFailure"] as? [String], ["002_attach.sql"])
        XCTAssertTrue((object["failureNotKnownBecause"] as? String)?.hasPrefix("the rehearsal's own rules stopped") == true, "\(object)")
        let step = try XCTUnwrap((object["steps"] as? [[String: Any]])?.first)
        XCTAssertTrue((step["note"] as? String)?.hasPrefix("whether migrate would fail here is not known: the rehearsal's own rules stopped a statement migrate would run") == true, "\(step)")
        let text = try strata(["rehearse", "--manifest", project.manifestPath], in: project.root, temporary: temporary)
        XCTAssertEqual(text.status, 4)
        XCTAssertTrue(text.stderr.contains("whether migrate would fail at 002_attach.sql is not known: the rehearsal's own rules stopped a statement migrate would run"),
                      text.stderr)
        XCTAssertFalse(text.stderr.contains("  migrate would fail at"), text.stderr)
        XCTAssertFalse(text.stderr.contains("record the step failed"), text.stderr)
        XCTAssertTrue(text.stderr.contains("the rehearsal stopped the file at a statement migrate would run"), text.stderr)
        XCTAssertEqual(try project.strata(["migrate"]).status, 0, "migrate applies it")
        XCTAssertTrue(try project.database().tableExists("after_attach"))
    }

    /// A `transaction="none"` file failing part-way in a rehearsal: nothing was recorded, so the text says what
    /// migrate would leave and sends no one to `strata resolve`.
    func testAPartlyAppliedFailureSaysWhatMigrateWouldLeave() throws {
        let project = try Project(self, files: ["sql/001_books.sql": RehearseTests.schema])
        XCTAssertEqual(try project.strata(["migrate"]).status, 0)
        try project.file("sql/002_none.sql", "INSERT INTO authors (id, name) VALUES (3, 'Butler');\nINSERT INTO nowhere VALUES (1);\n")
        try project.file("manifest.xml", #"<manifest version="1"><database path="db.sqlite"/><migrations directory="sql"><migration file="002_none.sql" transaction="none"/></migrations></manifest>"#)
        let result = try strata(["rehearse", "--manifest", project.manifestPath], in: project.root,
                                temporary: try makeTemporaryDirectory(self))
        XCTAssertEqual(result.status, 1, result.stderr)
        XCTAssertTrue(result.stderr.contains("sql/002_none.sql:2:1: no such table: nowhere; the 1 statement before line 2 stayed applied; nothing after the failing statement ran (in the rehearsal, where nothing is kept or recorded; migrate would leave the same applied and record the step failed)"),
                      result.stderr)
        for text in [result.stdout, result.stderr] {
            XCTAssertFalse(text.contains("recorded failed"), text)
            XCTAssertFalse(text.contains("strata resolve"), text)
        }
        XCTAssertEqual(try project.migrator().status().first { $0.id == "002_none.sql" }?.state, .pending)
    }

    /// A failure after a step that was not rehearsed: exit 4, not known, naming that step; JSON says so too.
    func testAFailureAfterAStepNotRehearsedExitsFourNotOne() throws {
        let project = try Project(self, files: ["sql/001_books.sql": RehearseTests.schema])
        XCTAssertEqual(try project.strata(["migrate"]).status, 0)
        try project.file("sql/002_attach.sql", "ATTACH 'other.sqlite' AS other;\nCREATE TABLE other.t (id INTEGER);\nDETACH other;\n")
        try project.file("sql/003_fails.sql", "INSERT INTO nowhere VALUES (1);\n")
        try project.file("manifest.xml", #"<manifest version="1"><database path="db.sqlite"/><migrations directory="sql"><migration file="002_attach.sql" transaction="none"/></migrations></manifest>"#)
        let temporary = try makeTemporaryDirectory(self)
        let text = try strata(["rehearse", "--manifest", project.manifestPath], in: project.root, temporary: temporary)
        XCTAssertEqual(text.status, 4, text.stderr)
        XCTAssertTrue(text.stderr.contains("whether migrate would fail at 003_fails.sql is not known: it failed here after 002_attach.sql, which was not rehearsed"),
                      text.stderr)
        let json = try strata(["rehearse", "--manifest", project.manifestPath, "--format", "json"], in: project.root,
                              temporary: temporary)
        XCTAssertEqual(json.status, 4, json.stderr)
        let object = try object(json)
        XCTAssertEqual(object["wouldSucceed"] as? Bool, false)
        XCTAssertEqual(object["wouldFail"] as? Bool, false)
        XCTAssertEqual(object["notRehearsedUpToFailure"] as? [String], ["002_attach.sql"])
    }

    func testACopyTakenWhileFourProcessesWriteIsOneOfTheirCommittedStatesInRollbackJournalMode() throws {
        try rehearseWhileFourProcessesWrite(wal: false)
    }

    func testACopyTakenWhileFourProcessesWriteIsOneOfTheirCommittedStatesInWALMode() throws {
        try rehearseWhileFourProcessesWrite(wal: true)
    }

    /// Four writer processes commit as fast as they can while `strata rehearse` runs three times. Each rehearsal's
    /// step fails unless its copy is one committed state (counter n = rows of commits = their largest total), and
    /// reports the copy's rows as updated: a state a writer logged as committed. The database gets nothing.
    private func rehearseWhileFourProcessesWrite(wal: Bool) throws {
        let project = try Project(self, files: ["sql/1_tables.sql": WriterProcess.tablesSQL])
        if wal { _ = try Database(path: project.databasePath, configuration: Database.Configuration(walMode: true)) }
        XCTAssertEqual(try project.strata(["migrate"]).status, 0)
        try project.file("sql/2_check.sql", """
            CREATE TABLE consistent (ok INTEGER NOT NULL);
            INSERT INTO consistent SELECT CASE WHEN (SELECT count(*) FROM commits) = (SELECT n FROM counter)
                AND (SELECT coalesce(max(total), 0) FROM commits) = (SELECT n FROM counter) THEN 1 END;
            UPDATE commits SET seq = seq;
            """)
        let writers = try FourWriters(database: project.databasePath, directory: project.root)
        defer { writers.stop() }
        XCTAssertTrue(try writers.waitForCommits(20), writers.printed)

        var copied: [Int] = []
        let temporary = try makeTemporaryDirectory(self)
        for _ in 1...3 {
            let result = try strata(["rehearse", "--manifest", project.manifestPath, "--format", "json"], in: project.root,
                                    temporary: temporary)
            XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
            let step = try XCTUnwrap((try object(result)["steps"] as? [[String: Any]])?.first, result.stdout)
            let commits = try XCTUnwrap((step["tables"] as? [[String: Any]])?.first { $0["table"] as? String == "commits" }, result.stdout)
            copied.append(try XCTUnwrap(commits["updated"] as? Int, result.stdout))
        }
        writers.stop()
        for writer in writers.writers {
            XCTAssertEqual(writer.process.terminationStatus, 0, writer.printed)
        }
        let logged = Set(try writers.commits().keys)
        for total in copied {
            XCTAssertTrue(logged.contains(total), "a copy held \(total) commits, a state no writer logged")
        }
        XCTAssertGreaterThanOrEqual(copied.first ?? 0, 80)
        let db = try project.database()
        XCTAssertFalse(try db.tableExists("consistent"))
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM strata_history", as: Int.self), 1)
        XCTAssertEqual(try listing(temporary), [])
    }

    func testAMissingDatabaseIsRehearsedAsAnEmptyOneAndNotCreated() throws {
        let project = try Project(self, files: ["sql/001_books.sql": RehearseTests.schema])
        let temporary = try makeTemporaryDirectory(self)
        let result = try strata(["rehearse", "--manifest", project.manifestPath], in: project.root, temporary: temporary)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.hasPrefix("Rehearsed on a new, empty database in "), result.stdout)
        XCTAssertFalse(FileManager.default.fileExists(atPath: project.databasePath))
        XCTAssertEqual(try listing(temporary), [])
    }

    /// On small filesystems (tmpfs mounts in a private mount namespace, so nothing outside the test sees them):
    /// neither the temporary directory nor the database's directory has room for the copy.
    func testACopyThatFitsNowhereIsRefusedWithTheSizeNeeded() throws {
        let project = try Project(self, files: [
            "sql/001_blob.sql": "CREATE TABLE blobs (data BLOB);\nINSERT INTO blobs VALUES (zeroblob(150000));\n",
        ])
        XCTAssertEqual(try project.strata(["migrate"]).status, 0)
        try project.file("sql/002_more.sql", "INSERT INTO blobs VALUES (x'00');\n")
        let strataPath = try strataExecutable().path
        for name in ["small-db", "small-tmp"] {
            try FileManager.default.createDirectory(at: project.root.appendingPathComponent(name), withIntermediateDirectories: true)
        }
        let script = """
            set -e
            mount -t tmpfs -o size=256k tmpfs small-db
            mount -t tmpfs -o size=64k tmpfs small-tmp
            cp db.sqlite small-db/db.sqlite
            TMPDIR="$PWD/small-tmp" "\(strataPath)" rehearse --manifest manifest.xml --database small-db/db.sqlite || echo "exit $?"
            ls -A small-db small-tmp
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        process.arguments = ["--mount", "/bin/sh", "-c", script]
        process.currentDirectoryURL = project.root
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare") else { throw XCTSkip("no unshare here") }
        try process.run()
        let stdout = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        if stderr.contains("mount:") || stderr.contains("unshare:") {
            throw XCTSkip("cannot mount a small filesystem here: \(stderr)")
        }
        XCTAssertTrue(stdout.contains("exit 3"), stdout + stderr)
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: project.databasePath)[.size] as? Int)
        XCTAssertTrue(stderr.contains("strata rehearse: rehearse needs \(size / 1024) KiB (\(size) bytes, the size of small-db/db.sqlite) free for its copy, and no place has it: \(project.root.path)/small-db: "),
                      stderr)
        XCTAssertTrue(stderr.contains(" KiB free; \(project.root.path)/small-tmp: 64 KiB free; free some space, or point TMPDIR at a filesystem that has it"), stderr)
        XCTAssertEqual(stdout.split(separator: "\n").filter { !$0.hasPrefix("exit") },
                       ["small-db:", "db.sqlite", "small-tmp:"], "nothing was left on either filesystem")
    }
}
