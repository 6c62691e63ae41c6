import Foundation
import Strata
@testable import StrataCore
@testable import StrataPostgres
import XCTest

/// A least-privilege deploy role: PostgreSQL 15 gives roles other than the database's owner no CREATE on schema
/// `public`, and none has CREATE on the database unless granted. A role granted CREATE on the history's schema, or
/// owning it, deploys; one that lacks a privilege is told which, on what, and a GRANT that would give it.
final class PostgresPrivilegeTests: XCTestCase {
    /// A project whose manifest's `<database>` names its database as a login role of its own (created here, with no
    /// privilege beyond what PUBLIC has), holding `schema` when given; and an administrator's connection to it.
    private func project(schema: String? = nil) throws -> (project: Project, role: String, admin: PostgresConnection, database: String) {
        let server = try PostgresServer.shared()
        let role = "deployer_" + UUID().uuidString.prefix(8).lowercased()
        let project = try Project(self, backend: .postgres, files: ["sql/001_t.sql": "CREATE TABLE t (id int);"])
        let database = try server.database(for: project.root)
        let admin = try PostgresConnection(url: server.url(database: database))
        try admin.executeSimple("CREATE ROLE \(role) LOGIN PASSWORD 'strata'")
        addTeardownBlock { _ = try? admin.executeSimple("DROP OWNED BY \(role); DROP ROLE \(role)") }
        let url = server.url(database: database, user: role, password: "strata").replacingOccurrences(of: "&", with: "&amp;")
        let schemaAttribute = schema.map { #" schema="\#($0)""# } ?? ""
        try project.file("manifest.xml", #"<manifest version="1"><database url="\#(url)"\#(schemaAttribute)/><migrations directory="sql"/></manifest>"#)
        return (project, role, admin, database)
    }

    private func historySchema(_ admin: PostgresConnection) throws -> String? {
        try admin.scalar("SELECT relnamespace::regnamespace::text FROM pg_class WHERE relname = 'strata_history'", as: String.self)
    }

    func testARoleGrantedCreateOnSchemaPublicDeploys() throws {
        let (project, role, admin, _) = try project()
        try admin.executeSimple("GRANT CREATE ON SCHEMA public TO \(role)")
        let result = try project.strata(["migrate"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(try historySchema(admin), "public")
        XCTAssertEqual(try admin.scalar("SELECT tableowner::text FROM pg_tables WHERE tablename = 't'", as: String.self), role)
        XCTAssertEqual(try project.strata(["status"]).status, 0)
    }

    func testARoleWithoutCreateOnSchemaPublicIsToldWhichPrivilegeItLacks() throws {
        let (project, role, admin, _) = try project()
        let result = try project.strata(["migrate"])
        XCTAssertEqual(result.status, 1, result.stderr)
        XCTAssertTrue(result.stderr.contains("role \(role) may not create strata_history in schema public: it lacks CREATE on schema public (GRANT CREATE ON SCHEMA public TO \(role))"), result.stderr)
        XCTAssertNil(try historySchema(admin))
    }

    func testAMissingHistorySchemaNeedsCreateOnTheDatabase() throws {
        let (project, role, admin, database) = try project(schema: "app")
        let result = try project.strata(["migrate"])
        XCTAssertEqual(result.status, 1, result.stderr)
        XCTAssertTrue(result.stderr.contains("role \(role) may not create schema app for strata_history: it lacks CREATE on database \(database) (GRANT CREATE ON DATABASE \(database) TO \(role)); or create the schema for it first (CREATE SCHEMA app AUTHORIZATION \(role))"), result.stderr)
        XCTAssertNil(try historySchema(admin))
    }

    func testASchemaTheRoleOwnsHoldsTheHistory() throws {
        let (project, role, admin, _) = try project(schema: "app")
        try admin.executeSimple("CREATE SCHEMA app AUTHORIZATION \(role); GRANT CREATE ON SCHEMA public TO \(role)")
        let result = try project.strata(["migrate"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(try historySchema(admin), "app")
    }

    func testASchemaWithoutUsageIsNamed() throws {
        let (project, role, admin, _) = try project(schema: "app")
        try admin.executeSimple("CREATE SCHEMA app; GRANT CREATE ON SCHEMA app TO \(role)")
        let result = try project.strata(["migrate"])
        XCTAssertEqual(result.status, 1, result.stderr)
        XCTAssertTrue(result.stderr.contains("role \(role) may not create strata_history in schema app: it lacks USAGE on schema app (GRANT USAGE ON SCHEMA app TO \(role))"), result.stderr)
    }

    /// A history made by another role (its owner) before the two new columns existed, which the deploy role may
    /// write but not alter: a plan that needs neither column deploys as before; a `transaction="none"` step, whose
    /// running row needs one, is refused before anything of it runs, naming the column and the ALTER its owner can run.
    func testAHistoryTheRoleMayWriteButNotAlterStillTakesStepsThatNeedNoNewColumn() throws {
        let (project, role, admin, _) = try project()
        try admin.executeSimple("GRANT CREATE ON SCHEMA public TO \(role)")
        try admin.history.create()
        try admin.executeSimple("""
            ALTER TABLE public.strata_history DROP COLUMN earlier_checksums, DROP COLUMN runner_session;
            GRANT SELECT, INSERT, UPDATE, DELETE ON public.strata_history TO \(role)
            """)
        let first = try project.strata(["migrate"])
        XCTAssertEqual(first.status, 0, first.stderr)
        XCTAssertEqual(try admin.scalar("SELECT count(*) FROM public.strata_history", as: Int.self), 1)

        try project.file("sql/002_none.sql", "CREATE TABLE u (id int);")
        let manifest = try String(contentsOf: project.root.appendingPathComponent("manifest.xml"), encoding: .utf8)
        try project.file("manifest.xml", manifest.replacingOccurrences(of: #"<migrations directory="sql"/>"#,
            with: #"<migrations directory="sql"><migration file="002_none.sql" transaction="none"/></migrations>"#))
        let none = try project.strata(["migrate"])
        XCTAssertEqual(none.status, 1, none.stderr)
        XCTAssertTrue(none.stderr.contains("has no column runner_session"), none.stderr)
        XCTAssertTrue(none.stderr.contains(#"ALTER TABLE "public".strata_history ADD COLUMN IF NOT EXISTS runner_session text"#), none.stderr)
        XCTAssertFalse(try admin.tableExists("u"), "nothing of the step ran")
        XCTAssertNil(try admin.history.record(kind: .migration, identity: "002_none.sql"))
    }

    /// A role that may apply steps but not delete history rows is refused a rollback before any down runs, told
    /// the GRANT it needs; granted it, the rollback runs.
    func testARoleThatMayNotDeleteHistoryRowsIsRefusedARollbackBeforeAnyDownRuns() throws {
        let (project, role, admin, _) = try project()
        try project.file("sql/001_t.sql", "-- migrate:up\nCREATE TABLE t (id int);\n-- migrate:down\nDROP TABLE t;\n")
        let manifest = try String(contentsOf: project.root.appendingPathComponent("manifest.xml"), encoding: .utf8)
        try project.file("manifest.xml", manifest.replacingOccurrences(of: #"<migrations directory="sql"/>"#,
                                                                       with: #"<migrations directory="sql" format="dbmate"/>"#))
        try admin.executeSimple("GRANT CREATE ON SCHEMA public TO \(role)")
        try admin.history.create()
        try admin.executeSimple("GRANT SELECT, INSERT, UPDATE ON public.strata_history TO \(role)")
        XCTAssertEqual(try project.strata(["migrate"]).status, 0)
        let refused = try project.strata(["rollback", "--steps", "1"])
        XCTAssertEqual(refused.status, 3, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("may not delete rows of \"public\".strata_history"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains("GRANT DELETE ON \"public\".strata_history TO \(role)"), refused.stderr)
        XCTAssertTrue(try admin.tableExists("t"), "no down ran")
        try admin.executeSimple("GRANT DELETE ON public.strata_history TO \(role)")
        let granted = try project.strata(["rollback", "--steps", "1"])
        XCTAssertEqual(granted.status, 0, granted.stderr)
        XCTAssertFalse(try admin.tableExists("t"))
    }

    /// The history lives in a schema the deploy role may not read (another role made it there, first on its
    /// `search_path`): it cannot be told whether it records these steps, so a run whose own history is empty
    /// refuses rather than start a second history and run every step again.
    func testAHistoryThisRoleMayNotReadIsRefusedNotTakenForNone() throws {
        let (project, role, admin, _) = try project()
        try admin.executeSimple("""
            GRANT CREATE ON SCHEMA public TO \(role);
            CREATE SCHEMA hidden; CREATE TABLE hidden.strata_history (kind text, identity text, checksum text,
              checksum_version int, state text)
            """)
        let result = try project.strata(["migrate"])
        XCTAssertEqual(result.status, 3, result.stderr)
        XCTAssertTrue(result.stderr.contains("strata_history in schema hidden exists, and this role may not read it"), result.stderr)
        XCTAssertFalse(try admin.tableExists("t"), "nothing ran")
        let anew = try project.strata(["migrate", "--new-history"])
        XCTAssertEqual(anew.status, 0, anew.stderr)
        XCTAssertTrue(try admin.tableExists("t"))
    }
}
