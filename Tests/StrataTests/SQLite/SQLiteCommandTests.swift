import Foundation
import XCTest
import Strata
@testable import StrataCore
@testable import StrataSQLite

/// The command where SQLite is the subject: what `--database` may name (SQLite reads "", `:memory:` and `file:`
/// URIs with VFS options as databases no file holds), `schema` (SQLite's schema text), the example project (SQLite
/// SQL), and a SIGINT test that pins a run inside a step with SQLite's rollback-journal locking. The command on
/// every backend is `CLITests`.
final class SQLiteCommandTests: XCTestCase {
    /// Split from `CLITests.testValidateTheExampleAndBrokenManifests`: `validate` checks SQL with SQLite's rules (it
    /// takes no --database), and the example project is written in SQLite's SQL.
    func testValidateTheExampleAndRefusesVACUUMInsideATransaction() throws {
        let ok = try runStrata(["validate", "--manifest", "manifests/example.xml"], in: repositoryRoot())
        XCTAssertEqual(ok.status, 0, ok.stderr)
        XCTAssertEqual(ok.stdout, "ok: 8 migrations (SQLite 4, PostgreSQL 4), 4 seeds, 2 models\n")

        let sqlProblem = try Project(self, files: ["sql/1_a.sql": "VACUUM;"])
        let lint = try sqlProblem.strata(["validate"])
        XCTAssertEqual(lint.status, 3)
        XCTAssertTrue(lint.stderr.contains("sql/1_a.sql:1:1: VACUUM cannot run inside a transaction"), lint.stderr)
    }

    /// Split from `CLITests.testBaselineNewAndSchemaCommands`: `schema` prints SQLite's own text of each object (as
    /// sqlite_schema keeps it), in a stable order, without Strata's history.
    func testSchemaPrintsTheSchemaInAStableOrderWithoutTheHistory() throws {
        let project = try Project(self, files: ["sql/001_a.sql": "CREATE TABLE a (x);", "sql/002_b.sql": "CREATE TABLE b (x);"])
        try project.database().execute("CREATE TABLE a (x)")
        XCTAssertEqual(try project.strata(["baseline", "--through", "001_a.sql"]).status, 0)
        try project.file("sql/003_add_index.sql", "CREATE INDEX b_x ON b (x);")
        XCTAssertEqual(try project.strata(["migrate"]).status, 0)
        let schema = try runStrata(["schema", "--database", "db.sqlite"], in: project.root)
        XCTAssertEqual(schema.stdout, "CREATE TABLE a (x);\n\nCREATE TABLE b (x);\n\nCREATE INDEX b_x ON b (x);\n")
    }

    func testADatabasePathThatNamesNoFileIsRefused() throws {
        let project = try Project(self, manifest: """
            <manifest version="1"><database path="db.sqlite"/><migrations directory="sql"/>
              <seeds><seed file="csv/t.csv" table="a"/></seeds></manifest>
            """, files: ["sql/1_a.sql": "CREATE TABLE a (x);", "csv/t.csv": "x\n1\n"])
        // "" (an unset variable in a deploy script) and ":memory:" would make SQLite use a database deleted at exit.
        for path in ["", ":memory:"] {
            for command in [["migrate"], ["seed"], ["baseline", "--through", "1_a.sql"], ["repair"],
                            ["resolve", "1_a.sql", "--applied"], ["status"], ["plan"], ["check"], ["schema"]] {
                let result = try project.strata(command + ["--database", path])
                XCTAssertEqual(result.status, 2, "\(command) --database '\(path)': \(result.stdout)\(result.stderr)")
                XCTAssertTrue(result.stderr.contains("--database '\(path)' names no database file"), result.stderr)
            }
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: project.databasePath))
        XCTAssertFalse(FileManager.default.fileExists(atPath: project.root.appendingPathComponent(":memory:").path))
    }

    func testADatabaseURIThatOpensNoFileIsRefused() throws {
        let project = try Project(self, manifest: """
            <manifest version="1"><database path="db.sqlite"/><migrations directory="sql"/>
              <seeds><seed file="csv/t.csv" table="a"/></seeds></manifest>
            """, files: ["sql/1_a.sql": "CREATE TABLE a (x);", "csv/t.csv": "x\n1\n"])
        // SQLite reads `file:` URIs: these open databases in memory, gone at exit, whatever the name spells.
        let commands = [["migrate"], ["seed"], ["baseline", "--through", "1_a.sql"], ["repair"],
                        ["resolve", "1_a.sql", "--applied"], ["status"], ["plan"], ["check"], ["schema"]]
        for path in ["file::memory:", "file:x.db?mode=memory", "file:/strata-test-memdb?vfs=memdb"] {
            for command in commands {
                let result = try project.strata(command + ["--database", path])
                XCTAssertEqual(result.status, 2, "\(command) --database '\(path)': \(result.stdout)\(result.stderr)")
                XCTAssertTrue(result.stderr.contains("--database '\(path)' names no database file"), result.stderr)
            }
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: project.root.path).sorted()
        XCTAssertEqual(left, ["csv", "manifest.xml", "sql"], "no file is created by a refused command")

        // A URI that names a file is that file, for writing and for reading commands alike.
        let migrate = try project.strata(["migrate", "--database", "file:db.sqlite"])
        XCTAssertEqual(migrate.status, 0, migrate.stderr)
        XCTAssertEqual(try project.database().scalar("SELECT count(*) FROM a", as: Int.self), 1)
        let status = try project.strata(["status", "--database", "file:db.sqlite", "--format", "json"])
        XCTAssertEqual(status.status, 0, status.stderr)
        XCTAssertFalse(status.stdout.contains("pending"), status.stdout)
        let schema = try project.strata(["schema", "--database", "file:db.sqlite"])
        XCTAssertEqual(schema.status, 0, schema.stderr)
        XCTAssertTrue(schema.stdout.contains("CREATE TABLE a"), schema.stdout)
    }

    func testAFileURIWhoseParametersChangeHowSQLiteOpensTheFileIsRefused() throws {
        let project = try Project(self, manifest: """
            <manifest version="1"><database path="db.sqlite"/><migrations directory="sql"/>
              <seeds><seed file="csv/t.csv" table="a"/></seeds></manifest>
            """, files: ["sql/1_a.sql": "CREATE TABLE a (x);", "csv/t.csv": "x\n1\n"])
        // The file exists: `vfs=memdb` opened it as an empty database in memory, so migrate said "2 steps applied"
        // and kept nothing; `nolock`, `unix-none` and `immutable` remove the locking or lie about the file.
        try Database(path: project.databasePath).execute("CREATE TABLE kept (x)")
        let before = try Data(contentsOf: URL(fileURLWithPath: project.databasePath))
        let commands = [["migrate"], ["seed"], ["baseline", "--through", "1_a.sql"], ["repair"],
                        ["resolve", "1_a.sql", "--applied"], ["status"], ["plan"], ["check"], ["schema"]]
        for path in ["file:db.sqlite?vfs=memdb", "file:db.sqlite?nolock=1", "file:db.sqlite?vfs=unix-none",
                     "file:db.sqlite?immutable=1", "file:db.sqlite?mode=memory", "file:db.sqlite?vfs=unix-dotfile",
                     "file:db.sqlite?mode=rwc&vfs=memdb", "file:db.sqlite?cache=shared&nolock=1",
                     "file:db.sqlite?v%66s=memdb", "file:db.sqlite?nolock", "file:db.sqlite?immutable=1#x",
                     "file:./db.sqlite?mode=ro&immutable=true", "file:db.sqlite?vfs%00junk=memdb"] {
            for command in commands {
                let result = try project.strata(command + ["--database", path])
                XCTAssertEqual(result.status, 2, "\(command) --database '\(path)': \(result.stdout)\(result.stderr)")
                XCTAssertTrue(result.stderr.contains("--database '\(path)' names no database file"), result.stderr)
            }
        }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: project.databasePath)), before, "nothing was written")
        let left = try FileManager.default.contentsOfDirectory(atPath: project.root.path).sorted()
        XCTAssertEqual(left, ["csv", "db.sqlite", "manifest.xml", "sql"], "no file is created by a refused command")

        // The manifest's path is held to the same rule.
        try project.file("manifest.xml", """
            <manifest version="1"><database path="file:db.sqlite?vfs=memdb"/><migrations directory="sql"/></manifest>
            """)
        let fromManifest = try project.strata(["migrate"])
        XCTAssertEqual(fromManifest.status, 2, fromManifest.stdout + fromManifest.stderr)
        XCTAssertTrue(fromManifest.stderr.contains("names no database file"), fromManifest.stderr)

        // Parameters that leave the file opened as usual are fine.
        let migrate = try project.strata(["migrate", "--database", "file:db.sqlite?cache=private"])
        XCTAssertEqual(migrate.status, 0, migrate.stderr)
        XCTAssertTrue(try project.database().tableExists("a"))
        let status = try project.strata(["status", "--database", "file:db.sqlite?mode=ro"])
        XCTAssertEqual(status.status, 0, status.stderr)
        // After opening, the VFS SQLite actually used is checked too (memdb is not the default one).
        XCTAssertNotEqual(try Database(path: "file:/strata-vfs-probe?vfs=memdb").vfsName, Database.defaultVFSName)
        XCTAssertEqual(try project.database().vfsName, Database.defaultVFSName)
    }

    func testSchemaOfAMissingDatabaseFileFails() throws {
        let dir = try makeTemporaryDirectory(self)
        let result = try runStrata(["schema", "--database", "nope.sqlite"], in: dir)
        XCTAssertEqual(result.status, 1)
        XCTAssertEqual(result.stdout, "")
        XCTAssertTrue(result.stderr.contains("nope.sqlite does not exist"), result.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.appendingPathComponent("nope.sqlite").path))
    }

    func testSIGINTFinishesTheCurrentStepThenStops() throws {
        let project = try Project(self, files: ["sql/1_a.sql": "CREATE TABLE a (x);", "sql/2_b.sql": "CREATE TABLE b (x);",
                                                "sql/3_c.sql": "CREATE TABLE c (x);"])
        // A reader holds the database open, so the first step's COMMIT waits (rollback journal: a writer needs the
        // readers gone to commit). That pins the run inside step 1 while the signal arrives.
        try project.database().execute("CREATE TABLE pre (x)")
        let reader = try ReaderProcess(database: project.databasePath, table: "pre")
        let (process, _, err) = try startStrata(["migrate", "--manifest", project.manifestPath], in: project.root)
        let stderr = PipeWatcher(err)
        let deadline = Date().addingTimeInterval(60)
        while process.isRunning && Date() < deadline && !FileManager.default.fileExists(atPath: project.databasePath + "-journal") {
            Thread.sleep(forTimeInterval: 0.01)
        }
        kill(process.processIdentifier, SIGINT)
        XCTAssertTrue(stderr.wait(for: "SIGINT received", from: process), stderr.text)
        try reader.release()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationReason, .exit)
        XCTAssertEqual(process.terminationStatus, 130, stderr.text)
        XCTAssertTrue(stderr.wait(for: "stopped by SIGINT: applied by this run: 1_a.sql; not run: 2_b.sql, 3_c.sql", from: process), stderr.text)
        let db = try project.database()
        XCTAssertEqual(try db.query("SELECT identity FROM strata_history").all().map { $0[0] }, [.text("1_a.sql")],
                       "the current step finished and was recorded")
        XCTAssertTrue(try db.tableExists("a"))
        XCTAssertFalse(try db.tableExists("b"))
        XCTAssertEqual(try project.strata(["migrate"]).status, 0, "the next run applies the rest")
    }

    func testExampleManifestBuildsTheExampleDatabase() throws {
        let dir = try makeTemporaryDirectory(self)
        let path = dir.appendingPathComponent("library.sqlite").path
        let result = try runStrata(["migrate", "--manifest", "manifests/example.xml", "--database", path, "--context", "dev"],
                                   in: repositoryRoot())
        XCTAssertEqual(result.status, 0, result.stderr)
        let db = try Database(path: path)
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM books", as: Int.self), 5)
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM current_loans", as: Int.self), 2)
        XCTAssertEqual(try db.scalar("SELECT biography FROM authors WHERE id = 2", as: String.self), nil, "unquoted empty is NULL")
        XCTAssertEqual(try db.scalar("SELECT biography FROM authors WHERE id = 3", as: String.self), "", "quoted empty is ''")
        XCTAssertEqual(try db.scalar("SELECT summary FROM books WHERE isbn = '9780547773742'", as: String.self),
                       "A young wizard, Ged, learns\nthat names have power.")
        XCTAssertEqual(try db.scalar("SELECT joined_at FROM members WHERE id = 1", as: String.self), "2021-03-04T09:00:00Z")
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM books WHERE in_print = 0", as: Int.self), 1)
        let again = try runStrata(["migrate", "--manifest", "manifests/example.xml", "--database", path, "--context", "dev"],
                                  in: repositoryRoot())
        XCTAssertTrue(again.stdout.contains("Nothing to do"), again.stdout)
    }
}
