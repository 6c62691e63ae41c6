import Foundation
import Strata
import XCTest

/// A pool of either backend, opened from a location string as a program opens one (`DatabasePools`), under 32
/// tasks of mixed reads and writes: money moves between accounts, one ledger row per transfer.
final class PoolTests: XCTestCase {
    static let accounts = 8
    static let opening = 1000
    static let tasks = 32
    static let callsPerTask = 30

    func testThirtyTwoTasksOfMixedReadsAndWritesLoseNothingAndSeeNoTornRead() async throws {
        for backend in TestBackend.available {
            let root = try makeTemporaryDirectory(self)
            let pool = try DatabasePools.open(location: backend.location(root), size: 6)
            do {
                try await runTransfers(through: pool)
            } catch {
                throw BackendFailure(backend: backend, error: error)
            }
        }
    }

    /// Writers move money and record it in the ledger in one transaction; readers check, in one read, that the
    /// total is what it was at the start and that every balance is its opening plus the ledger's moves: two tables
    /// read by separate statements agree only if both come from one snapshot.
    func runTransfers(through pool: some ConnectionPool) async throws {
        try await pool.write { db in
            try db.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL)")
            try db.execute("CREATE TABLE ledger (task INTEGER, n INTEGER, source INTEGER, target INTEGER, amount INTEGER, PRIMARY KEY (task, n))")
            for id in 1...Self.accounts { try db.execute("INSERT INTO accounts VALUES (\(id), \(Self.opening))") }
        }
        let writes = try await withThrowingTaskGroup(of: Int.self) { group in
            for task in 0..<Self.tasks {
                group.addTask {
                    var writes = 0
                    for n in 0..<Self.callsPerTask {
                        if (task + n) % 3 == 0 {
                            try await Self.transfer(task: task, n: n, through: pool)
                            writes += 1
                        } else {
                            try await pool.read { db in try Self.checkBalances(db) }
                        }
                    }
                    return writes
                }
            }
            return try await group.reduce(0, +)
        }
        XCTAssertGreaterThan(writes, 300)
        try await pool.read { db in
            try Self.checkBalances(db)
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM ledger", as: Int.self), writes)
        }
    }

    static func transfer(task: Int, n: Int, through pool: some ConnectionPool) async throws {
        let source = (task + n) % accounts + 1
        let target = (task * 7 + n * 3 + 1) % accounts + 1
        let amount = (task * 31 + n * 17) % 50 + 1
        try await pool.write { db in
            // Both rows in id order, so two transfers between the same accounts never wait for each other in a cycle.
            for id in [source, target].sorted() {
                let change = (id == source ? -amount : 0) + (id == target ? amount : 0)
                try db.execute("UPDATE accounts SET balance = balance + (\(change)) WHERE id = \(id)")
            }
            try db.execute("INSERT INTO ledger VALUES (\(task), \(n), \(source), \(target), \(amount))")
        }
    }

    /// Throws when the rows read are not one consistent state.
    static func checkBalances(_ db: some DatabaseConnection) throws {
        let total = try db.scalar("SELECT sum(balance) FROM accounts", as: Int.self)
        guard total == accounts * opening else { throw TornRead("total \(total ?? -1), expected \(accounts * opening)") }
        var expected = [Int: Int]()
        for row in try db.rows("SELECT source, target, amount FROM ledger") {
            let amount: Int = try row.get("amount")
            expected[try row.get("source"), default: opening] -= amount
            expected[try row.get("target"), default: opening] += amount
        }
        for row in try db.rows("SELECT id, balance FROM accounts") {
            let id: Int = try row.get("id")
            let balance: Int = try row.get("balance")
            guard balance == expected[id, default: opening] else {
                throw TornRead("account \(id) holds \(balance), the ledger says \(expected[id, default: opening])")
            }
        }
    }

    struct TornRead: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = "torn read: " + description }
    }
}
