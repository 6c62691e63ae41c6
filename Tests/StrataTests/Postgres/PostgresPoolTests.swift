import Foundation
import StrataCore
@testable import StrataPostgres
import XCTest

/// PostgreSQL's pool on the shared test server: read-only snapshots, a bounded wait for a connection, statement
/// timeouts per call, and broken connections replaced. (A whole server restart: `PostgresPoolRestartTests`.)
final class PostgresPoolTests: XCTestCase {
    func deadline() -> DispatchTime { .now() + .seconds(60) }

    func makePool(_ configuration: PostgresPool.Configuration = .init(size: 4)) throws -> (PostgresPool, admin: PostgresConnection) {
        let url = try PostgresServer.shared().url(for: makeTemporaryDirectory(self))
        let pool = PostgresPool(url: url, configuration: configuration)
        try pool.write { db in try db.execute("CREATE TABLE t (x int)") }
        return (pool, try PostgresConnection(url: url))
    }

    /// Polls `condition` until it holds; fails the test if `timeout` (a guard against a hang) passes first.
    func wait(for what: String, timeout: TimeInterval = 60, _ condition: () throws -> Bool) throws {
        let end = Date().addingTimeInterval(timeout)
        while try !condition() {
            guard Date() < end else { throw PostgresServer.SkipReason(description: "timed out waiting for \(what)") }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    func testAReadIsOneReadOnlySnapshot() throws {
        let (pool, admin) = try makePool()
        let counts = try pool.read { db -> [Int?] in
            let before = try db.scalar("SELECT count(*) FROM t", as: Int.self)
            try admin.execute("INSERT INTO t VALUES (1)")         // committed by another session meanwhile
            return [before, try db.scalar("SELECT count(*) FROM t", as: Int.self)]
        }
        XCTAssertEqual(counts, [0, 0])
        XCTAssertEqual(try pool.read { db in try db.scalar("SELECT count(*) FROM t", as: Int.self) }, 1)
        let error = assertThrows(DatabaseError.self) { try pool.read { db in try db.execute("INSERT INTO t VALUES (2)") } }
        XCTAssertEqual(error?.kind, .readOnly)
        XCTAssertEqual(error?.code?.value, "25006")
        // A write does write, and the transaction API works as on any connection.
        try pool.write { db in
            try db.execute("INSERT INTO t VALUES (3)")
            XCTAssertThrowsError(try db.withSavepoint { try db.execute("INSERT INTO nowhere VALUES (1)") })
        }
        try pool.writeWithoutTransaction { db in try db.withTransaction { try db.execute("INSERT INTO t VALUES (4)") } }
        XCTAssertEqual(try admin.scalar("SELECT string_agg(x::text, ',' ORDER BY x) FROM t", as: String.self), "1,3,4")
    }

    func testACallWaitsForAFreeConnectionAtMostTheCheckoutTimeoutAndSaysSo() throws {
        let (pool, _) = try makePool(.init(size: 2, checkoutTimeout: .milliseconds(250)))
        let holding = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), finished = DispatchSemaphore(value: 0)
        for _ in 0..<2 {
            Thread.detachNewThread {
                _ = try? pool.read { _ in
                    holding.signal()
                    _ = release.wait(timeout: .now() + .seconds(60))
                }
                finished.signal()
            }
        }
        defer { release.signal(); release.signal() }
        XCTAssertEqual(holding.wait(timeout: deadline()), .success)
        XCTAssertEqual(holding.wait(timeout: deadline()), .success)
        let error = assertThrows(DatabaseError.self) { try pool.write { db in try db.execute("INSERT INTO t VALUES (1)") } }
        XCTAssertEqual(error?.kind, .busy)
        XCTAssertTrue(error?.message.contains("all 2 were in use") == true && error?.message.contains("250 ms") == true,
                      error?.message ?? "")
        release.signal(); release.signal()
        XCTAssertEqual(finished.wait(timeout: deadline()), .success)
        XCTAssertEqual(finished.wait(timeout: deadline()), .success)
        try pool.write { db in try db.execute("INSERT INTO t VALUES (1)") }
        XCTAssertEqual(pool.connectionCount, 2)
    }

    func testAStatementTimeoutHoldsForItsCallOnly() async throws {
        let (pool, _) = try makePool(.init(size: 1, statementTimeout: .seconds(30)))
        let error = await asyncError { try await pool.read(statementTimeout: .milliseconds(50)) { db in try db.execute("SELECT pg_sleep(30)") } }
        XCTAssertEqual(error?.kind, .statementTimeout)
        XCTAssertEqual(error?.code?.value, "57014")
        // The same (only) connection goes on, with the pool's own timeout again.
        let setting = try await pool.read { db in try db.scalar("SHOW statement_timeout", as: String.self) }
        XCTAssertEqual(setting, "30s")
        let writeError = await asyncError { try await pool.write(statementTimeout: .milliseconds(50)) { db in try db.execute("SELECT pg_sleep(30)") } }
        XCTAssertEqual(writeError?.code?.value, "57014")
        XCTAssertEqual(pool.connectionCount, 1)
    }

    func testABrokenConnectionCostsItsCallAnErrorAndIsReplaced() throws {
        let (pool, admin) = try makePool(.init(size: 1))
        let firstPID = try pool.read { db in try db.scalar("SELECT pg_backend_pid()", as: Int.self) }

        // In flight: the server ends the session while the call's statement runs.
        let failed = Locked<(any Error)?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            do { try pool.read { db in try db.execute("SELECT pg_sleep(60)") } } catch { failed.set(error) }
            done.signal()
        }
        try wait(for: "the pool's pg_sleep to run") {
            try admin.scalar("SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(60)' AND state = 'active'", as: Int.self) == 1
        }
        XCTAssertEqual(try admin.scalar("SELECT pg_terminate_backend(\(firstPID ?? 0))", as: Bool.self), true)
        XCTAssertEqual(done.wait(timeout: deadline()), .success)
        XCTAssertEqual((failed.get() as? DatabaseError)?.kind, .cannotOpen, "\(String(describing: failed.get()))")
        let secondPID = try pool.read { db in try db.scalar("SELECT pg_backend_pid()", as: Int.self) }
        XCTAssertNotEqual(secondPID, firstPID)

        // Idle: the server ends the session between calls; the next call never sees it.
        XCTAssertEqual(try admin.scalar("SELECT pg_terminate_backend(\(secondPID ?? 0))", as: Bool.self), true)
        try wait(for: "the session to end") {
            try admin.scalar("SELECT count(*) FROM pg_stat_activity WHERE pid = \(secondPID ?? 0)", as: Int.self) == 0
        }
        let thirdPID = try pool.write { db in try db.scalar("SELECT pg_backend_pid()", as: Int.self) }
        XCTAssertNotEqual(thirdPID, secondPID)
        XCTAssertEqual(pool.connectionCount, 1)
    }

    func testCallingThePoolFromInsideACallIsAnErrorNotADeadlock() throws {
        let (pool, _) = try makePool(.init(size: 1))
        let error = assertThrows(DatabaseError.self) { try pool.write { _ in try pool.read { _ in 1 } } }
        XCTAssertEqual(error?.kind, .misuse)
    }

    func asyncError(_ body: () async throws -> Void) async -> DatabaseError? {
        do {
            try await body()
            XCTFail("expected an error")
        } catch {
            XCTAssertTrue(error is DatabaseError, "\(error)")
            return error as? DatabaseError
        }
        return nil
    }
}
