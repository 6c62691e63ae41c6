import CSQLite
import Dispatch
import Foundation
import XCTest
@testable import StrataCore
@testable import StrataSQLite

/// `interrupt()` from another thread: the running statement fails `.interrupted`, and a transaction it was in is
/// handled as when SQLite rolls one back by itself.
final class DatabaseInterruptTests: XCTestCase {
    /// Counts to a billion: minutes of work, so only an interrupt ends it within the test. `started()` is called
    /// once, with the first row, which tells the interrupting thread the statement is running.
    static let longCount = "WITH RECURSIVE c(x) AS (SELECT started() UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000) "

    /// A connection with `started()`, and a thread that interrupts it through its handle once that was called.
    /// The wait is a guard against a hang, not a timing: the interrupt follows the signal.
    private func databaseInterruptedOnceStarted(_ db: Database) throws {
        let started = DispatchSemaphore(value: 0)
        try db.createFunction("started", argumentCount: 0, deterministic: false) { _ in
            started.signal()
            return 1
        }
        let handle = db.interruptHandle
        DispatchQueue.global().async {
            if started.wait(timeout: .now() + 120) == .success { handle.interrupt() }
        }
    }

    func testARunningQueryFailsInterruptedAndTheConnectionGoesOn() throws {
        let db = try Database()
        try databaseInterruptedOnceStarted(db)
        let error = assertThrows(DatabaseError.self) { try db.scalar(Self.longCount + "SELECT count(*) FROM c", .none, as: Int.self) }
        XCTAssertEqual(error?.kind, .interrupted)
        XCTAssertEqual(error?.resultCode, SQLITE_INTERRUPT)
        XCTAssertEqual(error?.message, "interrupted: interrupt() stopped the statement")
        XCTAssertEqual(try db.scalar("SELECT 1", .none, as: Int.self), 1, "the next statement runs normally")
    }

    func testInterruptingWithNothingRunningDoesNothing() throws {
        let db = try Database()
        db.interrupt()
        XCTAssertEqual(try db.scalar("SELECT 2", .none, as: Int.self), 2)
        try db.execute("CREATE TABLE t (x)")
        XCTAssertTrue(try db.tableExists("t"))
    }

    func testAnInterruptedReadLeavesTheTransactionToCommit() throws {
        let db = try Database()
        try db.execute("CREATE TABLE t (x)")
        try databaseInterruptedOnceStarted(db)
        try db.transaction { db in
            try db.execute("INSERT INTO t VALUES (1)")
            let error = assertThrows(DatabaseError.self) { try db.scalar(Self.longCount + "SELECT count(*) FROM c", .none, as: Int.self) }
            XCTAssertEqual(error?.kind, .interrupted)
            XCTAssertTrue(db.isInTransaction)
            try db.execute("INSERT INTO t VALUES (2)")
        }
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM t", as: Int.self), 2)
    }

    func testAnInterruptedWriteLosesTheTransactionAndNothingAfterItAutocommits() throws {
        let db = try Database()
        try db.execute("CREATE TABLE t (x)")
        try databaseInterruptedOnceStarted(db)
        var interrupted: DatabaseError?
        let error = assertThrows(DatabaseError.self) {
            try db.transaction { db in
                try db.execute("INSERT INTO t VALUES (-1)")
                do {
                    try db.execute(Self.longCount + "INSERT INTO t SELECT x FROM c", .none)
                } catch let error as DatabaseError {
                    interrupted = error
                }
                try db.execute("INSERT INTO t VALUES (-2)")   // the body goes on as if nothing happened
            }
        }
        XCTAssertEqual(interrupted?.kind, .interrupted)
        XCTAssertEqual(error?.kind, .interrupted)
        XCTAssertTrue(error?.message.hasPrefix("SQLite rolled the transaction back after: interrupted") ?? false, error?.message ?? "")
        XCTAssertFalse(db.isInTransaction)
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM t", as: Int.self), 0, "neither the row before nor the one after was kept")
    }

    func testAQueueIsInterruptedWithoutWaitingForItsTurn() throws {
        let queue = try DatabaseQueue()
        let started = DispatchSemaphore(value: 0)
        try queue.perform { db in
            try db.createFunction("started", argumentCount: 0, deterministic: false) { _ in
                started.signal()
                return 1
            }
        }
        DispatchQueue.global().async {
            if started.wait(timeout: .now() + 120) == .success { queue.interrupt() }
        }
        let error = assertThrows(DatabaseError.self) {
            try queue.perform { db in try db.scalar(Self.longCount + "SELECT count(*) FROM c", .none, as: Int.self) }
        }
        XCTAssertEqual(error?.kind, .interrupted)
        XCTAssertEqual(try queue.perform { db in try db.scalar("SELECT 3", .none, as: Int.self) }, 3)
    }

    func testAHandleOutlivingItsConnectionDoesNothing() throws {
        var db: Database? = try Database()
        let handle = try XCTUnwrap(db?.interruptHandle)
        db?.close()
        handle.interrupt()
        db = nil
        handle.interrupt()
        DispatchQueue.concurrentPerform(iterations: 4) { _ in handle.interrupt() }
    }
}
