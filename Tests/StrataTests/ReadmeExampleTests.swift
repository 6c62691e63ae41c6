import Foundation
import Strata
import XCTest

/// Every ```swift block of README.md, compiled as written and run in a fresh copy of the example project.
///
/// A block is a complete program: it becomes, byte for byte, the `main.swift` of one executable target of a
/// package generated in `.build/readme-examples/` that depends on this repository by path. The package is kept
/// between runs, so a later run rebuilds only the blocks that changed. Each program runs in a temporary copy of
/// `manifests/`, `sql/` and `csv/` in which `strata migrate --manifest manifests/example.xml` has built
/// `library.sqlite`: the state the README's Quick start leaves a reader in.
final class ReadmeExampleTests: XCTestCase {
    func testEverySwiftBlockInTheReadmeCompilesAndRuns() throws {
        let examples = try ReadmeExamples()
        XCTAssertFalse(examples.blocks.isEmpty, "README.md holds no swift block: the library's examples are gone")
        let notCompiling = try examples.build(examples.blocks)
        for block in examples.blocks {
            if let output = notCompiling[block.target] {
                XCTFail("\(block) does not compile as written:\n\(output)")
                continue
            }
            let run = try examples.run(block, test: self)
            if run.status != 0 {
                XCTFail("\(block) failed (\(run.ending)):\n\(run.output)")
            }
        }
    }

    func testTheModelExampleListsLeGuinsBooksAndSavesOneMoreCopy() throws {
        let examples = try ReadmeExamples()
        let block = try XCTUnwrap(
            examples.blocks.first { $0.code.contains("ModelStore(database: db, manifest: manifest)") },
            "README.md no longer holds the ModelStore example")
        if let output = try examples.build([block])[block.target] {
            return XCTFail("\(block) does not compile as written:\n\(output)")
        }
        let run = try examples.run(block, test: self)
        XCTAssertEqual(run.status, 0, run.output)
        XCTAssertEqual(run.output, #"["A Wizard of Earthsea", "The Dispossessed"] 4"# + "\n")
        let db = try Database(path: run.directory.appendingPathComponent("library.sqlite").path)
        XCTAssertEqual(try db.scalar("SELECT copies FROM books WHERE isbn = '9780547773742'", as: Int.self), 4,
                       "the example saves one more copy of A Wizard of Earthsea (3 in csv/books.csv)")
    }

    func testTheRelationshipExampleSavesAndEditsAGraph() throws {
        let examples = try ReadmeExamples()
        let block = try XCTUnwrap(examples.blocks.first { $0.code.contains(#"<hasMany property="messages""#) },
                                  "README.md no longer holds the relationship example")
        if let output = try examples.build([block])[block.target] {
            return XCTFail("\(block) does not compile as written:\n\(output)")
        }
        let run = try examples.run(block, test: self)
        XCTAssertEqual(run.status, 0, run.output)
        XCTAssertEqual(run.output, #"["Go", "Done"] ["-", "Ada"] 0"# + "\n")
    }

    func testTheSchemaDifferenceExampleListsWhatTheRolledBackMigrationWouldChange() throws {
        let examples = try ReadmeExamples()
        let block = try XCTUnwrap(examples.blocks.first { $0.code.contains("struct Rehearsed: Error") },
                                  "README.md no longer holds the schema difference example")
        if let output = try examples.build([block])[block.target] {
            return XCTFail("\(block) does not compile as written:\n\(output)")
        }
        let run = try examples.run(block, test: self)
        XCTAssertEqual(run.status, 0, run.output)
        XCTAssertEqual(run.output, """
            added column books subtitle subtitle TEXT NOT NULL DEFAULT ''
            dropped index books books_author create index books_author on books (author_id)
            true
            true ["authors", "books", "loans", "members"]

            """)
        let db = try Database(path: run.directory.appendingPathComponent("library.sqlite").path)
        XCTAssertFalse(try db.columnExists("subtitle", in: "books"), "the example's transaction was rolled back")
    }

    func testTheCodeStepExampleBackfillsSlugsOnceAfterItsFile() throws {
        let examples = try ReadmeExamples()
        let block = try XCTUnwrap(examples.blocks.first { $0.code.contains(#"migrator.register("backfill_slugs")"#) },
                                  "README.md no longer holds the code step example")
        if let output = try examples.build([block])[block.target] {
            return XCTFail("\(block) does not compile as written:\n\(output)")
        }
        let run = try examples.run(block, test: self)
        XCTAssertEqual(run.status, 0, run.output)
        XCTAssertEqual(run.output, #"["005_add_slug.sql", "code:backfill_slugs"]"# + "\n" + #"["applied"]"# + "\n")
        let db = try Database(path: run.directory.appendingPathComponent("library.sqlite").path)
        XCTAssertEqual(try db.scalar("SELECT slug FROM books WHERE isbn = '9780547773742'", as: String.self),
                       "a-wizard-of-earthsea")
        XCTAssertEqual(try db.scalar("SELECT checksum FROM strata_history WHERE identity = 'code:backfill_slugs'", as: String.self), "1")
    }

    /// The same program, unchanged, given a PostgreSQL database: it migrates it with the example's PostgreSQL
    /// files, then reads, saves and counts as on SQLite.
    func testTheModelExampleRunsUnchangedOnPostgreSQL() throws {
        let server = try PostgresServer.shared()
        let examples = try ReadmeExamples()
        let block = try XCTUnwrap(examples.blocks.first { $0.code.contains("ModelStore(database: db, manifest: manifest)") })
        if let output = try examples.build([block])[block.target] {
            return XCTFail("\(block) does not compile as written:\n\(output)")
        }
        let root = try makeTemporaryDirectory(self)
        let url = try server.url(for: root)
        let run = try examples.run(block, test: self, arguments: [url])
        XCTAssertEqual(run.status, 0, run.output)
        XCTAssertEqual(run.output, #"["A Wizard of Earthsea", "The Dispossessed"] 4"# + "\n")
        let db = try PostgresConnection(url: url)
        XCTAssertEqual(try db.scalar("SELECT copies FROM books WHERE isbn = '9780547773742'", as: Int.self), 4)
    }
}

/// One ```swift block of README.md.
struct ReadmeBlock: CustomStringConvertible {
    /// The README line of the opening fence.
    let line: Int
    let code: String
    /// The executable target the block becomes.
    let target: String

    /// Names the block by its place and first line, and by its first line of code when that is an import.
    var description: String {
        let lines = code.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        var shown = "\"\(lines.first ?? "")\""
        if let first = lines.first, first.hasPrefix("import "),
           let statement = lines.first(where: { !$0.hasPrefix("import ") }) {
            shown += " … \"\(statement)\""
        }
        return "the swift block at README.md:\(line) (\(shown))"
    }
}

/// The README's swift blocks, the package that builds them, and runs of the built programs.
struct ReadmeExamples {
    let root = repositoryRoot()
    let blocks: [ReadmeBlock]
    var packageDirectory: URL { root.appendingPathComponent(".build/readme-examples", isDirectory: true) }

    init() throws {
        let readme = try String(contentsOf: repositoryRoot().appendingPathComponent("README.md"), encoding: .utf8)
        blocks = try Self.swiftBlocks(in: readme)
    }

    /// The fenced code blocks whose info string is `swift`, as CommonMark reads fences: a run of three or more
    /// backticks or tildes, indented at most three spaces, closed by a run of the same character at least as long.
    static func swiftBlocks(in markdown: String) throws -> [ReadmeBlock] {
        var blocks: [ReadmeBlock] = []
        var open: (line: Int, marker: Character, length: Int, indent: Int, isSwift: Bool)?
        var code: [Substring] = []
        // "\r\n" is one Character, so lines are split on any line break, not on "\n".
        let lines = markdown.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
        for (index, line) in lines.enumerated() {
            let indent = line.prefix { $0 == " " }.count
            let rest = line.dropFirst(indent)
            if let fence = open {
                let run = rest.prefix { $0 == fence.marker }
                if indent <= 3, run.count >= fence.length, rest.dropFirst(run.count).allSatisfy({ $0 == " " }) {
                    if fence.isSwift {
                        blocks.append(ReadmeBlock(line: fence.line, code: code.joined(separator: "\n") + "\n",
                                                  target: String(format: "example%02d", blocks.count + 1)))
                    }
                    open = nil
                } else {
                    // Content lines lose up to the fence's own indentation, as CommonMark says.
                    code.append(line.dropFirst(min(indent, fence.indent)))
                }
                continue
            }
            guard indent <= 3, let marker = rest.first, marker == "`" || marker == "~" else { continue }
            let run = rest.prefix { $0 == marker }
            guard run.count >= 3 else { continue }
            let info = rest.dropFirst(run.count).trimmingCharacters(in: .whitespaces)
            let language = info.split(separator: " ").first.map(String.init) ?? ""
            open = (index + 1, marker, run.count, indent, language == "swift")
            code = []
        }
        if let fence = open, fence.isSwift {
            throw ReadmeError("README.md:\(fence.line): a swift block is never closed")
        }
        return blocks
    }

    /// Writes the package (leaving unchanged files untouched, so the build stays incremental) and builds the
    /// given blocks. Returns the compiler's output for each block that does not compile, by target.
    func build(_ wanted: [ReadmeBlock]) throws -> [String: String] {
        try writePackage()
        var whole: ProgramRun?
        if wanted.count > 1 {
            // One build for all is the common case; only when it fails is each block built alone, to say which.
            whole = try runProcess(["swift", "build", "--package-path", packageDirectory.path], in: packageDirectory)
            if whole?.status == 0 { return [:] }
            // An incremental build can trip over its own state after the library's sources changed under it: one
            // clean build decides before any block is blamed.
            try? FileManager.default.removeItem(at: packageDirectory.appendingPathComponent(".build"))
            whole = try runProcess(["swift", "build", "--package-path", packageDirectory.path], in: packageDirectory)
            if whole?.status == 0 { return [:] }
        }
        var failures: [String: String] = [:]
        for block in wanted {
            let alone = try runProcess(["swift", "build", "--package-path", packageDirectory.path,
                                        "--product", block.target], in: packageDirectory)
            if alone.status != 0 { failures[block.target] = alone.output }
        }
        if failures.isEmpty, let whole {
            throw ReadmeError("the examples' package did not build, though each block builds alone:\n\(whole.output)")
        }
        return failures
    }

    private func writePackage() throws {
        let sources = packageDirectory.appendingPathComponent("Sources", isDirectory: true)
        try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
        let targets = Set(blocks.map(\.target))
        for stale in try FileManager.default.contentsOfDirectory(atPath: sources.path) where !targets.contains(stale) {
            try FileManager.default.removeItem(at: sources.appendingPathComponent(stale))
        }
        for block in blocks {
            try writeIfChanged(block.code, to: sources.appendingPathComponent("\(block.target)/main.swift"))
        }
        try writeIfChanged(manifest(), to: packageDirectory.appendingPathComponent("Package.swift"))
    }

    /// The examples' Package.swift: one executable target per block, depending on this repository by path, in
    /// Swift 6 language mode with warnings as errors (the repository's own rule).
    private func manifest() -> String {
        func literal(_ text: String) -> String {
            "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }
        let targets = blocks.map { block in
            """
                    .executableTarget(name: \(literal(block.target)),
                                      dependencies: [.product(name: "Strata",
                                                                package: \(literal(root.lastPathComponent)))],
                                      swiftSettings: [.unsafeFlags(["-warnings-as-errors"])]),
            """
        }
        return """
            // swift-tools-version:6.0
            // Generated by Tests/StrataTests/ReadmeExampleTests.swift from README.md's swift blocks; do not edit.
            import PackageDescription

            let package = Package(
                name: "readme-examples",
                dependencies: [.package(path: \(literal(root.path)))],
                targets: [
            \(targets.joined(separator: "\n"))
                ],
                swiftLanguageModes: [.v6]
            )

            """
    }

    private func writeIfChanged(_ text: String, to url: URL) throws {
        if let existing = try? Data(contentsOf: url), existing == Data(text.utf8) { return }
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url, options: .atomic)   // a build started by another test process reads it whole
    }

    /// Runs a built block in a fresh copy of the example project whose database is migrated.
    func run(_ block: ReadmeBlock, test: XCTestCase, arguments: [String] = []) throws -> ProgramRun {
        let directory = try makeTemporaryDirectory(test)
        for folder in ["manifests", "sql", "csv"] {
            try FileManager.default.copyItem(at: root.appendingPathComponent(folder),
                                             to: directory.appendingPathComponent(folder))
        }
        let migrate = try runStrata(["migrate", "--manifest", "manifests/example.xml"], in: directory)
        guard migrate.status == 0 else {
            throw ReadmeError("strata migrate failed in the example project:\n\(migrate.stdout)\(migrate.stderr)")
        }
        let program = packageDirectory.appendingPathComponent(".build/debug/\(block.target)")
        return try runProcess([program.path] + arguments, in: directory, stoppedAfter: 600)
    }

    /// Runs a command with stdout and stderr in one pipe. With `stoppedAfter`, a program still running after that
    /// many seconds is killed: a guard against a hang, set far beyond the time the program needs.
    private func runProcess(_ arguments: [String], in directory: URL,
                            stoppedAfter seconds: Double? = nil) throws -> ProgramRun {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.currentDirectoryURL = directory
        // A program that dies of an uncaught error shows the error, not a backtrace of every register.
        process.environment = ProcessInfo.processInfo.environment.merging(["SWIFT_BACKTRACE": "enable=no"]) { $1 }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let pid = process.processIdentifier
        let hangGuard = DispatchWorkItem { kill(pid, SIGKILL) }
        if let seconds { DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: hangGuard) }
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        hangGuard.cancel()
        let code = process.terminationStatus
        let signalled = process.terminationReason == .uncaughtSignal
        return ProgramRun(directory: directory, status: signalled ? 128 + code : code,
                          ending: signalled ? "killed by signal \(code)" : "exit status \(code)",
                          output: String(decoding: output, as: UTF8.self))
    }
}

/// How a program ended, and what it wrote to stdout and stderr (in the order written).
struct ProgramRun {
    let directory: URL
    /// 0 for success; for a program killed by a signal, 128 + the signal, as a shell reports it.
    let status: Int32
    let ending: String
    let output: String
}

struct ReadmeError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
