import Foundation
import Strata
@testable import StrataCore
@testable import StrataPostgres
@testable import StrataSQLite
import XCTest

/// A rehearsal runs each step as migrate would, or says it could not: on SQLite the program's connection's temporary
/// objects and pragmas are on the copy and its SQL functions are not (their closures could reach the real database);
/// on PostgreSQL a step run with deferred constraints checked at once is said to be so. Each was a wrong result
/// (hostile review 15); each comment says what it was.
final class RehearsalFidelityTests: XCTestCase {
    // MARK: PostgreSQL

    /// A PostgreSQL project whose `001_schema.sql` is migrated, then `pending` files added (run in name order).
    private func postgres(_ schema: String, pending: [String: String]) throws -> (Project, Migrator) {
        let project = try Project(self, backend: .postgres, files: ["sql/001_schema.sql": schema])
        XCTAssertNil(try project.migrator().migrate().failure)
        for (name, text) in pending { try project.file("sql/\(name)", text) }
        return (project, try project.migrator())
    }

    /// HIGH, wrong verdict in the dangerous direction (would succeed, exit 0, where migrate fails). The README says
    /// checking every constraint at once after the first step is "stricter than migrate, never laxer". It is laxer
    /// for a deferred constraint trigger that reads another table: `orders_covered` (INITIALLY DEFERRED, AFTER
    /// INSERT ON orders) checks the account's balance. In migrate 003 is its own transaction, so the trigger fires
    /// at 003's commit, after the UPDATE overdrew the account: "account 1 is overdrawn", 003 fails. In the
    /// rehearsal 002's end set every constraint IMMEDIATE, so in 003 the trigger fires at the end of the INSERT,
    /// before the UPDATE, sees balance 100, passes; nothing fires on the UPDATE; no error at all, so the "not
    /// known" net (class 23/P0001 only) never sees it: wouldSucceed true.
    /// Right: 003 fails as in migrate, or at least the verdict is not known (exit 4) whenever a step after the
    /// first queued an event for a constraint trigger (or deferrable constraint) declared INITIALLY DEFERRED, since
    /// such a trigger fired early may pass where it would fail at commit.
    func testADeferredConstraintTriggerFiredEarlyDoesNotPassAStepMigrateFails() throws {
        let (project, migrator) = try postgres("""
            CREATE TABLE accounts (id int PRIMARY KEY, balance int NOT NULL);
            CREATE TABLE orders (id int PRIMARY KEY, account_id int NOT NULL, amount int NOT NULL);
            CREATE FUNCTION orders_covered() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              IF (SELECT balance FROM accounts WHERE id = NEW.account_id) < 0 THEN
                RAISE EXCEPTION 'account % is overdrawn by order %', NEW.account_id, NEW.id;
              END IF;
              RETURN NULL;
            END $$;
            CREATE CONSTRAINT TRIGGER orders_covered AFTER INSERT ON orders
              DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION orders_covered();
            INSERT INTO accounts VALUES (1, 100);
            """, pending: [
                "002_notes.sql": "CREATE TABLE notes (id int PRIMARY KEY);\n",
                "003_order.sql": "INSERT INTO orders VALUES (1, 1, 150);\nUPDATE accounts SET balance = balance - 150 WHERE id = 1;\n",
            ])
        let report = try migrator.rehearse()
        let command = try project.strataOnBackend(["rehearse"])
        let migrated = try project.migrator().migrate()
        XCTAssertNotEqual(command.status, 0, "strata rehearse exits 0: \(command.stdout)")
        XCTAssertEqual(migrated.failure?.id, "003_order.sql", "migrate fails 003 at its commit (the premise): \(String(describing: migrated.failure))")
        XCTAssertFalse(report.wouldSucceed,
                       "the rehearsal says the plan would succeed: \(report.steps.map { "\($0.id) \($0.outcome.rawValue)" })")
    }

    /// HIGH, wrong verdict (would fail, exit 1, where migrate succeeds). The "not known" net for a constraint
    /// checked early covers only SQLSTATE class 23 and P0001, but a deferred trigger fired early can fail with any
    /// code. `order_invoiced` (INITIALLY DEFERRED) reads the order's invoice with `SELECT … INTO STRICT`. 003
    /// inserts an order, then its invoice: in migrate the trigger fires at 003's commit and finds the invoice, and
    /// both steps apply. In the rehearsal (every constraint IMMEDIATE after 002) it fires at the end of the order's
    /// INSERT, finds no invoice: P0002 "query returned no rows", which is reported as migrate's failure
    /// (wouldFail true, exit 1).
    /// Right: the plan would succeed; at least a failure in a step after the first, while an INITIALLY DEFERRED
    /// constraint exists, is not known whatever its SQLSTATE when it came from a trigger or check fired early
    /// (the error's context names the trigger), never a verdict.
    func testADeferredTriggersNonConstraintErrorFiredEarlyIsNoVerdict() throws {
        let (project, migrator) = try postgres("""
            CREATE TABLE orders (id int PRIMARY KEY);
            CREATE TABLE invoices (id int PRIMARY KEY, order_id int NOT NULL);
            CREATE FUNCTION order_invoiced() RETURNS trigger LANGUAGE plpgsql AS $$
            DECLARE invoice int;
            BEGIN
              SELECT id INTO STRICT invoice FROM invoices WHERE order_id = NEW.id;
              RETURN NULL;
            END $$;
            CREATE CONSTRAINT TRIGGER order_invoiced AFTER INSERT ON orders
              DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION order_invoiced();
            """, pending: [
                "002_notes.sql": "CREATE TABLE notes (id int PRIMARY KEY);\n",
                "003_order.sql": "INSERT INTO orders VALUES (1);\nINSERT INTO invoices VALUES (10, 1);\n",
            ])
        let report = try migrator.rehearse()
        let migrated = try project.migrator().migrate()
        XCTAssertNil(migrated.failure, "migrate applies both (the premise): \(String(describing: migrated.failure))")
        XCTAssertFalse(report.wouldFail, "the rehearsal says migrate would fail: \(String(describing: report.failure))")
    }

    // MARK: SQLite

    /// A SQLite project whose `001_schema.sql` is migrated, with `pending` beside it.
    private func sqlite(_ schema: String, pending: [String: String]) throws -> Project {
        let project = try Project(self, backend: .sqlite, files: ["sql/001_schema.sql": schema])
        XCTAssertNil(try project.migrator().migrate().failure)
        for (name, text) in pending { try project.file("sql/\(name)", text) }
        return project
    }

    /// CRITICAL, the rehearsal writes the real database. The README: "The database is only read" and
    /// `migrator.rehearse()` "changes nothing"; review 14 defines the program's `createFunction` functions on the
    /// copy with the same closures. A function whose closure uses the program's connection (an audit hook:
    /// `database.execute("INSERT INTO audit …")`) runs, during the rehearsal, against the REAL database: the copy's
    /// step calls it, and it inserts into the real file, in autocommit, committed. After `rehearse()` the real
    /// `audit` table holds a row no migrate ran.
    /// Right: the real database is unchanged after a rehearsal, whatever the program's functions do (at least the
    /// source connection is `query_only` for the rehearsal's length, and a step whose function tried to write
    /// through it is "not known", saying so).
    func testAProgramFunctionUsingItsConnectionDoesNotWriteTheRealDatabaseDuringARehearsal() throws {
        let project = try sqlite("""
            CREATE TABLE audit (id INTEGER PRIMARY KEY, note TEXT NOT NULL);
            CREATE TABLE books (id INTEGER PRIMARY KEY, title TEXT NOT NULL);
            """, pending: ["002_books.sql": "INSERT INTO books (title) SELECT 'Dune' WHERE audited('book added');\n"])
        let database = try project.database()
        defer { database.close() }
        try database.createFunction("audited", argumentCount: 1) { _ in
            try database.execute("INSERT INTO audit (note) VALUES ('book added')")
            return 1
        }
        let migrator = Migrator(manifest: try project.manifest(), database: database)
        let report = try migrator.rehearse()
        // The function is not on the copy: the step that calls it is not known, and never reaches the real file.
        XCTAssertFalse(report.wouldFail, "\(String(describing: report.failure))")
        XCTAssertTrue(report.failureNotKnownBecause?.contains("function audited is not defined") == true,
                      "\(String(describing: report.failureNotKnownBecause))")
        let reader = try project.database()
        defer { reader.close() }
        XCTAssertEqual(try reader.scalar("SELECT count(*) FROM audit", as: Int.self), 0,
                       "the rehearsal committed a row to the real database's audit table")
        XCTAssertEqual(try reader.scalar("SELECT count(*) FROM books", as: Int.self), 0)
    }

    /// HIGH, wrong verdict in the dangerous direction (would succeed where migrate fails). A program function that
    /// reads its connection (`setting('currency')`, a settings lookup) runs on the copy but reads the real
    /// database, which has none of the step's changes. 002 deletes the currency setting, then inserts a price with
    /// `setting('currency')` into a NOT NULL column. migrate runs on the program's connection: the function sees the
    /// delete, returns NULL, "NOT NULL constraint failed", 002 fails. The rehearsal's function reads the real,
    /// untouched settings: 'EUR', the step passes, wouldSucceed true.
    /// Right: 002 fails as in migrate; or, since the rehearsal cannot know what a program's closure reads, a plan
    /// whose steps called a program function has a verdict that is not known (exit 4), saying so.
    func testAProgramFunctionReadingItsConnectionSeesTheStepsChangesInTheRehearsal() throws {
        let project = try sqlite("""
            CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT);
            INSERT INTO settings VALUES ('currency', 'EUR');
            CREATE TABLE prices (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL, currency TEXT NOT NULL);
            """, pending: ["002_prices.sql": """
                DELETE FROM settings WHERE key = 'currency';
                INSERT INTO prices (amount, currency) VALUES (100, setting('currency'));
                """])
        let database = try project.database()
        defer { database.close() }
        try database.createFunction("setting", argumentCount: 1) { args in
            guard case .text(let key) = args[0] else { return nil as String? }
            return try database.scalar("SELECT value FROM settings WHERE key = \(key)", as: String.self)
        }
        let migrator = Migrator(manifest: try project.manifest(), database: database)
        let report = try migrator.rehearse()
        let migrated = try migrator.migrate()
        XCTAssertEqual(migrated.failure?.id, "002_prices.sql", "migrate fails 002 (the premise): \(String(describing: migrated.failure))")
        XCTAssertFalse(report.wouldSucceed, "the rehearsal says the plan would succeed: \(report.steps.map { "\($0.id) \($0.outcome.rawValue)" })")
    }

    /// HIGH, wrong verdict in the dangerous direction. The copy gets the program's functions but not the rest of
    /// its connection, which `migrate` keeps for every step (`ConnectionSnapshot` drops only the temp objects a
    /// step made): here a TEMP trigger the program created on `main.accounts` refusing negative balances. migrate
    /// runs 002 on that connection, the trigger fires: "negative balance", 002 fails. The copy's new connection has
    /// no temp trigger: wouldSucceed true.
    /// Right: the copy's connection has the program's temp triggers (and tables and views) too, or a rehearsal of a
    /// connection holding temp objects says its verdict is not known.
    func testAProgramsTempTriggerOnAMainTableFiresInTheRehearsal() throws {
        let project = try sqlite("CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL);\n",
                                 pending: ["002_accounts.sql": "INSERT INTO accounts VALUES (1, -5);\n"])
        let database = try project.database()
        defer { database.close() }
        try database.execute("""
            CREATE TEMP TRIGGER no_negative BEFORE INSERT ON main.accounts WHEN NEW.balance < 0
            BEGIN SELECT RAISE(ABORT, 'negative balance'); END
            """)
        let migrator = Migrator(manifest: try project.manifest(), database: database)
        let report = try migrator.rehearse()
        let migrated = try migrator.migrate()
        XCTAssertEqual(migrated.failure?.id, "002_accounts.sql", "migrate fails 002 (the premise): \(String(describing: migrated.failure))")
        XCTAssertFalse(report.wouldSucceed, "the rehearsal says the plan would succeed")
    }

    /// HIGH, wrong verdict in the dangerous direction. The same for a connection pragma the program set:
    /// `PRAGMA recursive_triggers = ON` (migrate keeps it for every step: `ConnectionSnapshot` restores the
    /// connection as the run opened it). `chain` inserts n+1 after n while n < 3; 002 inserts 1, then 3. With
    /// recursive triggers (migrate) the first insert makes 1, 2, 3 and inserting 3 breaks UNIQUE: 002 fails. The
    /// copy's connection has recursive_triggers off: 1, 2, then 3, no conflict, wouldSucceed true.
    /// Right: the copy's connection has the program connection's pragmas (those `ConnectionSnapshot` lists).
    func testAProgramsRecursiveTriggersPragmaHoldsInTheRehearsal() throws {
        let project = try sqlite("""
            CREATE TABLE t (n INTEGER NOT NULL UNIQUE);
            CREATE TRIGGER chain AFTER INSERT ON t WHEN NEW.n < 3 BEGIN INSERT INTO t VALUES (NEW.n + 1); END;
            """, pending: ["002_rows.sql": "INSERT INTO t VALUES (1);\nINSERT INTO t VALUES (3);\n"])
        let database = try project.database()
        defer { database.close() }
        try database.execute("PRAGMA recursive_triggers = ON")
        let migrator = Migrator(manifest: try project.manifest(), database: database)
        let report = try migrator.rehearse()
        let migrated = try migrator.migrate()
        XCTAssertEqual(migrated.failure?.id, "002_rows.sql", "migrate fails 002 (the premise): \(String(describing: migrated.failure))")
        XCTAssertFalse(report.wouldSucceed, "the rehearsal says the plan would succeed")
    }
}
