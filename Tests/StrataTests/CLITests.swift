import Foundation
import XCTest
import Strata
@testable import StrataCore
@testable import StrataPostgres
@testable import StrataSQLite

/// The `strata` command on every backend: output, JSON shapes and exit codes of migrate, status, plan, validate,
/// repair, resolve and baseline, refusals that create nothing, signals, output errors, concurrent runs and a killed
/// run. Tests without a database (usage, `new`) run once. What only SQLite does (what `--database` may name,
/// `schema`'s text, the example project) is in `SQLite/SQLiteCommandTests.swift`.
final class CLITests: XCTestCase {
    /// A project whose manifest, given in full, names the backend's database: `manifest` is handed the
    /// `<database>` element.
    private func project(_ backend: TestBackend, manifest: (String) -> String, files: [String: String]) throws -> Project {
        let project = try Project(self, backend: backend, files: files)
        try project.file("manifest.xml", manifest(backend.databaseElement(project.root)))
        return project
    }

    func testVersionHelpAndUsageErrors() throws {
        let dir = try makeTemporaryDirectory(self)
        let version = try runStrata(["--version"], in: dir)
        XCTAssertEqual(version.status, 0)
        // The commit is the one the build was given (STRATA_BUILD_COMMIT, as `.ci/package` gives it), else unknown.
        let lines = version.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        XCTAssertEqual(lines.count, 3, version.stdout)
        XCTAssertEqual(lines.first, "strata \(Strata.version)")
        let commit = ProcessInfo.processInfo.environment["STRATA_BUILD_COMMIT"] ?? "unknown"
        XCTAssertEqual(lines.dropFirst().first, "commit \(commit)"[...])
        XCTAssertEqual(try runStrata(["version"], in: dir).stdout, version.stdout)
        let help = try runStrata(["--help"], in: dir)
        XCTAssertEqual(help.status, 0)
        XCTAssertTrue(help.stdout.contains("migrate"))
        // The first line says what Strata is; the man page's description is written from this help by help2man.
        XCTAssertEqual(help.stdout.split(separator: "\n").first.map(String.init),
                       "strata \(Strata.version) — describe a SQLite or PostgreSQL database in plain files and bring it up to date.")
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

    /// `strata completion bash` is written from the parser's table of commands and options. Sourced in bash it offers
    /// every command, and for each command the options that command's help names (its usage line, or the options
    /// for every command) and no others, so the completion, the help and the man page written from the help agree.
    func testCompletionOffersWhatTheParserTakesAndTheHelpShows() throws {
        let dir = try makeTemporaryDirectory(self)
        let script = try runStrata(["completion", "bash"], in: dir)
        XCTAssertEqual(script.status, 0, script.stderr)
        let scriptFile = dir.appendingPathComponent("strata.bash")
        try script.stdout.write(to: scriptFile, atomically: true, encoding: .utf8)
        try "<manifest version=\"1\"/>".write(to: dir.appendingPathComponent("manifest.xml"), atomically: true, encoding: .utf8)
        let help = try runStrata(["--help"], in: dir).stdout
        let commandLines = help.components(separatedBy: "Commands:\n")[1].components(separatedBy: "\n\n")[0]
        let commands = commandLines.split(separator: "\n").map { String($0.split(separator: " ")[0]) }
        XCTAssertTrue(commands.contains("completion"))
        let everyCommand = ["--format", "--quiet", "--help"]
        XCTAssertTrue(everyCommand.allSatisfy { help.contains("  \($0)") })

        /// What completion offers for each command line (its last word is being completed), in one run of bash.
        func complete(_ lines: [[String]]) throws -> [[String]] {
            var queries = "source \(scriptFile.path)\n"
            for words in lines {
                let quoted = words.map { "'" + $0 + "'" }.joined(separator: " ")
                queries += "COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1); _strata; echo \"${COMPREPLY[*]}\"\n"
            }
            let bash = Process()
            bash.executableURL = URL(fileURLWithPath: "/bin/bash")
            bash.arguments = ["-c", queries]
            bash.currentDirectoryURL = dir
            let out = Pipe()
            bash.standardOutput = out
            try bash.run()
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            bash.waitUntilExit()
            XCTAssertEqual(bash.terminationStatus, 0)
            return text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
                .map { $0.split(separator: " ").map(String.init) }
        }

        let optionPattern = try NSRegularExpression(pattern: "--[a-z][a-z-]*")
        func options(in text: String) -> Set<String> {
            Set(optionPattern.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { String(text[Range($0.range, in: text)!]) })
        }
        let answers = try complete([["strata", ""]] + commands.map { ["strata", $0, "--"] })
        XCTAssertEqual(Set(answers[0]), Set(commands + ["help", "--help", "--version"]))
        for (command, offered) in zip(commands, answers.dropFirst()) {
            let usage = try runStrata(["help", command], in: dir).stdout.components(separatedBy: "\n")[0]
            XCTAssertTrue(usage.hasPrefix("Usage: strata \(command)"), usage)
            XCTAssertEqual(Set(offered), options(in: usage).union(everyCommand), command)
        }

        let values = try complete([
            ["strata", "new", "x", "--backend", ""],
            ["strata", "migrate", "--format", "=", "j"],
            ["strata", "status", "--format", "="],
            ["strata", "migrate", "--manifest", "man"],
            ["strata", "help", "mi"],
            ["strata", "migrate", "--timeout", ""],
            ["strata", "completion", ""],
            ["strata", "plan", "--s"],
            ["strata", "schema", "--format", ""],
            ["strata", "schema", "--format", "=", "m"],
        ])
        XCTAssertEqual(values, [["sqlite", "postgresql"], ["json"], ["text", "json"], ["manifest.xml"], ["migrate"], [],
                                ["bash"], ["--sql", "--strict-order"], ["text", "json", "mermaid", "dot"], ["mermaid"]])
        XCTAssertEqual(try runStrata(["completion", "zsh"], in: dir).status, 2)
        let json = try runStrata(["completion", "bash", "--format", "json"], in: dir)
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: String]
        XCTAssertEqual(object?["script"], script.stdout)
    }

    /// The example project and SQL lint are SQLite's: `SQLiteCommandTests.testValidateTheExampleAndRefusesVACUUMInsideATransaction`.
    func testValidateAndMigrateRefuseABrokenManifest() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend,
                                      manifest: "<manifest version=\"1\">\n  <seeds><seed table=\"t\"/></seeds>\n</manifest>", files: [:])
            let broken = try runStrata(["validate", "--manifest", "manifest.xml"], in: project.root)
            XCTAssertEqual(broken.status, 3, "an invalid manifest exits 3 in validate as in migrate")
            XCTAssertTrue(broken.stderr.hasPrefix("manifest.xml:2:"), broken.stderr)
            let json = try runStrata(["validate", "--manifest", "manifest.xml", "--format", "json"], in: project.root)
            XCTAssertEqual(json.status, 3)
            let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
            XCTAssertEqual((object?["problems"] as? [[String: Any]])?.first?["line"] as? Int, 2)
            XCTAssertEqual(object?["error"] as? String, "invalid-manifest")

            let migrate = try runStrata(["migrate", "--manifest", "manifest.xml", "--database", project.location], in: project.root)
            XCTAssertEqual(migrate.status, 3, "other commands refuse an invalid manifest with exit 3")
        }
    }

    func testValidateAndMigratePrintManifestWarnings() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);", "sql/2_b.SQL": "CREATE TABLE b (x INTEGER);"])
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
            let migrate = try runStrata(["migrate", "--manifest", "manifest.xml", "--database", project.location], in: project.root)
            XCTAssertEqual(migrate.status, 0, migrate.stderr)
            XCTAssertTrue(migrate.stderr.hasPrefix(warning), "every command says what it leaves out: \(migrate.stderr)")
            // A refused manifest still shows its warnings.
            try project.file("sql/3_c.sql", "-- migrate:up\nCREATE TABLE c (x INTEGER);\n-- migrate:down\nDROP TABLE c;\n")
            let refused = try runStrata(["validate", "--manifest", "manifest.xml", "--format", "json"], in: project.root)
            XCTAssertEqual(refused.status, 3)
            XCTAssertTrue(refused.stderr.contains("sql/3_c.sql:1: '-- migrate:up' is a dbmate section marker"), refused.stderr)
            XCTAssertTrue(refused.stderr.contains(warning), refused.stderr)
            let refusedObject = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(refused.stdout.utf8)) as? [String: Any])
            XCTAssertEqual((refusedObject["warnings"] as? [Any])?.count, 1)
        }
    }

    func testPlanShowsTheDeclaredFormatAndOnlyTheUpSection() throws {
        try forEachBackend { backend in
            let project = try self.project(backend, manifest: { #"<manifest version="1">\#($0)<migrations directory="sql" format="goose"/></manifest>"# },
                                           files: ["sql/20240101120000_add_users.sql": backend.kind == .sqlite ? MigrationTests.gooseFile : MigrationTests.postgresGooseFile])
            let plan = try project.strataOnBackend(["plan", "--sql"])
            XCTAssertEqual(plan.status, 0, plan.stderr)
            XCTAssertTrue(plan.stdout.contains("migration  20240101120000_add_users.sql  goose: up section only (lines 2-14)"), plan.stdout)
            XCTAssertTrue(plan.stdout.contains("CREATE TRIGGER users_touch"), plan.stdout)
            XCTAssertFalse(plan.stdout.contains("DROP TABLE users"), "--sql shows what runs, not the down section: \(plan.stdout)")
            let json = try project.strataOnBackend(["plan", "--sql", "--format", "json"])
            let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
            let step = try XCTUnwrap((object["steps"] as? [[String: Any]])?.first)
            XCTAssertEqual(step["format"] as? String, "goose")
            XCTAssertEqual(step["upSection"] as? [Int], [2, 14])
            XCTAssertFalse((step["sql"] as? String)?.contains("DROP TABLE users") ?? true)
        }
    }

    func testAFileWithSectionMarkersIsRefusedUnlessItsFormatIsDeclared() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, files: ["sql/1_users.sql": backend.kind == .sqlite ? MigrationTests.gooseFile : MigrationTests.postgresGooseFile])
            let validate = try project.strata(["validate"])
            XCTAssertEqual(validate.status, 3)
            XCTAssertTrue(validate.stderr.contains("sql/1_users.sql:1: '-- +goose Up' is a goose section marker"), validate.stderr)
            let migrate = try project.strataOnBackend(["migrate"])
            XCTAssertEqual(migrate.status, 3, migrate.stderr)
            XCTAssertTrue(backend.noDatabaseCreated(at: project.root), "refused before the database was opened")
        }
    }

    func testMigrateTwiceJSONStatusAndPlan() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);", "sql/2_b.sql": "CREATE TABLE b (x INTEGER);"])
            let plan = try project.strataOnBackend(["plan", "--sql"])
            XCTAssertEqual(plan.status, 0)
            XCTAssertTrue(plan.stdout.contains("migrate would apply 2 steps"))
            XCTAssertTrue(plan.stdout.contains("CREATE TABLE a (x INTEGER);"))
            XCTAssertTrue(backend.noDatabaseCreated(at: project.root), "plan does not create the database")

            let first = try project.strataOnBackend(["migrate", "--format", "json"])
            XCTAssertEqual(first.status, 0, first.stderr)
            let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(first.stdout.utf8)) as? [String: Any])
            XCTAssertEqual((object["applied"] as? [[String: Any]])?.compactMap { $0["id"] as? String }, ["1_a.sql", "2_b.sql"])
            XCTAssertTrue(object["failure"] is NSNull)

            let second = try project.strataOnBackend(["migrate"])
            XCTAssertEqual(second.status, 0)
            XCTAssertTrue(second.stdout.contains("Nothing to do"), second.stdout)

            let before = try backend.storedState(at: project.root)
            let planAgain = try project.strataOnBackend(["plan", "--format", "json"])
            let planObject = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(planAgain.stdout.utf8)) as? [String: Any])
            XCTAssertEqual((planObject["steps"] as? [Any])?.count, 0)
            XCTAssertEqual((planObject["refusals"] as? [Any])?.count, 0)
            XCTAssertEqual((planObject["planId"] as? String)?.count, 16)
            let status = try project.strataOnBackend(["status", "--format", "json"])
            XCTAssertEqual(status.status, 0)
            let steps = try XCTUnwrap((JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])?["steps"] as? [[String: Any]])
            XCTAssertEqual(steps.map { $0["state"] as? String }, ["applied", "applied"])
            XCTAssertEqual(try backend.storedState(at: project.root), before, "plan and status write nothing")

            let quiet = try project.strataOnBackend(["migrate", "--quiet"])
            XCTAssertEqual(quiet.stdout, "")
        }
    }

    func testExitCodesForFailureDriftAndDirty() throws {
        try forEachBackend { backend in
            let project = try self.project(backend, manifest: { """
                <manifest version="1">\($0)
                  <migrations directory="sql"><migration file="3_none.sql" transaction="none"/></migrations>
                </manifest>
                """ }, files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);", "sql/2_b.sql": "CREATE TABLE b (x INTEGER);\nSELEC 1;",
                               "sql/3_none.sql": "INSERT INTO b VALUES (1);\nINSERT INTO nope VALUES (1);"])
            let failed = try project.strataOnBackend(["migrate"])
            XCTAssertEqual(failed.status, 1)
            XCTAssertTrue(failed.stderr.contains("sql/2_b.sql:2:1:"), failed.stderr)
            XCTAssertTrue(failed.stderr.contains(backend.syntaxError), failed.stderr)
            XCTAssertTrue(failed.stdout.contains("1_a.sql"))

            try project.file("sql/2_b.sql", "CREATE TABLE b (x INTEGER);")
            XCTAssertEqual(try project.strataOnBackend(["migrate"]).status, 1)
            let dirty = try project.strataOnBackend(["migrate"])
            XCTAssertEqual(dirty.status, 3)
            XCTAssertTrue(dirty.stderr.contains("strata resolve 3_none.sql"), dirty.stderr)
            XCTAssertEqual(try project.strataOnBackend(["status"]).status, 3)
            XCTAssertEqual(try project.strataOnBackend(["resolve", "3_none.sql", "--applied", "--rolled-back"]).status, 2)
            XCTAssertEqual(try project.strataOnBackend(["resolve", "3_none.sql", "--applied"]).status, 0)

            try project.file("sql/1_a.sql", "CREATE TABLE a (x INTEGER, y INTEGER);")
            let drift = try project.strataOnBackend(["migrate", "--format", "json"])
            XCTAssertEqual(drift.status, 3)
            XCTAssertTrue(drift.stdout.contains("\"reason\":\"drift\""), drift.stdout)
            XCTAssertTrue(drift.stderr.contains("1_a.sql has changed"), drift.stderr)
            XCTAssertEqual(try project.strataOnBackend(["repair"]).status, 0)
            XCTAssertEqual(try project.strataOnBackend(["migrate"]).status, 0)
        }
    }

    /// `schema` prints SQLite's text: `SQLiteCommandTests.testSchemaPrintsTheSchemaInAStableOrderWithoutTheHistory`.
    func testBaselineAndNewCommands() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, files: ["sql/001_a.sql": "CREATE TABLE a (x INTEGER);", "sql/002_b.sql": "CREATE TABLE b (x INTEGER);"])
            try project.connection().execute("CREATE TABLE a (x INTEGER)")
            let baseline = try project.strataOnBackend(["baseline", "--through", "001_a.sql"])
            XCTAssertEqual(baseline.status, 0, baseline.stderr)
            XCTAssertTrue(baseline.stdout.contains("001_a.sql"))
            XCTAssertEqual(try project.strataOnBackend(["baseline", "--through", "nope.sql"]).status, 1)
            let created = try project.strata(["new", "add index"])
            XCTAssertEqual(created.stdout, "created sql/003_add_index.sql\n")
            try project.file("sql/003_add_index.sql", "CREATE INDEX b_x ON b (x);")
            XCTAssertEqual(try project.strataOnBackend(["migrate"]).status, 0)
        }
    }

    func testNewAfterTheLargestPossibleNumberDoesNotTrap() throws {
        let project = try Project(self, files: ["sql/9223372036854775807_x.sql": "", "sql/0099999999999999999999_y.sql": ""])
        let created = try project.strata(["new", "next"])
        XCTAssertEqual(created.status, 0, created.stderr)
        XCTAssertEqual(created.stdout, "created sql/0100000000000000000000_next.sql\n")
    }

    func testValidateAndMigrateRefuseReapplyWithInsertMode() throws {
        try forEachBackend { backend in
            let project = try self.project(backend, manifest: { """
                <manifest version="1">\($0)<migrations directory="sql"/>
                <seeds><seed file="csv/t.csv" table="t" onChange="reapply"/></seeds></manifest>
                """ }, files: ["sql/1_t.sql": "CREATE TABLE t (x INTEGER);", "csv/t.csv": "x\n1\n"])
            let validate = try project.strata(["validate"])
            XCTAssertEqual(validate.status, 3)
            XCTAssertTrue(validate.stderr.contains(#"manifest.xml:2: onChange="reapply" with mode="insert""#), validate.stderr)
            let migrate = try project.strataOnBackend(["migrate"])
            XCTAssertEqual(migrate.status, 3)
            if !backend.noDatabaseCreated(at: project.root) {
                XCTAssertFalse(try project.connection().tableExists("t"), "nothing ran")
            }
        }
    }

    func testARerunThatFailsAtOnceSaysWhatEarlierRunsApplied() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);", "sql/2_b.sql": "CREATE TABLE b (x INTEGER);",
                                                                      "sql/3_c.sql": "SELEC 1;"])
            let first = try project.strataOnBackend(["migrate"])
            XCTAssertEqual(first.status, 1)
            XCTAssertTrue(first.stderr.contains("kept: 2 steps applied by this run, 0 by other runs"), first.stderr)
            let rerun = try project.strataOnBackend(["migrate"])
            XCTAssertEqual(rerun.status, 1)
            XCTAssertFalse(rerun.stderr.contains("0 steps applied before it stay applied"), rerun.stderr)
            XCTAssertTrue(rerun.stderr.contains("kept: 0 steps applied by this run, 2 by other runs"), rerun.stderr)
        }
    }

    func testADatabaseThatCannotBeWrittenIsRefusedBeforeAnythingRuns() throws {
        try forEachBackend { backend in
            let project = try self.project(backend, manifest: { #"<manifest version="1">\#($0)<migrations directory="sql"/></manifest>"# },
                                           files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);"])
            XCTAssertEqual(try project.strataOnBackend(["migrate"]).status, 0)
            try project.file("sql/2_b.sql", "CREATE TABLE b (x INTEGER);")
            let readOnly = try backend.readOnlyLocation(project.root)
            let before = try backend.storedState(at: project.root)
            for format in ["text", "json"] {
                let result = try runStrata(["migrate", "--manifest", project.manifestPath, "--database", readOnly, "--format", format],
                                           in: project.root)
                XCTAssertEqual(result.status, 3, "refused, the same on every backend: \(result.stderr)")
                XCTAssertTrue(result.stderr.contains("is read-only"), result.stderr)
                if format == "json" { XCTAssertTrue(result.stdout.contains(#""reason":"read-only""#), result.stdout) }
            }
            XCTAssertEqual(try backend.storedState(at: project.root), before, "nothing written")
        }
    }

    func testCommandsThatRefuseDoNotCreateTheDatabaseFile() throws {
        try forEachBackend(needing: .seeds) { backend in
            let project = try self.project(backend, manifest: { """
                <manifest version="1">\($0)<migrations directory="sql"/>
                  <seeds><seed file="csv/t.csv" table="a"/></seeds></manifest>
                """ }, files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);", "csv/t.csv": "x\n1\n"])
            let seed = try project.strataOnBackend(["seed"])
            XCTAssertEqual(seed.status, 3, seed.stderr)
            XCTAssertTrue(seed.stderr.contains("run 'strata migrate' first"), seed.stderr)
            let planned = try project.strataOnBackend(["migrate", "--plan-id", "0000000000000000"])
            XCTAssertEqual(planned.status, 3, planned.stderr)
            XCTAssertTrue(planned.stderr.contains("the plan changed"), planned.stderr)
            XCTAssertTrue(backend.noDatabaseCreated(at: project.root), "a refusal creates no database file")
            XCTAssertEqual(try project.strataOnBackend(["migrate"]).status, 0)
        }
    }

    func testNewRefusesANameWithAControlCharacter() throws {
        let project = try Project(self, files: ["sql/001_a.sql": "CREATE TABLE a (x);"])
        let result = try project.strata(["new", "add\nDROP TABLE a; --"])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("control character U+000A"), result.stderr)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: project.root.appendingPathComponent("sql").path), ["001_a.sql"])
    }

    func testNewTakesABackendAndValidateCountsEachBackendsPlan() throws {
        let project = try Project(self, manifest: """
            <manifest version="1"><database path="db.sqlite"/>
              <migrations directory="sql" backend="sqlite"/>
              <migrations directory="sql/postgresql" backend="postgresql"/>
            </manifest>
            """, files: ["sql/001_a.sql": "CREATE TABLE a (x);", "sql/postgresql/001_a.sql": "CREATE TABLE a (x integer);"])
        let ambiguous = try project.strata(["new", "b"])
        XCTAssertEqual(ambiguous.status, 1)
        XCTAssertTrue(ambiguous.stderr.contains("say which with --backend"), ambiguous.stderr)
        let unknown = try project.strata(["new", "b", "--backend", "mysql"])
        XCTAssertEqual(unknown.status, 2)
        XCTAssertTrue(unknown.stderr.contains("--backend must be sqlite or postgresql, not 'mysql'"), unknown.stderr)
        let created = try project.strata(["new", "b", "--backend", "postgresql"])
        XCTAssertEqual(created.stdout, "created sql/postgresql/002_b.sql\n", created.stderr)

        let validate = try project.strata(["validate"])
        XCTAssertEqual(validate.status, 0, validate.stderr)
        XCTAssertEqual(validate.stdout, "ok: 3 migrations (SQLite 1, PostgreSQL 2), 0 seeds, 0 models\n")
        XCTAssertFalse(validate.stderr.contains("warning"), "each plan is checked with its own dialect: \(validate.stderr)")
        XCTAssertTrue(validate.stderr.hasPrefix("note: PostgreSQL's syntax not checked by a server: give --database"), validate.stderr)
        let json = try project.strata(["validate", "--format", "json"])
        XCTAssertTrue(json.stdout.contains(#""migrations":3,"plans":{"sqlite":1,"postgresql":2}"#), json.stdout)

        let migrated = try project.strata(["migrate"])
        XCTAssertEqual(migrated.status, 0, migrated.stderr)
        XCTAssertTrue(migrated.stdout.contains("001_a.sql") && !migrated.stdout.contains("002_b.sql"), migrated.stdout)
    }

    func testAnUnsetVariableInTheURLDoesNotMatterWhenDatabaseOverridesIt() throws {
        let project = try Project(self, manifest: """
            <manifest version="1">
              <database url="postgresql://app:${STRATA_TEST_UNSET_PASSWORD}@db/app"/>
              <migrations directory="sql"/>
            </manifest>
            """, files: ["sql/001_a.sql": "CREATE TABLE a (x);"])
        let migrated = try runStrata(["migrate", "--manifest", project.manifestPath, "--database", project.databasePath], in: project.root)
        XCTAssertEqual(migrated.status, 0, migrated.stderr)
        XCTAssertEqual(try project.strata(["validate"]).status, 0, "validate needs no database")
    }

    private func manySteps(_ count: Int, on backend: TestBackend) throws -> Project {
        var files: [String: String] = [:]
        for i in 1...count { files[String(format: "sql/%03d_t.sql", i)] = "CREATE TABLE t\(i) (x INTEGER);" }
        return try Project(self, backend: backend, files: files)
    }

    private func migrate(_ project: Project, stdout: FileHandle) throws -> (Process, CommandResult) {
        let process = Process()
        process.executableURL = try strataExecutable()
        process.arguments = ["migrate", "--manifest", project.manifestPath, "--database", project.location]
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
        try forEachBackend { backend in
            let project = try manySteps(300, on: backend)
            let pipe = Pipe()
            try pipe.fileHandleForReading.close() // like `| head -1` once head has gone: every write fails with EPIPE
            let (process, result) = try migrate(project, stdout: pipe.fileHandleForWriting)
            XCTAssertEqual(process.terminationReason, .exit, "not killed by SIGPIPE")
            XCTAssertEqual(result.status, 1, result.stderr)
            XCTAssertTrue(result.stderr.contains("could not write to standard output (Broken pipe)"), result.stderr)
            XCTAssertEqual(try project.connection().scalar("SELECT count(*) FROM strata_history", as: Int.self), 300, "the run finished")
        }
    }

    func testOutputToAFullDeviceIsAnError() throws {
        try forEachBackend { backend in
            let project = try manySteps(3, on: backend)
            let full = try XCTUnwrap(FileHandle(forWritingAtPath: "/dev/full"))
            let (_, result) = try migrate(project, stdout: full)
            XCTAssertEqual(result.status, 1, result.stderr)
            XCTAssertTrue(result.stderr.contains("could not write to standard output (No space left on device)"), result.stderr)
            XCTAssertEqual(try project.connection().scalar("SELECT count(*) FROM strata_history", as: Int.self), 3)

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
    }

    func testSIGTERMWhileWaitingForAnotherRunnerStopsWithoutClaimingTheStep() throws {
        try forEachBackend { backend in
            let project = try self.project(backend, manifest: { """
                <manifest version="1">\($0)
                  <migrations directory="sql"><migration file="2_none.sql" transaction="none"/></migrations></manifest>
                """ }, files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);", "sql/2_none.sql": "CREATE TABLE b (x INTEGER);",
                               "sql/3_c.sql": "CREATE TABLE c (x INTEGER);"])
            // This process plays a live runner of 2_none.sql: its row says running and it holds the step's lock.
            let db = try project.connection()
            try db.history.create()
            try db.history.write(.leftBehind("2_none.sql", state: .running, runner: "elsewhere:1"))
            let lock = try XCTUnwrap(try db.stepLocks.claim(kind: .migration, id: "2_none.sql"))
            defer { lock.release() }
            let (process, _, err) = try startStrata(["migrate", "--manifest", project.manifestPath, "--database", project.location],
                                                    in: project.root)
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
    }

    func testEightProcessesApplyEachFileExactlyOnce() throws {
        try forEachBackend { backend in
            var files = ["sql/000_log.sql": "CREATE TABLE log (step TEXT NOT NULL);"]
            for i in 1...12 {
                files[String(format: "sql/%03d_step.sql", i)] = "INSERT INTO log VALUES ('\(i)');\nCREATE TABLE t\(i) (x INTEGER);"
            }
            files["sql/013_none.sql"] = "INSERT INTO log VALUES ('none');"
            let project = try self.project(backend, manifest: { """
                <manifest version="1">\($0)
                  <migrations directory="sql"><migration file="013_none.sql" transaction="none"/></migrations>
                </manifest>
                """ }, files: files)
            let runs = try (0..<8).map { _ in
                try startStrata(["migrate", "--manifest", project.manifestPath, "--database", project.location, "--format", "json"],
                                in: project.root)
            }
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
            let db = try project.connection()
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM log", as: Int.self), 13)
            XCTAssertEqual(try db.scalar("SELECT count(DISTINCT step) FROM log", as: Int.self), 13)
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM strata_history WHERE state = 'applied'", as: Int.self), 14)
        }
    }

    func testKillDuringALongFileLosesNothing() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, files: [
                "sql/1_a.sql": "CREATE TABLE a (x INTEGER); INSERT INTO a VALUES (1);",
                "sql/2_long.sql": """
                    CREATE TABLE big (n INTEGER, pad TEXT);
                    WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 1000000)
                    INSERT INTO big SELECT n, \(backend.zeroPadded("n", width: 40)) FROM c;
                    """,
            ])
            let (process, out, _) = try startStrata(["migrate", "--manifest", project.manifestPath, "--database", project.location],
                                                    in: project.root)
            // The long file is running once the first is reported applied and a write of the second is under way
            // (both read without waiting for the writer's lock).
            let stdout = PipeWatcher(out)
            XCTAssertTrue(stdout.wait(for: "1_a.sql", from: process), "the first file was never reported applied")
            let deadline = Date().addingTimeInterval(60)
            while !backend.writeIsUnderWay(at: project.root) && process.isRunning && Date() < deadline {
                Thread.sleep(forTimeInterval: 0.005)
            }
            XCTAssertTrue(process.isRunning, "the long file finished before it could be killed; make it longer")
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            XCTAssertEqual(process.terminationReason, .uncaughtSignal)

            let db = try project.connection()
            XCTAssertEqual(try db.scalar(backend.integrityCheck.sql, .none, as: String.self), backend.integrityCheck.intact)
            XCTAssertFalse(try db.tableExists("big"), "the killed file left no trace")
            XCTAssertEqual(try db.rows("SELECT identity FROM strata_history").map { $0[0] }, [.text("1_a.sql")])
            let rerun = try project.strataOnBackend(["migrate"])
            XCTAssertEqual(rerun.status, 0, rerun.stderr)
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM big", as: Int.self), 1_000_000)
        }
    }
}

/// What the command tests look at or expect that each database does its own way.
fileprivate extension TestBackend {
    /// True while no command has created the project's database (SQLite: there is no file).
    func noDatabaseCreated(at root: URL) -> Bool {
        switch kind {
        case .sqlite: !FileManager.default.fileExists(atPath: location(root))
        case .postgres: (try? PostgresTestDatabase(root).userTables().isEmpty) ?? false
        }
    }

    /// Everything the project's database stores, equal before and after a command that writes nothing (SQLite:
    /// the file's bytes).
    func storedState(at root: URL) throws -> Data {
        switch kind {
        case .sqlite: try Data(contentsOf: URL(fileURLWithPath: location(root)))
        case .postgres: Data(try PostgresTestDatabase(root).contents().utf8)
        }
    }

    /// True while a connection has written to the database and not committed (SQLite: its rollback journal is
    /// there).
    func writeIsUnderWay(at root: URL) -> Bool {
        switch kind {
        case .sqlite: FileManager.default.fileExists(atPath: location(root) + "-journal")
        case .postgres: (try? PostgresTestDatabase(root).otherSessionHasWritten()) ?? false
        }
    }

    /// A `--database` value naming the project's database so that it cannot be written (SQLite: a `mode=ro` URI,
    /// which works as root too; PostgreSQL: sessions that start read-only, as on a standby).
    func readOnlyLocation(_ root: URL) throws -> String {
        switch kind {
        case .sqlite: return "file:\(location(root))?mode=ro"
        case .postgres:
            let db = try PostgresTestDatabase(root).connection
            let name = try XCTUnwrap(try db.scalar("SELECT current_database()", as: String.self))
            try db.execute("ALTER DATABASE \(quoteIdentifier(name)) SET default_transaction_read_only = on", .none)
            return location(root)
        }
    }

    /// A query whose one value says whether the database's storage is intact, and that value when it is.
    var integrityCheck: (sql: String, intact: String) {
        switch kind {
        case .sqlite: ("PRAGMA integrity_check", "ok")
        // The server keeps its storage consistent itself; there is nothing for a client to check.
        case .postgres: ("SELECT 'ok'", "ok")
        }
    }

    /// What the database says of SQL it cannot parse.
    var syntaxError: String {
        switch kind {
        case .sqlite: "syntax error"
        case .postgres: "syntax error"
        }
    }

    /// An SQL expression: the integer `expression` as text, zero-padded to `width` digits.
    func zeroPadded(_ expression: String, width: Int) -> String {
        switch kind {
        case .sqlite: "printf('%0\(width)d', \(expression))"
        case .postgres: "lpad((\(expression))::text, \(width), '0')"
        }
    }
}
