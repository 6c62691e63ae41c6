import Foundation
import Strata
@testable import StrataCore
@testable import StrataSQLite
import XCTest

/// A fresh directory under the system temporary directory, removed when the test ends.
func makeTemporaryDirectory(_ test: XCTestCase) throws -> URL {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("strata-tests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    test.addTeardownBlock { try? FileManager.default.removeItem(at: url) }
    return url
}

extension XCTestCase {
    /// A real filesystem of `size` (a tmpfs), unmounted when the test ends. Skips, saying so, where the machine
    /// does not permit mounting.
    func mountSmallFilesystem(size: String) throws -> URL {
        let directory = try makeTemporaryDirectory(self)
        let mount = Process()
        mount.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        mount.arguments = ["mount", "-t", "tmpfs", "-o", "size=\(size)", "tmpfs", directory.path]
        let errors = Pipe()
        mount.standardError = errors
        mount.standardOutput = FileHandle.nullDevice
        try mount.run()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        mount.waitUntilExit()
        guard mount.terminationStatus == 0 else {
            throw XCTSkip("SKIPPED: mounting a \(size) tmpfs is not permitted here (\(message.trimmingCharacters(in: .whitespacesAndNewlines))); \(name) did not run")
        }
        // Teardown blocks run last-in first-out: unmounted before the directory is removed.
        addTeardownBlock {
            let unmount = Process()
            unmount.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            unmount.arguments = ["umount", directory.path]
            try? unmount.run()
            unmount.waitUntilExit()
        }
        return directory
    }
}

func write(_ text: String, to url: URL) throws {
    try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
    try Data(text.utf8).write(to: url)
}

/// Asserts that `body` throws an error of type `E` and returns it for further checks.
@discardableResult
func assertThrows<E: Error, T>(_ expected: E.Type, file: StaticString = #filePath, line: UInt = #line,
                               _ body: () throws -> T) -> E? {
    do {
        _ = try body()
        XCTFail("expected \(E.self) to be thrown", file: file, line: line)
    } catch let error as E {
        return error
    } catch {
        XCTFail("expected \(E.self), got \(type(of: error)): \(error)", file: file, line: line)
    }
    return nil
}

/// The output of one run of the `strata` executable.
struct CommandResult {
    let status: Int32
    let stdout: String
    let stderr: String
}

/// The `strata` executable built next to the test bundle.
func strataExecutable() throws -> URL {
    let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    for candidate in [directory, directory.deletingLastPathComponent()] {
        let url = candidate.appendingPathComponent("strata")
        if FileManager.default.isExecutableFile(atPath: url.path) { return url }
    }
    let fallback = repositoryRoot().appendingPathComponent(".build/debug/strata")
    guard FileManager.default.isExecutableFile(atPath: fallback.path) else {
        throw XCTSkip("the strata executable is not built (run `swift build` first)")
    }
    return fallback
}

/// Starts `strata` with arguments in a directory without waiting. The variables that name a database
/// (`STRATA_DATABASE`, `DATABASE_URL`) are those in `environment` only, never the test process's own.
func startStrata(_ arguments: [String], in directory: URL, environment: [String: String] = [:]) throws -> (Process, Pipe, Pipe) {
    let process = Process()
    process.executableURL = try strataExecutable()
    process.arguments = arguments
    var inherited = ProcessInfo.processInfo.environment
    for name in DatabaseTargets.environmentVariables { inherited[name] = nil }
    process.environment = inherited.merging(environment) { $1 }
    process.currentDirectoryURL = directory
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    return (process, out, err)
}

/// Runs `strata` with arguments in a directory and waits for it.
@discardableResult
func runStrata(_ arguments: [String], in directory: URL, environment: [String: String] = [:]) throws -> CommandResult {
    let (process, out, err) = try startStrata(arguments, in: directory, environment: environment)
    let stdout = out.fileHandleForReading.readDataToEndOfFile()
    let stderr = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return CommandResult(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                         stderr: String(decoding: stderr, as: UTF8.self))
}

/// A throwaway project: a manifest at `manifest.xml` with `sql/` and `csv/` beside it, and a database on one backend.
/// A manifest given in full names its own `<database>`; `backend.databaseElement(root)` is the element to use.
struct Project {
    let root: URL
    let backend: TestBackend
    var manifestPath: String { root.appendingPathComponent("manifest.xml").path }
    /// The SQLite database file (for SQLite-only tests).
    var databasePath: String { root.appendingPathComponent("db.sqlite").path }
    /// The `--database` value naming this project's database.
    var location: String { backend.location(root) }

    init(_ test: XCTestCase, backend: TestBackend = .sqlite, manifest: String? = nil, files: [String: String]) throws {
        root = try makeTemporaryDirectory(test)
        self.backend = backend
        try FileManager.default.createDirectory(at: root.appendingPathComponent("sql"), withIntermediateDirectories: true)
        try write(manifest ?? #"<manifest version="1">\#(backend.databaseElement(root))<migrations directory="sql"/></manifest>"#,
                  to: root.appendingPathComponent("manifest.xml"))
        for (path, text) in files { try write(text, to: root.appendingPathComponent(path)) }
    }

    /// A project on `backend` whose manifest holds the backend's `<database>` element followed by `body` (its
    /// `<migrations>`, `<seeds>`, `<models>`).
    init(_ test: XCTestCase, backend: TestBackend, manifestBody body: String, files: [String: String]) throws {
        try self.init(test, backend: backend, files: files)
        try file("manifest.xml", #"<manifest version="1">"# + backend.databaseElement(root) + body + "</manifest>")
    }

    func file(_ path: String, _ text: String) throws {
        try write(text, to: root.appendingPathComponent(path))
    }

    func manifest() throws -> Manifest { try Manifest.load(path: manifestPath) }

    func migrator(configuration: Database.Configuration) throws -> Migrator {
        Migrator(manifest: try manifest(), database: try Database(path: databasePath, configuration: configuration))
    }

    /// A migrator on the project's backend, waiting up to `timeout` for another runner's lock.
    func migrator(timeout: Duration = .seconds(5)) throws -> Migrator {
        Migrator(manifest: try manifest(), database: try connection(timeout: timeout))
    }

    /// The SQLite database (for SQLite-only tests).
    func database() throws -> Database { try Database(path: databasePath) }

    /// A new connection to the project's database on its backend.
    func connection(timeout: Duration = .seconds(5)) throws -> any MigrationDatabase {
        try backend.open(root, timeout)
    }

    /// Runs `strata` with the project's manifest, pointed at its database on its backend.
    func strataOnBackend(_ arguments: [String]) throws -> CommandResult {
        try runStrata(arguments + ["--manifest", manifestPath, "--database", location], in: root)
    }

    func strata(_ arguments: [String]) throws -> CommandResult {
        try runStrata(arguments + ["--manifest", manifestPath], in: root)
    }
}

/// Collects what a process writes to a pipe as it arrives, so a test waits for a line, not for a delay.
final class PipeWatcher: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()

    init(_ pipe: Pipe) {
        pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let chunk = handle.availableData
            if chunk.isEmpty { handle.readabilityHandler = nil }
            self?.lock.withLock { self?.data.append(chunk) }
        }
    }

    var text: String { lock.withLock { String(decoding: data, as: UTF8.self) } }

    /// True once the text contains `needle`; false if `process` ends without it or `timeout` (a guard) passes.
    func wait(for needle: String, from process: Process, timeout: TimeInterval = 60) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if text.contains(needle) { return true }
            if !process.isRunning {
                process.waitUntilExit()
                Thread.sleep(forTimeInterval: 0.05) // let the handler deliver what was written before the exit
                return text.contains(needle)
            }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return false
    }
}

extension Migrator {
    /// The SQLite connection the migrator runs on: the suite's migrators are made on SQLite databases.
    var sqlite: Database { database as! Database }
}

extension ModelStore {
    /// The SQLite connection the store reads and writes through.
    var sqlite: Database { database as! Database }
}

extension HistoryRecord {
    /// The row a runner of a `transaction="none"` step leaves when it dies or fails (checksum `x`, version 1),
    /// written through the history storage as Strata writes it.
    static func leftBehind(_ id: String, state: State, runner: String, error: String? = nil) -> HistoryRecord {
        HistoryRecord(kind: .migration, identity: id, checksum: "x", checksumVersion: 1, appliedAt: "2026-01-01T00:00:00Z",
                      durationMs: nil, rowCount: nil, state: state, toolVersion: "0", appliedSQL: nil, runner: runner,
                      error: error)
    }
}

/// A value several threads set and read.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func get() -> Value {
        lock.lock()
        defer { lock.unlock() }
        return value
    }

    func set(_ newValue: Value) {
        lock.lock()
        value = newValue
        lock.unlock()
    }

    func update<T>(_ body: (inout Value) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}
