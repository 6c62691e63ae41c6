import Foundation
import XCTest
import Strata
@testable import StrataCore
@testable import StrataPostgres
@testable import StrataSQLite

/// `strata validate` checks SQL as the database would: SQLite runs the plan on a scratch in-memory database,
/// a PostgreSQL server given with `--database` parses every statement, the other backend's syntax is reported, and a
/// manifest that names no backend is read by both backends' rules without advising one's fix for the other's file.
final class ValidateSQLTests: XCTestCase {
    private func object(_ result: CommandResult) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], result.stdout)
    }

    func testValidateFindsWhatSQLiteCannotRunWithItsPlace() throws {
        let broken = [
            ("CREATE TABLE a (x INTEGER);\nSELEC 1;\n", "sql/1_a.sql:2:1: SQLite refuses it: near \"SELEC\": syntax error"),
            ("CREATE TABL a (x INTEGER);\n", "sql/1_a.sql:1:1: SQLite refuses it: near \"TABL\": syntax error"),
            ("-- one\nCREATE TABLE a (x INTEGER;\n", "sql/1_a.sql:2:1: SQLite refuses it:"),
            ("INSERT INTO nope VALUES (1);\n", "sql/1_a.sql:1:1: SQLite refuses it: no such table: nope"),
        ]
        for (sql, expected) in broken {
            let project = try Project(self, files: ["sql/1_a.sql": sql, "sql/2_b.sql": "CREATE TABLE b (x INTEGER);"])
            let result = try project.strata(["validate"])
            XCTAssertEqual(result.status, 3, "\(sql): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains(expected), "\(sql): \(result.stderr)")
            XCTAssertTrue(result.stderr.contains("1 later migration not checked by SQLite"), result.stderr)
            XCTAssertEqual(try project.strataOnBackend(["migrate"]).status, 1, "migrate fails on it too: validate said so first")
            let json = try object(try project.strata(["validate", "--format", "json"]))
            XCTAssertEqual(json["error"] as? String, "invalid-manifest")
            XCTAssertEqual((json["problems"] as? [[String: Any]])?.first?["file"] as? String, "sql/1_a.sql")
        }
        // A file may use what the files before it make; the check writes no database.
        let fine = try Project(self, files: ["sql/1_a.sql": "CREATE TABLE a (x INTEGER);",
                                             "sql/2_b.sql": "INSERT INTO a VALUES (1);\nCREATE VIEW v AS SELECT x FROM a;"])
        let result = try fine.strata(["validate", "--format", "json"])
        XCTAssertEqual(result.status, 0, result.stderr)
        let checks = try XCTUnwrap(try object(result)["checks"] as? [[String: Any]])
        XCTAssertEqual(checks.first?["checked"] as? String, "scratch-database")
        XCTAssertFalse(FileManager.default.fileExists(atPath: fine.databasePath), "validate creates no database")
        // An ATTACH of a file is not run, not even on the scratch database.
        let attach = try Project(self, files: ["sql/1_a.sql": "ATTACH 'elsewhere.sqlite' AS other;"])
        XCTAssertEqual(try attach.strata(["validate"]).status, 3)
        XCTAssertFalse(FileManager.default.fileExists(atPath: attach.root.appendingPathComponent("elsewhere.sqlite").path))
    }

    func testTheOtherBackendsSyntaxIsReported() throws {
        let postgres = try Project(self, manifest: #"<manifest version="1"><database url="postgresql://db/app"/><migrations directory="sql"/></manifest>"#,
                                   files: ["sql/1_a.sql": "CREATE TABLE a (\n  id INTEGER PRIMARY KEY AUTOINCREMENT,\n  autoincrement integer\n);\n",
                                           "sql/2_b.sql": "INSERT OR REPLACE INTO a VALUES (1, 2);"])
        var result = try postgres.strata(["validate"])
        XCTAssertEqual(result.status, 3, result.stderr)
        XCTAssertTrue(result.stderr.contains("sql/1_a.sql:2:26: AUTOINCREMENT is SQLite's"), result.stderr)
        XCTAssertFalse(result.stderr.contains("sql/1_a.sql:3:"), "a column named autoincrement is fine: \(result.stderr)")
        XCTAssertTrue(result.stderr.contains("sql/2_b.sql:1:8: INSERT OR REPLACE is SQLite's"), result.stderr)

        let sqlite = try Project(self, files: ["sql/1_a.sql": "CREATE TABLE a (id SERIAL PRIMARY KEY, note TEXT DEFAULT 'x::y');\n"])
        result = try sqlite.strata(["validate"])
        XCTAssertEqual(result.status, 3, result.stderr)
        XCTAssertTrue(result.stderr.contains("sql/1_a.sql:1:20: SERIAL is PostgreSQL's"), result.stderr)
        XCTAssertFalse(result.stderr.contains("casts"), "'x::y' is a string: \(result.stderr)")
    }

    /// lemmy's and supabase's files: PostgreSQL functions whose `$$` bodies hold `BEGIN … END`, in a manifest that
    /// names no backend. Not transaction control, and no `transaction="none"` advised.
    func testAManifestThatNamesNoBackendIsNotReadAsSQLite() throws {
        let function = """
            CREATE FUNCTION touch() RETURNS trigger AS $$
            BEGIN
              NEW.updated = now();
              RETURN NEW;
            END;
            $$ LANGUAGE plpgsql;
            """
        let project = try Project(self, manifest: #"<manifest version="1"><migrations directory="sql"/></manifest>"#,
                                  files: ["sql/1_touch.sql": function])
        let result = try project.strata(["validate", "--format", "json"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stderr.contains("the dialect of its SQL is not known"), result.stderr)
        XCTAssertFalse(result.stderr.contains("transaction=\"none\""), "no wrong fix advised: \(result.stderr)")
        XCTAssertTrue(result.stderr.contains("if these files are for SQLite:"), result.stderr)
        let checks = try XCTUnwrap(try object(result)["checks"] as? [[String: Any]])
        XCTAssertTrue(checks.first?["backend"] is NSNull)
        // Given a SQLite database, the files are SQLite's: SQLite cannot run them.
        let asSQLite = try project.strata(["validate", "--database", "db.sqlite"])
        XCTAssertEqual(asSQLite.status, 3, asSQLite.stderr)
        XCTAssertTrue(asSQLite.stderr.contains("$$ quoting is PostgreSQL's"), asSQLite.stderr)
        // What both backends' rules find is a problem whatever the dialect.
        try project.file("sql/2_vacuum.sql", "VACUUM;")
        let both = try project.strata(["validate"])
        XCTAssertEqual(both.status, 3, both.stderr)
        XCTAssertTrue(both.stderr.contains("sql/2_vacuum.sql:1:1:"), both.stderr)
    }

    func testAPostgreSQLServerParsesEveryStatementAndNothingIsWritten() throws {
        let server = try PostgresServer.shared()
        let project = try Project(self, backend: .postgres, files: [
            "sql/1_a.sql": "CREATE TABLE a (x integer);\nSELEC 1;\n",
            "sql/2_b.sql": "INSERT INTO a VALUES (1);\nCREATE INDEX a_x ON a (x);\n",
        ])
        let offline = try project.strata(["validate"])
        XCTAssertEqual(offline.status, 0, offline.stderr)
        XCTAssertTrue(offline.stderr.contains("note: PostgreSQL's syntax not checked by a server: give --database"), offline.stderr)

        let checked = try project.strataOnBackend(["validate", "--format", "json"])
        XCTAssertEqual(checked.status, 3, checked.stderr)
        XCTAssertTrue(checked.stderr.contains("sql/1_a.sql:2:1: PostgreSQL: syntax error at or near \"SELEC\""), checked.stderr)
        XCTAssertFalse(checked.stderr.contains("2_b.sql"), "a table an earlier file makes is no syntax error: \(checked.stderr)")
        XCTAssertEqual((try object(checked)["checks"] as? [[String: Any]])?.first?["checked"] as? String, "server")
        let connection = try PostgresConnection(url: try server.url(for: project.root))
        XCTAssertEqual(try connection.scalar("SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = 'public'", as: Int.self), 0,
                       "nothing was run or written")

        try project.file("sql/1_a.sql", "CREATE TABLE a (x integer);\n")
        XCTAssertEqual(try project.strataOnBackend(["validate"]).status, 0)
        // A server that cannot be reached: validate says it could not check, and checks the rest.
        let nobody = "postgresql://postgres@/x?host=\(project.root.path)&port=5999"
        let unreachable = try project.strata(["validate", "--database", nobody])
        XCTAssertEqual(unreachable.status, 0, unreachable.stderr)
        XCTAssertTrue(unreachable.stderr.contains("not checked by a server: could not connect"), unreachable.stderr)
    }
}
