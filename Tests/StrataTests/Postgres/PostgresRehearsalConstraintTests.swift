import Foundation
import Strata
@testable import StrataCore
@testable import StrataPostgres
import XCTest

/// A step of a PostgreSQL rehearsal failing on a constraint that `migrate` would meet otherwise (hostile review of
/// issue 26): one the failing step made itself, whose declaration the rollback took with it, so that whether it is
/// checked at the step's commit in `migrate` cannot be read; and a unique key holding a date or time, which the
/// steps' shared transaction gives one `now()`. Each is "not known" (exit 4), and what `migrate` would fail the
/// same way stays a verdict (exit 1).
final class PostgresRehearsalConstraintTests: XCTestCase {
    /// A project whose `001_schema.sql` is migrated, then `pending` files added (run in name order).
    private func project(_ schema: String, pending: [String: String]) throws -> Project {
        let project = try Project(self, backend: .postgres, files: ["sql/001_schema.sql": schema])
        XCTAssertNil(try project.migrator().migrate().failure)
        for (name, text) in pending { try project.file("sql/\(name)", text) }
        return project
    }

    // MARK: A constraint the failing step made (B a)

    /// Makes a foreign key `DEFERRABLE INITIALLY DEFERRED` through `EXECUTE`: the word is in the applied 001, not in
    /// the step that calls it.
    static let addForeignKey = """
        CREATE FUNCTION add_fk(tab text, col text, ref text) RETURNS void LANGUAGE plpgsql AS $$
        BEGIN
          EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I FOREIGN KEY (%I) REFERENCES %I DEFERRABLE INITIALLY DEFERRED',
                         tab, tab || '_' || col || '_fkey', col, ref);
        END $$;
        """

    static let tables = "CREATE TABLE authors (id int PRIMARY KEY);\nCREATE TABLE books (id int PRIMARY KEY, author_id int);\n"

    /// Wrong verdict (would fail where migrate succeeds). 003 calls `add_fk()`, which makes an INITIALLY DEFERRED
    /// foreign key, then inserts a book before its author. After 002's end every constraint is checked at once in
    /// the rehearsal, so the insert fails there: exit 1, "migrate would fail at 003"; migrate checks the new
    /// constraint at 003's commit, where the author is in, and applies both. The check for INITIALLY DEFERRED
    /// constraints a step made runs only for steps that ran to their end, and 003's text never says DEFERRED.
    /// Right: a failure on a constraint that is gone once the step is rolled back (the step made it) is not known.
    func testAFailureOnAConstraintTheFailingStepMadeIsNotKnown() throws {
        let project = try project(Self.addForeignKey, pending: [
            "002_tables.sql": Self.tables,
            "003_books.sql": "SELECT add_fk('books', 'author_id', 'authors'); INSERT INTO books VALUES (1, 7); INSERT INTO authors VALUES (7);\n",
        ])
        let report = try project.migrator().rehearse()
        XCTAssertEqual(report.failure?.id, "003_books.sql", "the premise: it fails in the rehearsal")
        XCTAssertFalse(report.wouldFail, "the rehearsal says migrate would fail: \(String(describing: report.failure))")
        XCTAssertEqual(report.notRehearsedUpToFailure, ["003_books.sql"])
        let because = report.failureNotKnownBecause ?? ""
        XCTAssertTrue(because.contains("books_author_id_fkey"), because)

        let text = try project.strataOnBackend(["rehearse"])
        XCTAssertEqual(text.status, 4, text.stdout + text.stderr)
        XCTAssertTrue(text.stderr.contains("whether migrate would fail at 003_books.sql is not known"), text.stderr)

        let migrated = try project.migrator().migrate()
        XCTAssertNil(migrated.failure, "migrate applies both (the premise): \(String(describing: migrated.failure))")
        XCTAssertEqual(migrated.applied.map(\.id), ["002_tables.sql", "003_books.sql"])
    }

    /// A foreign key a later step adds on rows that break it fails as it is made, in migrate as in the rehearsal
    /// (PostgreSQL checks the rows there whatever the constraint's mode): still a verdict, exit 1.
    func testAForeignKeyAddedOnRowsThatBreakItIsAVerdict() throws {
        let project = try project(Self.tables + "INSERT INTO books VALUES (1, 7);\n", pending: [
            "002_more.sql": "INSERT INTO authors VALUES (1);\n",
            "003_fk.sql": "ALTER TABLE books ADD CONSTRAINT books_author FOREIGN KEY (author_id) REFERENCES authors;\n",
        ])
        let report = try project.migrator().rehearse()
        XCTAssertTrue(report.wouldFail, "\(report.notRehearsedUpToFailure) \(report.failureNotKnownBecause ?? "")")
        let text = try project.strataOnBackend(["rehearse"])
        XCTAssertEqual(text.status, 1, text.stdout + text.stderr)
        XCTAssertEqual(try project.migrator().migrate().failure?.id, "003_fk.sql", "migrate fails there too (the premise)")
    }

    /// A foreign key that existed before the step, checked at once in both, is a verdict after an earlier step.
    func testAFailureOnAnImmediateForeignKeyThatWasThereIsAVerdict() throws {
        let project = try project("CREATE TABLE authors (id int PRIMARY KEY);\nCREATE TABLE books (id int, author_id int REFERENCES authors);\n", pending: [
            "002_author.sql": "INSERT INTO authors VALUES (1);\n",
            "003_book.sql": "INSERT INTO books VALUES (1, 7);\n",
        ])
        let report = try project.migrator().rehearse()
        XCTAssertTrue(report.wouldFail, "\(report.notRehearsedUpToFailure) \(report.failureNotKnownBecause ?? "")")
        XCTAssertEqual(try project.migrator().migrate().failure?.id, "003_book.sql", "migrate fails there too (the premise)")
    }

    /// A foreign key refusing the delete of the row it refers to names the referred table, not its own: it is
    /// found there, and the failure stays a verdict.
    func testAForeignKeyRefusingADeleteOfTheRowItRefersToIsAVerdict() throws {
        let project = try project("CREATE TABLE authors (id int PRIMARY KEY);\nCREATE TABLE books (id int, author_id int REFERENCES authors);\n", pending: [
            "002_rows.sql": "INSERT INTO authors VALUES (1);\nINSERT INTO books VALUES (1, 1);\n",
            "003_delete.sql": "DELETE FROM authors;\n",
        ])
        let report = try project.migrator().rehearse()
        XCTAssertTrue(report.wouldFail, "\(report.notRehearsedUpToFailure) \(report.failureNotKnownBecause ?? "")")
        XCTAssertEqual(try project.migrator().migrate().failure?.id, "003_delete.sql", "migrate fails there too (the premise)")
    }

    // MARK: One now() for every step (B b)

    static let events = "CREATE TABLE schema_events (at timestamptz PRIMARY KEY, what text NOT NULL);\n"

    /// Wrong verdict (would fail where migrate succeeds). 002 and 003 each record `now()` in `schema_events`, keyed
    /// by it: in the rehearsal both steps run in one transaction, whose `now()` is one value, and 003 fails with a
    /// duplicate key: exit 1. migrate commits each step in its own transaction, with its own `now()`, and applies
    /// both. Right: a unique key holding a date/time column, in a table an earlier step of the rehearsal wrote: not
    /// known (exit 4), saying the steps share one transaction.
    func testAUniqueTimestampKeyTwoStepsFillWithNowIsNotKnown() throws {
        let project = try project(Self.events, pending: [
            "002_a.sql": "INSERT INTO schema_events VALUES (now(), '002');\n",
            "003_b.sql": "INSERT INTO schema_events VALUES (current_timestamp, '003');\n",
        ])
        let report = try project.migrator().rehearse()
        XCTAssertEqual(report.failure?.id, "003_b.sql", "the premise: it fails in the rehearsal")
        XCTAssertFalse(report.wouldFail, "the rehearsal says migrate would fail: \(String(describing: report.failure))")
        let because = report.failureNotKnownBecause ?? ""
        XCTAssertTrue(because.contains("one transaction") && because.contains("now()"), because)
        XCTAssertTrue(because.contains("schema_events_pkey"), because)
        let text = try project.strataOnBackend(["rehearse"])
        XCTAssertEqual(text.status, 4, text.stdout + text.stderr)

        let migrated = try project.migrator().migrate()
        XCTAssertNil(migrated.failure, "migrate applies both (the premise): \(String(describing: migrated.failure))")
    }

    /// Two rows with `now()` in one step share it in migrate too: a verdict, exit 1.
    func testTwoNowRowsInOneStepAreAVerdict() throws {
        let project = try project(Self.events, pending: [
            "002_other.sql": "CREATE TABLE other (x int);\n",
            "003_both.sql": "INSERT INTO schema_events VALUES (now(), 'a');\nINSERT INTO schema_events VALUES (now(), 'b');\n",
        ])
        let report = try project.migrator().rehearse()
        XCTAssertTrue(report.wouldFail, "\(report.notRehearsedUpToFailure) \(report.failureNotKnownBecause ?? "")")
        XCTAssertEqual(try project.migrator().migrate().failure?.id, "003_both.sql", "migrate fails there too (the premise)")
    }

    /// A unique index built on rows that hold duplicates fails as it is built, in migrate as in the rehearsal: a
    /// verdict (exit 1), on a text key and on a timestamp key no step of the rehearsal wrote.
    func testAUniqueIndexBuiltOnDuplicateDataIsAVerdict() throws {
        for (schema, index) in [
            ("CREATE TABLE people (name text);\nINSERT INTO people VALUES ('a'), ('a');\n", "CREATE UNIQUE INDEX people_name ON people (name);\n"),
            ("CREATE TABLE stamps (at timestamptz);\nINSERT INTO stamps VALUES ('2024-01-01'), ('2024-01-01');\n",
             "CREATE UNIQUE INDEX stamps_at ON stamps (at);\n"),
        ] {
            let project = try project(schema, pending: ["002_other.sql": "CREATE TABLE other (x int);\n", "003_index.sql": index])
            let report = try project.migrator().rehearse()
            XCTAssertTrue(report.wouldFail, "\(index) \(report.notRehearsedUpToFailure) \(report.failureNotKnownBecause ?? "")")
            let text = try project.strataOnBackend(["rehearse"])
            XCTAssertEqual(text.status, 1, text.stdout + text.stderr)
            XCTAssertEqual(try project.migrator().migrate().failure?.id, "003_index.sql", "migrate fails there too (the premise)")
        }
    }

    /// A unique index built on timestamps two earlier steps wrote with `now()`: equal only in the rehearsal's one
    /// transaction, so not known (exit 4); migrate builds it.
    func testAUniqueIndexOnTimestampsEarlierStepsWroteIsNotKnown() throws {
        let project = try project("CREATE TABLE stamps (at timestamptz, what text);\n", pending: [
            "002_a.sql": "INSERT INTO stamps VALUES (now(), 'a');\n",
            "003_b.sql": "INSERT INTO stamps VALUES (now(), 'b');\n",
            "004_index.sql": "CREATE UNIQUE INDEX stamps_at ON stamps (at);\n",
        ])
        let report = try project.migrator().rehearse()
        XCTAssertEqual(report.failure?.id, "004_index.sql", "the premise: it fails in the rehearsal")
        XCTAssertFalse(report.wouldFail, "the rehearsal says migrate would fail: \(String(describing: report.failure))")
        XCTAssertNil(try project.migrator().migrate().failure, "migrate builds it (the premise)")
    }
}
