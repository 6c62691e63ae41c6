import Foundation
import Strata
@testable import StrataCore
@testable import StrataPostgres
import XCTest

/// A PostgreSQL rehearsal runs every step in one transaction where `migrate` commits each: where that shows, the
/// verdict must still be migrate's, or "not known". Deferred checks made at each step's end without changing any
/// constraint's mode for the steps after (by name or by `ALL`), for any role; a new enum value failing only as the
/// same step's use is a verdict; the program's cursors and prepared statements told from a step's of the same name.
/// Each was a wrong result of the first version of these checks (hostile review 13); comments say what each was.
final class PostgresRehearsalCommitTests: XCTestCase {
    /// A project whose `001_schema.sql` is migrated, then `pending` files added (run in name order).
    private func project(_ schema: String, pending: [String: String],
                         connection: ((Project) throws -> PostgresConnection)? = nil) throws -> (Project, Migrator) {
        let project = try Project(self, backend: .postgres, files: ["sql/001_schema.sql": schema])
        let first = try connection.map { Migrator(manifest: try project.manifest(), database: try $0(project)) }
            ?? project.migrator()
        XCTAssertNil(try first.migrate().failure)
        for (name, text) in pending { try project.file("sql/\(name)", text) }
        return (project, connection == nil ? try project.migrator()
                         : Migrator(manifest: try project.manifest(), database: try connection!(project)))
    }

    // MARK: SET CONSTRAINTS ALL IMMEDIATE outlives the step

    /// `SET CONSTRAINTS ALL IMMEDIATE` at the end of one step stays in force for the rest of the rehearsal's
    /// transaction, for every constraint, including one a LATER step creates `DEFERRABLE INITIALLY DEFERRED`
    /// (PostgreSQL's `afterTriggerCheckState`: a SET CONSTRAINTS ALL beats the trigger's declared mode), and no
    /// statement can undo that in one transaction. migrate starts each step in a new transaction, where the new
    /// constraint is deferred as declared: 003 loads children before their parents and commits. The rehearsal's
    /// 003 fails at line 2 on it, which must not be said to be migrate's failure: not known (exit 4).
    func testAConstraintALaterStepCreatesInitiallyDeferredIsDeferredInThatStep() throws {
        let (project, migrator) = try project("CREATE TABLE parents (id int PRIMARY KEY);\n", pending: [
            "002_first.sql": "INSERT INTO parents VALUES (1);\n",
            "003_children.sql": """
                CREATE TABLE children (id int PRIMARY KEY,
                                       parent_id int REFERENCES parents (id) DEFERRABLE INITIALLY DEFERRED);
                INSERT INTO children VALUES (1, 2);
                INSERT INTO parents VALUES (2);
                """,
        ])
        let report = try migrator.rehearse()
        XCTAssertFalse(report.wouldFail, "the rehearsal says: \(String(describing: report.failure))")
        XCTAssertTrue(report.wouldSucceed || report.notRehearsedUpToFailure == ["003_children.sql"], "\(report.notRehearsedUpToFailure)")
        let migrated = try project.migrator().migrate()
        XCTAssertNil(migrated.failure, "migrate applies both: \(String(describing: migrated.failure))")
        XCTAssertEqual(migrated.applied.map(\.id), ["002_first.sql", "003_children.sql"])
    }

    /// The same with a constraint trigger a later step creates `DEFERRABLE INITIALLY DEFERRED` (one that checks a
    /// total once the step's rows are all in): in migrate it fires at 003's COMMIT, when the total is right; in the
    /// rehearsal it fires after each row (immediate, from the earlier step's SET CONSTRAINTS ALL IMMEDIATE) and
    /// raises at the first: not known (exit 4), never "migrate would fail".
    func testAConstraintTriggerALaterStepCreatesInitiallyDeferredFiresAtTheStepsEnd() throws {
        let (project, migrator) = try project("""
            CREATE TABLE entries (id int PRIMARY KEY, amount int NOT NULL);
            CREATE FUNCTION entries_balance() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              IF (SELECT sum(amount) FROM entries) <> 0 THEN RAISE EXCEPTION 'entries do not balance'; END IF;
              RETURN NULL;
            END $$;
            """, pending: [
                "002_first.sql": "INSERT INTO entries VALUES (1, 0);\n",
                "003_balanced.sql": """
                    CREATE CONSTRAINT TRIGGER entries_balance AFTER INSERT OR UPDATE ON entries
                      DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION entries_balance();
                    INSERT INTO entries VALUES (2, 10);
                    INSERT INTO entries VALUES (3, -10);
                    """,
            ])
        let report = try migrator.rehearse()
        XCTAssertFalse(report.wouldFail, "the rehearsal says: \(String(describing: report.failure))")
        XCTAssertTrue(report.wouldSucceed || report.notRehearsedUpToFailure == ["003_balanced.sql"], "\(report.notRehearsedUpToFailure)")
        let migrated = try project.migrator().migrate()
        XCTAssertNil(migrated.failure, "migrate applies both: \(String(describing: migrated.failure))")
    }

    // MARK: Re-deferring by name defers every constraint of that name in the schema

    /// `SET CONSTRAINTS public.owner_fk DEFERRED` (the re-deferral of the constraint `a.owner_fk`, declared INITIALLY
    /// DEFERRED) defers every constraint named `owner_fk` in `public`: SET CONSTRAINTS names are per schema,
    /// constraint names per table. `b.owner_fk`, declared DEFERRABLE INITIALLY IMMEDIATE, is then deferred in every
    /// step after the first. 003 inserts a `b` row before its parent: migrate fails it at line 1 (the check is
    /// immediate there); the rehearsal checks it only at the step's end, where the parent is in, and says the plan
    /// would succeed. Right: 003 fails at line 1, as in migrate (re-defer by the constraints' triggers, or name by
    /// table, never a name shared with a constraint declared otherwise).
    func testAnImmediateConstraintSharingADeferredOnesNameStaysImmediate() throws {
        let (project, migrator) = try project("""
            CREATE TABLE parents (id int PRIMARY KEY);
            CREATE TABLE a (id int, parent_id int CONSTRAINT owner_fk REFERENCES parents DEFERRABLE INITIALLY DEFERRED);
            CREATE TABLE b (id int, parent_id int CONSTRAINT owner_fk REFERENCES parents DEFERRABLE INITIALLY IMMEDIATE);
            """, pending: [
                "002_first.sql": "INSERT INTO parents VALUES (1);\n",
                "003_b.sql": "INSERT INTO b VALUES (1, 7);\nINSERT INTO parents VALUES (7);\n",
            ])
        let report = try migrator.rehearse()
        XCTAssertEqual(report.failure?.id, "003_b.sql", "the rehearsal says the plan would succeed: \(report.steps.map { "\($0.id) \($0.outcome)" })")
        XCTAssertEqual(report.failure?.line, 1)
        let migrated = try project.migrator().migrate()
        XCTAssertEqual(migrated.failure?.id, "003_b.sql", "migrate fails 003 at its first statement")
        XCTAssertEqual(migrated.failure?.line, 1)
    }

    /// A constraint that cannot be deferred (a CHECK on another table, or a domain's CHECK) sharing its name with an
    /// INITIALLY DEFERRED one in the same schema: `SET CONSTRAINTS public.valid DEFERRED` fails ("constraint "valid"
    /// is not deferrable") after every step: `rehearse()` throws that error after the first step, a plain INSERT (the
    /// command prints it and exits 1, no report). migrate applies it. Right: the plan would succeed (re-defer only
    /// what is deferrable and declared so, by table).
    func testANonDeferrableConstraintSharingADeferredOnesNameDoesNotFailEveryStep() throws {
        for other in ["CREATE TABLE c (x int CONSTRAINT valid CHECK (x > 0));",
                      "CREATE DOMAIN positive AS int CONSTRAINT valid CHECK (VALUE > 0);"] {
            let (project, migrator) = try project("""
                CREATE TABLE parents (id int PRIMARY KEY);
                CREATE TABLE a (id int, parent_id int CONSTRAINT valid REFERENCES parents DEFERRABLE INITIALLY DEFERRED);
                \(other)
                """, pending: ["002_rows.sql": "INSERT INTO parents VALUES (1);\n"])
            do {
                let report = try migrator.rehearse()
                XCTAssertTrue(report.wouldSucceed, "\(other) the rehearsal says: \(String(describing: report.failure))")
            } catch {
                XCTFail("\(other) the rehearsal threw: \(error)")
            }
            let text = try project.strataOnBackend(["rehearse"])
            XCTAssertEqual(text.status, 0, text.stdout + text.stderr)
            XCTAssertNil(try project.migrator().migrate().failure, "migrate applies 002")
        }
    }

    // MARK: 55P04 is not always the rehearsal's

    /// A step that adds an enum value and uses it itself fails in migrate too (one step, one transaction: "unsafe
    /// use of new value"), at the same line. The rehearsal calls every 55P04 its own: "stopped by the rehearsal, not
    /// by anything migrate would do … whether migrate would fail here is not known", `wouldFail` false, exit 4.
    /// Right: the step would fail (exit 1), as migrate does; only a value an EARLIER step added is the rehearsal's.
    func testAnEnumValueAddedAndUsedInOneStepFailsAsInMigrate() throws {
        let (project, migrator) = try project("CREATE TYPE mood AS ENUM ('calm');\nCREATE TABLE moods (m mood);\n", pending: [
            "002_value.sql": "ALTER TYPE mood ADD VALUE 'angry';\nINSERT INTO moods VALUES ('angry');\n",
        ])
        let report = try migrator.rehearse()
        XCTAssertTrue(report.wouldFail, "\(String(describing: report.steps.last?.note))")
        XCTAssertEqual(report.failure?.line, 2)
        let text = try project.strataOnBackend(["rehearse"])
        XCTAssertEqual(text.status, 1, text.stdout + text.stderr)
        let migrated = try project.migrator().migrate()
        XCTAssertEqual(migrated.failure?.id, "002_value.sql", "migrate fails 002 the same way")
        XCTAssertEqual(migrated.failure?.line, 2)
    }

    // MARK: Re-deferring constraints the user cannot reach

    /// A role that is not a superuser, and so cannot use every schema: the re-deferral names every INITIALLY DEFERRED
    /// constraint in the database, those in a schema the role has no USAGE on included, and `SET CONSTRAINTS
    /// vault.… DEFERRED` fails with "permission denied for schema vault" after every step: `rehearse()` throws it
    /// after the first step, a CREATE TABLE (exit 1, no report); migrate, as the same role, applies it. Right: the plan would succeed (only
    /// constraints the steps could have made pending matter; none in vault can be, the role cannot write there).
    func testADeferredConstraintInASchemaTheRoleCannotUseDoesNotFailTheRehearsal() throws {
        try withRole { role, connect in
            let (project, migrator) = try project("CREATE TABLE t (id int);\n", pending: [
                "002_more.sql": "CREATE TABLE more (id int);\n",
            ], connection: { project in
                let admin = try PostgresTestDatabase(project.root).connection
                try admin.executeSimple("""
                    GRANT CREATE ON DATABASE \(quoteIdentifier(try admin.scalar("SELECT current_database()", .none, as: String.self) ?? "")) TO \(role);
                    GRANT ALL ON SCHEMA public TO \(role);
                    CREATE SCHEMA IF NOT EXISTS vault;
                    CREATE TABLE IF NOT EXISTS vault.p (id int PRIMARY KEY);
                    CREATE TABLE IF NOT EXISTS vault.c (parent_id int REFERENCES vault.p DEFERRABLE INITIALLY DEFERRED);
                    """)
                return try connect(project)
            })
            do {
                let report = try migrator.rehearse()
                XCTAssertTrue(report.wouldSucceed, "the rehearsal says: \(String(describing: report.failure))")
            } catch {
                XCTFail("the rehearsal threw: \(error)")
            }
            let migrated = try Migrator(manifest: try project.manifest(), database: try connect(project)).migrate()
            XCTAssertNil(migrated.failure, "migrate applies 002 as the same role")
        }
    }

    /// Worse: another session's temporary table with an INITIALLY DEFERRED constraint (any application's session on
    /// this database) is listed too, in its `pg_temp_N` schema, which no other role may use. While that session is
    /// open, every rehearsal by a role that is not a superuser throws "permission denied for schema pg_temp_N" after
    /// its first step. Right: the plan would succeed (another session's temporary constraints are never this
    /// transaction's).
    func testAnotherSessionsTemporaryDeferredConstraintDoesNotFailTheRehearsal() throws {
        try withRole { role, connect in
            let (project, migrator) = try project("CREATE TABLE t (id int);\n", pending: [
                "002_more.sql": "INSERT INTO t VALUES (1);\n",
            ], connection: { project in
                let admin = try PostgresTestDatabase(project.root).connection
                try admin.executeSimple("""
                    GRANT CREATE ON DATABASE \(quoteIdentifier(try admin.scalar("SELECT current_database()", .none, as: String.self) ?? "")) TO \(role);
                    GRANT ALL ON SCHEMA public TO \(role);
                    """)
                return try connect(project)
            })
            // An application's session, open while the rehearsal runs.
            let application = try PostgresTestDatabase(project.root).connection
            try application.execute("""
                CREATE TEMP TABLE scratch (id int PRIMARY KEY, parent_id int REFERENCES scratch DEFERRABLE INITIALLY DEFERRED)
                """, .none)
            do {
                let report = try migrator.rehearse()
                XCTAssertTrue(report.wouldSucceed, "the rehearsal says: \(String(describing: report.failure))")
            } catch {
                XCTFail("the rehearsal threw: \(error)")
            }
        }
    }

    // MARK: The session reset keeps the program's objects by name only

    /// A step that replaces the program's prepared statement (DEALLOCATE it, PREPARE its own under the name): the
    /// reset keeps what has the name the program's had, so after the rehearsal the program's `EXECUTE
    /// program_statement` silently runs the step's statement. README: "the steps' cursors and prepared statements go,
    /// and the program's own, open before the rehearsal, stay". Right: the step's statement is deallocated (compare
    /// `prepare_time`/`statement`, not only the name), and the program's loss is reported as a leftover; never the
    /// step's statement answering to the program's name. The same holds for a cursor (`creation_time`).
    func testAStepsStatementUnderTheProgramsNameIsNotKeptAsTheProgramsOwn() throws {
        let (_, migrator) = try project("CREATE TABLE books (id int);\nINSERT INTO books VALUES (1), (2);\n", pending: [
            "002_replace.sql": """
                DEALLOCATE program_statement;
                PREPARE program_statement AS SELECT -1::int8;
                CLOSE program_cursor;
                DECLARE program_cursor CURSOR WITH HOLD FOR SELECT -1;
                """,
        ])
        let database = migrator.database
        try database.execute("PREPARE program_statement AS SELECT count(*) FROM books", .none)
        try database.execute("DECLARE program_cursor CURSOR WITH HOLD FOR SELECT id FROM books ORDER BY id", .none)
        let report = try migrator.rehearse()
        XCTAssertTrue(report.wouldSucceed, "\(String(describing: report.failure))")
        let statement = try database.scalar("SELECT statement FROM pg_prepared_statements WHERE name = 'program_statement'",
                                            .none, as: String.self)
        XCTAssertFalse(statement?.contains("-1") == true, "the step's statement answers to the program's name: \(statement ?? "")")
        let cursor = try database.scalar("SELECT statement FROM pg_cursors WHERE name = 'program_cursor'", .none, as: String.self)
        XCTAssertFalse(cursor?.contains("-1") == true, "the step's cursor answers to the program's name: \(cursor ?? "")")
    }

    // MARK: Helpers

    /// Runs `body` with a new login role that is not a superuser, and a way to connect to a project's database as
    /// it; the role is dropped afterwards.
    private func withRole(_ body: (String, @escaping (Project) throws -> PostgresConnection) throws -> Void) throws {
        let server = try PostgresServer.shared()
        guard !server.usesPassword else { throw XCTSkip("needs a server that lets a new role log in without a password") }
        let role = "strata_h13_\(UUID().uuidString.prefix(8).lowercased())"
        let admin = try PostgresConnection(url: server.url(database: "postgres"))
        try admin.execute("CREATE ROLE \(role) LOGIN", .none)
        var databases: [String] = []
        defer {
            for database in databases {
                if let connection = try? PostgresConnection(url: server.url(database: database)) {
                    _ = try? connection.execute("DROP OWNED BY \(role) CASCADE", .none)
                }
            }
            _ = try? admin.execute("DROP ROLE \(role)", .none)
        }
        try body(role) { project in
            let database = try server.database(for: project.root)
            if !databases.contains(database) { databases.append(database) }
            let url = server.url(database: database)
            guard url.hasPrefix("postgresql://postgres@") else { throw XCTSkip("the server's user is not postgres: \(url)") }
            return try PostgresConnection(url: "postgresql://\(role)@" + url.dropFirst("postgresql://postgres@".count))
        }
    }
}
