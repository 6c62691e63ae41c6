import Foundation
import XCTest
import Strata
@testable import StrataCore
@testable import StrataSQLite

final class CLITests: XCTestCase {
    func testVersionHelpAndUsageErrors() throws {
        let dir = try makeTemporaryDirectory(self)
        XCTAssertEqual(try runStrata(["--version"], in: dir).stdout, "strata \(Strata.version)\n")
        let help = try runStrata(["--help"], in: dir)
        XCTAssertEqual(help.status, 0)
        XCTAssertTrue(help.stdout.contains("migrate"))
        var result = try runStrata(["frobnicate"], in: dir)
        XCTAssertEqual(result.status, 2)
        XCTAssertTrue(result.stderr.contains("unknown command 'frobnicate'"))
        result = try runStrata([], in: dir)
        XCTAssertEqual(result.status, 2)
        result = try runStrata(["migrate", "--bogus"], in: dir)
        XCTAssertEqual(result.status, 2)
        XCTAssertTrue(result.stderr.contains("unknown option --bogus"))
        result = try runStrata(["migrate", "--manifest"], in: dir)
        XCTAssertEqual(result.status, 2)
        result = try runStrata(["status", "--format", "yaml", "--manifest", "m.xml"], in: dir)
        XCTAssertEqual(result.status, 2)
        result = try runStrata(["resolve", "--applied", "--manifest", "m.xml"], in: dir)
        XCTAssertEqual(result.status, 2, "missing positional")
        result = try runStrata(["migrate", "--help"], in: dir)
        XCTAssertEqual(result.status, 0)
        XCTAssertTrue(result.stdout.contains("--strict-order"))
    }

    func testValidateTheExampleAndBrokenManifests() throws {
        let ok = try runStrata(["validate", "--manifest", "manifests/example.xml"], in: repositoryRoot())
        XCTAssertEqual(ok.status, 0, ok.stderr)
        XCTAssertEqual(ok.stdout, "ok: 4 migrations, 4 seeds, 2 models\n")

        let project = try Project(self, manifest: "<manifest version=\"1\">\n  <seeds><seed table=\"t\"/></seeds>\n</manifest>", files: [:])
        let broken = try runStrata(["validate", "--manifest", "manifest.xml"], in: project.root)
        XCTAssertEqual(broken.status, 1)
        XCTAssertTrue(broken.stderr.hasPrefix("manifest.xml:2:"), broken.stderr)
        let json = try runStrata(["validate", "--manifest", "manifest.xml", "--format", "json"], in: project.root)
        XCTAssertEqual(json.status, 1)
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        XCTAssertEqual((object?["problems"] as? [[String: Any]])?.first?["line"] as? Int, 2)

        let sqlProblem = try Project(self, files: ["sql/1_a.sql": "VACUUM;"])
        let lint = try sqlProblem.strata(["validate"])
        XCTAssertEqual(lint.status, 1)
        XCTAssertTrue(lint.stderr.contains("sql/1_a.sql:1:1: VACUUM cannot run inside a transaction"), lint.stderr)

        let migrate = try runStrata(["migrate", "--manifest", "manifest.xml"], in: project.root)
        XCTAssertEqual(migrate.status, 3, "other commands refuse an invalid manifest with exit 3")
    }

    func testValidateAndMigratePrintManifestWarnings() throws {
        let project = try Project(self, files: ["sql/1_a.sql": "CREATE TABLE a (x);", "sql/2_b.SQL": "CREATE TABLE b (x);"])
        let warning = "warning: manifest.xml:1: '2_b.SQL' in migrations directory 'sql' is not a migration"
        let text = try runStrata(["validate", "--manifest", "manifest.xml"], in: project.root)
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertEqual(text.stdout, "ok: 1 migration, 0 seeds, 0 models\n")
        XCTAssertTrue(text.stderr.hasPrefix(warning), text.stderr)
        let json = try runStrata(["validate", "--manifest", "manifest.xml", "--format", "json"], in: project.root)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let warnings = try XCTUnwrap(object["warnings"] as? [[String: Any]])
        XCTAssertEqual(warnings.count, 1)
        XCTAssertEqual(warnings.first?["file"] as? String, "manifest.xml")
        XCTAssertEqual(warnings.first?["line"] as? Int, 1)
        XCTAssertTrue((warnings.first?["message"] as? String)?.contains("rename it to '2_b.sql'") ?? false, "\(warnings)")
        let migrate = try runStrata(["migrate", "--manifest", "manifest.xml"], in: project.root)
        XCTAssertEqual(migrate.status, 0, migrate.stderr)
        XCTAssertTrue(migrate.stderr.hasPrefix(warning), "every command says what it leaves out: \(migrate.stderr)")
        // A refused manifest still shows its warnings.
        try project.file("sql/3_c.sql", "-- migrate:up\nCREATE TABLE c (x);\n-- migrate:down\nDROP TABLE c;\n")
        let refused = try runStrata(["validate", "--manifest", "manifest.xml", "--format", "json"], in: project.root)
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderr.contains("sql/3_c.sql:1: '-- migrate:up' is a dbmate section marker"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains(warning), refused.stderr)
        let refusedObject = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(refused.stdout.utf8)) as? [String: Any])
        XCTAssertEqual((refusedObject["warnings"] as? [Any])?.count, 1)
    }

    func testPlanShowsTheDeclaredFormatAndOnlyTheUpSection() throws {
        let manifest = #"<manifest version="1"><database path="db.sqlite"/><migrations directory="sql" format="goose"/></manifest>"#
        let project = try Project(self, manifest: manifest, files: ["sql/20240101120000_add_users.sql": MigrationTests.gooseFile])
        let plan = try project.strata(["plan", "--sql"])
        XCTAssertEqual(plan.status, 0, plan.stderr)
        XCTAssertTrue(plan.stdout.contains("migration  20240101120000_add_users.sql  goose: up section only (lines 2-14)"), plan.stdout)
        XCTAssertTrue(plan.stdout.contains("      CREATE TRIGGER users_touch"), plan.stdout)
        XCTAssertFalse(plan.stdout.contains("DROP TABLE users"), "--sql shows what runs, not the down section: \(plan.stdout)")
        let json = try project.strata(["plan", "--sql", "--format", "json"])
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let step = try XCTUnwrap((object["steps"] as? [[String: Any]])?.first)
        XCTAssertEqual(step["format"] as? String, "goose")
        XCTAssertEqual(step["upSection"] as? [Int], [2, 14])
        XCTAssertFalse((step["sql"] as? String)?.contains("DROP TABLE users") ?? true)
    }

    func testAFileWithSectionMarkersIsRefusedUnlessItsFormatIsDeclared() throws {
        let project = try Project(self, files: ["sql/1_users.sql": MigrationTests.gooseFile])
        let validate = try project.strata(["validate"])
        XCTAssertEqual(validate.status, 1)
        XCTAssertTrue(validate.stderr.contains("sql/1_users.sql:1: '-- +goose Up' is a goose section marker"), validate.stderr)
        let migrate = try project.strata(["migrate"])
        XCTAssertEqual(migrate.status, 3, migrate.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: project.databasePath), "refused before the database was opened")
    }

    func testMigrateTwiceJSONStatusAndPlan() throws {
        let project = try Project(self, files: ["sql/1_a.sql": "CREATE TABLE a (x);", "sql/2_b.sql": "CREATE TABLE b (x);"])
        let plan = try project.strata(["plan", "--sql"])
        XCTAssertEqual(plan.status, 0)
        XCTAssertTrue(plan.stdout.contains("migrate would apply 2 steps"))
        XCTAssertTrue(plan.stdout.contains("CREATE TABLE a (x);"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: project.databasePath), "plan does not create the database")

        let first = try project.strata(["migrate", "--format", "json"])
        XCTAssertEqual(first.status, 0, first.stderr)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(first.stdout.utf8)) as? [String: Any])
        XCTAssertEqual((object["applied"] as? [[String: Any]])?.compactMap { $0["id"] as? String }, ["1_a.sql", "2_b.sql"])
        XCTAssertTrue(object["failure"] is NSNull)

        let second = try project.strata(["migrate"])
        XCTAssertEqual(second.status, 0)
        XCTAssertTrue(second.stdout.contains("Nothing to do"), second.stdout)

        let before = try Data(contentsOf: URL(fileURLWithPath: project.databasePath))
        let planAgain = try project.strata(["plan", "--format", "json"])
        let planObject = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(planAgain.stdout.utf8)) as? [String: Any])
        XCTAssertEqual((planObject["steps"] as? [Any])?.count, 0)
        XCTAssertEqual((planObject["refusals"] as? [Any])?.count, 0)
        XCTAssertEqual((planObject["planId"] as? String)?.count, 16)
        let status = try project.strata(["status", "--format", "json"])
        XCTAssertEqual(status.status, 0)
        let steps = try XCTUnwrap((JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])?["steps"] as? [[String: Any]])
        XCTAssertEqual(steps.map { $0["state"] as? String }, ["applied", "applied"])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: project.databasePath)), before, "plan and status write nothing")

        let quiet = try project.strata(["migrate", "--quiet"])
        XCTAssertEqual(quiet.stdout, "")
    }

    func testExitCodesForFailureDriftAndDirty() throws {
        let project = try Project(self, manifest: """
            <manifest version="1"><database path="db.sqlite"/>
              <migrations directory="sql"><migration file="3_none.sql" transaction="none"/></migrations>
            </manifest>
            """, files: ["sql/1_a.sql": "CREATE TABLE a (x);", "sql/2_b.sql": "CREATE TABLE b (x);\nSELEC 1;",
                         "sql/3_none.sql": "INSERT INTO b VALUES (1);\nINSERT INTO nope VALUES (1);"])
        let failed = try project.strata(["migrate"])
        XCTAssertEqual(failed.status, 1)
        XCTAssertTrue(failed.stderr.contains("sql/2_b.sql:2:1:"), failed.stderr)
        XCTAssertTrue(failed.stderr.contains("syntax error"), failed.stderr)
        XCTAssertTrue(failed.stdout.contains("1_a.sql"))

        try project.file("sql/2_b.sql", "CREATE TABLE b (x);")
        XCTAssertEqual(try project.strata(["migrate"]).status, 1)
        let dirty = try project.strata(["migrate"])
        XCTAssertEqual(dirty.status, 3)
        XCTAssertTrue(dirty.stderr.contains("strata resolve 3_none.sql"), dirty.stderr)
        XCTAssertEqual(try project.strata(["status"]).status, 3)
        XCTAssertEqual(try project.strata(["resolve", "3_none.sql", "--applied", "--rolled-back"]).status, 2)
        XCTAssertEqual(try project.strata(["resolve", "3_none.sql", "--applied"]).status, 0)

        try project.file("sql/1_a.sql", "CREATE TABLE a (x, y);")
        let drift = try project.strata(["migrate", "--format", "json"])
        XCTAssertEqual(drift.status, 3)
        XCTAssertTrue(drift.stdout.contains("\"reason\":\"drift\""), drift.stdout)
        XCTAssertTrue(drift.stderr.contains("1_a.sql has changed"), drift.stderr)
        XCTAssertEqual(try project.strata(["repair"]).status, 0)
        XCTAssertEqual(try project.strata(["migrate"]).status, 0)
    }

    func testBaselineNewAndSchemaCommands() throws {
        let project = try Project(self, files: ["sql/001_a.sql": "CREATE TABLE a (x);", "sql/002_b.sql": "CREATE TABLE b (x);"])
        try project.database().execute("CREATE TABLE a (x)")
        let baseline = try project.strata(["baseline", "--through", "001_a.sql"])
        XCTAssertEqual(baseline.status, 0, baseline.stderr)
        XCTAssertTrue(baseline.stdout.contains("001_a.sql"))
        XCTAssertEqual(try project.strata(["baseline", "--through", "nope.sql"]).status, 1)
        let created = try project.strata(["new", "add index"])
        XCTAssertEqual(created.stdout, "created sql/003_add_index.sql\n")
        try project.file("sql/003_add_index.sql", "CREATE INDEX b_x ON b (x);")
        XCTAssertEqual(try project.strata(["migrate"]).status, 0)
        let schema = try runStrata(["schema", "--database", "db.sqlite"], in: project.root)
        XCTAssertEqual(schema.stdout, "CREATE TABLE a (x);\n\nCREATE TABLE b (x);\n\nCREATE INDEX b_x ON b (x);\n")
    }

    func testNewAfterTheLargestPossibleNumberDoesNotTrap() throws {
        let project = try Project(self, files: ["sql/9223372036854775807_x.sql": "", "sql/0099999999999999999999_y.sql": ""])
        let created = try project.strata(["new", "next"])
        XCTAssertEqual(created.status, 0, created.stderr)
        XCTAssertEqual(created.stdout, "created sql/0100000000000000000000_next.sql\n")
    }

    func testValidateAndMigrateRefuseReapplyWithInsertMode() throws {
        let project = try Project(self, manifest: """
            <manifest version="1"><database path="db.sqlite"/><migrations directory="sql"/>
            <seeds><seed file="csv/t.csv" table="t" onChange="reapply"/></seeds></manifest>
            """, files: ["sql/1_t.sql": "CREATE TABLE t (x);", "csv/t.csv": "x\n1\n"])
        let validate = try project.strata(["validate"])
        XCTAssertEqual(validate.status, 1)
        XCTAssertTrue(validate.stderr.contains(#"manifest.xml:2: onChange="reapply" with mode="insert""#), validate.stderr)
        let migrate = try project.strata(["migrate"])
        XCTAssertEqual(migrate.status, 3)
        if FileManager.default.fileExists(atPath: project.databasePath) {
            XCTAssertFalse(try project.database().tableExists("t"), "nothing ran")
        }
    }

    func testARerunThatFailsAtOnceSaysWhatEarlierRunsApplied() throws {
        let project = try Project(self, files: ["sql/1_a.sql": "CREATE TABLE a (x);", "sql/2_b.sql": "CREATE TABLE b (x);",
                                                "sql/3_c.sql": "SELEC 1;"])
        let first = try project.strata(["migrate"])
        XCTAssertEqual(first.status, 1)
        XCTAssertTrue(first.stderr.contains("kept: 2 steps applied by this run, 0 by other runs"), first.stderr)
        let rerun = try project.strata(["migrate"])
        XCTAssertEqual(rerun.status, 1)
        XCTAssertFalse(rerun.stderr.contains("0 steps applied before it stay applied"), rerun.stderr)
        XCTAssertTrue(rerun.stderr.contains("kept: 0 steps applied by this run, 2 by other runs"), rerun.stderr)
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

    func testCommandsThatRefuseDoNotCreateTheDatabaseFile() throws {
        let project = try Project(self, manifest: """
            <manifest version="1"><database path="db.sqlite"/><migrations directory="sql"/>
              <seeds><seed file="csv/t.csv" table="a"/></seeds></manifest>
            """, files: ["sql/1_a.sql": "CREATE TABLE a (x);", "csv/t.csv": "x\n1\n"])
        let seed = try project.strata(["seed"])
        XCTAssertEqual(seed.status, 3, seed.stderr)
        XCTAssertTrue(seed.stderr.contains("run 'strata migrate' first"), seed.stderr)
        let planned = try project.strata(["migrate", "--plan-id", "0000000000000000"])
        XCTAssertEqual(planned.status, 3, planned.stderr)
        XCTAssertTrue(planned.stderr.contains("the plan changed"), planned.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: project.databasePath), "a refusal creates no database file")
        XCTAssertEqual(try project.strata(["migrate"]).status, 0)
    }

    func testSchemaOfAMissingDatabaseFileFails() throws {
        let dir = try makeTemporaryDirectory(self)
        let result = try runStrata(["schema", "--database", "nope.sqlite"], in: dir)
        XCTAssertEqual(result.status, 1)
        XCTAssertEqual(result.stdout, "")
        XCTAssertTrue(result.stderr.contains("nope.sqlite does not exist"), result.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.appendingPathComponent("nope.sqlite").path))
    }

    func testNewRefusesANameWithAControlCharacter() throws {
        let project = try Project(self, files: ["sql/001_a.sql": "CREATE TABLE a (x);"])
        let result = try project.strata(["new", "add\nDROP TABLE a; --"])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("control character U+000A"), result.stderr)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: project.root.appendingPathComponent("sql").path), ["001_a.sql"])
    }

    private func manySteps(_ count: Int) throws -> Project {
        var files: [String: String] = [:]
        for i in 1...count { files[String(format: "sql/%03d_t.sql", i)] = "CREATE TABLE t\(i) (x);" }
        return try Project(self, files: files)
    }

    private func migrate(_ project: Project, stdout: FileHandle) throws -> (Process, CommandResult) {
        let process = Process()
        process.executableURL = try strataExecutable()
        process.arguments = ["migrate", "--manifest", project.manifestPath]
        process.currentDirectoryURL = project.root
        let errors = Pipe()
        process.standardOutput = stdout
        process.standardError = errors
        try process.run()
        let stderr = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process, CommandResult(status: process.terminationStatus, stdout: "", stderr: String(decoding: stderr, as: UTF8.self)))
    }

    func testAClosedOutputPipeDoesNotStopTheRunAndExitsOne() throws {
        let project = try manySteps(300)
        let pipe = Pipe()
        try pipe.fileHandleForReading.close() // like `| head -1` once head has gone: every write fails with EPIPE
        let (process, result) = try migrate(project, stdout: pipe.fileHandleForWriting)
        XCTAssertEqual(process.terminationReason, .exit, "not killed by SIGPIPE")
        XCTAssertEqual(result.status, 1, result.stderr)
        XCTAssertTrue(result.stderr.contains("could not write to standard output (Broken pipe)"), result.stderr)
        XCTAssertEqual(try project.database().scalar("SELECT count(*) FROM strata_history", as: Int.self), 300, "the run finished")
    }

    func testOutputToAFullDeviceIsAnError() throws {
        let project = try manySteps(3)
        let full = try XCTUnwrap(FileHandle(forWritingAtPath: "/dev/full"))
        let (_, result) = try migrate(project, stdout: full)
        XCTAssertEqual(result.status, 1, result.stderr)
        XCTAssertTrue(result.stderr.contains("could not write to standard output (No space left on device)"), result.stderr)
        XCTAssertEqual(try project.database().scalar("SELECT count(*) FROM strata_history", as: Int.self), 3)

        // Errors to a full stderr are lost, but the command still ends with its own exit code.
        let process = Process()
        process.executableURL = try strataExecutable()
        process.arguments = ["migrate", "--manifest", "no-such-manifest.xml"]
        process.currentDirectoryURL = project.root
        process.standardError = full
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationReason, .exit)
        XCTAssertEqual(process.terminationStatus, 3)
    }

    func testSIGINTFinishesTheCurrentStepThenStops() throws {
        let project = try Project(self, files: ["sql/1_a.sql": "CREATE TABLE a (x);", "sql/2_b.sql": "CREATE TABLE b (x);",
                                                "sql/3_c.sql": "CREATE TABLE c (x);"])
        // A reader holds the database open, so the first step's COMMIT waits (rollback journal: a writer needs the
        // readers gone to commit). That pins the run inside step 1 while the signal arrives.
        let reader = try project.database()
        try reader.execute("CREATE TABLE pre (x)")
        try reader.execute("BEGIN")
        XCTAssertEqual(try reader.scalar("SELECT count(*) FROM pre", as: Int.self), 0)
        let (process, _, err) = try startStrata(["migrate", "--manifest", project.manifestPath], in: project.root)
        let stderr = PipeWatcher(err)
        let deadline = Date().addingTimeInterval(60)
        while process.isRunning && Date() < deadline && !FileManager.default.fileExists(atPath: project.databasePath + "-journal") {
            Thread.sleep(forTimeInterval: 0.01)
        }
        kill(process.processIdentifier, SIGINT)
        XCTAssertTrue(stderr.wait(for: "SIGINT received", from: process), stderr.text)
        try reader.execute("COMMIT")
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

    func testSIGTERMWhileWaitingForAnotherRunnerStopsWithoutClaimingTheStep() throws {
        let project = try Project(self, manifest: """
            <manifest version="1"><database path="db.sqlite"/>
              <migrations directory="sql"><migration file="2_none.sql" transaction="none"/></migrations></manifest>
            """, files: ["sql/1_a.sql": "CREATE TABLE a (x);", "sql/2_none.sql": "CREATE TABLE b (x);", "sql/3_c.sql": "CREATE TABLE c (x);"])
        // This process plays a live runner of 2_none.sql: its row says running and it holds the step's lock.
        let db = try project.database()
        try HistoryStore(database: db).create()
        try db.execute("""
            INSERT INTO strata_history (kind, identity, checksum, checksum_version, applied_at, state, tool_version, runner)
            VALUES ('migration', '2_none.sql', 'x', 1, '2026-01-01T00:00:00Z', 'running', '0', 'elsewhere:1')
            """)
        let lock = try XCTUnwrap(try StepLock.acquire(databasePath: project.databasePath, kind: .migration, id: "2_none.sql"))
        defer { lock.release() }
        let (process, _, err) = try startStrata(["migrate", "--manifest", project.manifestPath], in: project.root)
        let stderr = PipeWatcher(err)
        XCTAssertTrue(stderr.wait(for: "2_none.sql is being applied by another process; waiting", from: process), stderr.text)
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationReason, .exit)
        XCTAssertEqual(process.terminationStatus, 143, stderr.text)
        XCTAssertTrue(stderr.wait(for: "stopped by SIGTERM: applied by this run: 1_a.sql; not run: 2_none.sql, 3_c.sql", from: process), stderr.text)
        XCTAssertEqual(try db.scalar("SELECT state FROM strata_history WHERE identity = '2_none.sql'", as: String.self), "running")
        XCTAssertEqual(try db.scalar("SELECT runner FROM strata_history WHERE identity = '2_none.sql'", as: String.self), "elsewhere:1")
        XCTAssertFalse(try db.tableExists("c"))
    }

    func testEightProcessesApplyEachFileExactlyOnce() throws {
        var files = ["sql/000_log.sql": "CREATE TABLE log (step TEXT NOT NULL);"]
        for i in 1...12 {
            files[String(format: "sql/%03d_step.sql", i)] = "INSERT INTO log VALUES ('\(i)');\nCREATE TABLE t\(i) (x);"
        }
        files["sql/013_none.sql"] = "INSERT INTO log VALUES ('none');"
        let project = try Project(self, manifest: """
            <manifest version="1"><database path="db.sqlite"/>
              <migrations directory="sql"><migration file="013_none.sql" transaction="none"/></migrations>
            </manifest>
            """, files: files)
        let runs = try (0..<8).map { _ in try startStrata(["migrate", "--manifest", project.manifestPath, "--format", "json"], in: project.root) }
        var applied: [String] = []
        for (process, out, err) in runs {
            let stdout = out.fileHandleForReading.readDataToEndOfFile()
            let stderr = err.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            XCTAssertEqual(process.terminationStatus, 0, String(decoding: stderr, as: UTF8.self))
            let object = try JSONSerialization.jsonObject(with: stdout) as? [String: Any]
            applied += ((object?["applied"] as? [[String: Any]]) ?? []).compactMap { $0["id"] as? String }
        }
        XCTAssertEqual(applied.sorted(), files.keys.map { ($0 as NSString).lastPathComponent }.sorted(),
                       "each file applied by exactly one process")
        let db = try project.database()
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM log", as: Int.self), 13)
        XCTAssertEqual(try db.scalar("SELECT count(DISTINCT step) FROM log", as: Int.self), 13)
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM strata_history WHERE state = 'applied'", as: Int.self), 14)
    }

    func testKillDuringALongFileLosesNothing() throws {
        let project = try Project(self, files: [
            "sql/1_a.sql": "CREATE TABLE a (x); INSERT INTO a VALUES (1);",
            "sql/2_long.sql": """
                CREATE TABLE big (n INTEGER, pad TEXT);
                WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 3000000)
                INSERT INTO big SELECT n, printf('%040d', n) FROM c;
                """,
        ])
        let (process, _, _) = try startStrata(["migrate", "--manifest", project.manifestPath], in: project.root)
        // Wait until the long file is running: the first file is recorded and the journal exists.
        let deadline = Date().addingTimeInterval(20)
        var inLongFile = false
        while Date() < deadline && process.isRunning {
            if FileManager.default.fileExists(atPath: project.databasePath + "-journal"),
               let count = try? Database(path: project.databasePath, configuration: .init(readOnly: true, busyTimeout: .zero))
                .scalar("SELECT count(*) FROM strata_history", as: Int.self), count == 1 {
                inLongFile = true
                break
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertTrue(process.isRunning, "the long file finished before it could be killed; make it longer")
        XCTAssertTrue(inLongFile)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationReason, .uncaughtSignal)

        let db = try project.database()
        XCTAssertEqual(try db.scalar("PRAGMA integrity_check", as: String.self), "ok")
        XCTAssertFalse(try db.tableExists("big"), "the killed file left no trace")
        XCTAssertEqual(try db.query("SELECT identity FROM strata_history").all().map { $0[0] }, [.text("1_a.sql")])
        let rerun = try project.strata(["migrate"])
        XCTAssertEqual(rerun.status, 0, rerun.stderr)
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM big", as: Int.self), 3_000_000)
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
