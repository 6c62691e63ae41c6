import Foundation
import Strata
@testable import StrataSQLite
import XCTest

/// A process that writes a SQLite database as fast as it can and logs each commit, for tests of what other
/// processes see meanwhile (`BackupTests`). It is this test bundle started again to run only
/// `WriterProcessTests.testWritesAndLogsEachCommitAsAChildProcess`, which does its work only when started so.
///
/// Each transaction (`BEGIN IMMEDIATE`) adds 1 to `counter.n` and inserts one row of `commits` whose `total` is the
/// new count (with 1.5 KB of random bytes, so the table spans many pages); once `COMMIT` has returned, the process
/// appends `total writer seq` to its log. The database state after the commit numbered `total` is therefore exactly
/// the rows with `total` up to it, whichever process wrote them. The process stops, after its current commit, when
/// the stop file exists.
struct WriterProcess {
    let process: Process
    let log: URL
    let output: URL

    /// Starts writer number `writer` on the database at `database` (which holds `counter` and `commits`).
    static func start(database: String, writer: Int, directory: URL, stop: URL) throws -> WriterProcess {
        #if os(Linux)
        let log = directory.appendingPathComponent("writer-\(writer).log")
        let output = directory.appendingPathComponent("writer-\(writer).out")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let process = Process()
        // The test bundle itself: swift-corelibs-xctest runs the one test named.
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments = ["StrataTests.WriterProcessTests/testWritesAndLogsEachCommitAsAChildProcess"]
        var environment = ProcessInfo.processInfo.environment
        environment["STRATA_TEST_WRITER_DATABASE"] = database
        environment["STRATA_TEST_WRITER_ID"] = String(writer)
        environment["STRATA_TEST_WRITER_LOG"] = log.path
        environment["STRATA_TEST_WRITER_STOP"] = stop.path
        process.environment = environment
        let handle = try FileHandle(forWritingTo: output)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        return WriterProcess(process: process, log: log, output: output)
        #else
        throw XCTSkip("writer processes re-run the test bundle, which only swift-corelibs-xctest (Linux) runs by test name")
        #endif
    }

    /// The commits logged so far: total → (writer, seq).
    func commits() throws -> [Int: (writer: Int, seq: Int)] {
        var result: [Int: (writer: Int, seq: Int)] = [:]
        let text = try String(contentsOf: log, encoding: .utf8)
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ").compactMap { Int($0) }
            guard fields.count == 3 else { continue }
            result[fields[0]] = (fields[1], fields[2])
        }
        return result
    }

    /// What the process printed (XCTest's report, and any error), for failure messages.
    var printed: String { (try? String(contentsOf: output, encoding: .utf8)) ?? "" }

    /// The tables every writer writes, created by a migration of the test's project.
    static let tablesSQL = """
        CREATE TABLE counter (n INTEGER NOT NULL);
        INSERT INTO counter VALUES (0);
        CREATE TABLE commits (total INTEGER PRIMARY KEY, writer INTEGER NOT NULL, seq INTEGER NOT NULL, payload BLOB NOT NULL);
        CREATE INDEX commits_writer ON commits (writer, seq);
        """
}

/// Four writer processes on one database, started together and stopped together (when asked, or when released).
final class FourWriters {
    let writers: [WriterProcess]
    private let stopFile: URL
    private var stopped = false

    init(database: String, directory: URL) throws {
        let stop = directory.appendingPathComponent("stop")
        stopFile = stop
        writers = try (1...4).map {
            try WriterProcess.start(database: database, writer: $0, directory: directory, stop: stop)
        }
    }

    /// Waits until every writer has logged `count` commits; false if one stopped first or `timeout` (a guard) passed.
    func waitForCommits(_ count: Int, timeout: TimeInterval = 120) throws -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try writers.allSatisfy({ try $0.commits().count >= count }) { return true }
            if writers.contains(where: { !$0.process.isRunning }) { return false }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return false
    }

    /// The commits all writers logged: total → (writer, seq).
    func commits() throws -> [Int: (writer: Int, seq: Int)] {
        var all: [Int: (writer: Int, seq: Int)] = [:]
        for writer in writers { all.merge(try writer.commits()) { first, _ in first } }
        return all
    }

    /// Stops every writer after its current commit and waits for it; later calls do nothing.
    func stop() {
        guard !stopped else { return }
        stopped = true
        _ = FileManager.default.createFile(atPath: stopFile.path, contents: nil)
        for writer in writers { writer.process.waitUntilExit() }
    }

    /// What the writers printed, for failure messages.
    var printed: String { writers.map(\.printed).joined(separator: "\n") }

    deinit { stop() }
}

final class WriterProcessTests: XCTestCase {
    func testWritesAndLogsEachCommitAsAChildProcess() throws {
        let environment = ProcessInfo.processInfo.environment
        guard let path = environment["STRATA_TEST_WRITER_DATABASE"], let writer = environment["STRATA_TEST_WRITER_ID"].flatMap(Int.init),
              let logPath = environment["STRATA_TEST_WRITER_LOG"], let stopPath = environment["STRATA_TEST_WRITER_STOP"] else {
            throw XCTSkip("runs only as a writer process started by BackupTests (WriterProcess.start)")
        }
        let db = try Database(path: path, configuration: Database.Configuration(busyTimeout: .seconds(60)))
        let log = try XCTUnwrap(FileHandle(forWritingAtPath: logPath))
        var seq = 0
        while !FileManager.default.fileExists(atPath: stopPath) {
            seq += 1
            let number = seq
            let total = try db.transaction(.immediate) { db -> Int in
                let total = (try db.scalar("SELECT n FROM counter", as: Int.self) ?? 0) + 1
                try db.execute("UPDATE counter SET n = \(total)")
                try db.execute("INSERT INTO commits (total, writer, seq, payload) VALUES (\(total), \(writer), \(number), randomblob(1500))")
                return total
            }
            // Logged only once COMMIT has returned: every logged state was committed.
            log.write(Data("\(total) \(writer) \(number)\n".utf8))
            // A breath between transactions, so the other writers and the migration get the lock too.
            Thread.sleep(forTimeInterval: 0.002)
        }
        try log.close()
    }
}
