import Foundation
import XCTest

/// Another process holding a read transaction open on a SQLite database, for tests that need a writer's COMMIT
/// held up (rollback journal: a commit waits for readers to leave).
///
/// The reader lives in its own process on purpose: a POSIX lock held by this test process belongs to the whole
/// process, and is dropped as soon as anything in it closes any descriptor of the same file (or a stale close hits
/// the reader's descriptor number), which the test process, with its many pipes and threads, cannot rule out.
final class ReaderProcess {
    private let process: Process
    private let input: Pipe
    private let output: PipeWatcher

    /// Starts the reader and returns once it holds the read transaction (it has read `table`).
    init(database: String, table: String) throws {
        let script = """
        import sqlite3, sys
        connection = sqlite3.connect(sys.argv[1], isolation_level=None)
        connection.execute("BEGIN")
        connection.execute("SELECT count(*) FROM \\"" + sys.argv[2] + "\\"").fetchall()
        print("holding", flush=True)
        sys.stdin.readline()
        connection.execute("COMMIT")
        print("released", flush=True)
        """
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, database, table]
        input = Pipe()
        let out = Pipe()
        process.standardInput = input
        process.standardOutput = out
        process.standardError = out
        output = PipeWatcher(out)
        try process.run()
        guard output.wait(for: "holding", from: process) else {
            throw ReaderProcessError(message: "the reader process did not start its read transaction: \(output.text)")
        }
    }

    /// Ends the read transaction and waits for the process to exit.
    func release() throws {
        input.fileHandleForWriting.write(Data("\n".utf8))
        guard output.wait(for: "released", from: process) else {
            throw ReaderProcessError(message: "the reader process did not end its read transaction: \(output.text)")
        }
        process.waitUntilExit()
    }

    deinit {
        if process.isRunning { process.terminate() }
    }
}

struct ReaderProcessError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
