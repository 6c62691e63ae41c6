import Foundation
import StrataCore
@testable import StrataPostgres
import XCTest

/// The PostgreSQL connection itself: values both ways, transactions that cannot commit a failed block, the
/// catalog as the core reads it, and passwords kept out of every message.
final class PostgresConnectionTests: XCTestCase {
    func connection() throws -> PostgresConnection {
        let server = try PostgresServer.shared()
        return try PostgresConnection(url: try server.url(for: makeTemporaryDirectory(self)))
    }

    func testValuesRoundTripWithTheirTypes() throws {
        let db = try connection()
        try db.execute("""
            CREATE TABLE t (i int4, b bigint, f float8, n numeric, ok boolean, s text, d bytea, at timestamptz, u uuid)
            """)
        try db.execute("INSERT INTO t VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                       [42, Int64.min, 0.1, "12345.678901234567890", true, "héllo 'x'", Data([0, 1, 255]),
                        "2024-05-01T09:30:00.250Z", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"])
        let row = try XCTUnwrap(try db.rows("SELECT * FROM t").first)
        XCTAssertEqual(row["i"], .integer(42))
        XCTAssertEqual(row["b"], .integer(Int64.min))
        XCTAssertEqual(row["f"], .real(0.1))
        XCTAssertEqual(row["n"], .text("12345.678901234567890"))
        XCTAssertEqual(row["ok"], .integer(1))
        XCTAssertEqual(row["s"], .text("héllo 'x'"))
        XCTAssertEqual(row["d"], .blob(Data([0, 1, 255])))
        XCTAssertEqual(row["at"], .text("2024-05-01 09:30:00.25+00"))
        XCTAssertEqual(row["u"], .text("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"))
        XCTAssertEqual(try db.scalar("SELECT $1::float8", [Double.infinity], as: Double.self), .infinity)
    }

    func testTextWithANULByteIsRefusedNotCut() throws {
        let db = try connection()
        try db.execute("CREATE TABLE t (s text)")
        XCTAssertThrowsError(try db.execute("INSERT INTO t VALUES ($1)", ["a\u{0}b"])) { error in
            XCTAssertEqual((error as? DatabaseError)?.kind, .conversion)
        }
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM t", as: Int.self), 0)
    }

    func testATransactionWhoseStatementFailedIsNeverReportedCommitted() throws {
        let db = try connection()
        try db.execute("CREATE TABLE t (id int PRIMARY KEY)")
        XCTAssertThrowsError(try db.withTransaction {
            try db.execute("INSERT INTO t VALUES (1)")
            _ = try? db.execute("INSERT INTO t VALUES (1)")   // fails; the caller swallows it
        }) { error in
            XCTAssertTrue("\(error)".contains("nothing was committed"), "\(error)")
        }
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM t", as: Int.self), 0)
        XCTAssertFalse(db.isInTransaction)
    }

    func testSavepointsUndoOnlyTheirOwnWork() throws {
        let db = try connection()
        try db.execute("CREATE TABLE t (id int PRIMARY KEY)")
        try db.withTransaction {
            try db.execute("INSERT INTO t VALUES (1)")
            XCTAssertThrowsError(try db.withSavepoint { try db.execute("INSERT INTO t VALUES (1)") })
            try db.execute("INSERT INTO t VALUES (2)")
        }
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM t", as: Int.self), 2)
    }
    func ints(_ rows: [Row]) -> [Int64] {
        rows.map { row in if case .integer(let value) = row.values[0] { return value } else { return -1 } }
    }

    /// Fixed by refusing, before it runs, any statement that would end the transaction (its words say so: a function
    /// cannot end a transaction block). Was: `COMMIT AND CHAIN` / `ROLLBACK AND CHAIN` in a body end the transaction Strata opened and open a new one, so
    /// the session is never idle and the guard (`confirmTransactionKept`, which only looks for `PQTRANS_IDLE`) sees
    /// nothing. A pool `write` that throws leaves the rows before the `COMMIT AND CHAIN` committed (a half-applied
    /// write); a `withTransaction` that returns reports success although the `ROLLBACK AND CHAIN` undid the rows
    /// before it. README (Pools table): "A statement ending the pool's transaction … stops the body there and fails
    /// … no statement runs after it … and the call fails. `withTransaction`/`withSavepoint` … guard their
    /// transaction the same way". Minimal input: `INSERT 1; COMMIT AND CHAIN; INSERT 2; throw`.
    func testAndChainInABodyIsRefusedBeforeItRuns() throws {
        let url = try PostgresServer.shared().url(for: makeTemporaryDirectory(self))
        let db = try PostgresConnection(url: url)
        try db.executeSimple("CREATE TABLE t (a integer)")
        let pool = PostgresPool(url: url, configuration: .init(size: 1))
        XCTAssertThrowsError(try pool.write { conn in
            try conn.execute("INSERT INTO t VALUES (1)", .none)
            try conn.execute("COMMIT AND CHAIN", .none)
            try conn.execute("INSERT INTO t VALUES (2)", .none)
            throw CancellationError()
        })
        XCTAssertEqual(ints(try db.rows("SELECT a FROM t ORDER BY a", .none)), [],
                       "the pool's write threw, yet the row before COMMIT AND CHAIN stayed committed")

        try db.execute("DELETE FROM t", .none)
        var returned = false
        do {
            try db.withTransaction {
                try db.execute("INSERT INTO t VALUES (1)", .none)
                try db.execute("ROLLBACK AND CHAIN", .none)
                try db.execute("INSERT INTO t VALUES (2)", .none)
            }
            returned = true
        } catch {}
        if returned {
            XCTAssertEqual(ints(try db.rows("SELECT a FROM t ORDER BY a", .none)), [1, 2],
                           "withTransaction returned as committed, but the body's ROLLBACK AND CHAIN had undone row 1")
        }
    }


    /// A body that ends the transaction `withTransaction` (or an outermost `withSavepoint`) opened for it ran what
    /// followed outside it: a later throw undid nothing, and a body that went on and returned had the call report
    /// success for work its own ROLLBACK had undone. Such a statement is refused before it runs, and the transaction
    /// stays as it was: the call commits or rolls back on the body's outcome, as SQLite's does.
    func testABodyThatEndsItsTransactionIsStoppedThere() throws {
        let db = try connection()
        try db.execute("CREATE TABLE t (x int)")
        struct Boom: Error {}
        let scopes: [(String, (() throws -> Void) throws -> Void)] = [
            ("withTransaction", { try db.withTransaction($0) }), ("withSavepoint", { try db.withSavepoint($0) }),
        ]
        for (name, scope) in scopes {
            XCTAssertNotNil(assertThrows(Boom.self) {
                try scope {
                    try db.execute("INSERT INTO t VALUES (1)")
                    let refused = assertThrows(DatabaseError.self) { try db.execute("ROLLBACK") }
                    XCTAssertEqual(refused?.kind, .misuse, name)
                    XCTAssertTrue(refused?.message.contains("did not run, and the transaction is as it was") ?? false,
                                  "\(name): \(String(describing: refused))")
                    try db.execute("INSERT INTO t VALUES (2)")
                    throw Boom()
                }
            }, name)
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM t", as: Int.self), 0, "\(name): a body that threw left a row")
            try scope {
                try db.execute("INSERT INTO t VALUES (3)")
                _ = try? db.execute("ROLLBACK")
                _ = try? db.execute("COMMIT AND CHAIN")
                try db.execute("INSERT INTO t VALUES (4)")
            }
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM t", as: Int.self), 2, "\(name): the returned body's rows")
            try db.execute("DELETE FROM t")
            XCTAssertFalse(db.isInTransaction, name)
        }
        // A savepoint's body may open and end savepoints of its own, and outside any scope the caller's SQL is its own.
        try db.withTransaction {
            try db.execute("SAVEPOINT mine")
            try db.execute("INSERT INTO t VALUES (5)")
            try db.execute("ROLLBACK TO SAVEPOINT mine")
            try db.execute("RELEASE SAVEPOINT mine")
        }
        try db.execute("BEGIN")
        try db.execute("INSERT INTO t VALUES (6)")
        try db.execute("COMMIT")
        XCTAssertEqual(try db.rows("SELECT x FROM t").map { $0[0] }, [.integer(6)])
    }

    /// Found by a hostile review: `runScript` inside a pool's `write` let a script's `COMMIT` end the pool's
    /// transaction (a throw then left its rows committed); and a body's own `SAVEPOINT strata_savepoint_1` made
    /// `withSavepoint` roll back only to it, committing what a throwing savepoint had written.
    func testAScriptOrASavepointNameCannotEndWhatStrataOpened() throws {
        struct Oops: Error {}
        let url = try PostgresServer.shared().url(for: makeTemporaryDirectory(self))
        let db = try PostgresConnection(url: url)
        try db.executeSimple("CREATE TABLE t (id integer PRIMARY KEY)")
        let pool = PostgresPool(url: url, configuration: .init(size: 1))
        XCTAssertThrowsError(try pool.write { conn in
            try conn.runScript(Array("INSERT INTO t VALUES (1);\nCOMMIT;\nINSERT INTO t VALUES (2);\n".utf8),
                               startLine: 1, insideTransaction: true, afterEach: nil)
        }) { error in XCTAssertTrue("\(error)".contains("COMMIT would end"), "\(error)") }
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM t", .none, as: Int.self), 0)
        try db.withTransaction {
            _ = try? db.withSavepoint {
                try db.execute("INSERT INTO t VALUES (1)", .none)
                try db.execute("SAVEPOINT strata_savepoint_1", .none)
                throw Oops()
            }
        }
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM t", .none, as: Int.self), 0,
                       "the insert of a savepoint that threw was committed")
    }

    func testTheCatalogAsTheCoreReadsIt() throws {
        let db = try connection()
        try db.execute("""
            CREATE TABLE "Books" (isbn text, edition int, title varchar(200) NOT NULL DEFAULT 'untitled', note text,
                                  PRIMARY KEY (isbn, edition))
            """)
        try db.execute(#"CREATE UNIQUE INDEX books_title ON "Books" (title)"#)
        try db.execute(#"CREATE UNIQUE INDEX books_partial ON "Books" (note) WHERE note IS NOT NULL"#)
        try db.execute(#"CREATE UNIQUE INDEX books_lower ON "Books" (lower(note))"#)
        XCTAssertTrue(try db.tableExists("Books"))
        XCTAssertFalse(try db.tableExists("books"))
        XCTAssertEqual(try db.declaredTableName("BOOKS"), "Books")
        let columns = try db.columns(in: "Books")
        XCTAssertEqual(columns.map(\.name), ["isbn", "edition", "title", "note"])
        XCTAssertEqual(columns.map(\.primaryKeyPosition), [1, 2, 0, 0])
        XCTAssertEqual(columns[2].declaredType, "character varying(200)")
        XCTAssertEqual(columns[2].affinity, .text)
        XCTAssertEqual(columns[1].affinity, .integer)
        XCTAssertTrue(columns[2].isNotNull)
        XCTAssertEqual(columns[2].defaultSQL, "'untitled'::character varying")
        XCTAssertEqual(try db.uniqueKeys(in: "Books"), [["isbn", "edition"], ["title"]])
        XCTAssertEqual(try db.columns(in: "missing"), [])
    }

    func testTheSchemaTextCoversEachKindOfObjectAndLeavesOutStratasHistory() throws {
        let db = try connection()
        for statement in [
            "CREATE TYPE mood AS ENUM ('sad', 'ok')",
            "CREATE TABLE person (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name text NOT NULL DEFAULT 'x', m mood)",
            "CREATE INDEX person_name ON person (name)",
            "CREATE VIEW named AS SELECT name FROM person",
            "CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$",
            "CREATE TRIGGER person_touch BEFORE UPDATE ON person FOR EACH ROW EXECUTE FUNCTION touch()",
        ] { try db.execute(statement, .none) }
        try db.history.create()
        let text = try PostgresSchema(connection: db).text()
        for expected in ["CREATE TYPE public.mood AS ENUM ('sad', 'ok');", "CREATE TABLE public.person (",
                         "    name text NOT NULL DEFAULT 'x'::text", "CONSTRAINT person_pkey PRIMARY KEY (id)",
                         "CREATE INDEX person_name ON public.person USING btree (name);", "CREATE VIEW public.named AS",
                         "CREATE OR REPLACE FUNCTION public.touch()", "CREATE TRIGGER person_touch BEFORE UPDATE ON public.person",
                         "    id bigint NOT NULL GENERATED ALWAYS AS IDENTITY,"] {
            XCTAssertTrue(text.contains(expected), "\(expected) in:\n\(text)")
        }
        XCTAssertFalse(text.contains("SEQUENCE"), "an identity's sequence is part of its column:\n\(text)")
        XCTAssertFalse(text.contains("strata_history"), text)
        XCTAssertEqual(text, try PostgresSchema(connection: db).text(), "the same text every time")
    }

    func testAPasswordNeverAppearsInAConnectionError() throws {
        let server = try PostgresServer.shared()
        let url = server.url(database: "no_such_database_here").replacingOccurrences(of: "postgresql://postgres@", with: "postgresql://postgres:s3cr%40t@")
        XCTAssertThrowsError(try PostgresConnection(url: url)) { error in
            XCTAssertFalse("\(error)".contains("s3cr"), "\(error)")
            XCTAssertTrue("\(error)".contains("•••"), "\(error)")
            XCTAssertEqual((error as? DatabaseError)?.kind, .cannotOpen)
        }
        XCTAssertEqual(DatabaseURL.redacted("postgres://u:p%40ss@h:5/db?password=x&sslmode=require"),
                       "postgres://u:•••@h:5/db?password=•••&sslmode=require")
    }
}
