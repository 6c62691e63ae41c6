import Foundation
import XCTest
@testable import StrataCore
@testable import StrataSQLite

/// `trace(_:)`: each finished statement with its bound values written in, and its duration.
final class DatabaseTraceTests: XCTestCase {
    /// What a hook saw; a class, so the escaping closure and the test share it.
    final class Events {
        var all: [Database.TraceEvent] = []
        var sql: [String] { all.map(\.sql) }
    }

    func testEachStatementIsReportedOnceWithItsBoundValues() throws {
        let db = try Database()
        try db.execute("CREATE TABLE t (n INTEGER, s TEXT, b BLOB, r REAL)")
        let events = Events()
        db.trace { events.all.append($0) }
        try db.execute("INSERT INTO t VALUES (?, ?, ?, ?)", [7, "it's", Data([0x00, 0xFF]), 1.5])
        try db.execute("INSERT INTO t (n, s) VALUES (:n, :s)", ["n": 8, "s": nil as String?])
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM t WHERE n > \(6)", as: Int.self), 2)
        XCTAssertEqual(events.sql, [
            "INSERT INTO t VALUES (7, 'it''s', x'00ff', 1.5)",
            "INSERT INTO t (n, s) VALUES (8, NULL)",
            "SELECT count(*) FROM t WHERE n > 6",
        ])
        XCTAssertTrue(events.all.allSatisfy { $0.duration >= .zero })
    }

    func testScriptsTransactionsAndReusedStatementsAreTracedToo() throws {
        let db = try Database()
        let events = Events()
        db.trace { events.all.append($0) }
        try db.executeScript("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
        try db.transaction { db in
            let insert = try db.prepare("INSERT INTO t VALUES (?)")
            for x in 2...4 { try insert.execute([x]) }
        }
        XCTAssertEqual(events.sql, [
            "CREATE TABLE t (x);", "INSERT INTO t VALUES (1);",   // a script's statements keep their ";"
            "BEGIN DEFERRED TRANSACTION",
            "INSERT INTO t VALUES (2)", "INSERT INTO t VALUES (3)", "INSERT INTO t VALUES (4)",
            "COMMIT TRANSACTION",
        ])
    }

    func testSettingNilRemovesTheHookAndANewOneReplacesIt() throws {
        let db = try Database()
        let first = Events(), second = Events()
        db.trace { first.all.append($0) }
        try db.execute("SELECT 1", .none)
        db.trace { second.all.append($0) }
        try db.execute("SELECT 2", .none)
        db.trace(nil)
        try db.execute("SELECT 3", .none)
        XCTAssertEqual(first.sql, ["SELECT 1"])
        XCTAssertEqual(second.sql, ["SELECT 2"])
    }

    func testTheHookIsReleasedWithTheConnectionAndAStatementHeldAfterCloseRunsUntraced() throws {
        weak var released: Events?
        var held: Statement?
        do {
            let events = Events()
            released = events
            let db = try Database()
            db.trace { events.all.append($0) }
            held = try db.prepare("SELECT 42")
            try held?.execute()
            XCTAssertEqual(events.sql, ["SELECT 42"])
            db.close()
        }
        XCTAssertNil(released, "closing the connection dropped the hook and what it captured")
        // The connection lives on as a zombie for the statement; running it must not reach the released hook.
        XCTAssertNoThrow(try held?.execute())
        held = nil
    }

    func testTracingAClosedConnectionDoesNothing() throws {
        let db = try Database()
        db.close()
        let events = Events()
        db.trace { events.all.append($0) }
        XCTAssertNil(db.traceBox)
        XCTAssertThrowsError(try db.execute("SELECT 1", .none))
        XCTAssertTrue(events.all.isEmpty)
    }
}
