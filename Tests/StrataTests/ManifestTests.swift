import Foundation
import XCTest
@testable import Strata

final class ManifestTests: XCTestCase {
    var root: URL!

    override func setUpWithError() throws {
        root = try makeTemporaryDirectory(self)
    }

    /// Writes files under the temporary root; keys are relative paths.
    func files(_ contents: [String: String]) throws {
        for (path, text) in contents { try write(text, to: root.appendingPathComponent(path)) }
    }

    func load(_ xml: String, path: String = "m/manifest.xml") throws -> Manifest {
        try files([path: xml])
        return try Manifest.load(path: root.appendingPathComponent(path).path)
    }

    func problems(_ xml: String, file: StaticString = #filePath, line: UInt = #line) throws -> [ManifestProblem] {
        try files(["m/manifest.xml": xml])
        do {
            _ = try Manifest.load(path: root.appendingPathComponent("m/manifest.xml").path)
            XCTFail("expected the manifest to be refused", file: file, line: line)
            return []
        } catch let error as ManifestError {
            return error.problems
        }
    }

    func testLoadsTheExampleManifest() throws {
        let manifest = try Manifest.load(path: repositoryRoot().appendingPathComponent("manifests/example.xml").path)
        XCTAssertEqual(manifest.migrations.map(\.id), ["001_create_authors.sql", "002_create_books.sql",
                                                       "003_create_members_and_loans.sql", "004_vacuum.sql"])
        XCTAssertEqual(manifest.plan.map(\.id), ["001_create_authors.sql", "authors.csv", "002_create_books.sql",
                                                 "003_create_members_and_loans.sql", "004_vacuum.sql",
                                                 "books.csv", "members.csv", "demo_loans.csv"])
        XCTAssertFalse(manifest.migrations[3].runsInTransaction)
        XCTAssertTrue(manifest.migrations[0].runsInTransaction)
        XCTAssertEqual(manifest.databasePath, repositoryRoot().appendingPathComponent("library.sqlite").path)
        let books = try XCTUnwrap(manifest.seeds.first { $0.table == "books" })
        XCTAssertEqual(books.mode, .upsert)
        XCTAssertEqual(books.key, ["isbn"])
        XCTAssertEqual(books.onChange, .reapply)
        XCTAssertEqual(books.columns.map(\.type), [.date, .boolean])
        XCTAssertEqual(manifest.seeds.first { $0.table == "members" }?.delimiter, UInt8(ascii: ";"))
        XCTAssertEqual(manifest.seeds.last?.contexts, ["dev"])
        XCTAssertEqual(manifest.model(named: "Book")?.columns["publishedOn"], "published_on")
    }

    func testFullManifestLoadsToTheExpectedPlan() throws {
        try files([
            "sql/10_c.sql": "", "sql/2_b.sql": "", "sql/1_a.sql": "", "sql/notes.txt": "", "extra/0_first.sql": "",
            "data/a.csv": "x\n1\n", "data/b.csv": "x\n", "m/billing.xml": """
                <manifest version="1">
                  <database path="ignored.sqlite"/>
                  <migrations directory="../billing"/>
                  <models><model type="Invoice" primaryKey="year, number"/></models>
                </manifest>
                """,
            "billing/5_invoices.sql": "",
        ])
        let manifest = try load("""
            <?xml version="1.0"?>
            <manifest version="1">
              <database path="../db/app.sqlite"/>
              <migrations directory="../sql">
                <migration file="10_c.sql" transaction="none"/>
              </migrations>
              <migrations>
                <migration file="../extra/0_first.sql"/>
              </migrations>
              <seeds>
                <seed id="late" file="../data/a.csv" table="t"/>
                <seed file="../data/b.csv" table="t" after="2_b.sql" mode="sync" key="x" context="dev, test"
                      delimiter="tab" null="\\N">
                  <column name="x" type="datetime" storage="unix" format="iso8601"/>
                  <column name="y" type="blob" format="hex"/>
                </seed>
              </seeds>
              <include manifest="billing.xml"/>
            </manifest>
            """)
        XCTAssertEqual(manifest.plan.map(\.id), ["0_first.sql", "1_a.sql", "2_b.sql", "b.csv", "5_invoices.sql",
                                                 "10_c.sql", "late"])
        XCTAssertEqual(manifest.databasePath, root.appendingPathComponent("db/app.sqlite").path)
        XCTAssertEqual(manifest.migrations.first { $0.id == "10_c.sql" }?.runsInTransaction, false)
        let seed = try XCTUnwrap(manifest.seeds.last)
        XCTAssertEqual(seed.contexts, ["dev", "test"])
        XCTAssertEqual(seed.delimiter, UInt8(ascii: "\t"))
        XCTAssertEqual(seed.nullToken, "\\N")
        XCTAssertEqual(seed.columns[0].storage, .unix)
        XCTAssertEqual(seed.path, root.appendingPathComponent("data/b.csv").path)
        XCTAssertEqual(manifest.model(named: "Invoice")?.primaryKey, ["year", "number"])
        XCTAssertEqual(manifest.plan[0].location.path, root.appendingPathComponent("m/manifest.xml").path)
    }

    func testNaturalOrder() {
        func sorted(_ names: [String]) -> [String] { names.sorted(by: NaturalOrder.areInIncreasingOrder) }
        XCTAssertEqual(sorted(["10.sql", "2.sql", "1.sql"]), ["1.sql", "2.sql", "10.sql"])
        XCTAssertEqual(sorted(["V1_10__x.sql", "V1_2__x.sql", "V1_1__x.sql"]), ["V1_1__x.sql", "V1_2__x.sql", "V1_10__x.sql"])
        XCTAssertEqual(sorted(["1_a.sql", "01_a.sql", "001_a.sql"]), ["001_a.sql", "01_a.sql", "1_a.sql"])
        XCTAssertEqual(sorted(["b.sql", "a.sql", "a1.sql"]), ["a.sql", "a1.sql", "b.sql"])
        XCTAssertEqual(sorted(["99999999999999999999999_x.sql", "100000000000000000000000_x.sql"]),
                       ["99999999999999999999999_x.sql", "100000000000000000000000_x.sql"])
        XCTAssertEqual(sorted(["2_b.sql", "2_a.sql", "02_c.sql"]), ["2_a.sql", "2_b.sql", "02_c.sql"])
    }

    func testEmptyMigrationsDirectoryIsAnEmptyPlan() throws {
        try FileManager.default.createDirectory(at: root.appendingPathComponent("empty"), withIntermediateDirectories: true)
        let manifest = try load(#"<manifest version="1"><migrations directory="../empty"/></manifest>"#)
        XCTAssertTrue(manifest.plan.isEmpty)
    }

    func testMalformedXMLReportsLineAndColumn() throws {
        let found = try problems("<manifest version=\"1\">\n  <migrations>\n</manifest>\n")
        XCTAssertEqual(found.first?.location.line, 3)
        XCTAssertNotNil(found.first?.location.column)
        XCTAssertTrue(found.first?.description.hasPrefix(root.appendingPathComponent("m/manifest.xml").path + ":3:") ?? false,
                      "\(found)")
    }

    func testSchemaViolationsAreAllReportedWithLines() throws {
        let found = try problems("""
            <manifest version="1">
              <migrations directory="../sql" sorted="yes"/>
              <seeds>
                <seed file="a.csv" table="t" mode="merge"/>
                <seed table="t"/>
              </seeds>
              <unknown/>
            </manifest>
            """)
        let lines = Set(found.map(\.location.line))
        XCTAssertTrue(lines.isSuperset(of: [2, 4, 5, 7]), "\(found)")
        XCTAssertTrue(found.contains { $0.message.contains("merge") }, "\(found)")
    }

    func testMissingVersionIsRefused() throws {
        let found = try problems("<manifest/>")
        XCTAssertTrue(found.contains { $0.message.contains("version") }, "\(found)")
    }

    func testSemanticChecksReportEveryProblem() throws {
        try files(["sql/1_a.sql": "", "other/1_a.sql": "", "data/a.csv": "x\n"])
        let found = try problems("""
            <manifest version="1">
              <database path="a.sqlite"/>
              <database path="b.sqlite"/>
              <migrations directory="../sql"/>
              <migrations directory="../other"/>
              <migrations directory="../nowhere"/>
              <migrations><migration file="missing.sql"/></migrations>
              <seeds>
                <seed file="../data/a.csv" table="t" after="9_unknown.sql"/>
                <seed file="../data/a.csv" table="t" mode="upsert"/>
                <seed file="../data/gone.csv" table="t" key=" , "/>
                <seed id="x" file="../data/a.csv" table="t" delimiter="#">
                  <column name="c" type="integer" storage="unix"/>
                  <column name="c" type="blob" format="octal"/>
                </seed>
              </seeds>
              <models>
                <model type="Book" primaryKey="">
                  <property name="title" column="title"/>
                  <property name="title" column="name"/>
                </model>
                <model type="Book"/>
              </models>
            </manifest>
            """)
        func has(_ line: Int, _ text: String) {
            XCTAssertTrue(found.contains { $0.location.line == line && $0.message.contains(text) },
                          "no problem at line \(line) containing '\(text)' in:\n\(found.map(\.description).joined(separator: "\n"))")
        }
        has(3, "second <database>")
        has(5, "'1_a.sql' is used twice")
        has(6, "does not exist")
        has(7, "missing.sql")
        has(9, "after=\"9_unknown.sql\"")
        has(10, "needs key")
        has(10, "already used")
        has(11, "gone.csv")
        has(11, "key is empty")
        has(12, "delimiter '#'")
        has(13, "storage applies only")
        has(14, "configured twice")
        has(14, "format 'octal'")
        has(18, "primaryKey is empty")
        has(20, "mapped twice")
        has(22, "already mapped")
    }

    func testReapplyWithInsertModeIsRefusedNamingTheModesThatFit() throws {
        try files(["data/a.csv": "x\n"])
        let found = try problems("""
            <manifest version="1">
              <seeds>
                <seed file="../data/a.csv" table="t" onChange="reapply"/>
                <seed id="b" file="../data/a.csv" table="t" mode="insert" onChange="reapply"/>
                <seed id="c" file="../data/a.csv" table="t" mode="upsert" key="x" onChange="reapply"/>
                <seed id="d" file="../data/a.csv" table="t" mode="insert"/>
              </seeds>
            </manifest>
            """)
        XCTAssertEqual(found.map(\.location.line), [3, 4], found.map(\.description).joined(separator: "\n"))
        for problem in found {
            XCTAssertTrue(problem.message.contains(#"onChange="reapply" with mode="insert" would insert every row again"#), problem.message)
            XCTAssertTrue(problem.message.contains(#"use mode="upsert" or "sync" (with key)"#), problem.message)
        }
    }

    func testIncludeCycleIsRefused() throws {
        try files([
            "m/a.xml": #"<manifest version="1"><include manifest="b.xml"/></manifest>"#,
            "m/b.xml": "<manifest version=\"1\">\n<include manifest=\"a.xml\"/></manifest>",
        ])
        let error = assertThrows(ManifestError.self) { try Manifest.load(path: root.appendingPathComponent("m/a.xml").path) }
        let problem = try XCTUnwrap(error?.problems.first)
        XCTAssertTrue(problem.message.contains("include cycle: a.xml → b.xml → a.xml"), problem.message)
        XCTAssertEqual(problem.location.line, 2)
        XCTAssertTrue(problem.location.path.hasSuffix("m/b.xml"))
    }

    func testSelfIncludeAndMissingIncludeAreRefused() throws {
        let found = try problems(#"<manifest version="1"><include manifest="manifest.xml"/><include manifest="nope.xml"/></manifest>"#)
        XCTAssertTrue(found.contains { $0.message.contains("include cycle") })
        XCTAssertTrue(found.contains { $0.message.contains("nope.xml") })
    }

    func testExternalEntityIsRefusedWithoutReadingIt() throws {
        let start = Date()
        let found = try problems("""
            <?xml version="1.0"?>
            <!DOCTYPE manifest [
              <!ENTITY x SYSTEM "file:///etc/passwd">
            ]>
            <manifest version="1"><database path="&x;"/></manifest>
            """)
        XCTAssertEqual(found.count, 1)
        XCTAssertEqual(found.first?.location.line, 3)
        XCTAssertTrue(found.first?.message.contains("DOCTYPE that declares entities") ?? false)
        XCTAssertFalse(found.description.contains("root:"))
        XCTAssertLessThan(Date().timeIntervalSince(start), 1)
    }

    func testBillionLaughsIsRefusedQuickly() throws {
        var xml = "<?xml version=\"1.0\"?>\n<!DOCTYPE manifest [\n <!ENTITY lol \"lol\">\n"
        for level in 1...9 {
            xml += " <!ENTITY lol\(level) \"" + String(repeating: "&lol\(level == 1 ? "" : String(level - 1));", count: 10) + "\">\n"
        }
        xml += "]>\n<manifest version=\"1\"><database path=\"&lol9;\"/></manifest>\n"
        let start = Date()
        let found = try problems(xml)
        XCTAssertLessThan(Date().timeIntervalSince(start), 1)
        XCTAssertTrue(found.first?.message.contains("entities") ?? false)
    }

    func testDeepNestingAndHugeDocumentsAreRefusedQuickly() throws {
        let deep = "<manifest version=\"1\">" + String(repeating: "<a>", count: 10_000) + String(repeating: "</a>", count: 10_000) + "</manifest>"
        let start = Date()
        XCTAssertTrue(try problems(deep).first?.message.contains("nested deeper") ?? false)
        let huge = "<manifest version=\"1\"><!--" + String(repeating: "x", count: 9 << 20) + "--></manifest>"
        XCTAssertTrue(try problems(huge).first?.message.contains("limit") ?? false)
        XCTAssertLessThan(Date().timeIntervalSince(start), 2)
    }

    func testLoadingFromAString() throws {
        try files(["sql/1_a.sql": ""])
        let manifest = try Manifest.load(xml: #"<manifest version="1"><migrations directory="sql"/></manifest>"#,
                                         directory: root.path)
        XCTAssertEqual(manifest.migrations.map(\.id), ["1_a.sql"])
        let error = assertThrows(ManifestError.self) {
            try Manifest.load(xml: "<manifest version=\"1\">\n<nope/></manifest>", path: "inline.xml", directory: root.path)
        }
        XCTAssertTrue(error?.description.hasPrefix("inline.xml:2") ?? false, "\(String(describing: error))")
    }

    func testMissingManifestFile() {
        let error = assertThrows(ManifestError.self) { try Manifest.load(path: "/nonexistent/manifest.xml") }
        XCTAssertTrue(error?.description.hasPrefix("/nonexistent/manifest.xml:1: cannot read") ?? false)
    }
}

/// The package root, found from this source file's location.
func repositoryRoot() -> URL {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
}
