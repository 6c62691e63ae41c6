import CSQLite
import Foundation
import XCTest
import Strata
@testable import StrataCore
@testable import StrataSQLite

final class DatabaseQueueTests: XCTestCase {
    func testEightConcurrentTasksLoseNoRow() async throws {
        let dir = try makeTemporaryDirectory(self)
        let queue = try DatabaseQueue(path: dir.appendingPathComponent("q.sqlite").path)
        try await queue.perform { db in try db.execute("CREATE TABLE t (task INTEGER, n INTEGER)") }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for n in 0..<200 {
                        try await queue.transaction { db in
                            try db.execute("INSERT INTO t VALUES (?, ?)", [task, n])
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let count = try await queue.perform { db in try db.scalar("SELECT count(DISTINCT task * 1000 + n) FROM t", as: Int.self) }
        XCTAssertEqual(count, 1600)
    }

    func testThreadsShareTheQueueSynchronously() throws {
        let queue = try DatabaseQueue()
        try queue.perform { try $0.execute("CREATE TABLE t (x)") }
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            for _ in 0..<50 { try? queue.perform { try $0.execute("INSERT INTO t VALUES (?)", [i]) } }
        }
        XCTAssertEqual(try queue.perform { try $0.scalar("SELECT count(*) FROM t", as: Int.self) }, 400)
    }

    func testReentrantUseIsAnErrorNotADeadlock() throws {
        let queue = try DatabaseQueue()
        let error = assertThrows(DatabaseError.self) {
            try queue.perform { _ in try queue.perform { _ in 1 } }
        }
        XCTAssertEqual(error?.resultCode, SQLITE_MISUSE)
    }

    func testFailedTransactionThroughQueueLeavesNoTrace() async throws {
        let queue = try DatabaseQueue()
        try await queue.perform { try $0.execute("CREATE TABLE t (x UNIQUE)") }
        do {
            try await queue.transaction { db in
                try db.execute("INSERT INTO t VALUES (1)")
                try db.execute("INSERT INTO t VALUES (1)")
            }
            XCTFail("expected a constraint error")
        } catch let error as DatabaseError {
            XCTAssertEqual(error.extendedResultCode, 2067)
        }
        let count = try await queue.perform { try $0.scalar("SELECT count(*) FROM t", as: Int.self) }
        XCTAssertEqual(count, 0)
    }
}
