import Foundation
import Strata
@testable import StrataCore
@testable import StrataPostgres
import XCTest

/// Rehearsals on PostgreSQL: one transaction, rolled back, with the locks each step took and those earlier steps
/// held while it ran, the sequences a rollback cannot put back, the session state it leaves (advisory locks, dblink
/// connections) undone and reported, `transaction="none"` steps listed as not rehearsed, TRUNCATE named rather than
/// counted, a lock wait that fails the rehearsal instead of being retried inside it, and a killed rehearsal that
/// leaves nothing.
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
        XCTAssertFalse(report.wouldSucceed, "003 ran without the index 002 builds: not known")
        XCTAssertEqual(report.rehearsedAfterNotRehearsed, ["003_more.sql"])
        XCTAssertEqual(report.steps.last?.notRehearsedBefore, ["002_index.sql"])
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
        XCTAssertEqual(report.notRehearsedUpToFailure, ["002_index.sql"])
        XCTAssertFalse(report.wouldFail, "\(String(describing: report.failure))")
        XCTAssertFalse(report.wouldSucceed)
        let migrated = try project.migrator().migrate()
        XCTAssertNil(migrated.failure)
        XCTAssertEqual(migrated.applied.map(\.id), ["002_index.sql", "003_constraint.sql"])
    }

    static let deferred = """
        CREATE TABLE parents (id int PRIMARY KEY);
        CREATE TABLE children (id int PRIMARY KEY,
                               parent_id int REFERENCES parents (id) DEFERRABLE INITIALLY DEFERRED);
        """

    /// A deferred constraint is checked at COMMIT, and migrate commits each step: the rehearsal checks it where the
    /// step ends, so a violation fails that step as it fails migrate's (it would otherwise pass unchecked to the
    /// rollback), and a later step does not meet the pending checks ("pending trigger events") migrate's never does.
    func testDeferredConstraintsAreCheckedWhereEachStepWouldCommit() throws {
        let (project, migrator) = try project(Self.deferred, pending: ["002_orphan.sql": "INSERT INTO children VALUES (1, 99);\n"])
        let report = try migrator.rehearse()
        XCTAssertTrue(report.wouldFail, "\(report.wouldSucceed ? "the plan would succeed" : "\(String(describing: report.failure))")")
        XCTAssertEqual(report.failure?.id, "002_orphan.sql")
        XCTAssertTrue(report.failure?.message.hasPrefix("COMMIT failed, the step was rolled back: insert or update on table \"children\" violates foreign key constraint") == true,
                      "\(String(describing: report.failure))")
        let text = try project.strataOnBackend(["rehearse"])
        XCTAssertEqual(text.status, 1, text.stdout + text.stderr)
        XCTAssertEqual(try project.migrator().migrate().failure?.id, "002_orphan.sql", "migrate fails 002 at COMMIT")
    }

    /// Deferred checks fire at each step's end, as its commit fires them in migrate: none is left pending for a later
    /// step's `ALTER TABLE`, and what a deferred trigger writes is that step's, there for the next. From then on
    /// every constraint is checked at once: a later step's violation of an INITIALLY DEFERRED one is not known.
    func testDeferredChecksFireAtEachStepsEnd() throws {
        let (project, migrator) = try project(Self.deferred, pending: [
            "002_rows.sql": "INSERT INTO children VALUES (1, 1);\nINSERT INTO parents VALUES (1);\n",
            "003_alter.sql": "ALTER TABLE children ADD COLUMN note text;\n",
        ])
        let report = try migrator.rehearse()
        XCTAssertNil(report.failure, "nothing left pending fails 003's ALTER TABLE")
        XCTAssertEqual(report.rehearsedUnlikeMigrate, ["003_alter.sql"], "a constraint is INITIALLY DEFERRED: said, not judged")
        XCTAssertTrue(report.steps[1].note?.hasPrefix("ran here, but not as migrate would run it: constraints declared INITIALLY DEFERRED are checked at once") == true,
                      "\(report.steps[1])")
        let migrated = try project.migrator().migrate()
        XCTAssertNil(migrated.failure)

        try project.file("sql/004_child_first.sql", "INSERT INTO children VALUES (2, 2);\nINSERT INTO parents VALUES (2);\n")
        try project.file("sql/005_touch.sql", "INSERT INTO parents VALUES (3);\n")
        try project.file("sql/006_child_first.sql", "INSERT INTO children VALUES (4, 4);\nINSERT INTO parents VALUES (4);\n")
        let later = try project.migrator().rehearse()
        XCTAssertEqual(later.steps.map(\.outcome), [.applied, .applied, .failed], "\(String(describing: later.failure))")
        XCTAssertFalse(later.wouldFail)
        XCTAssertEqual(later.notRehearsedUpToFailure, ["005_touch.sql", "006_child_first.sql"])
        XCTAssertTrue(later.failureNotKnownBecause?.contains("INITIALLY DEFERRED are checked at once") == true,
                      "\(String(describing: later.failureNotKnownBecause))")
        XCTAssertNil(try project.migrator().migrate().failure, "migrate applies all three")
    }

    /// A new enum value cannot be used in the transaction that added it; migrate commits the step that adds it, the
    /// rehearsal's one transaction does not: the failure is the rehearsal's, so not known (exit 4).
    func testAnEnumValueAddedByOneStepAndUsedByTheNextIsNotKnown() throws {
        let (project, migrator) = try project("CREATE TYPE mood AS ENUM ('calm');\nCREATE TABLE moods (m mood);\n", pending: [
            "002_value.sql": "ALTER TYPE mood ADD VALUE 'angry';\n",
            "003_use.sql": "INSERT INTO moods VALUES ('angry');\n",
        ])
        let report = try migrator.rehearse()
        XCTAssertFalse(report.wouldFail, "\(String(describing: report.failure))")
        XCTAssertEqual(report.notRehearsedUpToFailure, ["003_use.sql"])
        XCTAssertTrue(report.steps.last?.note?.contains("refuses an enum value in the transaction that added it") == true,
                      "\(String(describing: report.steps.last))")
        let text = try project.strataOnBackend(["rehearse"])
        XCTAssertEqual(text.status, 4, text.stdout + text.stderr)
        let migrated = try project.migrator().migrate()
        XCTAssertNil(migrated.failure, "migrate applies both steps")
        XCTAssertEqual(migrated.applied.map(\.id), ["002_value.sql", "003_use.sql"])
    }

    /// The steps' session is reset after each (their cursors and prepared statements go), but the program's own,
    /// open before the rehearsal, stay: neither a CLOSE nor a DEALLOCATE is undone by the rollback.
    func testTheProgramsCursorAndPreparedStatementSurviveARehearsal() throws {
        let (_, migrator) = try project(RehearseTests.schema, pending: [
            "002_touch.sql": "UPDATE books SET copies = 2;\nPREPARE step_statement AS SELECT 1;\n",
        ])
        let database = migrator.database
        try database.execute("DECLARE program_cursor CURSOR WITH HOLD FOR SELECT id FROM books ORDER BY id", .none)
        try database.execute("PREPARE program_statement AS SELECT count(*) FROM books", .none)
        try database.execute("CREATE TEMP TABLE program_scratch (x int)", .none)
        let report = try migrator.rehearse()
        XCTAssertTrue(report.wouldSucceed, "\(String(describing: report.failure))")
        XCTAssertTrue(try database.tableExists("program_scratch"))
        XCTAssertEqual(try database.scalar("SELECT count(*) FROM pg_cursors WHERE name = 'program_cursor'", .none, as: Int.self), 1)
        XCTAssertEqual(try database.scalar("SELECT count(*) FROM pg_prepared_statements WHERE name = 'program_statement'", .none, as: Int.self), 1)
        XCTAssertEqual(try database.scalar("SELECT count(*) FROM pg_prepared_statements WHERE name = 'step_statement'", .none, as: Int.self), 0)
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

    // MARK: Locks held from earlier steps

    /// PostgreSQL shows no lock a transaction asks for again: 003's AccessExclusiveLock on books is hidden behind
    /// 002's, held until the rollback, while `migrate` commits 002 first and 003 takes it again. The report says the
    /// lock was held from 002 and that 003 changed books' definition; 004, which only reads authors, is not said to
    /// use books, and the table 002 created is held under 003 too.
    func testALockAnEarlierStepTookIsListedUnderTheLaterStepsThatRanWhileItWasHeld() throws {
        let (project, migrator) = try project(RehearseTests.schema, pending: [
            "002_a.sql": "ALTER TABLE books ADD COLUMN a text;\nCREATE TABLE shelves (id int);\n",
            "003_b.sql": "ALTER TABLE books ADD COLUMN b text;\nINSERT INTO shelves VALUES (1);\n",
            "004_c.sql": "SELECT count(*) FROM authors;\n",
        ])
        let report = try migrator.rehearse()
        XCTAssertTrue(report.wouldSucceed, "\(String(describing: report.failure))")
        XCTAssertEqual(report.steps.map(\.id), ["002_a.sql", "003_b.sql", "004_c.sql"])
        let books = TableLock(relation: "public.books", mode: "AccessExclusiveLock", blocks: "every query on it, reads included")
        XCTAssertTrue(report.steps[0].locks.contains(books), "\(report.steps[0].locks)")
        XCTAssertEqual(report.steps[0].heldLocks, [], "nothing was held before the first step")
        let b = report.steps[1]
        XCTAssertFalse(b.locks.contains(books), "PostgreSQL shows no lock asked for again: \(b.locks)")
        XCTAssertTrue(b.heldLocks.contains(HeldLock(relation: "public.books", mode: "AccessExclusiveLock",
                                                    blocks: "every query on it, reads included", takenBy: "002_a.sql",
                                                    seen: "changed its definition")),
                      "migrate's 003_b.sql takes AccessExclusiveLock on books again; the rehearsal reports \(b.locks), held \(b.heldLocks)")
        XCTAssertTrue(b.locks.contains { $0.relation == "public.shelves" && $0.mode == "RowExclusiveLock" }, "\(b.locks)")
        XCTAssertTrue(b.heldLocks.contains(HeldLock(relation: "public.shelves", mode: "AccessExclusiveLock",
                                                    blocks: "every query on it, reads included", takenBy: "002_a.sql")),
                      "a table 002 created is locked from then on; an INSERT changes no definition: \(b.heldLocks)")
        let c = report.steps[2]
        XCTAssertTrue(c.heldLocks.contains { $0.relation == "public.books" && $0.mode == "AccessExclusiveLock" && $0.seen == nil },
                      "\(c.heldLocks)")
        XCTAssertFalse(c.heldLocks.contains { $0.seen != nil }, "004 reads authors, on which no earlier step took a lock: \(c.heldLocks)")

        let text = try project.strataOnBackend(["rehearse"])
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertTrue(text.stdout.contains("""
                  held since an earlier step, so whether this step asked for them again is not seen; migrate, which commits each step first, takes again those it needs:
                    AccessExclusiveLock on public.books (taken by 002_a.sql; this step changed its definition): blocks every query on it, reads included
            """), text.stdout)
        let json = try project.strataOnBackend(["rehearse", "--format", "json"])
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], json.stdout)
        let steps = try XCTUnwrap(object["steps"] as? [[String: Any]])
        let held = try XCTUnwrap(steps[1]["heldLocks"] as? [[String: Any]])
        XCTAssertTrue(held.contains { $0["relation"] as? String == "public.books" && $0["takenBy"] as? String == "002_a.sql"
                                      && $0["seen"] as? String == "changed its definition" }, "\(held)")
    }

    func testALockHeldFromAnEarlierStepIsSaidUsedByRowsForAWeakModeOnly() throws {
        let (_, migrator) = try project(RehearseTests.schema, pending: [
            "002_a.sql": "UPDATE books SET copies = 2;\n",
            "003_b.sql": "UPDATE books SET copies = 3;\n",
            "004_c.sql": "ALTER TABLE books ADD COLUMN shelf text;\n",
        ])
        let report = try migrator.rehearse()
        XCTAssertTrue(report.wouldSucceed, "\(String(describing: report.failure))")
        let row = HeldLock(relation: "public.books", mode: "RowExclusiveLock",
                           blocks: "schema changes and CREATE INDEX; not reads or row writes", takenBy: "002_a.sql")
        var seen = row
        seen.seen = "read or wrote its rows"
        XCTAssertTrue(report.steps[1].heldLocks.contains(seen), "\(report.steps[1].heldLocks)")
        XCTAssertFalse(report.steps[1].locks.contains { $0.relation == "public.books" && $0.mode == "RowExclusiveLock" })
        XCTAssertTrue(report.steps[2].heldLocks.contains(row), "an ALTER reads no rows: \(report.steps[2].heldLocks)")
        XCTAssertTrue(report.steps[2].locks.contains { $0.relation == "public.books" && $0.mode == "AccessExclusiveLock" })
    }

    // MARK: Session state a rollback does not undo

    /// A session advisory lock outlives the rollback: the rehearsal releases it and says the step took and kept it
    /// (which `migrate`'s session would go on holding).
    func testAnAdvisoryLockAStepTookIsReleasedAfterTheRehearsalAndReported() throws {
        let (project, migrator) = try project(RehearseTests.schema, pending: [
            "002_lock.sql": "SELECT pg_advisory_lock(424242);\nUPDATE books SET copies = 2;\n",
        ])
        let report = try migrator.rehearse()
        XCTAssertTrue(report.wouldSucceed, "\(String(describing: report.failure))")
        let other = try project.connection()
        XCTAssertEqual(try other.scalar("SELECT pg_try_advisory_lock(424242)", .none, as: Bool.self), true,
                       "the rehearsal's connection still holds advisory lock 424242 after rehearse returned")
        XCTAssertEqual(report.sessionLeftovers, [SessionLeftover(kind: .advisoryLock, name: "424242 (exclusive)", step: "002_lock.sql",
            outcome: "taken and not released by the step, so migrate's session would hold it until it ends; released by the rehearsal (1 time)",
            undone: true)])
        _ = try other.scalar("SELECT pg_advisory_unlock(424242)", .none, as: Bool.self)

        let text = try project.strataOnBackend(["rehearse"])
        XCTAssertTrue(text.stdout.contains("""
            left on the rehearsal's session by its steps, which a rollback does not undo:
              advisory lock 424242 (exclusive) (002_lock.sql): taken and not released by the step
            """), text.stdout)
        let json = try project.strataOnBackend(["rehearse", "--format", "json"])
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], json.stdout)
        let leftovers = try XCTUnwrap(object["sessionLeftovers"] as? [[String: Any]], json.stdout)
        XCTAssertEqual(leftovers.first?["kind"] as? String, "advisory-lock")
        XCTAssertEqual(leftovers.first?["undone"] as? Bool, true)
    }

    /// Shared and two-key locks, negative keys and nesting (one release for each time it was taken) are released;
    /// the transaction-level ones went with the rollback; a lock the program held before is left held.
    func testEveryKindOfAdvisoryLockIsReleasedAndOnesHeldBeforeAreKept() throws {
        let (project, migrator) = try project(RehearseTests.schema, pending: [
            "002_locks.sql": """
                SELECT pg_advisory_lock(424242), pg_advisory_lock(424242), pg_advisory_lock(424242);
                SELECT pg_advisory_lock_shared(-7);
                SELECT pg_advisory_lock(1, 2);
                SELECT pg_advisory_xact_lock(99);
                """,
            "003_more.sql": "SELECT pg_try_advisory_lock_shared(-3, 4);\n",
        ])
        try migrator.database.execute("SELECT pg_advisory_lock(5)", .none)
        let report = try migrator.rehearse()
        XCTAssertTrue(report.wouldSucceed, "\(String(describing: report.failure))")
        XCTAssertEqual(report.sessionLeftovers.map { "\($0.name) \($0.step ?? "-") \($0.undone)" },
                       ["(-3, 4) (shared) 003_more.sql true", "(1, 2) (exclusive) 002_locks.sql true",
                        "-7 (shared) 002_locks.sql true", "424242 (exclusive) 002_locks.sql true"])
        XCTAssertTrue(report.sessionLeftovers[3].outcome.hasSuffix("released by the rehearsal (3 times)"), "\(report.sessionLeftovers[3])")
        let other = try project.connection()
        for call in ["pg_try_advisory_lock(424242)", "pg_try_advisory_lock(-7)", "pg_try_advisory_lock(1, 2)",
                     "pg_try_advisory_lock(-3, 4)", "pg_try_advisory_lock(99)"] {
            XCTAssertEqual(try other.scalar("SELECT \(call)", .none, as: Bool.self), true, call)
        }
        XCTAssertEqual(try other.scalar("SELECT pg_try_advisory_lock(5)", .none, as: Bool.self), false,
                       "the lock the program held before the rehearsal is still its own")
        XCTAssertEqual(try migrator.database.scalar("SELECT pg_advisory_unlock(5)", .none, as: Bool.self), true)
    }

    /// A step that releases a lock the program held before: the rehearsal takes it again and says so.
    func testAnAdvisoryLockHeldBeforeThatAStepReleasedIsTakenAgainAndReported() throws {
        let (project, migrator) = try project(RehearseTests.schema, pending: ["002_unlock.sql": "SELECT pg_advisory_unlock(5);\n"])
        try migrator.database.execute("SELECT pg_advisory_lock(5)", .none)
        let report = try migrator.rehearse()
        XCTAssertTrue(report.wouldSucceed, "\(String(describing: report.failure))")
        XCTAssertEqual(report.sessionLeftovers, [SessionLeftover(kind: .advisoryLock, name: "5 (exclusive)", step: nil,
            outcome: "held by this connection before the rehearsal and released by a step (the rollback does not take it back): taken again, once, by the rehearsal; other sessions could take it meanwhile",
            undone: true)])
        XCTAssertEqual(try project.connection().scalar("SELECT pg_try_advisory_lock(5)", .none, as: Bool.self), false)
        XCTAssertEqual(try migrator.database.scalar("SELECT pg_advisory_unlock(5)", .none, as: Bool.self), true)
    }

    /// Prepared statements are deallocated after every step (`PostgresSessionReset`); `SET`, `set_config(…, false)`,
    /// `LISTEN`, temporary tables and cursors `WITH HOLD` are transactional: nothing of them is left, and nothing
    /// is reported.
    func testOtherSessionStateAStepChangesIsLeftAsItWas() throws {
        let (_, migrator) = try project(RehearseTests.schema, pending: ["002_session.sql": """
            PREPARE rehearsed AS SELECT 1;
            LISTEN rehearsed;
            SELECT set_config('app.rehearsed', 'yes', false);
            SET search_path = pg_catalog;
            CREATE TEMP TABLE rehearsed (x int) ON COMMIT PRESERVE ROWS;
            DECLARE rehearsed CURSOR WITH HOLD FOR SELECT 1;
            """])
        let database = migrator.database
        try database.execute("SET search_path = public", .none)
        let report = try migrator.rehearse()
        XCTAssertTrue(report.wouldSucceed, "\(String(describing: report.failure))")
        XCTAssertEqual(report.sessionLeftovers, [])
        XCTAssertEqual(try database.scalar("SELECT count(*) FROM pg_prepared_statements WHERE from_sql", .none, as: Int.self), 0)
        XCTAssertEqual(try database.scalar("SELECT count(*) FROM pg_listening_channels()", .none, as: Int.self), 0)
        XCTAssertEqual(try database.scalar("SELECT coalesce(current_setting('app.rehearsed', true), '')", .none, as: String.self), "")
        XCTAssertEqual(try database.scalar("SELECT current_setting('search_path')", .none, as: String.self), "public")
        XCTAssertEqual(try database.scalar("SELECT count(*) FROM pg_class WHERE relname = 'rehearsed'", .none, as: Int.self), 0)
        XCTAssertEqual(try database.scalar("SELECT string_agg(name, ',') FROM pg_cursors WHERE name <> ''", .none, as: String.self), nil)
    }

    /// `PREPARE TRANSACTION` would take the rehearsal's transaction away from the session, to be committed later:
    /// it is refused before anything runs.
    func testPrepareTransactionIsRefused() throws {
        let (_, migrator) = try project(RehearseTests.schema, pending: [
            "002_prepare.sql": "UPDATE books SET copies = 5;\nPREPARE TRANSACTION 'rehearsed';\n",
        ])
        XCTAssertThrowsError(try migrator.rehearse()) { error in
            guard case MigrationError.refused(let refusals) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(refusals.contains { $0.message.contains("PREPARE TRANSACTION") }, "\(refusals)")
        }
        XCTAssertEqual(try migrator.database.scalar("SELECT count(*) FROM pg_prepared_xacts", .none, as: Int.self), 0)
        XCTAssertEqual(try migrator.database.scalar("SELECT count(*) FROM books WHERE copies = 5", .none, as: Int.self), 0)
    }

    /// dblink connections live in the session, not the transaction: those a step opened (named or not) are closed.
    func testDblinkConnectionsAStepOpenedAreClosedAndReported() throws {
        let server = try PostgresServer.shared()
        let (project, planless) = try project(RehearseTests.schema, pending: [:])
        do {
            try planless.database.execute("CREATE EXTENSION IF NOT EXISTS dblink", .none)
        } catch {
            throw XCTSkip("the dblink extension cannot be created here: \(error)")
        }
        let target = server.keywordValue(database: try server.database(for: project.root))
        try project.file("sql/002_dblink.sql", """
            SELECT dblink_connect('side', $c$\(target)$c$);
            SELECT dblink_connect($c$\(target)$c$);
            """)
        let migrator = Migrator(manifest: try project.manifest(), database: planless.database)
        try migrator.database.execute("SELECT dblink_connect('kept', $c$\(target)$c$)", .none)
        let report = try migrator.rehearse()
        XCTAssertEqual(report.steps.map(\.id), ["002_dblink.sql"])
        XCTAssertTrue(report.wouldSucceed, "\(String(describing: report.failure))")
        XCTAssertEqual(report.sessionLeftovers.map { "\($0.kind.rawValue) \($0.name) \($0.undone)" },
                       ["dblink-connection unnamed true", "dblink-connection side true"])
        XCTAssertEqual(try migrator.database.scalar("SELECT array_to_string(dblink_get_connections(), ',')", .none, as: String.self),
                       "kept", "the connection opened before the rehearsal is left open")
        XCTAssertThrowsError(try migrator.database.execute("SELECT * FROM dblink('SELECT 1') AS t(x int)", .none))
        _ = try migrator.database.execute("SELECT dblink_disconnect('kept')", .none)
    }
}
