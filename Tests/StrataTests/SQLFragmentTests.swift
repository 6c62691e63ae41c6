import Foundation
import Strata
@testable import StrataCore
import XCTest

/// `SQL` fragments: what they render for each dialect, and that every backend binds what they interpolate.
final class SQLFragmentTests: XCTestCase {
    /// A fresh database on `backend` with one table of every kind of value a test binds.
    func database(_ backend: TestBackend) throws -> any MigrationDatabase {
        let db = try Project(self, backend: backend, files: [:]).connection()
        let bytes = backend.kind == .postgres ? "bytea" : "BLOB"
        try db.execute("CREATE TABLE note (id INTEGER, body TEXT, bytes \(bytes), written TEXT)", .none)
        return db
    }

    func testRenderingNumbersEachDialectsPlaceholdersInOrder() throws {
        let inner: SQL = "b = \(2) AND c = \("x")"
        let fragment: SQL = "SELECT * FROM \(identifier: "my \"table\"") WHERE a = \(1) AND \(sql: inner) AND d = \(nil as Int?)"
        let sqlite = fragment.rendered(for: SQLiteDialect())
        XCTAssertEqual(sqlite.text, #"SELECT * FROM "my ""table""" WHERE a = ? AND b = ? AND c = ? AND d = ?"#)
        let postgres = fragment.rendered(for: PostgresDialect())
        XCTAssertEqual(postgres.text, #"SELECT * FROM "my ""table""" WHERE a = $1 AND b = $2 AND c = $3 AND d = $4"#)
        for arguments in [sqlite.arguments, postgres.arguments] {
            guard case .positional(let values) = arguments else { return XCTFail("\(arguments)") }
            XCTAssertEqual(values, [.integer(1), .integer(2), .text("x"), .null])
        }
    }

    func testLiteralTextIsNeverRewritten() {
        let fragment: SQL = "SELECT data ? 'k', data ?| array['a'], '$1', ':name' FROM t WHERE k = \("v")"
        XCTAssertEqual(fragment.rendered(for: PostgresDialect()).text,
                       "SELECT data ? 'k', data ?| array['a'], '$1', ':name' FROM t WHERE k = $1")
        XCTAssertEqual(fragment.rendered(for: SQLiteDialect()).text,
                       "SELECT data ? 'k', data ?| array['a'], '$1', ':name' FROM t WHERE k = ?")
        let plain: SQL = "SELECT 1 WHERE x = ?"
        XCTAssertEqual(plain.rendered(for: PostgresDialect()).text, "SELECT 1 WHERE x = ?")
    }

    func testJoinedFragmentsKeepTheirValuesInOrder() {
        let conditions: [SQL] = ["a = \(1)", "b = \(2)", "c IS NULL"]
        let rendered = conditions.joined(separator: " AND ").rendered(for: PostgresDialect())
        XCTAssertEqual(rendered.text, "a = $1 AND b = $2 AND c IS NULL")
        guard case .positional(let values) = rendered.arguments else { return XCTFail("\(rendered.arguments)") }
        XCTAssertEqual(values, [.integer(1), .integer(2)])
    }

    func testInterpolatedTextIsBoundNotSpliced() throws {
        try forEachBackend { backend in
            let db = try database(backend)
            let hostile = "O'Brien'); DROP TABLE note; --"
            try db.execute("INSERT INTO note (id, body) VALUES (\(1), \(hostile))")
            XCTAssertEqual(try db.scalar("SELECT body FROM note WHERE id = \(1)", as: String.self), hostile)
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM note WHERE body = \(hostile)", as: Int.self), 1)
            XCTAssertEqual(try db.rows("SELECT id FROM note WHERE body = \(hostile)").count, 1)
        }
    }

    func testNilDataAndDatesBind() throws {
        try forEachBackend { backend in
            let db = try database(backend)
            let bytes = Data([0, 1, 0xFF, 0x27]), written = Date(timeIntervalSince1970: 1_700_000_000.5)
            let missing: String? = nil
            try db.execute("INSERT INTO note VALUES (\(1), \(missing), \(bytes), \(written))")
            let row = try XCTUnwrap(db.rows("SELECT body, bytes, written FROM note WHERE bytes = \(bytes)").first)
            XCTAssertEqual(row[0], .null)
            XCTAssertEqual(try row.get(1, as: Data.self), bytes)
            XCTAssertEqual(try row.get(2, as: Date.self), written)
        }
    }

    func testNestedFragmentsBindInTheOrderWritten() throws {
        try forEachBackend { backend in
            let db = try database(backend)
            let rest: SQL = "\("two"), \(sql: "\(Data([3])), \("four")")"
            try db.execute("INSERT INTO note (id, body, bytes, written) VALUES (\(1), \(sql: rest))")
            let row = try XCTUnwrap(db.rows("SELECT id, body, bytes, written FROM note").first)
            XCTAssertEqual(row.values, [.integer(1), .text("two"), .blob(Data([3])), .text("four")])
        }
    }

    func testIdentifiersAreQuotedForEveryBackend() throws {
        try forEachBackend { backend in
            let db = try database(backend)
            let name = #"odd "name"; DROP TABLE note"#
            try db.execute("CREATE TABLE \(identifier: name) (\(identifier: "value") INTEGER)")
            try db.execute("INSERT INTO \(identifier: name) VALUES (\(7))")
            XCTAssertEqual(try db.scalar("SELECT \(identifier: "value") FROM \(identifier: name)", as: Int.self), 7)
            XCTAssertTrue(try db.tableExists("note"))
        }
    }

    /// `"` followed by a combining mark is one character, which a character-wise replacement (Foundation's
    /// `replacingOccurrences`) passes over, leaving that quote to end the identifier; quoting doubles it by bytes.
    func testAQuoteFollowedByACombiningMarkIsStillDoubled() throws {
        let name = "odd\"\u{301} INTEGER); DROP TABLE note; --"
        XCTAssertEqual(Array(quoteIdentifier(name).utf8), Array("\"odd\"\"\u{301} INTEGER); DROP TABLE note; --\"".utf8))
        try forEachBackend { backend in
            let db = try database(backend)
            try db.execute("CREATE TABLE \(identifier: name) (\(identifier: "value") INTEGER)")
            try db.execute("INSERT INTO \(identifier: name) VALUES (\(7))")
            XCTAssertEqual(try db.scalar("SELECT \(identifier: "value") FROM \(identifier: name)", as: Int.self), 7)
            XCTAssertTrue(try db.tableExists("note"))
        }
    }

    func testAValueTheDatabaseCannotHoldIsRefusedBeforeRunning() throws {
        try forEachBackend { backend in
            let db = try database(backend)
            let tooBig: UInt64? = .max
            let error = try XCTUnwrap(assertThrows(DatabaseError.self) {
                try db.execute("INSERT INTO note (id, body) VALUES (\(1), \(sql: "\(tooBig)"))")
            })
            XCTAssertEqual(error.kind, .conversion)
            XCTAssertTrue(error.message.hasPrefix("argument 2: "), error.message)
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM note", .none, as: Int.self), 0)
        }
    }

    func testAStringWithNativeArgumentsStillBindsThem() throws {
        try forEachBackend { backend in
            let db = try database(backend)
            let placeholder = db.dialect.placeholder(1)
            try db.execute("INSERT INTO note (id) VALUES (\(placeholder))", [5])
            XCTAssertEqual(try db.scalar("SELECT id FROM note WHERE id = \(placeholder)", [5], as: Int.self), 5)
        }
    }

    func testAPlaceholderWrittenInAFragmentsTextIsRefusedOnSQLite() throws {
        let db = try Database()
        try db.execute("CREATE TABLE t (a, b)")
        let error = try XCTUnwrap(assertThrows(DatabaseError.self) { try db.execute("INSERT INTO t VALUES (?, \(1))") })
        XCTAssertEqual(error.message, "statement expects 2 arguments, got 1")
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM t", as: Int.self), 0)
    }

    func testJsonbQuestionMarkOperatorsInTextStayOperatorsOnPostgreSQL() throws {
        guard let postgres = TestBackend.available.first(where: { $0.kind == .postgres }) else {
            throw XCTSkip("no PostgreSQL test server")
        }
        let db = try Project(self, backend: postgres, files: [:]).connection()
        let document = #"{"a": 1}"#
        XCTAssertEqual(try db.scalar(#"SELECT '{"a": 1}'::jsonb ? \#("a")"#, as: Bool.self), true)
        XCTAssertEqual(try db.scalar("SELECT \(document)::jsonb ? \("b")", as: Bool.self), false)
        XCTAssertEqual(try db.scalar("SELECT \(document)::jsonb ?| array['b', \("a")]", as: Bool.self), true)
    }
}
