import CSQLite
import Foundation
import XCTest
import Strata
@testable import StrataCore
@testable import StrataSQLite

final class DatabaseTests: XCTestCase {
    func testOpensFileCreatingItAndReopens() throws {
        let dir = try makeTemporaryDirectory(self)
        let path = dir.appendingPathComponent("new.sqlite").path
        XCTAssertFalse(FileManager.default.fileExists(atPath: path))
        do {
            let db = try Database(path: path)
            try db.execute("CREATE TABLE t (x)")
            try db.execute("INSERT INTO t VALUES (42)")
            XCTAssertEqual(db.path, path)
        }
        XCTAssertTrue(FileManager.default.fileExists(atPath: path))
        let again = try Database(path: path)
        XCTAssertEqual(try again.scalar("SELECT x FROM t", as: Int.self), 42)
    }

    func testInMemoryAndTemporaryDatabasesArePrivate() throws {
        let a = try Database(.inMemory)
        let b = try Database(.temporary)
        try a.execute("CREATE TABLE t (x)")
        try b.execute("CREATE TABLE t (x)")
        XCTAssertNil(a.path)
        XCTAssertFalse(try Database(.inMemory).tableExists("t"))
    }

    func testOpeningMissingDirectoryFails() {
        let error = assertThrows(DatabaseError.self) { try Database(path: "/nonexistent-dir/x/db.sqlite") }
        XCTAssertEqual(error?.resultCode, SQLITE_CANTOPEN)
        XCTAssertTrue(error?.message.contains("/nonexistent-dir/x/db.sqlite") ?? false)
    }

    func testReadOnlyDatabaseRefusesWritesCleanly() throws {
        let dir = try makeTemporaryDirectory(self)
        let path = dir.appendingPathComponent("ro.sqlite").path
        try Database(path: path).execute("CREATE TABLE t (x)")
        let db = try Database(path: path, configuration: .init(readOnly: true))
        let error = assertThrows(DatabaseError.self) { try db.execute("INSERT INTO t VALUES (1)") }
        XCTAssertEqual(error?.resultCode, SQLITE_READONLY)
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM t", as: Int.self), 0)
        XCTAssertThrowsError(try Database(path: dir.appendingPathComponent("absent.sqlite").path,
                                          configuration: .init(readOnly: true)))
    }

    func testForeignKeysAreOnByDefaultAndCanBeTurnedOff() throws {
        let on = try Database()
        XCTAssertEqual(try on.scalar("PRAGMA foreign_keys", as: Int.self), 1)
        let off = try Database(configuration: .init(foreignKeys: false))
        XCTAssertEqual(try off.scalar("PRAGMA foreign_keys", as: Int.self), 0)
        try on.executeScript("""
            CREATE TABLE parent (id INTEGER PRIMARY KEY);
            CREATE TABLE child (parent_id INTEGER REFERENCES parent(id));
            """)
        let error = assertThrows(DatabaseError.self) { try on.execute("INSERT INTO child VALUES (7)") }
        XCTAssertEqual(error?.extendedResultCode, 787) // SQLITE_CONSTRAINT_FOREIGNKEY
    }

    func testWALOnRequestAndBusyTimeout() throws {
        let dir = try makeTemporaryDirectory(self)
        let path = dir.appendingPathComponent("wal.sqlite").path
        let db = try Database(path: path, configuration: .init(walMode: true))
        XCTAssertEqual(try db.scalar("PRAGMA journal_mode", as: String.self), "wal")

        let holder = try Database(path: path)
        try holder.execute("BEGIN IMMEDIATE")
        let waiter = try Database(path: path, configuration: .init(busyTimeout: .milliseconds(200)))
        let start = Date()
        let error = assertThrows(DatabaseError.self) { try waiter.execute("BEGIN IMMEDIATE") }
        XCTAssertEqual(error?.resultCode, SQLITE_BUSY)
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(start), 0.15)
        try holder.execute("ROLLBACK")
    }

    func testPositionalAndNamedArgumentsOfEveryBuiltInType() throws {
        let db = try Database()
        try db.execute("CREATE TABLE v (i, i64, d, b, s, data, date, uuid, n)")
        let date = Date(timeIntervalSince1970: 1_700_000_000.25)
        let uuid = UUID()
        try db.execute("INSERT INTO v VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       [7, Int64.max, 2.5, true, "text; with 'quote'", Data([0, 1, 2]), date, uuid, nil])
        let row = try XCTUnwrap(db.query("SELECT * FROM v").next())
        XCTAssertEqual(try row.get("i", as: Int.self), 7)
        XCTAssertEqual(try row.get("I64", as: Int64.self), Int64.max)
        XCTAssertEqual(try row.get("d", as: Double.self), 2.5)
        XCTAssertEqual(try row.get("b", as: Bool.self), true)
        XCTAssertEqual(try row.get("s", as: String.self), "text; with 'quote'")
        XCTAssertEqual(try row.get("data", as: Data.self), Data([0, 1, 2]))
        XCTAssertEqual(try row.get("date", as: Date.self), date)
        XCTAssertEqual(row["date"], .text("2023-11-14T22:13:20.250Z"))
        XCTAssertEqual(try row.get("uuid", as: UUID.self), uuid)
        XCTAssertEqual(try row.get("n", as: Int?.self), nil)
        XCTAssertEqual(row[8], .null)

        for prefix in [":", "@", "$"] {
            try db.execute("DELETE FROM v")
            try db.execute("INSERT INTO v (i, s) VALUES (\(prefix)a, \(prefix)b)", ["a": 1, "\(prefix)b": "x"])
            XCTAssertEqual(try db.scalar("SELECT s FROM v WHERE i = 1", as: String.self), "x")
        }
    }

    func testWrongArgumentsAreRefusedBeforeAnythingRuns() throws {
        let db = try Database()
        try db.execute("CREATE TABLE t (a, b)")
        var error = assertThrows(DatabaseError.self) { try db.execute("INSERT INTO t VALUES (?, ?)", [1]) }
        XCTAssertEqual(error?.resultCode, SQLITE_MISUSE)
        XCTAssertTrue(error?.message.contains("expects 2 arguments, got 1") ?? false, "\(String(describing: error))")
        assertThrows(DatabaseError.self) { try db.execute("INSERT INTO t VALUES (?, ?)", [1, 2, 3]) }
        error = assertThrows(DatabaseError.self) { try db.execute("INSERT INTO t VALUES (:a, :b)", ["a": 1]) }
        XCTAssertTrue(error?.message.contains("missing argument for parameter :b") ?? false)
        error = assertThrows(DatabaseError.self) {
            try db.execute("INSERT INTO t VALUES (:a, :b)", ["a": 1, "b": 2, "c": 3])
        }
        XCTAssertTrue(error?.message.contains(":c") ?? false)
        assertThrows(DatabaseError.self) { try db.execute("INSERT INTO t VALUES (?, ?)", ["a": 1, "b": 2]) }
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM t", as: Int.self), 0)
    }

    func testExecuteRefusesSeveralStatements() throws {
        let db = try Database()
        let error = assertThrows(DatabaseError.self) { try db.execute("CREATE TABLE a (x); CREATE TABLE b (x)") }
        XCTAssertTrue(error?.message.contains("executeScript") ?? false)
        XCTAssertFalse(try db.tableExists("a"))
        try db.execute("CREATE TABLE c (x); -- a trailing comment is fine\n")
    }

    func testRowsByIndexAndCaseInsensitiveNameAndConversionErrors() throws {
        let db = try Database()
        let row = try XCTUnwrap(db.query("SELECT 1 AS One, 'x' AS Two, 2.5 AS three, NULL AS four").next())
        XCTAssertEqual(row.columnNames, ["One", "Two", "three", "four"])
        XCTAssertEqual(row["one"], .integer(1))
        XCTAssertEqual(row["TWO"], .text("x"))
        XCTAssertNil(row["five"])
        XCTAssertEqual(row[2], .real(2.5))
        var error = assertThrows(DatabaseError.self) { try row.get("two", as: Int.self) }
        XCTAssertEqual(error?.resultCode, SQLITE_MISMATCH)
        XCTAssertTrue(error?.message.contains("'Two' holds text 'x'") ?? false, "\(String(describing: error))")
        error = assertThrows(DatabaseError.self) { try row.get("four", as: String.self) }
        XCTAssertTrue(error?.message.contains("NULL") ?? false)
        assertThrows(DatabaseError.self) { try row.get("three", as: Int.self) }
        assertThrows(DatabaseError.self) { try row.get("nope", as: Int.self) }
        assertThrows(DatabaseError.self) { try row.get(9, as: Int.self) }
    }

    func testUniqueKeysAreThoseThatTellRowsApartAsWhereComparesThem() throws {
        let db = try Database()
        try db.executeScript("""
            CREATE TABLE t (id INTEGER PRIMARY KEY, code TEXT COLLATE NOCASE, slug TEXT, a TEXT, b TEXT, c TEXT, d TEXT);
            CREATE UNIQUE INDEX t_code_binary ON t (code COLLATE BINARY);
            CREATE UNIQUE INDEX t_code_nocase ON t (code);
            CREATE UNIQUE INDEX t_slug_partial ON t (slug) WHERE slug IS NOT NULL;
            CREATE UNIQUE INDEX t_lower ON t (lower(a));
            CREATE UNIQUE INDEX t_b_c ON t (c, b);
            CREATE INDEX t_d ON t (d);
            CREATE TABLE k (x TEXT, y TEXT, PRIMARY KEY (y, x)) WITHOUT ROWID;
            CREATE VIEW v AS SELECT * FROM t;
            """)
        let keys = Set(try db.uniqueKeys(in: "t"))
        XCTAssertEqual(keys, [["id"], ["code"], ["c", "b"]],
                       "the BINARY index on a NOCASE column, the partial, the expression and the plain index do not count")
        XCTAssertEqual(try db.uniqueKeys(in: "k").first, ["y", "x"])
        XCTAssertEqual(try db.uniqueKeys(in: "v"), [])
        try db.executeScript("""
            CREATE TABLE p (code TEXT COLLATE NOCASE, PRIMARY KEY (code COLLATE BINARY));
            CREATE TABLE m (email TEXT, handle TEXT COLLATE RTRIM);
            CREATE UNIQUE INDEX m_email ON m (email COLLATE NOCASE);
            CREATE UNIQUE INDEX m_handle ON m (handle COLLATE NOCASE);
            """)
        XCTAssertEqual(try db.uniqueKeys(in: "p"), [], "a BINARY primary key on a NOCASE column does not tell rows apart")
        XCTAssertEqual(try db.uniqueKeys(in: "m"), [["email"]],
                       "a NOCASE index tells BINARY values apart; it does not tell RTRIM values apart")
        XCTAssertEqual(try db.uniqueKeys(in: "missing"), [])
    }

    func testConflictClausesAreFoundAsSQLiteReadsTheTable() throws {
        let db = try Database()
        try db.executeScript("""
            CREATE TABLE a (id INTEGER PRIMARY KEY ON/**/conflict REPLACE);
            CREATE TABLE b (x TEXT, UNIQUE (x) On Conflict Ignore);
            CREATE TABLE c (x TEXT NOT NULL ON CONFLICT FAIL DEFAULT '');
            CREATE TABLE "d e" (x TEXT UNIQUE
              ON -- a comment
              CONFLICT ROLLBACK);
            CREATE TEMP TABLE f (x UNIQUE ON CONFLICT REPLACE);
            CREATE TABLE plain (conflict_count INTEGER DEFAULT 'on conflict replace', "conflict" TEXT, y /* conflict */);
            """)
        for table in ["a", "B", "c", "d e", "f"] {
            XCTAssertTrue(try db.declaresConflictClause(table), table)
        }
        XCTAssertFalse(try db.declaresConflictClause("plain"))
        XCTAssertFalse(try db.declaresConflictClause("missing"))
    }

    func testNamesFoldASCIIOnlyAsSQLiteDoes() throws {
        let db = try Database()
        let row = try XCTUnwrap(db.query(#"SELECT 1 AS "Ä", 2 AS "Id""#).next())
        XCTAssertNil(row["ä"], "SQLite folds ASCII letters only")
        XCTAssertEqual(row["Ä"], .integer(1))
        XCTAssertEqual(row["ID"], .integer(2))
        try db.execute(#"CREATE TABLE t ("Ä" TEXT, "Id" INTEGER)"#)
        let columns = try db.columns(in: "t")
        XCTAssertNil(columns.named("ä"))
        XCTAssertEqual(columns.named("iD")?.name, "Id")
    }

    func testValuesThatDoNotFitAreRefusedNotChanged() throws {
        let db = try Database()
        try db.execute("CREATE TABLE t (x)")
        let cases: [(String, StatementArguments)] = [
            ("INSERT INTO t VALUES (?)", [UInt64.max]), ("INSERT INTO t VALUES (:x)", ["x": UInt64.max]),
            ("INSERT INTO t VALUES (?)", StatementArguments([UInt(Int64.max) + 1])),
            ("INSERT INTO t VALUES (:x)", StatementArguments(["x": UInt64(1) << 63])),
        ]
        for (sql, arguments) in cases {
            let error = assertThrows(DatabaseError.self) { try db.execute(sql, arguments) }
            XCTAssertEqual(error?.resultCode, SQLITE_MISMATCH)
            XCTAssertTrue(error?.message.contains("does not fit a 64-bit signed integer") ?? false, "\(String(describing: error))")
        }
        try db.execute("INSERT INTO t VALUES (?)", [UInt64(Int64.max)])
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM t", as: Int.self), 1)
        try db.createFunction("huge", argumentCount: 0) { _ in UInt64.max }
        let error = assertThrows(DatabaseError.self) { try db.scalar("SELECT huge()", as: Double.self) }
        XCTAssertTrue(error?.message.contains("does not fit a 64-bit signed integer") ?? false, "\(String(describing: error))")

        // A REAL beyond Float's range does not read as infinity.
        let row = try XCTUnwrap(db.query("SELECT 1e300, -1e300, 1.5").next())
        XCTAssertThrowsError(try row.get(0, as: Float.self))
        XCTAssertNil(Float.fromDatabaseValue(.real(-1e300)))
        XCTAssertEqual(try row.get(2, as: Float.self), 1.5)
        XCTAssertEqual(Float.fromDatabaseValue(.real(.infinity)), .infinity, "a stored infinity stays one")
    }

    func testTooLargeValuesThrowInsteadOfBindingNull() throws {
        let db = try Database()
        try db.execute("CREATE TABLE t (x)")
        sqlite3_limit(db.handle, SQLITE_LIMIT_LENGTH, 100)
        let big = String(repeating: "x", count: 200)
        for value in [DatabaseValue.text(big), .blob(Data(big.utf8))] {
            let error = assertThrows(DatabaseError.self) { try db.execute("INSERT INTO t VALUES (?)", [value]) }
            XCTAssertEqual(error?.resultCode, SQLITE_TOOBIG)
        }
        // The allocation-free binds of bulk loads: the failure surfaces when the statement runs.
        let statement = try db.prepare("INSERT INTO t VALUES (?)")
        var bytes = Array(big.utf8)
        bytes.withUnsafeBufferPointer { statement.bind(text: $0, at: 1) }
        XCTAssertEqual(assertThrows(DatabaseError.self) { try statement.run() }?.resultCode, SQLITE_TOOBIG)
        bytes.withUnsafeBufferPointer { statement.bind(blob: $0, at: 1) }
        XCTAssertEqual(assertThrows(DatabaseError.self) { try statement.run() }?.resultCode, SQLITE_TOOBIG)
        // Lengths above 2 GiB (which a 32-bit length cannot hold) are refused, never trapped on; SQLite checks the
        // length before reading, so a small buffer stands in for a huge one.
        bytes.withUnsafeMutableBufferPointer { small in
            let huge = UnsafeBufferPointer(start: small.baseAddress, count: Int(Int32.max) + 10)
            statement.bind(text: huge, at: 1, copying: false)
        }
        XCTAssertEqual(assertThrows(DatabaseError.self) { try statement.run() }?.resultCode, SQLITE_TOOBIG)
        statement.bind(int64: 1, at: 1)
        try statement.run()
        XCTAssertEqual(try db.query("SELECT typeof(x) FROM t").all().map { $0[0] }, [.text("integer")], "no NULL was stored")
    }

    func testCursorIsLazyAndAllReturnsEveryRow() throws {
        let db = try Database()
        try db.execute("CREATE TABLE n (x INTEGER)")
        try db.transaction { db in
            for i in 1...100 { try db.execute("INSERT INTO n VALUES (?)", [i]) }
        }
        var calls = 0
        try db.createFunction("counted", argumentCount: 1) { args in calls += 1; return args[0] }
        let cursor = try db.query("SELECT counted(x) FROM n")
        XCTAssertEqual(try cursor.next()?[0], .integer(1))
        XCTAssertEqual(calls, 1, "only one row is computed per next()")
        XCTAssertEqual(try cursor.all().count, 99)
        XCTAssertNil(try cursor.next())
        XCTAssertEqual(try db.query("SELECT x FROM n").all().count, 100)
    }

    func testTwoCursorsOnTheSameSQLDoNotInterfere() throws {
        let db = try Database()
        try db.executeScript("CREATE TABLE n (x); INSERT INTO n VALUES (1), (2);")
        let first = try db.query("SELECT x FROM n ORDER BY x")
        let second = try db.query("SELECT x FROM n ORDER BY x")
        XCTAssertEqual(try first.next()?[0], .integer(1))
        XCTAssertEqual(try second.next()?[0], .integer(1))
        XCTAssertEqual(try first.next()?[0], .integer(2))
    }

    func testScriptHandlesCommentsTriggersSemicolonsAndBlankTails() throws {
        let db = try Database()
        try db.executeScript("""
            -- leading comment; with a semicolon
            CREATE TABLE "odd;name" (id INTEGER PRIMARY KEY, note TEXT DEFAULT 'a;b');
            /* block ; comment */
            CREATE TABLE log (message TEXT);
            CREATE TRIGGER log_insert AFTER INSERT ON "odd;name" BEGIN
                INSERT INTO log VALUES ('inserted; ' || NEW.id);
                INSERT INTO log VALUES ('twice');
            END;
            INSERT INTO "odd;name" (id) VALUES (1);


            -- trailing comment
            """)
        XCTAssertEqual(try db.query("SELECT message FROM log ORDER BY rowid").all().map { $0[0] },
                       [.text("inserted; 1"), .text("twice")])
        XCTAssertEqual(try db.scalar("SELECT note FROM \"odd;name\"", as: String.self), "a;b")
        try db.executeScript("")
        try db.executeScript("  \n-- only a comment\n")
    }

    func testScriptSyntaxErrorInThirdStatementReportsItsLine() throws {
        let db = try Database()
        let error = assertThrows(DatabaseError.self) {
            try db.executeScript("""
                CREATE TABLE a (x);
                -- a comment line
                INSERT INTO a VALUES (1);
                  SELEC * FROM a;
                INSERT INTO a VALUES (2);
                """)
        }
        XCTAssertEqual(error?.line, 4)
        XCTAssertEqual(error?.column, 3)
        XCTAssertTrue(error?.message.contains("syntax error") ?? false)
        XCTAssertTrue(error?.description.contains("line 4, column 3") ?? false)
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM a", as: Int.self), 1, "statements after the error do not run")
    }

    func testScriptRuntimeErrorPositionCountsCRLFAndCharacters() throws {
        let db = try Database()
        let error = assertThrows(DatabaseError.self) {
            try db.executeScript("CREATE TABLE é (x UNIQUE);\r\nINSERT INTO é VALUES (1); INSERT INTO é VALUES (1);\r\n")
        }
        XCTAssertEqual(error?.line, 2)
        XCTAssertEqual(error?.column, 27)
        XCTAssertEqual(error?.extendedResultCode, 2067) // SQLITE_CONSTRAINT_UNIQUE
    }

    func testConstraintViolationCarriesExtendedCode() throws {
        let db = try Database()
        try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        var error = assertThrows(DatabaseError.self) { try db.execute("INSERT INTO t (name) VALUES (NULL)") }
        XCTAssertEqual(error?.resultCode, SQLITE_CONSTRAINT)
        XCTAssertEqual(error?.extendedResultCode, 1299) // SQLITE_CONSTRAINT_NOTNULL
        XCTAssertTrue(error?.message.contains("NOT NULL constraint failed: t.name") ?? false)
        XCTAssertEqual(error?.sql, "INSERT INTO t (name) VALUES (NULL)")
        try db.execute("INSERT INTO t VALUES (1, 'a')")
        error = assertThrows(DatabaseError.self) { try db.execute("INSERT INTO t VALUES (1, 'b')") }
        XCTAssertEqual(error?.extendedResultCode, 1555) // SQLITE_CONSTRAINT_PRIMARYKEY
    }

    func testTransactionCommitsAndRollsBackWithoutTrace() throws {
        let db = try Database()
        try db.execute("CREATE TABLE t (x)")
        try db.transaction(.immediate) { db in try db.execute("INSERT INTO t VALUES (1)") }
        struct Boom: Error {}
        XCTAssertThrowsError(try db.transaction(.exclusive) { db in
            XCTAssertTrue(db.isInTransaction)
            try db.execute("INSERT INTO t VALUES (2)")
            try db.execute("CREATE TABLE other (y)")
            throw Boom()
        }) { XCTAssertTrue($0 is Boom) }
        XCTAssertFalse(db.isInTransaction)
        XCTAssertEqual(try db.query("SELECT x FROM t").all().map { $0[0] }, [.integer(1)])
        XCTAssertFalse(try db.tableExists("other"))
    }

    func testNestedSavepointsAndNestedTransactionRefused() throws {
        let db = try Database()
        try db.execute("CREATE TABLE t (x)")
        struct Boom: Error {}
        try db.transaction { db in
            try db.execute("INSERT INTO t VALUES (1)")
            try? db.savepoint { db in
                try db.execute("INSERT INTO t VALUES (2)")
                throw Boom()
            }
            try db.savepoint { db in
                try db.execute("INSERT INTO t VALUES (3)")
                try? db.savepoint { db in
                    try db.execute("INSERT INTO t VALUES (4)")
                    throw Boom()
                }
            }
            let error = assertThrows(DatabaseError.self) { try db.transaction { _ in } }
            XCTAssertEqual(error?.resultCode, SQLITE_MISUSE)
        }
        XCTAssertEqual(try db.query("SELECT x FROM t ORDER BY x").all().map { $0[0] }, [.integer(1), .integer(3)])
    }

    func testTransactionRolledBackBySQLiteStopsTheBody() throws {
        // An interrupted write inside a transaction makes SQLite roll the whole transaction back (as SQLITE_FULL,
        // SQLITE_IOERR and SQLITE_NOMEM may); a body that goes on must not write in autocommit mode.
        let db = try Database()
        try db.execute("CREATE TABLE t (x)")
        try db.execute("CREATE TEMP TRIGGER stop AFTER INSERT ON t WHEN NEW.x = 1 BEGIN SELECT interrupt(); END")
        let handle = db.handle
        try db.createFunction("interrupt", argumentCount: 0) { _ in sqlite3_interrupt(handle); return nil as Int? }
        for nested in [false, true] {
            let error = assertThrows(DatabaseError.self) {
                try db.transaction { db in
                    let body = { (db: Database) throws in
                        XCTAssertThrowsError(try db.execute("INSERT INTO t VALUES (1), (5)"))
                        try db.execute("INSERT INTO t VALUES (2)")
                    }
                    if nested { try db.savepoint(body) } else { try body(db) }
                }
            }
            XCTAssertTrue(error?.message.contains("SQLite rolled the transaction back") ?? false, "\(String(describing: error))")
            XCTAssertEqual(error?.resultCode, SQLITE_INTERRUPT)
            XCTAssertFalse(db.isInTransaction)
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM t", as: Int.self), 0, "nested: \(nested)")
        }
        // The connection is usable afterwards.
        try db.transaction { db in try db.execute("INSERT INTO t VALUES (3)") }
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM t", as: Int.self), 1)
    }

    /// `transaction { }` commits when the body returns and rolls back when it throws. A body that ran its own
    /// `COMMIT`, `END` or `ROLLBACK` ended that transaction: what followed autocommitted, and a later throw undid
    /// nothing. Such a statement is refused before it runs, and the transaction stays as it was.
    func testABodyCannotEndTheTransactionStrataOpenedForIt() throws {
        let db = try Database()
        try db.execute("CREATE TABLE t (x)")
        struct Boom: Error {}
        for statement in ["COMMIT", "END", "ROLLBACK", "commit transaction", "END TRANSACTION", "ROLLBACK TRANSACTION"] {
            XCTAssertNotNil(assertThrows(Boom.self) {
                try db.transaction { db in
                    try db.execute("INSERT INTO t VALUES (1)")
                    let error = assertThrows(DatabaseError.self) { try db.execute(statement, .none) }
                    XCTAssertEqual(error?.kind, .misuse, statement)
                    XCTAssertNil(error?.code, statement)
                    XCTAssertTrue(error?.message.contains("may not end the transaction Strata opened") ?? false,
                                  "\(String(describing: error))")
                    XCTAssertTrue(db.isInTransaction, statement)
                    try db.execute("INSERT INTO t VALUES (2)")
                    throw Boom()
                }
            })
            XCTAssertFalse(db.isInTransaction, statement)
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM t", as: Int.self), 0, "\(statement): a body that threw left rows")
            // A body that goes on after the refusal and returns commits all it did, in the one transaction.
            try db.transaction { db in
                try db.execute("INSERT INTO t VALUES (1)")
                XCTAssertThrowsError(try db.execute(statement, .none), statement)
                try db.execute("INSERT INTO t VALUES (2)")
            }
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM t", as: Int.self), 2, statement)
            try db.execute("DELETE FROM t")
        }
        // Outside any scope the same statements are the caller's to run.
        try db.execute("BEGIN", .none)
        try db.execute("INSERT INTO t VALUES (3)")
        try db.execute("COMMIT", .none)
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM t", as: Int.self), 1)
    }

    /// The check is made when a statement runs, not only when it is compiled: a `COMMIT` compiled outside any scope
    /// (kept in the statement cache, or by the caller from `prepare`) is refused inside one all the same.
    func testATransactionStatementCompiledBeforeTheScopeIsRefusedInsideIt() throws {
        let db = try Database()
        try db.execute("CREATE TABLE t (x)")
        try db.execute("BEGIN", .none)
        try db.execute("COMMIT", .none)
        let kept = try db.prepare("ROLLBACK")
        struct Boom: Error {}
        XCTAssertNotNil(assertThrows(Boom.self) {
            try db.transaction { db in
                try db.execute("INSERT INTO t VALUES (1)")
                XCTAssertEqual(assertThrows(DatabaseError.self) { try db.execute("COMMIT", .none) }?.kind, .misuse)
                XCTAssertEqual(assertThrows(DatabaseError.self) { try kept.execute() }?.kind, .misuse)
                try db.execute("INSERT INTO t VALUES (2)")
                throw Boom()
            }
        })
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM t", as: Int.self), 0)
    }

    /// Inside `savepoint { }` the body may not release or roll back to a savepoint it did not open itself there:
    /// Strata's (releasing the outermost one commits), or one opened outside the scope (which ends Strata's with it,
    /// so a later throw had nothing left to roll back to).
    func testABodyCannotEndASavepointItDidNotOpen() throws {
        let db = try Database()
        try db.execute("CREATE TABLE t (x)")
        struct Boom: Error {}
        for statement in ["RELEASE strata_savepoint_1", "RELEASE SAVEPOINT \"STRATA_SAVEPOINT_1\"",
                          "ROLLBACK TO strata_savepoint_1", "COMMIT", "ROLLBACK"] {
            XCTAssertNotNil(assertThrows(Boom.self) {
                try db.savepoint { db in
                    try db.execute("INSERT INTO t VALUES (1)")
                    let error = assertThrows(DatabaseError.self) { try db.execute(statement, .none) }
                    XCTAssertEqual(error?.kind, .misuse, statement)
                    XCTAssertTrue(db.isInTransaction, statement)
                    try db.execute("INSERT INTO t VALUES (2)")
                    throw Boom()
                }
            })
            XCTAssertFalse(db.isInTransaction, statement)
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM t", as: Int.self), 0, "\(statement): a body that threw left rows")
        }
        // Nested in a transaction: the savepoint the outer body opened is not the inner body's to end.
        try db.transaction { db in
            try db.execute("INSERT INTO t VALUES (1)")
            try db.execute("SAVEPOINT mine", .none)
            XCTAssertNotNil(assertThrows(Boom.self) {
                try db.savepoint { db in
                    try db.execute("INSERT INTO t VALUES (2)")
                    for statement in ["RELEASE mine", "ROLLBACK TO mine", "RELEASE strata_savepoint_1"] {
                        let error = assertThrows(DatabaseError.self) { try db.execute(statement, .none) }
                        XCTAssertEqual(error?.kind, .misuse, statement)
                        XCTAssertTrue(error?.message.contains("did not open") ?? false, "\(String(describing: error))")
                    }
                    try db.execute("INSERT INTO t VALUES (3)")
                    throw Boom()
                }
            })
            try db.execute("RELEASE mine", .none)
        }
        XCTAssertEqual(try db.query("SELECT x FROM t").all().map { $0[0] }, [.integer(1)], "the inner savepoint alone was undone")
    }

    /// Savepoints a body opens itself inside a scope are its own to release and roll back to, as SQL or in a
    /// script; one it leaves open ends with Strata's. It may not take the name of a savepoint Strata has open:
    /// Strata's `RELEASE` would then find the body's (the most recent of that name) and leave its own open.
    func testSavepointsABodyOpensItselfStillWork() throws {
        let db = try Database()
        try db.execute("CREATE TABLE t (x)")
        try db.transaction { db in
            try db.executeScript("SAVEPOINT a; INSERT INTO t VALUES (1); ROLLBACK TO a; INSERT INTO t VALUES (2); RELEASE a;")
            try db.savepoint { db in
                try db.execute("SAVEPOINT b", .none)
                try db.execute("SAVEPOINT c", .none)
                try db.execute("INSERT INTO t VALUES (3)")
                try db.execute("RELEASE \"B\"", .none)
                try db.execute("SAVEPOINT d", .none)
                try db.execute("INSERT INTO t VALUES (4)")
            }
        }
        XCTAssertFalse(db.isInTransaction)
        XCTAssertEqual(try db.query("SELECT x FROM t ORDER BY x").all().map { $0[0] }, [.integer(2), .integer(3), .integer(4)])
        try db.savepoint { db in
            let error = assertThrows(DatabaseError.self) { try db.execute("SAVEPOINT Strata_Savepoint_1", .none) }
            XCTAssertEqual(error?.kind, .misuse)
            try db.execute("SAVEPOINT strata_savepoint_2", .none)
            try db.execute("RELEASE strata_savepoint_2", .none)
        }
        XCTAssertFalse(db.isInTransaction)
    }

    /// A script run inside a scope stops before a statement that would end the scope's transaction, and says where;
    /// what ran before it stays inside the transaction, committed or rolled back with it.
    func testAScriptCannotEndTheTransactionItRunsIn() throws {
        let db = try Database()
        try db.execute("CREATE TABLE t (x)")
        let error = assertThrows(DatabaseError.self) {
            try db.transaction { db in
                try db.executeScript("INSERT INTO t VALUES (1);\n  COMMIT;\nINSERT INTO t VALUES (2);")
            }
        }
        XCTAssertEqual(error?.kind, .misuse)
        XCTAssertEqual([error?.line, error?.column], [2, 3])
        XCTAssertFalse(db.isInTransaction)
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM t", as: Int.self), 0)
        // `EXPLAIN COMMIT` only lists the statement's program; it ends nothing.
        try db.transaction { db in _ = try db.query("EXPLAIN COMMIT", .none).all() }
    }

    func testCommitFailureRollsBack() throws {
        let db = try Database()
        try db.executeScript("""
            CREATE TABLE p (id INTEGER PRIMARY KEY);
            CREATE TABLE c (p INTEGER REFERENCES p(id) DEFERRABLE INITIALLY DEFERRED);
            """)
        let error = assertThrows(DatabaseError.self) {
            try db.transaction { db in try db.execute("INSERT INTO c VALUES (5)") }
        }
        XCTAssertEqual(error?.resultCode, SQLITE_CONSTRAINT)
        XCTAssertFalse(db.isInTransaction)
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM c", as: Int.self), 0)
    }

    func testStatementCacheAndChangeCounters() throws {
        let db = try Database()
        try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, x)")
        let first = try db.cachedStatement("INSERT INTO t (x) VALUES (?)")
        XCTAssertTrue(first === (try db.cachedStatement("INSERT INTO t (x) VALUES (?)")))
        try db.execute("INSERT INTO t (x) VALUES (?)", ["a"])
        try db.execute("INSERT INTO t (x) VALUES (?)", ["b"])
        XCTAssertEqual(db.lastInsertRowID, 2)
        try db.execute("UPDATE t SET x = 'c'")
        XCTAssertEqual(db.changes, 2)
        XCTAssertEqual(db.totalChanges, 4)
        let statement = try db.prepare("INSERT INTO t (x) VALUES (?)")
        for i in 0..<3 { try statement.execute([i]) }
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM t", as: Int.self), 5)
    }

    func testScalarFunctionsFromClosures() throws {
        let db = try Database()
        try db.createFunction("reverse", argumentCount: 1) { args in
            guard case .text(let s) = args[0] else { return nil as String? }
            return String(s.reversed())
        }
        try db.createFunction("sum_all", argumentCount: -1) { args in
            args.reduce(0) { $0 + (Int64.fromDatabaseValue($1) ?? 0) }
        }
        struct Refused: Error, CustomStringConvertible { var description: String { "refused by Swift" } }
        try db.createFunction("fail", argumentCount: 0) { _ in throw Refused() }
        XCTAssertEqual(try db.scalar("SELECT reverse('abc')", as: String.self), "cba")
        XCTAssertEqual(try db.scalar("SELECT reverse(NULL)", as: String.self), nil)
        XCTAssertEqual(try db.scalar("SELECT sum_all(1, 2, 3)", as: Int.self), 6)
        let error = assertThrows(DatabaseError.self) { try db.scalar("SELECT fail()", as: Int.self) }
        XCTAssertTrue(error?.message.contains("refused by Swift") ?? false)
    }

    func testCustomTypesAdoptTheValueProtocol() throws {
        struct Cents: DatabaseValueConvertible, Equatable {
            var value: Int64
            var databaseValue: DatabaseValue { .integer(value) }
            static func fromDatabaseValue(_ v: DatabaseValue) -> Cents? {
                Int64.fromDatabaseValue(v).map(Cents.init)
            }
        }
        let db = try Database()
        try db.execute("CREATE TABLE m (amount INTEGER)")
        try db.execute("INSERT INTO m VALUES (?)", [Cents(value: 1999)])
        XCTAssertEqual(try db.scalar("SELECT amount FROM m", as: Cents.self), Cents(value: 1999))
    }

    func testClosedDatabaseThrows() throws {
        let db = try Database()
        db.close()
        XCTAssertThrowsError(try db.execute("SELECT 1"))
        XCTAssertThrowsError(try db.executeScript("SELECT 1;"))
    }

    func testIntrospection() throws {
        let db = try Database()
        try db.executeScript("""
            CREATE TABLE "a b" (id INTEGER PRIMARY KEY, "na""me" VARCHAR(10) NOT NULL DEFAULT 'x', score REAL, raw);
            CREATE INDEX ab_score ON "a b"(score);
            CREATE VIEW v AS SELECT * FROM "a b";
            """)
        let columns = try db.columns(in: "a b")
        XCTAssertEqual(columns.map(\.name), ["id", "na\"me", "score", "raw"])
        XCTAssertEqual(columns.map(\.affinity), [.integer, .text, .real, .blob])
        XCTAssertEqual(columns[1].defaultSQL, "'x'")
        XCTAssertTrue(columns[1].isNotNull)
        XCTAssertEqual(columns[0].primaryKeyPosition, 1)
        XCTAssertEqual(try db.schemaObjects().map(\.name), ["a b", "ab_score", "v"])
        XCTAssertEqual(quoteIdentifier("na\"me"), "\"na\"\"me\"")
        XCTAssertEqual(Affinity(sqliteDeclaredType: "DECIMAL(10,2)"), .numeric)
    }

    /// README ("Database"): `DatabaseError.code` is "the database's own code … nil for what Strata refused itself".
    /// An argument Strata refuses before SQLite sees it (`UInt64.max`, which would become an approximate REAL) comes
    /// back with `code` = "SQLite 20 (datatype mismatch)" and the description "SQLite error 20 …", as if SQLite
    /// had reported it.
    func testAnArgumentStrataRefusesItselfCarriesNoSQLiteCode() throws {
        let db = try Database(.inMemory)
        let error = assertThrows(DatabaseError.self) { try db.execute("SELECT ?", [UInt64.max]) }
        XCTAssertEqual(error?.kind, .conversion)
        XCTAssertNil(error?.code, "\(String(describing: error))")
    }
}

extension DatabaseTests {
    func testEmptyStatementsDoNotEndAScript() throws {
        let db = try Database()
        try db.executeScript("CREATE TABLE a (x); ; ;\n;INSERT INTO a VALUES (1);")
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM a", as: Int.self), 1)
    }

    func testStreamingScriptMatchesInMemoryScriptAtEveryChunkSize() throws {
        let dir = try makeTemporaryDirectory(self)
        let path = dir.appendingPathComponent("s.sql").path
        let script = "\u{FEFF}-- header\r\nCREATE TABLE t (x, note TEXT DEFAULT 'a;b');\r\n;\n"
            + "CREATE TRIGGER tr AFTER INSERT ON t BEGIN\n  SELECT CASE WHEN NEW.x > 1 THEN 1 ELSE 0 END;\n  INSERT INTO t (x) SELECT 0 WHERE 0;\nEND;\n"
            + "INSERT INTO t (x) VALUES (1);/* c; */INSERT INTO t (x) VALUES (10)\n"
        try write(script, to: URL(fileURLWithPath: path))
        for chunk in [1, 2, 3, 5, 8, 13, 64, 1 << 20] {
            let db = try Database()
            var reported: [Int] = []
            try db.executeScript(contentsOfFile: path, chunkSize: chunk, progress: { read, total in
                XCTAssertEqual(total, script.utf8.count)
                reported.append(read)
            })
            XCTAssertEqual(reported.last, script.utf8.count, "chunk \(chunk)")
            XCTAssertEqual(reported, reported.sorted())
            XCTAssertEqual(try db.query("SELECT x FROM t ORDER BY rowid").all().map { $0[0] }, [.integer(1), .integer(10)],
                           "chunk \(chunk): the last statement is 10, not a prefix of it")
        }
        try write("CREATE TABLE a (x);\n\n  INSERT INTO a VALUES (1);\n INSERT INTO nowhere VALUES (2);\nINSERT INTO a VALUES (3);", to: URL(fileURLWithPath: path))
        for chunk in [1, 7, 1 << 20] {
            let db = try Database()
            let error = assertThrows(DatabaseError.self) { try db.executeScript(contentsOfFile: path, chunkSize: chunk) }
            XCTAssertEqual([error?.line, error?.column], [4, 2], "chunk \(chunk)")
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM a", as: Int.self), 1)
        }
        try write("CREATE TABLE a (x);\nSELEC oops;\nCREATE TABLE b (x);", to: URL(fileURLWithPath: path))
        let db = try Database()
        let error = assertThrows(DatabaseError.self) { try db.executeScript(contentsOfFile: path, chunkSize: 4) }
        XCTAssertEqual(error?.line, 2)
        XCTAssertTrue(error?.message.contains("syntax error") ?? false)
        XCTAssertThrowsError(try db.executeScript(contentsOfFile: dir.appendingPathComponent("missing.sql").path))
    }

    func testErrorsSayTheirKindWithoutSQLiteCodes() throws {
        let dir = try makeTemporaryDirectory(self)
        let path = dir.appendingPathComponent("k.sqlite").path
        let db = try Database(path: path, configuration: .init(busyTimeout: .milliseconds(10)))
        try db.execute("CREATE TABLE t (x UNIQUE NOT NULL)")
        try db.execute("INSERT INTO t VALUES (1)")
        XCTAssertEqual(assertThrows(DatabaseError.self) { try db.execute("INSERT INTO t VALUES (1)") }?.kind, .constraint)
        XCTAssertEqual(assertThrows(DatabaseError.self) { try db.execute("SELEC 1") }?.kind, .syntax)
        XCTAssertEqual(assertThrows(DatabaseError.self) { try db.execute("SELECT ?", [1, 2]) }?.kind, .misuse)
        XCTAssertEqual(assertThrows(DatabaseError.self) { try db.execute("SELECT ?", [UInt64.max]) }?.kind, .conversion)
        let other = try Database(path: path, configuration: .init(busyTimeout: .milliseconds(10)))
        try other.execute("BEGIN IMMEDIATE")
        XCTAssertEqual(assertThrows(DatabaseError.self) { try db.execute("INSERT INTO t VALUES (2)") }?.kind, .busy)
        try other.execute("ROLLBACK")
        let reader = try Database(path: path, configuration: .init(readOnly: true))
        XCTAssertEqual(assertThrows(DatabaseError.self) { try reader.execute("INSERT INTO t VALUES (3)") }?.kind, .readOnly)
        XCTAssertEqual(assertThrows(DatabaseError.self) {
            try Database(path: dir.appendingPathComponent("no/such/dir.sqlite").path)
        }?.kind, .cannotOpen)
        for kind in [DatabaseError.Kind.busy, .lockNotAvailable, .deadlock, .statementTimeout, .constraint, .readOnly, .diskFull, .syntax, .misuse, .conversion,
                     .cannotOpen, .authorization, .interrupted, .other] {
            XCTAssertEqual(DatabaseError(kind: kind, message: "m").kind, kind, "an error made by kind keeps it")
        }
    }
}
