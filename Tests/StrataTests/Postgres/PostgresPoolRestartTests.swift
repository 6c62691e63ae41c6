import Foundation
import StrataCore
@testable import StrataPostgres
import XCTest

/// A `PostgresPool` under load while its server restarts: a server of the test's own (stopped and started under
/// the pool), eight tasks writing and reading through a pool of four connections.
final class PostgresPoolRestartTests: XCTestCase {
    func testAServerRestartCostsTheCallsInFlightAnErrorAndThePoolRecovers() async throws {
        let server = try startServer()
        let admin = try PostgresConnection(url: server.url(database: "postgres"))
        try admin.execute("CREATE DATABASE app")
        let pool = PostgresPool(url: server.url(database: "app"), configuration: .init(size: 4, checkoutTimeout: .seconds(60)))
        try await pool.write { db in try db.execute("CREATE TABLE t (id bigint PRIMARY KEY)") }

        let log = CallLog()
        let workers = Task.detached { try await PostgresPoolRestartTests.runWorkers(through: pool, log: log) }
        try await log.wait(for: "calls before the restart") { $0.succeeded >= 100 }
        server.stop(mode: "fast")
        try server.start()
        let restarted = log.mark()
        try await log.wait(for: "calls after the restart") { $0.succeeded(after: restarted) >= 200 }
        log.stop()
        try await workers.value

        let calls = log.snapshot()
        // Every call that started once the server was back succeeded: no broken connection was lent again.
        XCTAssertEqual(calls.failures(after: restarted), [], "calls failed after the restart")
        // The restart came in the middle of the run: calls in flight or made while the server was down failed.
        XCTAssertFalse(calls.failures(after: 0).isEmpty, "no call failed: the server did not restart under load")
        // The calls that failed did so for the lost connection or the server being down, nothing else.
        for failure in calls.failures(after: 0) {
            XCTAssertEqual(failure.kind, .cannotOpen, failure.description)
        }
        // Every write reported committed is there.
        let ids = try Set(await pool.read { db in try db.rows("SELECT id FROM t").map { try $0.get(0, as: Int.self) } })
        XCTAssertTrue(calls.committed.isSubset(of: ids), "committed writes lost: \(calls.committed.subtracting(ids).sorted())")
        XCTAssertLessThanOrEqual(pool.connectionCount, 4)

        // A restart while the pool is idle: every connection it holds was closed by the server, which libpq learns
        // only on its next read; four calls at once use all four, and none of them sees a closed one.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 { group.addTask { _ = try await pool.read { db in try db.execute("SELECT pg_sleep(0.05)") } } }
            try await group.waitForAll()
        }
        XCTAssertEqual(pool.connectionCount, 4)
        server.stop(mode: "fast")
        try server.start()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 { group.addTask { _ = try await pool.read { db in try db.execute("SELECT pg_sleep(0.05)") } } }
            try await group.waitForAll()
        }
    }

    static func runWorkers(through pool: PostgresPool, log: CallLog) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask { try await work(worker, through: pool, log: log) }
            }
            try await group.waitForAll()
        }
    }

    /// Writes a row then reads the count, until told to stop; records each call's outcome.
    static func work(_ worker: Int, through pool: PostgresPool, log: CallLog) async throws {
        var n = 0
        while !log.isStopped {
            n += 1
            let id = worker * 1_000_000 + n
            let start = log.now()
            do {
                try await pool.write { db in try db.execute("INSERT INTO t VALUES (\(id))") }
                log.record(start: start, committed: id)
                _ = try await pool.read { db in try db.scalar("SELECT count(*) FROM t", as: Int.self) }
                log.record(start: start, committed: nil)
            } catch let error as DatabaseError {
                log.record(start: start, failure: error)
                // While the server is down every call fails at once; a short pause keeps the log readable.
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    func startServer() throws -> PostgresInstance {
        if ProcessInfo.processInfo.environment["STRATA_TEST_POSTGRES_URL"] != nil {
            throw XCTSkip("restart test skipped: it restarts a server of its own, and STRATA_TEST_POSTGRES_URL names an existing server")
        }
        guard let programs = PostgresPrograms.find() else {
            throw XCTSkip("restart test skipped: no PostgreSQL server binaries (install the postgresql package)")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("strata-pg-restart-\(UUID().uuidString.prefix(8))")
        try programs.makeDirectory(directory)
        let server = try PostgresInstance.initdb(programs, data: directory.appendingPathComponent("data"),
                                                 socketDirectory: directory, port: 5432)
        addTeardownBlock {
            server.stop(mode: "immediate")
            try? FileManager.default.removeItem(at: directory)
        }
        try server.start()
        return server
    }
}

/// The outcome of every call, in order, numbered by a counter of calls started (the test's clock: "after the
/// restart" means started after `mark()`).
final class CallLog: @unchecked Sendable {
    struct Calls {
        var succeeded = 0
        var succeededByStart: [Int] = []
        var failuresByStart: [(start: Int, error: DatabaseError)] = []
        var committed: Set<Int> = []

        func succeeded(after mark: Int) -> Int { succeededByStart.count { $0 > mark } }
        func failures(after mark: Int) -> [DatabaseError] { failuresByStart.filter { $0.start > mark }.map(\.error) }
    }

    private let lock = NSLock()
    private var calls = Calls()
    private var started = 0
    private var stopped = false

    /// A new call's number.
    func now() -> Int {
        lock.lock(); defer { lock.unlock() }
        started += 1
        return started
    }

    /// The number of the last call started so far: later calls have larger numbers.
    func mark() -> Int {
        lock.lock(); defer { lock.unlock() }
        return started
    }

    func record(start: Int, committed: Int?) {
        lock.lock(); defer { lock.unlock() }
        calls.succeeded += 1
        calls.succeededByStart.append(start)
        if let committed { calls.committed.insert(committed) }
    }

    func record(start: Int, failure: DatabaseError) {
        lock.lock(); defer { lock.unlock() }
        calls.failuresByStart.append((start, failure))
    }

    var isStopped: Bool {
        lock.lock(); defer { lock.unlock() }
        return stopped
    }

    func stop() {
        lock.lock(); defer { lock.unlock() }
        stopped = true
    }

    func snapshot() -> Calls {
        lock.lock(); defer { lock.unlock() }
        return calls
    }

    /// Waits until `condition` holds of the calls so far; fails after a minute, a guard against a hang.
    func wait(for what: String, _ condition: (Calls) -> Bool) async throws {
        let end = ContinuousClock.now + .seconds(120)
        while !condition(snapshot()) {
            guard ContinuousClock.now < end else {
                stop()
                throw PostgresServer.SkipReason(description: "timed out waiting for \(what): \(snapshot().succeeded) calls succeeded, \(snapshot().failuresByStart.count) failed")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}
