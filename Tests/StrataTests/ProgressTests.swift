import Foundation
import XCTest

/// On a terminal, a running migration shows its file, statement n of m and the time since it started; JSON and
/// output that is not a terminal are unchanged. The terminal is a pseudo-terminal `script(1)` gives the command.
final class ProgressTests: XCTestCase {
    /// The command's output as a terminal shows it (stdout and stderr together), run under `script`.
    func onATerminal(_ arguments: [String], in project: Project) throws -> (status: Int32, output: String) {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else {
            throw XCTSkip("progress test skipped: no /usr/bin/script (util-linux) to give the command a terminal")
        }
        let quoted = ([try strataExecutable().path] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        process.arguments = ["-qfec", quoted.joined(separator: " "), "/dev/null"]
        process.currentDirectoryURL = project.root
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    func testARunningMigrationShowsItsFileStatementAndTimeOnATerminal() throws {
        let project = try Project(self, backend: .sqlite, files: [
            "sql/001_three.sql": "CREATE TABLE a (id INTEGER);\nINSERT INTO a VALUES (1);\nINSERT INTO a VALUES (2);\n",
        ])
        let shown = try onATerminal(["migrate", "--manifest", project.manifestPath], in: project)
        XCTAssertEqual(shown.status, 0, shown.output)
        XCTAssertTrue(shown.output.contains("applying 001_three.sql: statement 1 of 3, 0."), shown.output)
        XCTAssertTrue(shown.output.contains("applied  migration  001_three.sql"), shown.output)

        try project.file("sql/002_more.sql", "INSERT INTO a VALUES (3);\n")
        let json = try onATerminal(["migrate", "--manifest", project.manifestPath, "--format", "json"], in: project)
        XCTAssertEqual(json.status, 0, json.output)
        XCTAssertFalse(json.output.contains("statement 1"), "JSON output has no progress line: \(json.output)")
        try project.file("sql/003_again.sql", "INSERT INTO a VALUES (4);\n")
        let piped = try project.strata(["migrate"])
        XCTAssertEqual(piped.status, 0, piped.stderr)
        XCTAssertFalse(piped.stderr.contains("statement"), "not a terminal: no progress line: \(piped.stderr)")
    }
}
