import Foundation
import XCTest
import Strata
@testable import StrataCore
@testable import StrataSQLite

/// `baseline --from TOOL` on every backend: a database another tool migrated, its history table created and filled
/// as that tool does (the tool's own DDL and rows), is adopted by recording exactly the migrations it applied; a
/// dirty or failed step, or a version no file has, refuses with nothing recorded.
final class ForeignBaselineTests: XCTestCase {
    /// One tool's project: its files (named as the tool names them), the tables its applied migrations made, and
    /// its history table with the rows it writes, on each backend.
    struct Adoption: Sendable {
        let tool: String
        let manifestBody: String
        let files: [String: String]
        /// What the applied migrations left in the database.
        let schema: [String]
        /// The tool's history table and rows, as the tool writes them on the backend.
        let history: @Sendable (TestBackend.Kind) -> [String]
        let applied: [String]
        let pending: [String]
    }

    static func table(_ name: String) -> String { "CREATE TABLE \(name) (id INTEGER PRIMARY KEY);\n" }

    static let dbmate = Adoption(
        tool: "dbmate", manifestBody: #"<migrations directory="sql" format="dbmate"/>"#,
        files: ["sql/20240101120000_users.sql": "-- migrate:up\n" + table("users") + "-- migrate:down\nDROP TABLE users;\n",
                "sql/20240102120000_posts.sql": "-- migrate:up\n" + table("posts") + "-- migrate:down\nDROP TABLE posts;\n",
                "sql/20240103120000_tags.sql": "-- migrate:up\n" + table("tags") + "-- migrate:down\nDROP TABLE tags;\n"],
        schema: [table("users"), table("posts")],
        history: { kind in
            [kind == .postgres ? "CREATE TABLE IF NOT EXISTS schema_migrations (version character varying(128) NOT NULL PRIMARY KEY)"
                               : #"CREATE TABLE IF NOT EXISTS "schema_migrations" (version varchar(128) primary key)"#,
             "INSERT INTO schema_migrations (version) VALUES ('20240101120000')",
             "INSERT INTO schema_migrations (version) VALUES ('20240102120000')"]
        },
        applied: ["20240101120000_users.sql", "20240102120000_posts.sql"], pending: ["20240103120000_tags.sql"])

    /// golang-migrate keeps one row: the version it reached; every file up to it was applied.
    static func golangMigrate(dirty: Bool = false) -> Adoption {
        Adoption(
            tool: "golang-migrate", manifestBody: #"<migrations directory="sql"/>"#,
            files: ["sql/000001_users.sql": table("users"), "sql/000002_posts.sql": table("posts"), "sql/000003_tags.sql": table("tags")],
            schema: [table("users"), table("posts")],
            history: { kind in
                kind == .postgres
                    ? ["CREATE TABLE IF NOT EXISTS schema_migrations (version bigint not null primary key, dirty boolean not null)",
                       "INSERT INTO schema_migrations (version, dirty) VALUES (2, \(dirty))"]
                    : ["CREATE TABLE IF NOT EXISTS schema_migrations (version uint64,dirty bool)",
                       "CREATE UNIQUE INDEX IF NOT EXISTS version_unique ON schema_migrations (version)",
                       "INSERT INTO schema_migrations (version, dirty) VALUES (2, \(dirty ? 1 : 0))"]
            },
            applied: ["000001_users.sql", "000002_posts.sql"], pending: ["000003_tags.sql"])
    }

    /// goose writes a version-0 row when it creates its table; a version's newest row says whether it is applied.
    static let goose = Adoption(
        tool: "goose", manifestBody: #"<migrations directory="sql" format="goose"/>"#,
        files: ["sql/00001_users.sql": "-- +goose Up\n" + table("users") + "-- +goose Down\nDROP TABLE users;\n",
                "sql/00002_posts.sql": "-- +goose Up\n" + table("posts") + "-- +goose Down\nDROP TABLE posts;\n",
                "sql/00003_tags.sql": "-- +goose Up\n" + table("tags") + "-- +goose Down\nDROP TABLE tags;\n"],
        schema: [table("users"), table("posts")],
        history: { kind in
            (kind == .postgres
                ? ["CREATE TABLE goose_db_version (id serial NOT NULL, version_id bigint NOT NULL, is_applied boolean NOT NULL, tstamp timestamp NULL default now(), PRIMARY KEY(id))"]
                : ["CREATE TABLE goose_db_version (id INTEGER PRIMARY KEY AUTOINCREMENT, version_id INTEGER NOT NULL, is_applied INTEGER NOT NULL, tstamp TIMESTAMP DEFAULT (datetime('now')))"])
            + [(0, true), (1, true), (2, true), (3, true), (3, false)].map { version, applied in
                "INSERT INTO goose_db_version (version_id, is_applied) VALUES (\(version), \(kind == .postgres ? "\(applied)" : applied ? "1" : "0"))"
            }
        },
        applied: ["00001_users.sql", "00002_posts.sql"], pending: ["00003_tags.sql"])

    /// Flyway's rows: versions compared by their numeric parts (`1.1` is `V1_1__`), a repeatable's row without a
    /// version (not recorded: Strata applies it), and, with `failed`, a row with success false.
    static func flyway(failed: Bool = false) -> Adoption {
        Adoption(
            tool: "flyway", manifestBody: #"<migrations directory="sql"/>"#,
            files: ["sql/V1__users.sql": table("users"), "sql/V1_1__posts.sql": table("posts"), "sql/V2__tags.sql": table("tags")],
            schema: [table("users"), table("posts")],
            history: { kind in
                let (yes, no) = kind == .postgres ? ("true", "false") : ("1", "0")
                let now = kind == .postgres ? "now()" : "strftime('%Y-%m-%d %H:%M:%f','now')"
                return [kind == .postgres ? """
                    CREATE TABLE "flyway_schema_history" ("installed_rank" INT NOT NULL, "version" VARCHAR(50), "description" VARCHAR(200) NOT NULL, "type" VARCHAR(20) NOT NULL, "script" VARCHAR(1000) NOT NULL, "checksum" INTEGER, "installed_by" VARCHAR(100) NOT NULL, "installed_on" TIMESTAMP NOT NULL DEFAULT now(), "execution_time" INTEGER NOT NULL, "success" BOOLEAN NOT NULL, CONSTRAINT "flyway_schema_history_pk" PRIMARY KEY ("installed_rank"))
                    """ : """
                    CREATE TABLE "flyway_schema_history" ("installed_rank" INT NOT NULL PRIMARY KEY, "version" VARCHAR(50), "description" VARCHAR(200) NOT NULL, "type" VARCHAR(20) NOT NULL, "script" VARCHAR(1000) NOT NULL, "checksum" INT, "installed_by" VARCHAR(100) NOT NULL, "installed_on" TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f','now')), "execution_time" INT NOT NULL, "success" BOOLEAN NOT NULL)
                    """,
                    #"CREATE INDEX "flyway_schema_history_s_idx" ON "flyway_schema_history" ("success")"#,
                    "INSERT INTO flyway_schema_history VALUES (1, '1', 'users', 'SQL', 'V1__users.sql', 1234567, 'app', \(now), 4, \(yes))",
                    "INSERT INTO flyway_schema_history VALUES (2, '1.1', 'posts', 'SQL', 'V1_1__posts.sql', -7654321, 'app', \(now), 3, \(yes))",
                    "INSERT INTO flyway_schema_history VALUES (3, NULL, 'views', 'SQL', 'R__views.sql', 42, 'app', \(now), 2, \(yes))"]
                    + (failed ? ["INSERT INTO flyway_schema_history VALUES (4, '2', 'tags', 'SQL', 'V2__tags.sql', 99, 'app', \(now), 1, \(no))"] : [])
            },
            applied: ["V1__users.sql", "V1_1__posts.sql"], pending: ["V2__tags.sql"])
    }

    /// sqlx: one row per version, `success` false for one that failed part-way.
    static func sqlx(failed: Bool = false) -> Adoption {
        Adoption(
            tool: "sqlx", manifestBody: #"<migrations directory="sql"/>"#,
            files: ["sql/20240101000001_users.sql": table("users"), "sql/20240101000002_posts.sql": table("posts"),
                    "sql/20240101000003_tags.sql": table("tags")],
            schema: [table("users"), table("posts")],
            history: { kind in
                let postgres = kind == .postgres
                let checksum = postgres ? #"'\x0a0b0c'::bytea"# : "X'0A0B0C'"
                return [postgres ? """
                    CREATE TABLE IF NOT EXISTS _sqlx_migrations (version BIGINT PRIMARY KEY, description TEXT NOT NULL, installed_on TIMESTAMPTZ NOT NULL DEFAULT now(), success BOOLEAN NOT NULL, checksum BYTEA NOT NULL, execution_time BIGINT NOT NULL)
                    """ : """
                    CREATE TABLE IF NOT EXISTS _sqlx_migrations (version BIGINT PRIMARY KEY, description TEXT NOT NULL, installed_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, success BOOLEAN NOT NULL, checksum BLOB NOT NULL, execution_time BIGINT NOT NULL)
                    """,
                    "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) VALUES (20240101000001, 'users', \(postgres ? "TRUE" : "1"), \(checksum), 1200)",
                    "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) VALUES (20240101000002, 'posts', \(postgres ? (failed ? "FALSE" : "TRUE") : (failed ? "0" : "1")), \(checksum), 900)"]
            },
            applied: ["20240101000001_users.sql", "20240101000002_posts.sql"], pending: ["20240101000003_tags.sql"])
    }

    /// diesel: one directory per migration, its version the directory name up to '_' without its '-'s.
    static let diesel = Adoption(
        tool: "diesel", manifestBody: """
            <migrations>
              <migration file="migrations/00000000000000_diesel_initial_setup/up.sql" id="00000000000000_diesel_initial_setup"/>
              <migration file="migrations/2017-07-24-212104_users/up.sql" id="2017-07-24-212104_users"/>
              <migration file="migrations/2017-07-25-090000_tags/up.sql" id="2017-07-25-090000_tags"/>
            </migrations>
            """,
        files: ["migrations/00000000000000_diesel_initial_setup/up.sql": table("setup"),
                "migrations/2017-07-24-212104_users/up.sql": table("users"),
                "migrations/2017-07-25-090000_tags/up.sql": table("tags")],
        schema: [table("setup"), table("users")],
        history: { _ in
            ["CREATE TABLE IF NOT EXISTS __diesel_schema_migrations (version VARCHAR(50) PRIMARY KEY NOT NULL, run_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)",
             "INSERT INTO __diesel_schema_migrations (version) VALUES ('00000000000000')",
             "INSERT INTO __diesel_schema_migrations (version) VALUES ('20170724212104')"]
        },
        applied: ["00000000000000_diesel_initial_setup", "2017-07-24-212104_users"], pending: ["2017-07-25-090000_tags"])

    /// A project holding the tool's database: its tables made, its history written, Strata's history absent.
    func adopting(_ adoption: Adoption, _ backend: TestBackend) throws -> Project {
        let project = try Project(self, backend: backend, manifestBody: adoption.manifestBody, files: adoption.files)
        let db = try project.connection()
        for statement in adoption.schema + adoption.history(backend.kind) { try db.execute(statement, .none) }
        return project
    }

    func states(_ project: Project) throws -> [String: StepStatus.State] {
        Dictionary(uniqueKeysWithValues: try project.migrator().status().map { ($0.id, $0.state) })
    }

    func testEachToolsHistoryIsAdoptedAsTheToolWroteIt() throws {
        try forEachBackend { backend in
            for adoption in [Self.dbmate, Self.golangMigrate(), Self.goose, Self.flyway(), Self.sqlx(), Self.diesel] {
                let project = try adopting(adoption, backend)
                // Before: status and a first migrate point at the other tool's history.
                let status = try project.strataOnBackend(["status"])
                XCTAssertTrue(status.stderr.contains("'strata baseline --from \(adoption.tool)'"), "\(adoption.tool): \(status.stderr)")
                let json = try project.strataOnBackend(["status", "--format", "json"])
                XCTAssertTrue(json.stdout.contains(#""foreignHistories":[{"tool":"\#(adoption.tool)""#), "\(adoption.tool): \(json.stdout)")
                let first = try project.strataOnBackend(["migrate"])
                XCTAssertEqual(first.status, 1, "\(adoption.tool): already exists")
                XCTAssertTrue(first.stderr.contains("adopt what it applied with 'strata baseline --from \(adoption.tool)'"), "\(adoption.tool): \(first.stderr)")

                let adopted = try project.strataOnBackend(["baseline", "--from", adoption.tool, "--format", "json"])
                XCTAssertEqual(adopted.status, 0, "\(adoption.tool): \(adopted.stderr)")
                XCTAssertTrue(adopted.stdout.contains(#""from":"\#(adoption.tool)","recorded":["#), "\(adoption.tool): \(adopted.stdout)")
                for id in adoption.applied { XCTAssertTrue(adopted.stdout.contains("\"\(id)\""), "\(adoption.tool) \(id): \(adopted.stdout)") }
                let states = try states(project)
                for id in adoption.applied { XCTAssertEqual(states[id], .applied, "\(adoption.tool) \(id)") }
                for id in adoption.pending { XCTAssertEqual(states[id], .pending, "\(adoption.tool) \(id)") }
                let records = try project.connection().history.all().filter { adoption.applied.contains($0.identity) }
                XCTAssertTrue(records.count == adoption.applied.count && records.allSatisfy { $0.state == .baseline }, "\(adoption.tool): \(records)")
                // Then migrate runs exactly what the tool had not.
                let report = try project.migrator().migrate()
                XCTAssertNil(report.failure, "\(adoption.tool)")
                XCTAssertEqual(report.applied.map(\.id), adoption.pending, adoption.tool)
                XCTAssertEqual(try project.strataOnBackend(["baseline", "--from", adoption.tool]).status, 0, "again: \(adoption.tool)")
            }
        }
    }

    func testFlywayRepeatablesAreLeftForStrataToApply() throws {
        try forEachBackend { backend in
            let project = try adopting(Self.flyway(), backend)
            let adopted = try project.migrator().baseline(from: .flyway)
            XCTAssertEqual(Set(adopted.recorded), ["V1__users.sql", "V1_1__posts.sql"])
            XCTAssertEqual(adopted.repeatablesNotRecorded, ["R__views.sql"])
        }
    }

    /// A dirty or failed step in the tool's history, a version no file has, a missing table, a table of another
    /// tool's shape: refused (exit 3, reason foreign-history), and nothing is recorded.
    func testWhatCannotBeAdoptedIsRefusedAndNothingIsRecorded() throws {
        try forEachBackend { backend in
            func refused(_ adoption: Adoption, from tool: String? = nil, _ text: String, tweak: ((any MigrationDatabase) throws -> Void)? = nil) throws {
                let project = try adopting(adoption, backend)
                try tweak?(try project.connection())
                let result = try project.strataOnBackend(["baseline", "--from", tool ?? adoption.tool, "--format", "json"])
                XCTAssertEqual(result.status, 3, "\(adoption.tool): \(result.stderr)")
                XCTAssertTrue(result.stdout.contains(#""reason":"foreign-history""#), "\(adoption.tool): \(result.stdout)")
                XCTAssertTrue(result.stdout.contains(text), "\(adoption.tool): \(result.stdout)")
                XCTAssertEqual(try project.connection().history.all().filter(\.isApplied), [], "\(adoption.tool): nothing recorded")
            }
            try refused(Self.golangMigrate(dirty: true), "marks version 2 dirty")
            try refused(Self.sqlx(failed: true), "marks version 20240101000002 as not successful")
            try refused(Self.flyway(failed: true), "records V2__tags.sql as failed")
            try refused(Self.dbmate, "records version 20240104120000 as applied, and no migration") { db in
                try db.execute("INSERT INTO schema_migrations (version) VALUES ('20240104120000')", .none)
            }
            try refused(Self.goose, from: "flyway", "this database has no flyway_schema_history table")
            try refused(Self.golangMigrate(), from: "dbmate", "use --from golang-migrate")
        }
    }

    /// `--through` takes a version as well as a file name: the one migration whose name starts with it.
    func testBaselineThroughTakesAVersion() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, manifestBody: #"<migrations directory="sql"/>"#,
                                      files: Self.golangMigrate().files.merging(["sql/V1_1__flyway.sql": "SELECT 1;\n"]) { $1 })
            XCTAssertEqual(try project.migrator().baseline(through: "2"), ["000001_users.sql", "000002_posts.sql"])
            let command = try project.strataOnBackend(["baseline", "--through", "1.1"])
            XCTAssertEqual(command.status, 0, command.stderr)
            XCTAssertTrue(command.stdout.contains("V1_1__flyway.sql"), command.stdout)
            let unknown = try project.strataOnBackend(["baseline", "--through", "7"])
            XCTAssertEqual(unknown.status, 1, unknown.stderr)
            XCTAssertTrue(unknown.stderr.contains("7 is not a step of"), unknown.stderr)
            try project.file("sql/3_again.sql", "SELECT 3;\n")
            let several = try project.strataOnBackend(["baseline", "--through", "3"])
            XCTAssertTrue(several.stderr.contains("version 3 is the version of several migrations"), several.stderr)
            XCTAssertEqual(try project.strataOnBackend(["baseline", "--through", "3", "--from", "dbmate"]).status, 2)
            XCTAssertEqual(try project.strataOnBackend(["baseline", "--from", "liquibase"]).status, 2)
        }
    }

    /// Where the manifest declares the tool's format, only those files are the tool's: a directory of Strata's own
    /// beside them is not adopted, whatever numbers its names start with.
    func testOnlyTheToolsOwnFormatsFilesAreAdoptedWhereOneIsDeclared() throws {
        try forEachBackend { backend in
            var adoption = Self.golangMigrate()
            adoption = Adoption(tool: adoption.tool, manifestBody: """
                <migrations directory="sql" format="golang-migrate"/>
                <migrations directory="own"/>
                """, files: ["sql/000001_users.up.sql": Self.table("users"), "sql/000002_posts.up.sql": Self.table("posts"),
                             "own/000002_own.sql": Self.table("own2")],
                schema: adoption.schema, history: adoption.history, applied: [], pending: [])
            let project = try adopting(adoption, backend)
            let adopted = try project.strataOnBackend(["baseline", "--from", "golang-migrate"])
            XCTAssertEqual(adopted.status, 0, adopted.stderr)
            let states = try states(project)
            XCTAssertEqual(states["000001_users.up.sql"], .applied)
            XCTAssertEqual(states["000002_posts.up.sql"], .applied)
            XCTAssertEqual(states["000002_own.sql"], .pending, "Strata's own file was never the other tool's")
        }
    }

    /// Once Strata has run on the database (a migrate, a rollback), the other tool's table no longer says what it
    /// holds: adopting again reads nothing and records nothing, saying why (exit 0, so a deploy script that adopts
    /// first each time goes on); a step Strata rolled back is not recorded again.
    func testAdoptingAgainAfterStrataRanRecordsNothing() throws {
        try forEachBackend { backend in
            let project = try adopting(Self.golangMigrate(), backend)
            try project.file("sql/000003_tags.down.sql", "DROP TABLE tags;\n")
            XCTAssertEqual(try project.strataOnBackend(["baseline", "--from", "golang-migrate"]).status, 0)
            XCTAssertNil(try project.migrator().migrate().failure)
            XCTAssertNil(try project.migrator().rollback(.steps(1)).failure, "000003_tags.sql, which Strata applied")
            let before = try project.connection().history.all()
            let again = try project.strataOnBackend(["baseline", "--from", "golang-migrate"])
            XCTAssertEqual(again.status, 0, again.stderr)
            XCTAssertTrue(again.stdout.contains("Nothing recorded: Strata's history already records"), again.stdout)
            XCTAssertEqual(try project.connection().history.all(), before, "nothing recorded")
            XCTAssertEqual(try states(project)["000003_tags.sql"], .pending)
        }
    }
}
