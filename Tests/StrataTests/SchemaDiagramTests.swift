import Foundation
import Strata
@testable import StrataCore
import XCTest

/// `strata schema --format mermaid|dot` and `SchemaDiagram`: the example database drawn on both backends, the same
/// bytes every time, cardinality from NOT NULL and UNIQUE, Graphviz rendering it without a warning, and what the
/// command and the snapshot promised before staying as it was.
final class SchemaDiagramTests: XCTestCase {
    /// The example database (`manifests/example.xml`) built on `backend` at `root`; returns the `--database` value.
    func buildExample(_ backend: TestBackend, at root: URL) throws -> String {
        let database = backend.kind == .sqlite ? root.appendingPathComponent("example.sqlite").path : backend.location(root)
        let migrate = try runStrata(["migrate", "--manifest", repositoryRoot().appendingPathComponent("manifests/example.xml").path,
                                     "--database", database], in: root)
        XCTAssertEqual(migrate.status, 0, migrate.stderr)
        return database
    }

    func testExampleDatabaseDrawsAsMermaidAndDOTOnEveryBackend() throws {
        try forEachBackend { backend in
            let root = try makeTemporaryDirectory(self)
            let database = try buildExample(backend, at: root)
            let golden = backend.kind == .sqlite ? (mermaid: ExampleDiagrams.mermaid, dot: ExampleDiagrams.dot)
                : (mermaid: ExampleDiagrams.PostgreSQL.mermaid, dot: ExampleDiagrams.PostgreSQL.dot)
            for (format, expected) in [("mermaid", golden.mermaid), ("dot", golden.dot)] {
                let first = try runStrata(["schema", "--database", database, "--format", format], in: root)
                XCTAssertEqual(first.status, 0, first.stderr)
                XCTAssertEqual(first.stderr, "")
                XCTAssertEqual(first.stdout, expected, "\(format) on \(backend)")
                XCTAssertFalse(first.stdout.contains("strata_history"))
                let again = try runStrata(["schema", "--database", database, "--format", format], in: root)
                XCTAssertEqual(Data(again.stdout.utf8), Data(first.stdout.utf8), "the same database gives the same bytes")
                XCTAssertEqual(try runStrata(["schema", "--database", database, "--format", format, "--quiet"], in: root).stdout, "")
            }
            let svg = try GraphvizRun.render(golden.dot, in: root)
            XCTAssertEqual(svg.stderr, "", "dot -Tsvg warned")
            XCTAssertEqual(svg.status, 0)
            let schema = backend.kind == .sqlite ? "" : "public."
            for name in ["authors", "books", "loans", "members"].map({ schema + $0 }) + ["author_id → id", "NOT NULL"] {
                XCTAssertTrue(svg.svg.contains(">\(name)<"), "\(name) is drawn")
            }
        }
    }

    /// The tables, columns and keys come from the catalog in the text form's order, however the database was built:
    /// tables made in another order, keys declared in another order, give the same bytes.
    func testTheOrderIsTheTextFormsWhateverOrderTheSchemaWasMadeIn() throws {
        try forEachBackend { backend in
            func diagrams(_ statements: [String]) throws -> (text: String, mermaid: String, dot: String) {
                let project = try Project(self, backend: backend, files: ["sql/1.sql": statements.joined(separator: "\n")])
                XCTAssertNil(try project.migrator().migrate().failure)
                let text = try project.strataOnBackend(["schema"]).stdout
                let mermaid = try project.strataOnBackend(["schema", "--format", "mermaid"])
                let dot = try project.strataOnBackend(["schema", "--format", "dot"])
                XCTAssertEqual(mermaid.status, 0, mermaid.stderr)
                return (text, mermaid.stdout, dot.stdout)
            }
            let parent = "CREATE TABLE p (a INTEGER NOT NULL, b INTEGER NOT NULL, PRIMARY KEY (a, b));"
            let zebra = "CREATE TABLE zebra (z INTEGER PRIMARY KEY);"
            let one = try diagrams([parent, zebra, """
                CREATE TABLE c (id INTEGER PRIMARY KEY, z INTEGER REFERENCES zebra (z), a INTEGER, b INTEGER,
                                FOREIGN KEY (a, b) REFERENCES p (a, b));
                """])
            let other = try diagrams([zebra, parent, """
                CREATE TABLE c (id INTEGER PRIMARY KEY, z INTEGER, a INTEGER, b INTEGER,
                                FOREIGN KEY (a, b) REFERENCES p (a, b), FOREIGN KEY (z) REFERENCES zebra (z));
                """])
            XCTAssertEqual(one.mermaid, other.mermaid)
            XCTAssertEqual(one.dot, other.dot)
            func matches(_ pattern: String, in text: String) throws -> [String] {
                let expression = try NSRegularExpression(pattern: pattern, options: .anchorsMatchLines)
                return expression.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap {
                    Range($0.range(at: 1), in: text).map { String(text[$0]) }
                }
            }
            let tables = try matches("^CREATE TABLE (\\S+) \\(", in: one.text).map { $0.replacingOccurrences(of: ".", with: "_") }
            XCTAssertEqual(tables.count, 3, one.text)
            XCTAssertEqual(try matches("^    ([A-Za-z0-9_]+)(?:\\[.*\\])? \\{$", in: one.mermaid), tables, "tables in the text form's order")
            XCTAssertEqual(try matches("^    \"(\\S+)\" \\[label", in: one.dot), tables)
            let (p, c, z) = (tables[1], tables[0], tables[2])
            XCTAssertTrue(one.mermaid.hasSuffix("    \(p) |o..o{ \(c) : \"a, b → a, b\"\n    \(z) |o..o{ \(c) : \"z → z\"\n"), one.mermaid)
        }
    }

    /// The parent's end says whether every child has a parent (NOT NULL), the child's whether a parent has at most
    /// one child (a primary key or UNIQUE constraint over the key's columns), the line whether the key is part of
    /// the child's primary key.
    func testCardinalityFollowsNotNullUniquenessAndThePrimaryKey() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, files: ["sql/1.sql": """
                CREATE TABLE parent (id INTEGER PRIMARY KEY);
                CREATE TABLE many_required (id INTEGER PRIMARY KEY, parent_id INTEGER NOT NULL REFERENCES parent (id));
                CREATE TABLE many_optional (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES parent (id));
                CREATE TABLE one_unique (id INTEGER PRIMARY KEY, parent_id INTEGER NOT NULL UNIQUE REFERENCES parent (id));
                CREATE TABLE one_by_key (parent_id INTEGER NOT NULL PRIMARY KEY REFERENCES parent (id));
                CREATE TABLE part_of_key (parent_id INTEGER NOT NULL REFERENCES parent (id), n INTEGER NOT NULL,
                                          PRIMARY KEY (parent_id, n));
                CREATE TABLE unique_wider_than_key (id INTEGER PRIMARY KEY, parent_id INTEGER NOT NULL REFERENCES parent (id),
                                                    other INTEGER, UNIQUE (parent_id, other));
                """])
            XCTAssertNil(try project.migrator().migrate().failure)
            let result = try project.strataOnBackend(["schema", "--format", "mermaid"])
            XCTAssertEqual(result.status, 0, result.stderr)
            let prefix = backend.kind == .sqlite ? "" : "public_"
            let relationships = result.stdout.split(separator: "\n").filter { $0.hasSuffix(": \"parent_id → id\"") }
            XCTAssertEqual(relationships, [
                "    \(prefix)parent |o..o{ \(prefix)many_optional : \"parent_id → id\"",
                "    \(prefix)parent ||..o{ \(prefix)many_required : \"parent_id → id\"",
                "    \(prefix)parent ||--o| \(prefix)one_by_key : \"parent_id → id\"",
                "    \(prefix)parent ||..o| \(prefix)one_unique : \"parent_id → id\"",
                "    \(prefix)parent ||--o{ \(prefix)part_of_key : \"parent_id → id\"",
                "    \(prefix)parent ||..o{ \(prefix)unique_wider_than_key : \"parent_id → id\"",
            ].map { Substring($0) })
        }
    }

    /// The snapshot's foreign keys and unique keys are additions: a file written before them still loads, compares
    /// equal to the database it was written from, and is refused for a diagram rather than drawn without keys.
    func testASnapshotFileWithoutKeysStillComparesAndIsNotDrawn() throws {
        let project = try Project(self, files: ["sql/1.sql": """
            CREATE TABLE a (id INTEGER PRIMARY KEY, code TEXT UNIQUE);
            CREATE TABLE b (id INTEGER PRIMARY KEY, a_id INTEGER REFERENCES A (ID));
            """])
        XCTAssertNil(try project.migrator().migrate().failure)
        let live = try project.connection().schemaSnapshot()
        XCTAssertEqual(live.tables.map(\.foreignKeys), [[], [SchemaSnapshot.ForeignKey(columns: ["a_id"], referencedTable: "a", referencedColumns: ["id"])]])
        XCTAssertEqual(live.tables.map(\.uniqueKeys), [[["code"]], []])
        var old = live
        for index in old.tables.indices { (old.tables[index].foreignKeys, old.tables[index].uniqueKeys) = (nil, nil) }
        let json = String(decoding: try old.jsonData(), as: UTF8.self)
        XCTAssertFalse(json.contains("foreignKeys") || json.contains("uniqueKeys"), json)
        let loaded = try SchemaSnapshot(json: Data(json.utf8), source: "old.json")
        XCTAssertEqual(loaded, old)
        XCTAssertTrue(try SchemaDifference(from: loaded, to: live).isEmpty)
        XCTAssertEqual(try SchemaSnapshot(json: try live.jsonData(), source: "new.json"), live)
        for draw in [SchemaDiagram.mermaid, SchemaDiagram.dot] {
            XCTAssertEqual(assertThrows(SchemaDiagramError.self) { try draw(loaded) }?.description,
                           "the foreign keys of table a are not known (a snapshot from a file an earlier version of Strata wrote, or built without them); read the schema from the database again")
        }
    }

    func testFormatsOtherThanACommandsAreUsageErrors() throws {
        let project = try Project(self, files: ["sql/1.sql": "CREATE TABLE t (x INTEGER);"])
        XCTAssertNil(try project.migrator().migrate().failure)
        let yaml = try project.strataOnBackend(["schema", "--format", "yaml"])
        XCTAssertEqual(yaml.status, 2)
        XCTAssertTrue(yaml.stderr.hasPrefix("strata schema: --format must be 'text', 'json', 'mermaid' or 'dot', not 'yaml'\n"), yaml.stderr)
        XCTAssertEqual(yaml.stdout, "")
        let status = try project.strataOnBackend(["status", "--format", "mermaid"])
        XCTAssertEqual(status.status, 2)
        XCTAssertTrue(status.stderr.hasPrefix("strata status: --format must be 'text' or 'json', not 'mermaid'\n"), status.stderr)
        let empty = try project.strataOnBackend(["schema", "--format="])
        XCTAssertEqual(empty.status, 2, empty.stderr)
        let help = try runStrata(["help", "schema"], in: project.root).stdout
        XCTAssertTrue(help.hasPrefix("Usage: strata schema [--database PATH | --manifest PATH] [--wait SECONDS] [--format text|json|mermaid|dot]\n"), help)
        XCTAssertTrue(help.contains("erDiagram"), help)
    }

    /// Text and JSON are as they were: the text form is the database's statements, the JSON object carries it and
    /// the snapshot (now with its keys).
    func testTextAndJSONFormsAreUnchanged() throws {
        let project = try Project(self, files: ["sql/1.sql": "CREATE TABLE t (x INTEGER PRIMARY KEY, y INTEGER REFERENCES t (x));"])
        XCTAssertNil(try project.migrator().migrate().failure)
        XCTAssertEqual(try project.strataOnBackend(["schema"]).stdout, "CREATE TABLE t (x INTEGER PRIMARY KEY, y INTEGER REFERENCES t (x));\n")
        let json = try project.strataOnBackend(["schema", "--format", "json"]).stdout
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        XCTAssertEqual(Set(object.keys), ["command", "database", "schema", "snapshot"])
        XCTAssertEqual(object["schema"] as? String, "CREATE TABLE t (x INTEGER PRIMARY KEY, y INTEGER REFERENCES t (x));\n")
        let tables = try XCTUnwrap((object["snapshot"] as? [String: Any])?["tables"] as? [[String: Any]])
        XCTAssertEqual(tables.first?["constraints"] as? [String], ["FOREIGN KEY (y) REFERENCES t (x) ON UPDATE NO ACTION ON DELETE NO ACTION"])
        XCTAssertEqual((tables.first?["foreignKeys"] as? [[String: Any]])?.first?["referencedColumns"] as? [String], ["x"])
    }
}

/// Runs Graphviz's `dot`, installing Debian's `graphviz` first where it is missing.
enum GraphvizRun {
    static var dot: URL {
        get throws {
            let dot = URL(fileURLWithPath: "/usr/bin/dot")
            if FileManager.default.isExecutableFile(atPath: dot.path) { return dot }
            let install = Process()
            install.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            install.arguments = ["apt-get", "install", "-y", "-qq", "graphviz"]
            install.environment = ProcessInfo.processInfo.environment.merging(["DEBIAN_FRONTEND": "noninteractive"]) { $1 }
            let errors = Pipe()
            install.standardError = errors
            install.standardOutput = FileHandle.nullDevice
            try install.run()
            let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            install.waitUntilExit()
            guard install.terminationStatus == 0, FileManager.default.isExecutableFile(atPath: dot.path) else {
                throw XCTSkip("SKIPPED: Graphviz is not installed and 'apt-get install -y graphviz' failed (\(message.trimmingCharacters(in: .whitespacesAndNewlines))); the DOT output was not rendered")
            }
            return dot
        }
    }

    /// `dot -Tsvg` (or another `-T` format) of `text`, in a file under `directory`: its exit status, SVG and stderr.
    static func render(_ text: String, format: String = "svg", in directory: URL) throws -> (status: Int32, svg: String, stderr: String) {
        let input = directory.appendingPathComponent("diagram-\(UUID().uuidString).dot")
        let output = input.appendingPathExtension(format)
        try write(text, to: input)
        let process = Process()
        process.executableURL = try dot
        process.arguments = ["-T\(format)", input.path, "-o", output.path]
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let rendered = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        return (process.terminationStatus, rendered, stderr)
    }
}
