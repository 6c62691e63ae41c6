import Foundation
import XCTest
import Strata
@testable import StrataCore
@testable import StrataPostgres
@testable import StrataSQLite

/// What deploy scripts and CI gates rely on: `status --exit-code`, the exit code and JSON reason of a database that
/// cannot be connected to, `--wait`, the variables naming the database, one JSON failure shape, and the refusal of a
/// bare word that would become a new SQLite file. Waiting for a server that comes up later is
/// `PostgresWaitTests`.
final class GateTests: XCTestCase {
    private func object(_ result: CommandResult) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], result.stdout)
    }

    func testStatusExitCodeSaysWhenStepsArePending() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);",
                                                                      "sql/2_b.sql": "CREATE TABLE b (x INTEGER);"])
            XCTAssertEqual(try project.strataOnBackend(["status"]).status, 0, "without --exit-code pending is no failure")
            let pending = try project.strataOnBackend(["status", "--exit-code"])
            XCTAssertEqual(pending.status, 6, pending.stderr)
            XCTAssertTrue(pending.stderr.contains("2 steps not applied yet: 1_a.sql, 2_b.sql"), pending.stderr)
            XCTAssertEqual(try project.strataOnBackend(["status", "--exit-code", "--format", "json"]).status, 6)
            XCTAssertEqual(try project.strataOnBackend(["migrate", "--to", "1_a.sql"]).status, 0)
            XCTAssertEqual(try project.strataOnBackend(["status", "--exit-code"]).status, 6, "one still pending")
            XCTAssertEqual(try project.strataOnBackend(["migrate"]).status, 0)
            let upToDate = try project.strataOnBackend(["status", "--exit-code"])
            XCTAssertEqual(upToDate.status, 0, upToDate.stderr)
            // Something wrong outranks something pending: drift is exit 3 with --exit-code too.
            try project.file("sql/1_a.sql", "CREATE TABLE a (x INTEGER, y INTEGER);")
            try project.file("sql/3_c.sql", "CREATE TABLE c (x INTEGER);")
            XCTAssertEqual(try project.strataOnBackend(["status", "--exit-code"]).status, 3)
        }
    }

    /// A database that cannot be opened is exit 5 with reason `cannot-connect`, apart from a step that failed (exit 1,
    /// `step-failed`); with `--wait` the command retries, and a wait that runs out is exit 5 too.
    func testADatabaseThatCannotBeOpenedIsExitFiveApartFromAFailedStep() throws {
        let project = try Project(self, files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);\nSELEC 1;"])
        // SQLite cannot create a file in a directory that does not exist.
        let missing = project.root.appendingPathComponent("no-such-directory/db.sqlite").path
        for command in ["migrate", "seed", "baseline", "repair"] {
            var arguments = [command, "--database", missing, "--format", "json"]
            if command == "baseline" { arguments += ["--through", "1_a.sql"] }
            let result = try project.strata(arguments)
            XCTAssertEqual(result.status, 5, "\(command): \(result.stderr)")
            let failure = try object(result)
            XCTAssertEqual(failure["command"] as? String, command)
            XCTAssertEqual(failure["error"] as? String, "cannot-connect")
            XCTAssertEqual(failure["database"] as? String, missing)
            XCTAssertNotNil(failure["message"] as? String)
        }
        let waited = try project.strata(["migrate", "--database", missing, "--wait", "0.3"])
        XCTAssertEqual(waited.status, 5, waited.stderr)
        XCTAssertTrue(waited.stderr.contains("waiting up to 0.3 s for \(missing) to answer"), waited.stderr)
        XCTAssertTrue(waited.stderr.contains("did not answer within"), waited.stderr)
        XCTAssertEqual(try project.strata(["migrate", "--database", missing, "--wait", "soon"]).status, 2)

        let failed = try project.strata(["migrate", "--format", "json"])
        XCTAssertEqual(failed.status, 1, failed.stderr)
        let report = try object(failed)
        XCTAssertEqual(report["error"] as? String, "step-failed")
        XCTAssertEqual((report["failure"] as? [String: Any])?["line"] as? Int, 2)
        XCTAssertTrue((report["message"] as? String)?.contains("1_a.sql") ?? false, "\(report)")
    }

    /// SIGTERM ends a `--wait` at once: nothing ran, exit 143, as a stop between steps.
    func testAStopSignalEndsTheWait() throws {
        let project = try Project(self, files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);"])
        let missing = project.root.appendingPathComponent("not-mounted-yet/db.sqlite").path
        let (process, _, err) = try startStrata(["migrate", "--manifest", project.manifestPath, "--database", missing,
                                                 "--wait", "600", "--format", "json"], in: project.root)
        let stderr = PipeWatcher(err)
        XCTAssertTrue(stderr.wait(for: "waiting up to 600 s for", from: process), stderr.text)
        process.terminate()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 143, stderr.text)
        XCTAssertTrue(stderr.wait(for: "stopped waiting for", from: process), stderr.text)
    }

    func testCannotConnectToAPostgreSQLServerThatIsNotThere() throws {
        _ = try PostgresServer.shared()
        let project = try Project(self, files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);"])
        // A socket directory no server listens in.
        let nobody = "postgresql://postgres@/x?host=\(project.root.path)&port=5999"
        for command in ["migrate", "status", "plan", "check", "rehearse"] {
            let result = try project.strata([command, "--database", nobody, "--format", "json"])
            XCTAssertEqual(result.status, 5, "\(command): \(result.stderr)")
            XCTAssertEqual(try object(result)["error"] as? String, "cannot-connect", command)
        }
        let schema = try runStrata(["schema", "--database", nobody], in: project.root)
        XCTAssertEqual(schema.status, 5, schema.stderr)
        let waited = try project.strata(["status", "--database", nobody, "--wait", "1", "--format", "json"])
        XCTAssertEqual(waited.status, 5, waited.stderr)
        XCTAssertTrue(waited.stderr.contains("waiting up to 1 s"), waited.stderr)
        XCTAssertEqual(try object(waited)["error"] as? String, "cannot-connect")
        // A server that answers and has no such database: waiting would not help, so no wait.
        let noSuchDatabase = try PostgresServer.shared().url(database: "strata_no_such_database")
        let refused = try project.strata(["status", "--database", noSuchDatabase, "--wait", "600"])
        XCTAssertEqual(refused.status, 5, refused.stderr)
        XCTAssertFalse(refused.stderr.contains("waiting up to"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains("does not exist"), refused.stderr)
    }

    /// `--database`, then the manifest's `<database>`, then `STRATA_DATABASE`, then `DATABASE_URL`.
    func testTheVariablesNameTheDatabaseWhenNothingElseDoes() throws {
        let project = try Project(self, manifest: #"<manifest version="1"><migrations directory="sql"/></manifest>"#,
                                  files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);"])
        let root = project.root
        func path(_ name: String) -> String { root.appendingPathComponent(name).path }
        func applied(_ name: String) -> Bool {
            (try? Database(path: path(name)).tableExists("a")) ?? false
        }
        let none = try project.strata(["migrate"])
        XCTAssertEqual(none.status, 2)
        XCTAssertTrue(none.stderr.contains("STRATA_DATABASE or DATABASE_URL"), none.stderr)
        XCTAssertEqual(try runStrata(["migrate", "--manifest", "manifest.xml"], in: root, environment: ["DATABASE_URL": ""]).status, 2,
                       "an empty variable names nothing")

        var result = try runStrata(["migrate", "--manifest", "manifest.xml"], in: root, environment: ["DATABASE_URL": "url.sqlite"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(applied("url.sqlite"))
        result = try runStrata(["migrate", "--manifest", "manifest.xml"], in: root,
                               environment: ["DATABASE_URL": "url2.sqlite", "STRATA_DATABASE": "strata.sqlite"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(applied("strata.sqlite"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: path("url2.sqlite")), "STRATA_DATABASE comes first")
        result = try runStrata(["migrate", "--manifest", "manifest.xml", "--database", "option.sqlite"], in: root,
                               environment: ["STRATA_DATABASE": "strata2.sqlite"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(applied("option.sqlite"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: path("strata2.sqlite")), "--database comes first")

        try project.file("manifest.xml", #"<manifest version="1"><database path="manifest.sqlite"/><migrations directory="sql"/></manifest>"#)
        result = try runStrata(["status", "--manifest", "manifest.xml", "--format", "json"], in: root,
                               environment: ["STRATA_DATABASE": "strata.sqlite"])
        XCTAssertEqual(try object(result)["database"] as? String, "manifest.sqlite", "the manifest's database comes before the variables")
        // A variable is checked as --database is: a bare word is refused, naming the variable.
        try project.file("manifest.xml", #"<manifest version="1"><migrations directory="sql"/></manifest>"#)
        result = try runStrata(["migrate", "--manifest", "manifest.xml"], in: root, environment: ["DATABASE_URL": "errdb"])
        XCTAssertEqual(result.status, 2, result.stderr)
        XCTAssertTrue(result.stderr.contains("$DATABASE_URL ('errdb')"), result.stderr)
        // diff takes the variable as its first database when no --database names one.
        let snapshot = try runStrata(["schema", "--database", "url.sqlite", "--format", "json"], in: root)
        try project.file("url.json", snapshot.stdout)
        result = try runStrata(["diff", "--schema", "url.json"], in: root, environment: ["STRATA_DATABASE": "strata.sqlite"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stdout.contains("strata.sqlite and url.json"), result.stdout)
    }

    /// `--database errdb` (a PostgreSQL user's database name) would make a new SQLite file `errdb` and report steps
    /// applied to it: refused, with the two ways to say what was meant. An existing file of that name still works.
    func testABareWordIsNotANewSQLiteFile() throws {
        let project = try Project(self, files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);"])
        let root = project.root
        for command in ["migrate", "status", "plan"] {
            for format in ["text", "json"] {
                let result = try project.strata([command, "--database", "errdb", "--format", format])
                XCTAssertEqual(result.status, 2, "\(command): \(result.stderr)")
                XCTAssertTrue(result.stderr.contains("postgres://HOST/errdb"), result.stderr)
                XCTAssertTrue(result.stderr.contains("./errdb"), result.stderr)
                if format == "json" {
                    let failure = try object(result)
                    XCTAssertEqual(failure["error"] as? String, "usage")
                    XCTAssertTrue((failure["message"] as? String)?.contains("./errdb") ?? false)
                }
            }
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: root.appendingPathComponent("errdb").path), "nothing was created")
        for name in ["./errdb", "errdb.sqlite", "errdb.DB", "errdb.sqlite3", "file:errdb3"] {
            let result = try project.strata(["migrate", "--database", name])
            XCTAssertEqual(result.status, 0, "\(name): \(result.stderr)")
        }
        // errdb exists now (made by ./errdb): the bare word names it.
        let existing = try project.strata(["status", "--database", "errdb", "--format", "json"])
        XCTAssertEqual(existing.status, 0, existing.stderr)
        XCTAssertEqual((try object(existing)["steps"] as? [[String: Any]])?.first?["state"] as? String, "applied")
    }

    /// Every failure prints one object of one shape, `{"command","error","message",…}`, even for a command line the
    /// parser refused; `strata help nosuch` is a usage error.
    func testOneFailureShapeAndHelpOfNoCommand() throws {
        let project = try Project(self, files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);"])
        for arguments in [["migrate", "--bogus", "--format", "json"], ["migrate", "--format=json", "--timeout", "x"],
                          ["migrate", "--format", "json", "--to", "nosuch.sql"]] {
            let result = try project.strata(arguments)
            XCTAssertEqual(result.status, 2, result.stderr)
            let failure = try object(result)
            XCTAssertEqual(failure["command"] as? String, "migrate")
            XCTAssertEqual(failure["error"] as? String, "usage", "\(arguments)")
            XCTAssertNotNil(failure["message"] as? String)
        }
        let help = try runStrata(["help", "nosuch"], in: project.root)
        XCTAssertEqual(help.status, 2)
        XCTAssertTrue(help.stderr.contains("no command 'nosuch'"), help.stderr)
        XCTAssertEqual(try runStrata(["help", "migrate", "extra"], in: project.root).status, 2)
        XCTAssertEqual(try runStrata(["help", "status"], in: project.root).status, 0)
        let statusHelp = try runStrata(["status", "--help"], in: project.root)
        XCTAssertTrue(statusHelp.stdout.contains("--exit-code"), statusHelp.stdout)
        XCTAssertTrue(statusHelp.stdout.contains("--wait SECONDS"), statusHelp.stdout)
        XCTAssertTrue(statusHelp.stdout.contains("$DATABASE_URL"), statusHelp.stdout)
    }
}
