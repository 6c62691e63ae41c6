import Foundation
import Strata
import XCTest

/// SQLite's pool: WAL, one writer and concurrent readers, each read one snapshot that cannot write.
final class DatabasePoolTests: XCTestCase {
    /// A guard against a hang, never a measured wait: every wait below ends on a signal long before it.
    func deadline() -> DispatchTime { .now() + .seconds(60) }

    func makePool(readers: Int = 4, checkoutTimeout: Duration = .seconds(30)) throws -> DatabasePool {
        let path = try makeTemporaryDirectory(self).appendingPathComponent("pool.sqlite").path
        let pool = try DatabasePool(path: path, configuration: .init(maximumReaderCount: readers, checkoutTimeout: checkoutTimeout))
        try pool.write { db in try db.execute("CREATE TABLE t (x INTEGER)") }
        return pool
    }

    func testReadersProceedWhileAWriteTransactionIsOpen() throws {
        let pool = try makePool()
        let began = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), written = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            _ = try? pool.write { db in
                try db.execute("INSERT INTO t VALUES (1)")
                began.signal()
                _ = release.wait(timeout: .now() + .seconds(60))
            }
            written.signal()
        }
        defer { release.signal() }
        XCTAssertEqual(began.wait(timeout: deadline()), .success, "the writer never began")

        // The write transaction is open, holding its uncommitted row; a read on another thread completes anyway.
        let readDone = DispatchSemaphore(value: 0)
        let seen = Locked<Result<Int?, any Error>?>(nil)
        Thread.detachNewThread {
            seen.set(Result { try pool.read { db in try db.scalar("SELECT count(*) FROM t", as: Int.self) } })
            readDone.signal()
        }
        XCTAssertEqual(readDone.wait(timeout: deadline()), .success, "the read waited for the write transaction")
        XCTAssertEqual(try seen.get()?.get(), 0, "a read sees only committed rows")

        release.signal()
        XCTAssertEqual(written.wait(timeout: deadline()), .success)
        XCTAssertEqual(try pool.read { db in try db.scalar("SELECT count(*) FROM t", as: Int.self) }, 1)
        XCTAssertEqual(try pool.read { db in try db.scalar("PRAGMA journal_mode", as: String.self) }, "wal")
    }

    func testEachReadSeesOneSnapshotWhateverCommitsMeanwhile() throws {
        let pool = try makePool()
        try pool.write { db in try db.execute("INSERT INTO t VALUES (1)") }
        let counts = try pool.read { db -> [Int?] in
            let before = try db.scalar("SELECT count(*) FROM t", as: Int.self)
            // A write commits on another thread while this read is open.
            let committed = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                _ = try? pool.write { db in try db.execute("INSERT INTO t VALUES (2)") }
                committed.signal()
            }
            XCTAssertEqual(committed.wait(timeout: deadline()), .success, "the write waited for the read")
            return [before, try db.scalar("SELECT count(*) FROM t", as: Int.self)]
        }
        XCTAssertEqual(counts, [1, 1])
        XCTAssertEqual(try pool.read { db in try db.scalar("SELECT count(*) FROM t", as: Int.self) }, 2)
    }

    func testAReadCannotWrite() throws {
        let pool = try makePool()
        for sql in ["INSERT INTO t VALUES (1)", "CREATE TEMP TABLE scratch (x)"] {
            let error = assertThrows(DatabaseError.self) { try pool.read { db in try db.execute(sql, .none) } }
            XCTAssertEqual(error?.kind, .readOnly, sql)
        }
        XCTAssertEqual(try pool.read { db in try db.scalar("SELECT count(*) FROM t", as: Int.self) }, 0)
    }

    func testAWriteThatThrowsIsRolledBack() async throws {
        let pool = try makePool()
        struct Stop: Error {}
        do {
            try await pool.write { db in
                try db.execute("INSERT INTO t VALUES (1)")
                throw Stop()
            }
            XCTFail("expected the body's error")
        } catch is Stop {}
        let count = try await pool.read { db in try db.scalar("SELECT count(*) FROM t", as: Int.self) }
        XCTAssertEqual(count, 0)
    }

    /// A `write` whose body ran its own `ROLLBACK`, then more statements, then threw, left those statements
    /// committed: they ran outside any transaction. The `ROLLBACK` is refused before it runs, so the throw rolls
    /// back everything the body did.
    func testASQLiteWriteThatThrowsLeavesNoRow() throws {
        let pool = try makePool()
        for statement in ["ROLLBACK", "COMMIT"] {
            do {
                try pool.write { db in
                    try db.execute("INSERT INTO t VALUES (1)")
                    let error = assertThrows(DatabaseError.self) { try db.execute(statement, .none) }
                    XCTAssertEqual(error?.kind, .misuse, statement)
                    try db.execute("INSERT INTO t VALUES (2)")
                    throw CancellationError()
                }
                XCTFail("expected the body's error")
            } catch is CancellationError {}
            let refused = assertThrows(DatabaseError.self) {
                try pool.write { db in
                    try db.execute(statement, .none)
                    try db.execute("INSERT INTO t VALUES (3)")
                }
            }
            XCTAssertEqual(refused?.kind, .misuse, statement)
            let count = try pool.read { db in try db.scalar("SELECT count(*) FROM t", as: Int.self) }
            XCTAssertEqual(count, 0, "\(statement): a write that threw left a row")
        }
    }

    /// A read's body may not end its transaction either: the statements after a `COMMIT` would each see the
    /// database as it is then, not the one snapshot `read` promises.
    func testAReadCannotEndItsSnapshot() throws {
        let pool = try makePool()
        let seen = try pool.read { db -> [Int?] in
            let before = try db.scalar("SELECT count(*) FROM t", as: Int.self)
            XCTAssertEqual(assertThrows(DatabaseError.self) { try db.execute("COMMIT", .none) }?.kind, .misuse)
            XCTAssertTrue(db.isInTransaction)
            try pool.write { db in try db.execute("INSERT INTO t VALUES (1)") }
            return [before, try db.scalar("SELECT count(*) FROM t", as: Int.self)]
        }
        XCTAssertEqual(seen, [0, 0], "the read saw one snapshot")
    }

    func testCallingThePoolFromInsideABodyIsAnErrorNotADeadlock() throws {
        let pool = try makePool(readers: 1)
        let nestedRead = assertThrows(DatabaseError.self) { try pool.read { _ in try pool.read { _ in 1 } } }
        XCTAssertEqual(nestedRead?.kind, .misuse)
        let nestedWrite = assertThrows(DatabaseError.self) { try pool.write { _ in try pool.write { _ in 1 } } }
        XCTAssertEqual(nestedWrite?.kind, .misuse)
    }

    func testAReadWaitsForAFreeReaderAtMostTheCheckoutTimeout() async throws {
        let pool = try makePool(readers: 1, checkoutTimeout: .milliseconds(300))
        let holding = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            _ = try? pool.read { _ in
                holding.signal()
                _ = release.wait(timeout: .now() + .seconds(60))
            }
            finished.signal()
        }
        defer { release.signal() }
        XCTAssertEqual(holding.wait(timeout: deadline()), .success)
        do {
            _ = try await pool.read { db in try db.scalar("SELECT 1", as: Int.self) }
            XCTFail("expected the checkout to time out")
        } catch let error as DatabaseError {
            XCTAssertEqual(error.kind, .busy)
            XCTAssertTrue(error.message.contains("all 1 were in use") && error.message.contains("300 ms"), error.message)
        }
        release.signal()
        XCTAssertEqual(finished.wait(timeout: deadline()), .success)
        // The reader came back and the next read gets it.
        let one = try await pool.read { db in try db.scalar("SELECT 1", as: Int.self) }
        XCTAssertEqual(one, 1)
        XCTAssertEqual(pool.readerCount, 1)
    }

    /// Counts to a billion, calling `started()` with the first row: only an interrupt ends it within the test.
    private static let longCount = "WITH RECURSIVE c(x) AS (SELECT started() UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000) "

    private func defineStarted(on db: Database, signalling started: DispatchSemaphore) throws {
        try db.createFunction("started", argumentCount: 0, deterministic: false) { _ in
            started.signal()
            return 1
        }
    }

    func testInterruptStopsARunningReadAndTheReaderServesTheNext() throws {
        let pool = try makePool()
        let started = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            if started.wait(timeout: .now() + .seconds(120)) == .success { pool.interrupt() }
        }
        let error = assertThrows(DatabaseError.self) {
            try pool.read { db in
                try self.defineStarted(on: db, signalling: started)
                return try db.scalar(Self.longCount + "SELECT count(*) FROM c", .none, as: Int.self)
            }
        }
        XCTAssertEqual(error?.kind, .interrupted)
        XCTAssertEqual(try pool.read { db in try db.scalar("SELECT count(*) FROM t", as: Int.self) }, 0)
    }

    func testInterruptStopsARunningWriteWhichIsRolledBack() throws {
        let pool = try makePool()
        let started = DispatchSemaphore(value: 0)
        try pool.writeWithoutTransaction { db in try self.defineStarted(on: db, signalling: started) }
        DispatchQueue.global().async {
            if started.wait(timeout: .now() + .seconds(120)) == .success { pool.interrupt() }
        }
        let error = assertThrows(DatabaseError.self) {
            try pool.write { db in
                try db.execute("INSERT INTO t VALUES (1)")
                try db.execute(Self.longCount + "INSERT INTO t SELECT x FROM c", .none)
            }
        }
        XCTAssertEqual(error?.kind, .interrupted)
        XCTAssertEqual(try pool.read { db in try db.scalar("SELECT count(*) FROM t", as: Int.self) }, 0)
        try pool.write { db in try db.execute("INSERT INTO t VALUES (2)") }
        XCTAssertEqual(try pool.read { db in try db.scalar("SELECT count(*) FROM t", as: Int.self) }, 1)
    }

    func testInterruptWithNothingRunningDoesNothing() throws {
        let pool = try makePool()
        _ = try pool.read { db in try db.scalar("SELECT 1", .none, as: Int.self) }
        pool.interrupt()
        try pool.write { db in try db.execute("INSERT INTO t VALUES (1)") }
        XCTAssertEqual(try pool.read { db in try db.scalar("SELECT count(*) FROM t", as: Int.self) }, 1)
    }
}
