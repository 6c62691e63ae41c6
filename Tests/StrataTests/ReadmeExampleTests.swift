import Foundation
import Strata
import XCTest

/// Every ```swift block of README.md and of the manual's articles (`Sources/Strata/Strata.docc/*.md`), compiled as
/// written and run in a fresh copy of the example project.
///
/// A block is a complete program: it becomes, byte for byte, the `main.swift` of one executable target of a
/// package generated in `.build/readme-examples/` that depends on this repository by path. The package is kept
/// between runs, so a later run rebuilds only the blocks that changed. Each program runs in a temporary copy of
/// `manifests/`, `sql/` and `csv/` in which `strata migrate --manifest manifests/example.xml` has built
/// `library.sqlite`: the state the README's first command leaves a reader in.
final class ReadmeExampleTests: XCTestCase {
    func testEverySwiftBlockInTheReadmeCompilesAndRuns() throws {
        let examples = try ReadmeExamples()
        XCTAssertFalse(examples.blocks.isEmpty, "README.md and the manual hold no swift block: the library's examples are gone")
        XCTAssertTrue(examples.blocks.contains { $0.file == "README.md" }, "README.md holds no swift block")
        XCTAssertTrue(examples.blocks.contains { $0.file.hasPrefix(ReadmeExamples.manualDirectory) },
                      "the manual's articles hold no swift block: are they still in \(ReadmeExamples.manualDirectory)?")
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
            "neither README.md nor the manual holds the ModelStore example")
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

    func testTheBackupExampleTakesABackupBeforeTheMigrationAndRestoresIt() throws {
        let examples = try ReadmeExamples()
        let block = try XCTUnwrap(examples.blocks.first { $0.code.contains("Database.restore(backup: backup.path") },
                                  "neither README.md nor the manual holds the backup example")
        if let output = try examples.build([block])[block.target] {
            return XCTFail("\(block) does not compile as written:\n\(output)")
        }
        let run = try examples.run(block, test: self)
        XCTAssertEqual(run.status, 0, run.output)
        XCTAssertEqual(run.output, #"["005_add_pinned.sql"] true"# + "\nfalse\n")
        let backups = try FileManager.default.contentsOfDirectory(atPath: run.directory.appendingPathComponent("backups").path)
        XCTAssertEqual(backups.filter { $0.hasPrefix("library.sqlite.") && $0.hasSuffix(".backup") }.count, 1, "\(backups)")
        let copy = try Database(path: run.directory.appendingPathComponent("library-copy.sqlite").path)
        XCTAssertEqual(try copy.scalar("PRAGMA integrity_check", as: String.self), "ok")
        XCTAssertFalse(try copy.columnExists("pinned", in: "members"), "the copy is of the restored database")
    }

    func testTheRelationshipExampleSavesAndEditsAGraph() throws {
        let examples = try ReadmeExamples()
        let block = try XCTUnwrap(examples.blocks.first { $0.code.contains(#"<hasMany property="messages""#) },
                                  "neither README.md nor the manual holds the relationship example")
        if let output = try examples.build([block])[block.target] {
            return XCTFail("\(block) does not compile as written:\n\(output)")
        }
        let run = try examples.run(block, test: self)
        XCTAssertEqual(run.status, 0, run.output)
        XCTAssertEqual(run.output, #"["Go", "Done"] ["-", "Ada"] 0"# + "\n")
    }

    func testTheRehearsalExampleReportsTheStepAndLeavesTheDatabaseAsItWas() throws {
        let examples = try ReadmeExamples()
        let block = try XCTUnwrap(examples.blocks.first { $0.code.contains("try migrator.rehearse()") },
                                  "neither README.md nor the manual holds the rehearsal example")
        if let output = try examples.build([block])[block.target] {
            return XCTFail("\(block) does not compile as written:\n\(output)")
        }
        let run = try examples.run(block, test: self)
        XCTAssertEqual(run.status, 0, run.output)
        XCTAssertEqual(run.output, """
            applied 005_phones.sql
              members 0 2 0 3 3
            added column phone
            true ["005_phones.sql"]

            """)
        let db = try Database(path: run.directory.appendingPathComponent("library.sqlite").path)
        XCTAssertFalse(try db.columnExists("phone", in: "members"), "the rehearsal changed the database")
    }

    func testTheSchemaDifferenceExampleListsWhatTheRolledBackMigrationWouldChange() throws {
        let examples = try ReadmeExamples()
        let block = try XCTUnwrap(examples.blocks.first { $0.code.contains("struct Rehearsed: Error") },
                                  "neither README.md nor the manual holds the schema difference example")
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
                                  "neither README.md nor the manual holds the code step example")
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

    /// The launch example is an app that bundles the example project's files: its first run migrates a database
    /// of its own in the user data directory, the second finds it up to date, and its bundle is left as built.
    func testTheLaunchExampleMigratesItsOwnDatabaseOnceFromItsBundle() throws {
        let examples = try ReadmeExamples()
        let block = try XCTUnwrap(examples.blocks.first { $0.code.contains("Strata.migrate(manifest:") },
                                  "neither README.md nor the manual holds the launch example")
        XCTAssertTrue(block.bundlesResources)
        if let output = try examples.build([block])[block.target] {
            return XCTFail("\(block) does not compile as written:\n\(output)")
        }
        let bundle = examples.resourceBundle(of: block)
        let bundled = try FileManager.default.contentsOfDirectory(atPath: bundle.path).sorted()
        XCTAssertEqual(bundled, ["csv", "manifests", "sql"])
        let first = try examples.run(block, test: self)
        XCTAssertEqual(first.status, 0, first.output)
        XCTAssertEqual(first.output, "applied 7 steps\n")
        let second = try examples.run(block, test: self, again: first)
        XCTAssertEqual(second.status, 0, second.output)
        XCTAssertEqual(second.output, "up to date\n")

        let database = first.directory.appendingPathComponent(".local/share/Lending/library.sqlite").path
        let db = try Database(path: database)
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM books", as: Int.self), 5)
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM strata_history", as: Int.self), 7)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: bundle.path).sorted(), bundled,
                       "the run wrote into its bundle (the manifest's own <database path=\"../library.sqlite\"> is there)")
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

/// One ```swift block of README.md or of one of the manual's articles.
struct ReadmeBlock: CustomStringConvertible {
    /// The file that holds the block, relative to the repository's root (`README.md`,
    /// `Sources/Strata/Strata.docc/Pools.md`).
    let file: String
    /// The file's line of the opening fence.
    let line: Int
    let code: String
    /// The executable target the block becomes.
    let target: String

    /// A block that reads its files through `Bundle.module` is an app that ships them: its target bundles copies of
    /// `manifests/`, `sql/` and `csv/` as resources.
    var bundlesResources: Bool { code.contains("Bundle.module") }

    /// Names the block by its place and first line, and by its first line of code when that is an import.
    var description: String {
        let lines = code.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        var shown = "\"\(lines.first ?? "")\""
        if let first = lines.first, first.hasPrefix("import "),
           let statement = lines.first(where: { !$0.hasPrefix("import ") }) {
            shown += " … \"\(statement)\""
        }
        return "the swift block at \(file):\(line) (\(shown))"
    }
}

/// The swift blocks of README.md and the manual, the package that builds them, and runs of the built programs.
struct ReadmeExamples {
    let root = repositoryRoot()
    let blocks: [ReadmeBlock]
    var packageDirectory: URL { root.appendingPathComponent(".build/readme-examples", isDirectory: true) }

    /// The DocC catalog whose articles are the manual, relative to the repository's root.
    static let manualDirectory = "Sources/Strata/Strata.docc"

    /// README.md first, then the manual's articles in the order of their file names; blocks are numbered across
    /// all of them, so each has a target of its own.
    init() throws {
        let root = repositoryRoot()
        let articles = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(Self.manualDirectory).path)
            .filter { $0.hasSuffix(".md") }.sorted().map { "\(Self.manualDirectory)/\($0)" }
        var blocks: [ReadmeBlock] = []
        for file in ["README.md"] + articles {
            let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
            blocks += try Self.swiftBlocks(in: text, file: file, numberedFrom: blocks.count + 1)
        }
        self.blocks = blocks
    }

    /// The fenced code blocks whose info string is `swift`, as CommonMark reads fences: a run of three or more
    /// backticks or tildes, indented at most three spaces, closed by a run of the same character at least as long.
    /// Their targets are numbered from `first`.
    static func swiftBlocks(in markdown: String, file: String = "README.md", numberedFrom first: Int = 1) throws -> [ReadmeBlock] {
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
                        blocks.append(ReadmeBlock(file: file, line: fence.line, code: code.joined(separator: "\n") + "\n",
                                                  target: String(format: "example%02d", first + blocks.count)))
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
            throw ReadmeError("\(file):\(fence.line): a swift block is never closed")
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
            let target = sources.appendingPathComponent(block.target, isDirectory: true)
            try writeIfChanged(block.code, to: target.appendingPathComponent("main.swift"))
            for folder in Self.bundledFolders {
                let copy = target.appendingPathComponent(folder, isDirectory: true)
                if block.bundlesResources {
                    try mirror(root.appendingPathComponent(folder, isDirectory: true), to: copy)
                } else if FileManager.default.fileExists(atPath: copy.path) {
                    try FileManager.default.removeItem(at: copy)
                }
            }
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
            let resources = Self.bundledFolders.map { ".copy(\(literal($0)))" }.joined(separator: ", ")
            return """
                    .executableTarget(name: \(literal(block.target)),
                                      dependencies: [.product(name: "Strata",
                                                                package: \(literal(root.lastPathComponent)))],
                                      resources: [\(block.bundlesResources ? resources : "")],
                                      swiftSettings: [.unsafeFlags(["-warnings-as-errors"])]),
            """
        }
        return """
            // swift-tools-version:6.0
            // Generated by Tests/StrataTests/ReadmeExampleTests.swift from the swift blocks of README.md and the manual; do not edit.
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

    /// The folders a block that bundles resources ships, as the example project holds them.
    static let bundledFolders = ["manifests", "sql", "csv"]

    private func writeIfChanged(_ text: String, to url: URL) throws {
        try writeIfChanged(Data(text.utf8), to: url)
    }

    private func writeIfChanged(_ data: Data, to url: URL) throws {
        if let existing = try? Data(contentsOf: url), existing == data { return }
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: url, options: .atomic)   // a build started by another test process reads it whole
    }

    /// Makes `destination` hold exactly the files of `source`, writing only those that differ, so the build stays
    /// incremental.
    private func mirror(_ source: URL, to destination: URL) throws {
        let files = Set((FileManager.default.enumerator(atPath: source.path)?.allObjects as? [String] ?? []).filter { name in
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: source.appendingPathComponent(name).path, isDirectory: &isDirectory)
                && !isDirectory.boolValue
        })
        for name in files {
            try writeIfChanged(try Data(contentsOf: source.appendingPathComponent(name)), to: destination.appendingPathComponent(name))
        }
        for name in FileManager.default.enumerator(atPath: destination.path)?.allObjects as? [String] ?? [] {
            let path = destination.appendingPathComponent(name).path
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue, !files.contains(name) {
                try FileManager.default.removeItem(atPath: path)
            }
        }
    }

    /// Runs a built block in a fresh copy of the example project whose database is migrated, or again in the
    /// directory of an earlier run (`again`). The program's user data directory (FileManager's
    /// `.applicationSupportDirectory`, `$XDG_DATA_HOME` on Linux) is `.local/share` inside that directory.
    func run(_ block: ReadmeBlock, test: XCTestCase, arguments: [String] = [], again earlier: ProgramRun? = nil) throws -> ProgramRun {
        let directory: URL
        if let earlier {
            directory = earlier.directory
        } else {
            directory = try makeTemporaryDirectory(test)
            for folder in ["manifests", "sql", "csv"] {
                try FileManager.default.copyItem(at: root.appendingPathComponent(folder),
                                                 to: directory.appendingPathComponent(folder))
            }
            let migrate = try runStrata(["migrate", "--manifest", "manifests/example.xml"], in: directory)
            guard migrate.status == 0 else {
                throw ReadmeError("strata migrate failed in the example project:\n\(migrate.stdout)\(migrate.stderr)")
            }
        }
        let program = packageDirectory.appendingPathComponent(".build/debug/\(block.target)")
        return try runProcess([program.path] + arguments, in: directory, stoppedAfter: 600,
                              environment: ["XDG_DATA_HOME": directory.appendingPathComponent(".local/share").path])
    }

    /// The resource bundle SwiftPM builds for a block that bundles resources.
    func resourceBundle(of block: ReadmeBlock) -> URL {
        packageDirectory.appendingPathComponent(".build/debug/readme-examples_\(block.target).resources", isDirectory: true)
    }

    /// Runs a command with stdout and stderr in one pipe. With `stoppedAfter`, a program still running after that
    /// many seconds is killed: a guard against a hang, set far beyond the time the program needs.
    private func runProcess(_ arguments: [String], in directory: URL, stoppedAfter seconds: Double? = nil,
                            environment: [String: String] = [:]) throws -> ProgramRun {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.currentDirectoryURL = directory
        // A program that dies of an uncaught error shows the error, not a backtrace of every register.
        process.environment = ProcessInfo.processInfo.environment.merging(["SWIFT_BACKTRACE": "enable=no"]) { $1 }
            .merging(environment) { $1 }
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
