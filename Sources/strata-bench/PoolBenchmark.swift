import CSQLite
import Foundation
import Strata

/// `strata-bench pool`: read throughput of concurrent readers through a `DatabasePool` against the same readers
/// sharing one `DatabaseQueue`, on one SQLite file in one run. Rounds alternate pool and queue; each figure is
/// the best round.
struct PoolBenchmark {
    let readers: Int
    let queries: Int
    let rounds: Int
    let rows: Int

    init(arguments: [String]) throws {
        readers = Int(option("--readers", in: arguments) ?? "8") ?? 8
        queries = Int(option("--queries", in: arguments) ?? "2000") ?? 2000
        rounds = Int(option("--rounds", in: arguments) ?? "5") ?? 5
        rows = Int(option("--rows", in: arguments) ?? "2000") ?? 2000
        guard readers > 0, queries > 0, rounds > 0, rows > 0 else { throw BenchError("--readers, --queries, --rounds and --rows must be positive") }
    }

    /// The read every reader runs: an aggregate over the whole table, so each query does real work in SQLite.
    static let query = "SELECT count(*), sum(quantity), max(length(name)) FROM items WHERE quantity % ? = 0"

    func run() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("strata-bench-pool-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("pool.sqlite").path
        let pool = try DatabasePool(path: path, configuration: .init(maximumReaderCount: readers))
        try pool.write { db in
            try db.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, quantity INTEGER NOT NULL)")
            var source = SampleSource(seed: 42)
            let insert = try db.prepare("INSERT INTO items (name, quantity) VALUES (?, ?)")
            for _ in 0..<rows {
                let name = SampleSource.words[Int(source.next() % 10)] + " " + SampleSource.words[Int(source.next() % 10)]
                try insert.execute([name, Int(source.next() % 1000)])
            }
        }
        let queue = try DatabaseQueue(path: path, configuration: Database.Configuration(walMode: true))

        let expected = try queue.perform { db in try Self.read(db, divisor: 3) }
        guard try pool.read({ db in try Self.read(db, divisor: 3) }) == expected else {
            throw BenchError("the pool and the queue read different results")
        }

        print("pool benchmark: \(readers) concurrent readers, \(grouped(queries)) queries each, \(grouped(rows))-row table, SQLite \(String(cString: sqlite3_libversion()))")
        print("  query: \(Self.query)")
        print("  best of \(rounds) rounds, pool and queue alternating")
        var poolBest = Double.infinity, queueBest = Double.infinity
        var ratios: [Double] = []
        for _ in 0..<rounds {
            let viaPool = try measure { divisor in try pool.read { db in try Self.read(db, divisor: divisor) } }
            let viaQueue = try measure { divisor in try queue.perform { db in try Self.read(db, divisor: divisor) } }
            poolBest = min(poolBest, viaPool)
            queueBest = min(queueBest, viaQueue)
            ratios.append(viaQueue / viaPool)
        }
        let total = Double(readers * queries)
        print("  DatabasePool (\(readers) readers)   \(format(poolBest)) s  \(grouped(Int(total / poolBest))) reads/s")
        print("  one DatabaseQueue          \(format(queueBest)) s  \(grouped(Int(total / queueBest))) reads/s")
        print("  ratio                      the pool reads \(format(queueBest / poolBest))x as fast as the queue (rounds \(format(ratios.min() ?? 0))–\(format(ratios.max() ?? 0))x, \(ProcessInfo.processInfo.activeProcessorCount) cores)")
    }

    /// Wall time for `readers` threads each running `queries` reads through `read`. Threads of their own, not
    /// `concurrentPerform`, which runs no more iterations at once than there are cores.
    private func measure(_ read: @escaping @Sendable (Int) throws -> [Int]) throws -> Double {
        let failures = FailureBox()
        let queries = self.queries
        let group = DispatchGroup()
        let start = ContinuousClock.now
        for reader in 0..<readers {
            group.enter()
            Thread.detachNewThread {
                do {
                    for n in 0..<queries { _ = try read((reader + n) % 5 + 1) }
                } catch {
                    failures.record(error)
                }
                group.leave()
            }
        }
        group.wait()
        let elapsed = seconds(ContinuousClock.now - start)
        if let error = failures.first { throw error }
        return elapsed
    }

    private static func read(_ db: Database, divisor: Int) throws -> [Int] {
        guard let row = try db.query(query, [divisor]).next() else { return [] }
        return try (0..<3).map { try row.get($0, as: Int.self) }
    }
}

/// The first error any reader thread met.
private final class FailureBox: @unchecked Sendable {
    private let lock = NSLock()
    private var error: (any Error)?

    func record(_ error: any Error) {
        lock.lock()
        if self.error == nil { self.error = error }
        lock.unlock()
    }

    var first: (any Error)? {
        lock.lock()
        defer { lock.unlock() }
        return error
    }
}
