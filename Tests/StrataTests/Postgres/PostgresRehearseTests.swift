import Foundation
import Strata
@testable import StrataCore
@testable import StrataPostgres
import XCTest

/// Rehearsals on PostgreSQL: one transaction, rolled back, with the locks each step took, the sequences a rollback
/// cannot put back, `transaction="none"` steps listed as not rehearsed, TRUNCATE named rather than counted, a lock
/// wait that fails the rehearsal instead of being retried inside it, and a killed rehearsal that leaves nothing.
final class PostgresRehearseTests: XCTestCase {
    func project(_ schema: String, pending: [String: String], migrations: String = "") throws -> (Project, Migrator) {
        let project = try Project(self, backend: .postgres, files: ["sql/001_schema.sql": schema])
        XCTAssertNil(try project.migrator().migrate().failure)
        for (name, text) in pending { try project.file("sql/\(name)", text) }
        try project.file("manifest.xml", #"<manifest version="1">"# + project.backend.databaseElement(project.root)
                         + #"<migrations directory="sql">\#(migrations)</migrations></manifest>"#)
        return (project, try project.migrator())
    }

    func testTheLocksEachStepTookAreNamedWithWhatTheyBlock() throws {
        let (_, migrator) = try project(RehearseTests.schema, pending: [
            "002_read.sql": "UPDATE authors SET name = name WHERE id = 1;\n",
            "003_alter.sql": "ALTER TABLE books ADD COLUMN shelf text;\n",
        ])
        let report = try migrator.rehearse()
        XCTAssertTrue(report.wouldSucceed, "\(String(describing: report.failure))")
        let update = report.steps[0].locks
        XCTAssertTrue(update.contains(TableLock(relation: "public.authors", mode: "RowExclusiveLock",
                                                blocks: "schema changes and CREATE INDEX; not reads or row writes")), "\(update)")
        XCTAssertFalse(update.contains { $0.relation == "public.books" }, "\(update)")
        let alter = report.steps[1].locks
        XCTAssertTrue(alter.contains(TableLock(relation: "public.books", mode: "AccessExclusiveLock",
                                               blocks: "every query on it, reads included")), "\(alter)")
        XCTAssertFalse(alter.contains { $0.relation == "public.authors" }, "a lock an earlier step took is that step's: \(alter)")
        XCTAssertFalse((update + alter).contains { $0.relation.contains("strata_history") })
        XCTAssertTrue(report.stage.contains("rolled back at the end, never committed"), report.stage)
        // Nothing is held once the rehearsal is over.
        XCTAssertEqual(try migrator.database.scalar("""
            SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype IN ('relation', 'advisory')
              AND relation IS DISTINCT FROM 'pg_locks'::regclass
            """, .none, as: Int.self), 0)
        XCTAssertFalse(try migrator.database.hasColumn("shelf", in: "books"))
    }

    func testSequencesTheRehearsalDrewFromAreReportedForTheRollbackKeepsThem() throws {
        let (_, migrator) = try project("""
            CREATE TABLE items (id serial PRIMARY KEY, name text NOT NULL);
            CREATE SEQUENCE untouched;
            INSERT INTO items (name) VALUES ('a'), ('b');
            """, pending: ["002_items.sql": "INSERT INTO items (name) VALUES ('c'), ('d');\nSELECT currval('items_id_seq');\n"])
        let report = try migrator.rehearse()
        XCTAssertEqual(report.sequences, [SequenceAdvance(sequence: "public.items_id_seq", before: 2, after: 4)])
        XCTAssertEqual(report.steps.first?.tables, [TableRowChanges(table: "public.items", inserted: 2, updated: 0, deleted: 0)])
        XCTAssertEqual(try migrator.database.scalar("SELECT count(*) FROM items", .none, as: Int.self), 2)
        XCTAssertEqual(try migrator.database.scalar("SELECT nextval('items_id_seq')", .none, as: Int.self), 5,
                       "what the report says stays: the sequence is past the rehearsal's values")
    }

    /// PostgreSQL gives a sequence's lock to the top transaction: the rolled-back savepoint of a failed step does
    /// not release it, so the sequences that step drew from are known too.
    func testASequenceTheFailedStepDrewFromIsReported() throws {
        let (_, migrator) = try project("""
            CREATE TABLE items (id serial PRIMARY KEY, name text NOT NULL);
            INSERT INTO items (name) VALUES ('a');
            """, pending: ["002_items.sql": "INSERT INTO items (name) VALUES ('b'), ('c');\nINSERT INTO nowhere VALUES (1);\n"])
        let report = try migrator.rehearse()
        XCTAssertEqual(report.failure?.line, 2)
        XCTAssertEqual(report.sequences, [SequenceAdvance(sequence: "public.items_id_seq", before: 1, after: 3)])
    }

    func testTransactionNoneStepsAreListedAsNotRehearsedWithTheReason() throws {
        let (_, migrator) = try project(RehearseTests.schema, pending: [
            "002_index.sql": "CREATE INDEX CONCURRENTLY books_title ON books (title);\n",
            "003_more.sql": "INSERT INTO authors (id, name) VALUES (3, 'Butler');\n",
        ], migrations: #"<migration file="002_index.sql" transaction="none"/>"#)
        let report = try migrator.rehearse()
        XCTAssertTrue(report.wouldSucceed)
        XCTAssertEqual(report.steps.map { "\($0.id) \($0.outcome.rawValue)" }, ["002_index.sql not-rehearsed", "003_more.sql applied"])
        XCTAssertTrue(report.steps[0].note?.hasPrefix("transaction=\"none\": its statements cannot run inside the rehearsal's transaction") == true,
                      "\(report.steps[0])")
        XCTAssertEqual(report.schemaChanges, [], "the index was not built, and 003 changes no schema")
        XCTAssertFalse(try migrator.database.tableExists("books_title"))
    }

    /// The zero-downtime pattern: a unique index built CONCURRENTLY (not rehearsed), then a constraint using it. The
    /// constraint fails in the rehearsal for lack of the index, which says nothing about migrate: not known.
    func testAFailureAfterAStepNotRehearsedIsNotKnownAndMigrateMaySucceed() throws {
        let (project, migrator) = try project(RehearseTests.schema, pending: [
            "002_index.sql": "CREATE UNIQUE INDEX CONCURRENTLY authors_name ON authors (name);\n",
            "003_constraint.sql": "ALTER TABLE authors ADD CONSTRAINT authors_name UNIQUE USING INDEX authors_name;\n",
        ], migrations: #"<migration file="002_index.sql" transaction="none"/>"#)
        let report = try migrator.rehearse()
        XCTAssertEqual(report.steps.map(\.outcome), [.notRehearsed, .failed])
        XCTAssertEqual(report.notRehearsedBeforeFailure, ["002_index.sql"])
        XCTAssertFalse(report.wouldFail, "\(String(describing: report.failure))")
        XCTAssertFalse(report.wouldSucceed)
        let migrated = try project.migrator().migrate()
        XCTAssertNil(migrated.failure)
        XCTAssertEqual(migrated.applied.map(\.id), ["002_index.sql", "003_constraint.sql"])
    }

    func testATruncateIsNamedNotCounted() throws {
        let (_, migrator) = try project(RehearseTests.schema, pending: [
            "002_refill.sql": "UPDATE books SET copies = 3;\nTRUNCATE books;\nINSERT INTO books (id, title) VALUES (7, 'Dawn');\n",
        ])
        let report = try migrator.rehearse()
        let books = try XCTUnwrap(report.steps.first?.tables.first)
        XCTAssertEqual(books.table, "public.books")
        XCTAssertEqual([books.inserted, books.updated, books.deleted], [nil, nil, nil], "\(books)")
        XCTAssertEqual(books.rowsAfter, 1)
        XCTAssertTrue(books.note?.contains("TRUNCATE") == true, "\(books)")
        XCTAssertEqual(try migrator.database.scalar("SELECT count(*) FROM books", .none, as: Int.self), 4)
    }

    func testAStepThatGivesUpWaitingForALockFailsTheRehearsalWithoutARetry() throws {
        let (project, migrator) = try project(RehearseTests.schema, pending: ["002_alter.sql": "ALTER TABLE books ADD COLUMN shelf text;\n"])
        let holder = try project.connection()
        try holder.execute("BEGIN", .none)
        try holder.execute("LOCK TABLE books IN ACCESS SHARE MODE", .none)
        var events: [String] = []
        let report = try migrator.rehearse(MigrationOptions(lockTimeout: .milliseconds(200))) { event in
            if case .retrying = event { events.append("retrying") }
        }
        try holder.execute("ROLLBACK", .none)
        let failure = try XCTUnwrap(report.failure)
        XCTAssertEqual(failure.id, "002_alter.sql")
        XCTAssertEqual(failure.databaseError?.kind, .lockNotAvailable, "\(failure)")
        XCTAssertEqual(events, [], "a retry inside the rehearsal's transaction would hold the earlier steps' locks while it waits")
        XCTAssertFalse(try migrator.database.hasColumn("shelf", in: "books"))
    }

    /// The rehearsal's transaction is never committed: a process killed in the middle of a step leaves nothing,
    /// and the server releases its locks and the deployers' lock.
    func testAKilledRehearsalLeavesNothing() throws {
        let (project, migrator) = try project(RehearseTests.schema, pending: [
            "002_marker.sql": "CREATE TABLE marker (id int);\nUPDATE books SET copies = 9;\n",
            "003_sleep.sql": "SELECT pg_sleep(60);\n",
        ])
        let (process, _, _) = try startStrata(["rehearse", "--manifest", project.manifestPath, "--database", project.location],
                                              in: project.root)
        let watcher = migrator.database
        func sleeping() throws -> Int {
            try watcher.scalar("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(60)%' AND state = 'active'",
                               .none, as: Int.self) ?? 0
        }
        let deadline = Date().addingTimeInterval(60)
        while try sleeping() == 0, Date() < deadline, process.isRunning { usleep(50_000) }
        XCTAssertEqual(try sleeping(), 1, "the rehearsal never reached its sleeping step")
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        // The server notices the client is gone (client_connection_check_interval) and ends the session.
        let gone = Date().addingTimeInterval(60)
        while try sleeping() > 0, Date() < gone { usleep(100_000) }
        XCTAssertEqual(try sleeping(), 0, "the killed rehearsal's session is still running")
        XCTAssertFalse(try watcher.tableExists("marker"))
        XCTAssertEqual(try watcher.scalar("SELECT count(*) FROM books WHERE copies = 9", .none, as: Int.self), 0)
        XCTAssertEqual(try watcher.history.all().map(\.identity), ["001_schema.sql"])
        XCTAssertEqual(try watcher.scalar("SELECT pg_try_advisory_lock(\(PostgresLocks.namespace), \(PostgresLocks.deploy))",
                                          .none, as: Bool.self), true, "the deployers' lock is still held")
        _ = try watcher.scalar("SELECT pg_advisory_unlock(\(PostgresLocks.namespace), \(PostgresLocks.deploy))", .none, as: Bool.self)
    }
}
