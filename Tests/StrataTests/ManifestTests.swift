import Foundation
import XCTest
import Strata
@testable import StrataCore
@testable import StrataSQLite

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
        let files = ["001_create_authors.sql", "002_create_books.sql", "003_create_members_and_loans.sql", "004_vacuum.sql"]
        for backend in DatabaseBackend.allCases {
            let migrations = manifest.migrations(for: backend)
            XCTAssertEqual(migrations.map(\.id), files, "\(backend)")
            XCTAssertEqual(Set(migrations.map { URL(fileURLWithPath: $0.path).deletingLastPathComponent().lastPathComponent }),
                           [backend == .sqlite ? "sql" : "postgresql"], "each backend's own files")
            XCTAssertEqual(manifest.plan(for: backend).map(\.id), ["001_create_authors.sql", "authors.csv", "002_create_books.sql",
                                                                  "003_create_members_and_loans.sql", "004_vacuum.sql",
                                                                  "books.csv", "members.csv", "demo_loans.csv"], "\(backend)")
            XCTAssertFalse(migrations[3].runsInTransaction)
            XCTAssertTrue(migrations[0].runsInTransaction)
        }
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
        XCTAssertEqual(manifest.plan(for: .sqlite).map(\.id), ["0_first.sql", "1_a.sql", "2_b.sql", "b.csv", "5_invoices.sql",
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
        XCTAssertEqual(manifest.plan(for: .sqlite)[0].location.path, root.appendingPathComponent("m/manifest.xml").path)
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
        XCTAssertTrue(manifest.plan(for: .sqlite).isEmpty)
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

    // MARK: Only regular files (issue 11, items 15 and 17)

    func testOnlyRegularFilesAreMigrationsOrSeeds() throws {
        try files(["data/real.csv": "x\n1\n", "sql/real.sql": "SELECT 1;", "m/placeholder": ""])
        try makeFIFO(root.appendingPathComponent("m/pipe.sql"))
        try makeFIFO(root.appendingPathComponent("m/pipe.csv"))
        try FileManager.default.createDirectory(at: root.appendingPathComponent("m/folder.sql"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: root.appendingPathComponent("m/link.sql").path,
                                                   withDestinationPath: root.appendingPathComponent("sql/real.sql").path)
        try FileManager.default.createSymbolicLink(atPath: root.appendingPathComponent("m/link.csv").path,
                                                   withDestinationPath: "../data/real.csv")
        let found = try problems("""
            <manifest version="1">
              <migrations>
                <migration file="/dev/zero"/>
                <migration file="pipe.sql"/>
                <migration file="folder.sql"/>
                <migration file="link.sql"/>
              </migrations>
              <seeds>
                <seed file="/dev/urandom" table="t"/>
                <seed file="pipe.csv" table="t" id="p"/>
                <seed file="link.csv" table="t" id="l"/>
              </seeds>
            </manifest>
            """)
        func has(_ line: Int, _ text: String) {
            XCTAssertTrue(found.contains { $0.location.line == line && $0.message.contains(text) },
                          "no problem at line \(line) containing '\(text)' in:\n\(found.map(\.description).joined(separator: "\n"))")
        }
        has(3, "'/dev/zero' cannot be read (/dev/zero is a character device, not a regular file)")
        has(4, "is a FIFO, not a regular file")
        has(5, "is a directory")
        has(9, "'/dev/urandom' cannot be read (/dev/urandom is a character device, not a regular file)")
        has(10, "is a FIFO, not a regular file")
        XCTAssertFalse(found.contains { $0.location.line == 6 || $0.location.line == 11 }, "a symlink to a regular file is fine: \(found)")
        XCTAssertEqual(found.count, 5, "\(found)")
    }

    func testMigrationsDirectoryRefusesWhatItCannotTakeInsteadOfSkippingIt() throws {
        try files(["sql/1_a.sql": "SELECT 1;"])
        let sql = root.appendingPathComponent("sql")
        try FileManager.default.createSymbolicLink(atPath: sql.appendingPathComponent("2_dangling.sql").path,
                                                   withDestinationPath: "gone.sql")
        try createFile(rawName: Array("3_".utf8) + [0xFF, 0xFE] + Array(".sql".utf8), in: sql)
        try makeFIFO(sql.appendingPathComponent("4_pipe.sql"))
        try createFile(rawName: [0xFF] + Array(".txt".utf8), in: sql)   // not a migration name at all: left alone
        let found = try problems("<manifest version=\"1\">\n  <migrations directory=\"../sql\"/>\n</manifest>")
        let messages = found.map(\.description).joined(separator: "\n")
        XCTAssertTrue(found.allSatisfy { $0.location.line == 2 }, messages)
        XCTAssertTrue(messages.contains("2_dangling.sql is a symbolic link to 'gone.sql', which does not exist"), messages)
        XCTAssertTrue(messages.contains("a file name that is not valid UTF-8 ('3_\\xFF\\xFE.sql')"), messages)
        XCTAssertTrue(messages.contains("migration file '4_pipe.sql' in '../sql' cannot be read"), messages)
        XCTAssertTrue(messages.contains("is a FIFO, not a regular file"), messages)
        XCTAssertEqual(found.count, 3, messages)
    }

    func testOtherCaseSQLExtensionIsAWarningNotASilentSkip() throws {
        try files(["sql/1_a.sql": "SELECT 1;", "sql/2_b.SQL": "SELECT 2;", "sql/3_c.Sql": "SELECT 3;", "sql/notes.txt": ""])
        let manifest = try load("<manifest version=\"1\">\n  <migrations directory=\"../sql\"/>\n</manifest>")
        XCTAssertEqual(manifest.migrations.map(\.id), ["1_a.sql"])
        XCTAssertEqual(manifest.warnings.map(\.location.line), [2, 2])
        XCTAssertEqual(manifest.warnings.map(\.message), [
            "'2_b.SQL' in migrations directory '../sql' is not a migration: only names ending in '.sql' (lower case) are; rename it to '2_b.sql' to apply it",
            "'3_c.Sql' in migrations directory '../sql' is not a migration: only names ending in '.sql' (lower case) are; rename it to '3_c.sql' to apply it",
        ])
        let clean = try load(#"<manifest version="1"><migrations><migration file="../sql/1_a.sql"/></migrations></manifest>"#)
        XCTAssertEqual(clean.warnings, [])
    }

    // MARK: Files written for other tools (issue 11, item 14)

    func testDeclaredFormatsSplitSectionsAndTheFilesOwnOptionsSetTheTransaction() throws {
        try files([
            "goose/20240101120000_add_users.sql": MigrationTests.gooseFile,
            "goose/20240102120000_vacuum.sql": "-- +goose NO TRANSACTION\n-- +goose Up\nVACUUM;\n",
            "dbmate/20240103120000_create_posts.sql": MigrationTests.dbmateFile,
            "mixed/20240104120000_people.sql": MigrationTests.sqlMigrateFile,
            "mixed/20240105120000_plain.sql": "CREATE TABLE t (x);",
        ])
        let manifest = try load("""
            <manifest version="1">
              <migrations directory="../goose" format="goose"/>
              <migrations directory="../dbmate" format="dbmate"/>
              <migrations directory="../mixed">
                <migration file="20240104120000_people.sql" format="sql-migrate"/>
              </migrations>
            </manifest>
            """)
        XCTAssertEqual(manifest.migrations.map(\.id), ["20240101120000_add_users.sql", "20240102120000_vacuum.sql",
                                                       "20240103120000_create_posts.sql", "20240104120000_people.sql",
                                                       "20240105120000_plain.sql"])
        XCTAssertEqual(manifest.migrations.map(\.format), [.goose, .goose, .dbmate, .sqlMigrate, .plain])
        XCTAssertEqual(manifest.migrations.map(\.runsInTransaction), [true, false, true, true, true])
    }

    func testFilesWithSectionMarkersAreRefusedUnlessTheirFormatIsDeclared() throws {
        try files(["sql/1_users.sql": MigrationTests.gooseFile, "sql/2_posts.sql": MigrationTests.dbmateFile,
                   "sql/3_ok.sql": "CREATE TABLE t (x);"])
        let found = try problems("<manifest version=\"1\">\n  <migrations directory=\"../sql\"/>\n</manifest>")
        XCTAssertEqual(found.count, 2, "\(found)")
        let goose = try XCTUnwrap(found.first { $0.location.path.hasSuffix("sql/1_users.sql") })
        XCTAssertEqual(goose.location.line, 1)
        XCTAssertTrue(goose.message.hasPrefix("'-- +goose Up' is a goose section marker"), goose.message)
        XCTAssertTrue(goose.message.contains("format=\"goose\""), goose.message)
        XCTAssertTrue(goose.message.hasSuffix("m/manifest.xml:2)"), "names where the manifest takes the file: \(goose.message)")
        let dbmate = try XCTUnwrap(found.first { $0.location.path.hasSuffix("sql/2_posts.sql") })
        XCTAssertEqual(dbmate.location.line, 1)
        XCTAssertTrue(dbmate.message.contains("dbmate section marker"), dbmate.message)
        // A declared format that the file does not follow is refused too, with the file's line.
        try files(["goose/1_plain.sql": "CREATE TABLE t (x);\n"])
        let undeclared = try problems(#"<manifest version="1"><migrations directory="../goose" format="goose"/></manifest>"#)
        XCTAssertEqual(undeclared.map(\.location.line), [1])
        XCTAssertTrue(undeclared.first?.message.contains("no '-- +goose Up' marker") ?? false, "\(undeclared)")
        let unknown = try problems(#"<manifest version="1"><migrations directory="../goose" format="flyway"/></manifest>"#)
        XCTAssertTrue(unknown.contains { $0.message.contains("flyway") }, "\(unknown)")
    }

    func testExplicitIDsListDirectoryPerMigrationLayouts() throws {
        // diesel: one directory per migration, each with up.sql and down.sql.
        try files([
            "migrations/2024-01-01-000000_create_users/up.sql": "CREATE TABLE users (id INTEGER PRIMARY KEY);\n",
            "migrations/2024-01-01-000000_create_users/down.sql": "DROP TABLE users;\n",
            "migrations/2024-02-01-000000_create_posts/up.sql": "CREATE TABLE posts (id INTEGER PRIMARY KEY);\n",
            "migrations/2024-02-01-000000_create_posts/down.sql": "DROP TABLE posts;\n",
        ])
        let manifest = try load("""
            <manifest version="1">
              <migrations directory="../migrations">
                <migration file="2024-02-01-000000_create_posts/up.sql" id="2024-02-01-000000_create_posts"/>
                <migration file="2024-01-01-000000_create_users/up.sql" id="2024-01-01-000000_create_users"/>
              </migrations>
            </manifest>
            """)
        XCTAssertEqual(manifest.migrations.map(\.id), ["2024-01-01-000000_create_users", "2024-02-01-000000_create_posts"])
        XCTAssertEqual(manifest.migrations.first?.path, root.appendingPathComponent("migrations/2024-01-01-000000_create_users/up.sql").path)

        func refusal(_ migrations: String) throws -> String {
            try problems("<manifest version=\"1\">\n  <migrations directory=\"../migrations\">\n\(migrations)  </migrations>\n</manifest>")
                .map(\.description).joined(separator: "\n")
        }
        let unnamed = try refusal("""
                <migration file="2024-01-01-000000_create_users/up.sql"/>
                <migration file="2024-02-01-000000_create_posts/up.sql"/>

            """)
        XCTAssertTrue(unnamed.contains("manifest.xml:4: migration file name 'up.sql' is used twice"), unnamed)
        XCTAssertTrue(unnamed.contains("give one an id=\"…\""), unnamed)
        let sameID = try refusal("""
                <migration file="2024-01-01-000000_create_users/up.sql" id="same"/>
                <migration file="2024-02-01-000000_create_posts/up.sql" id="same"/>

            """)
        XCTAssertTrue(sameID.contains("manifest.xml:4: migration id 'same' is used twice"), sameID)
        let clash = try refusal("""
                <migration file="2024-01-01-000000_create_users/up.sql" id="2024-02-01-000000_create_posts"/>
                <migration file="2024-02-01-000000_create_posts/up.sql" id="2024-02-01-000000_create_posts"/>

            """)
        XCTAssertTrue(clash.contains("manifest.xml:4: migration id '2024-02-01-000000_create_posts' is used twice"), clash)
        let twice = try refusal("""
                <migration file="2024-01-01-000000_create_users/up.sql" id="a"/>
                <migration file="2024-01-01-000000_create_users/up.sql" id="b"/>

            """)
        XCTAssertTrue(twice.contains("manifest.xml:4: migration file 2024-01-01-000000_create_users/up.sql is listed twice"), twice)
        let blank = try refusal("    <migration file=\"2024-01-01-000000_create_users/up.sql\" id=\" \"/>\n")
        XCTAssertTrue(blank.contains("manifest.xml:3: element 'migration', attribute 'id'"), blank)
    }

    func testAFileListedTwiceUnderTwoIDsIsRefused() throws {
        try files(["sql/1_a.sql": "CREATE TABLE a (x);"])
        let found = try problems("""
            <manifest version="1">
              <migrations directory="../sql"/>
              <migrations><migration file="../sql/1_a.sql" id="first_a"/></migrations>
            </manifest>
            """)
        XCTAssertEqual(found.count, 1, "\(found)")
        XCTAssertTrue(found.first?.message.contains("is listed twice, as '1_a.sql'") ?? false, "\(found)")
        XCTAssertTrue(found.first?.message.contains("and as 'first_a'") ?? false, "\(found)")
    }

    func testTransactionFileConflictsWithTheFilesOwnNoTransaction() throws {
        try files(["goose/1_vacuum.sql": "-- +goose NO TRANSACTION\n-- +goose Up\nVACUUM;\n"])
        let found = try problems("""
            <manifest version="1">
              <migrations directory="../goose" format="goose">
                <migration file="1_vacuum.sql" transaction="file"/>
              </migrations>
            </manifest>
            """)
        XCTAssertEqual(found.map(\.location.line), [3])
        XCTAssertTrue(found.first?.message.contains("the file itself asks to run outside a transaction") ?? false, "\(found)")
        let none = try load("""
            <manifest version="1">
              <migrations directory="../goose" format="goose"><migration file="1_vacuum.sql" transaction="none"/></migrations>
            </manifest>
            """)
        XCTAssertEqual(none.migrations.map(\.runsInTransaction), [false])
    }

    // MARK: Reading the manifest itself (issue 11, "smaller, each real")

    func testUTF16ManifestWithManyElementsLoads() throws {
        var text = "<?xml version=\"1.0\" encoding=\"UTF-16\"?>\n<manifest version=\"1\">\n  <models>\n"
        for i in 1...40 { text += "    <model type=\"T\(i)\"><property name=\"p\" column=\"c\"/></model>\n" }
        text += "  </models>\n</manifest>\n"
        let path = root.appendingPathComponent("m/utf16.xml")
        try FileManager.default.createDirectory(at: path.deletingLastPathComponent(), withIntermediateDirectories: true)
        try (Data([0xFF, 0xFE]) + Data(text.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] })).write(to: path)
        XCTAssertEqual(try Manifest.load(path: path.path).models.count, 40)

        let deep = "<?xml version=\"1.0\" encoding=\"UTF-16\"?>\n<manifest version=\"1\">"
            + String(repeating: "<a>", count: 40) + String(repeating: "</a>", count: 40) + "</manifest>"
        try (Data([0xFE, 0xFF]) + Data(deep.utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] })).write(to: path)
        let error = assertThrows(ManifestError.self) { try Manifest.load(path: path.path) }
        XCTAssertEqual(error?.problems.count, 1)
        XCTAssertTrue(error?.problems.first?.message.contains("nested deeper than 32 levels") ?? false, "\(String(describing: error))")
        XCTAssertEqual(error?.problems.first?.location.line, 2)
    }

    func testNestingCheckReadsCommentsAndProcessingInstructionsAsXMLDoes() throws {
        // Closing tags inside a comment or a processing instruction must not let real nesting through...
        let hidden = "<manifest version=\"1\"><!-- " + String(repeating: "</a>", count: 40) + " --><?note "
            + String(repeating: "</a>", count: 40) + "?>" + String(repeating: "<a>", count: 40)
            + String(repeating: "</a>", count: 40) + "</manifest>"
        XCTAssertTrue(try problems(hidden).first?.message.contains("nested deeper than 32 levels") ?? false)
        // ...and opening tags inside comments, attribute values or CDATA are not elements.
        let harmless = "<manifest version=\"1\"><!-- " + String(repeating: "<a>", count: 40) + " -->"
            + "<models><model type=\"T\" table=\"" + String(repeating: "&lt;a>", count: 40) + "\"/></models></manifest>"
        XCTAssertEqual(try load(harmless).models.first?.typeName, "T")
        // The refusal names the line of the first element too deep (the 33rd level: the root is the first).
        let lines = "<manifest version=\"1\">\n" + String(repeating: "<a>\n", count: 40) + String(repeating: "</a>", count: 40) + "</manifest>"
        let deep = try problems(lines)
        XCTAssertEqual(deep.map(\.location.line), [33], "\(deep)")
        XCTAssertNil(deep.first?.location.column, "no column rather than where the reader had read ahead to")
    }

    func testOversizedManifestIsRefusedBeforeItIsRead() throws {
        let path = root.appendingPathComponent("m/huge.xml")
        try FileManager.default.createDirectory(at: path.deletingLastPathComponent(), withIntermediateDirectories: true)
        XCTAssertTrue(FileManager.default.createFile(atPath: path.path, contents: Data("<manifest version=\"1\">".utf8)))
        let handle = try FileHandle(forWritingTo: path)
        try handle.truncate(atOffset: 400 << 20)    // sparse: 400 MB that cost nothing until someone reads them
        try handle.close()
        let before = peakResidentMegabytes()
        let error = assertThrows(ManifestError.self) { try Manifest.load(path: path.path) }
        XCTAssertEqual(error?.problems.first?.message, "manifest is 419430400 bytes; the limit is 8388608")
        XCTAssertLessThan(peakResidentMegabytes() - before, 64, "the manifest was read although its size was known")
    }

    func testDeviceFIFOAndDirectoryManifestsSayWhatTheyAre() throws {
        try makeFIFO(root.appendingPathComponent("pipe.xml"))
        func message(_ path: String) -> String {
            assertThrows(ManifestError.self) { try Manifest.load(path: path) }?.problems.first?.message ?? ""
        }
        XCTAssertEqual(message("/dev/zero"), "cannot read the manifest (/dev/zero is a character device, not a regular file)")
        XCTAssertEqual(message(root.appendingPathComponent("pipe.xml").path),
                       "cannot read the manifest (\(root.appendingPathComponent("pipe.xml").path) is a FIFO, not a regular file)")
        XCTAssertEqual(message(root.path), "cannot read the manifest (\(root.path) is a directory, not a regular file)")
        let found = try problems(#"<manifest version="1"><include manifest="/dev/null"/></manifest>"#)
        XCTAssertEqual(found.map(\.message), ["included manifest '/dev/null' cannot be read (/dev/null is a character device, not a regular file)"])
    }

    func testIncludeCycleThroughASymlinkedDirectoryIsACycle() throws {
        try files(["m/a.xml": "<manifest version=\"1\">\n  <include manifest=\"loop/a.xml\"/>\n</manifest>"])
        try FileManager.default.createSymbolicLink(atPath: root.appendingPathComponent("m/loop").path, withDestinationPath: ".")
        let error = assertThrows(ManifestError.self) { try Manifest.load(path: root.appendingPathComponent("m/a.xml").path) }
        XCTAssertEqual(error?.problems.count, 1, "\(String(describing: error))")
        XCTAssertEqual(error?.problems.first?.message, "include cycle: a.xml → loop/a.xml (the same file as a.xml)")
        XCTAssertEqual(error?.problems.first?.location.line, 2)
    }

    func testMissingManifestFile() {
        let error = assertThrows(ManifestError.self) { try Manifest.load(path: "/nonexistent/manifest.xml") }
        XCTAssertTrue(error?.description.hasPrefix("/nonexistent/manifest.xml:1: cannot read") ?? false)
    }

    func testOneFileReachedThroughASymlinkedDirectoryIsStillListedTwice() throws {
        let project = try Project(self, manifest: """
            <manifest version="1"><migrations directory="sql"><migration file="../sqllink/001.sql" id="x"/></migrations></manifest>
            """, files: ["sql/001.sql": "CREATE TABLE IF NOT EXISTS a (x); INSERT INTO a VALUES (1);"])
        try FileManager.default.createSymbolicLink(atPath: project.root.appendingPathComponent("sqllink").path,
                                                   withDestinationPath: "sql")
        let error = assertThrows(ManifestError.self) { try project.manifest() }
        XCTAssertTrue(error?.description.contains("is listed twice") ?? false, String(describing: error))
    }
}

/// The package root, found from this source file's location.
func repositoryRoot() -> URL {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
}

/// Creates a named pipe; opening it for reading would block until a writer comes, which is why it is never opened.
func makeFIFO(_ url: URL) throws {
    try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
    guard mkfifo(url.path, 0o644) == 0 else { throw CocoaError(.fileWriteUnknown) }
}

/// Creates an empty file whose name is raw bytes (which need not be UTF-8).
func createFile(rawName: [UInt8], in directory: URL) throws {
    let path = Array(directory.path.utf8) + [UInt8(ascii: "/")] + rawName + [0]
    let descriptor = path.withUnsafeBufferPointer { buffer -> Int32 in
        buffer.withMemoryRebound(to: CChar.self) { chars in
            guard let base = chars.baseAddress else { return -1 }
            return open(base, O_CREAT | O_WRONLY, 0o644)
        }
    }
    guard descriptor >= 0 else { throw CocoaError(.fileWriteUnknown) }
    close(descriptor)
}

/// This process's peak resident set so far, in MiB.
func peakResidentMegabytes() -> Int {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return usage.ru_maxrss / 1024
}

// MARK: PostgreSQL: <database url> and schema

extension ManifestTests {
    var manifestPath: String { root.appendingPathComponent("m/manifest.xml").path }

    /// The one problem a manifest is refused for, after checking it is at `line` of the manifest.
    func problem(_ xml: String, line: Int, file: StaticString = #filePath, testLine: UInt = #line) throws -> String {
        let found = try problems(xml, file: file, line: testLine)
        XCTAssertEqual(found.count, 1, "\(found)", file: file, line: testLine)
        XCTAssertEqual(found.first?.location, SourceLocation(path: manifestPath, line: line), "\(found)", file: file, line: testLine)
        return found.first?.message ?? ""
    }

    func testDatabaseURLIsKeptAsWrittenAndNamesPostgreSQL() throws {
        let manifest = try load("""
            <manifest version="1">
              <database url="postgresql://app:${PGPASSWORD}@db.example.com:5432/app" schema="strata"/>
            </manifest>
            """)
        XCTAssertEqual(manifest.databaseURL, "postgresql://app:${PGPASSWORD}@db.example.com:5432/app", "the template, not resolved")
        XCTAssertNil(manifest.databasePath)
        XCTAssertEqual(manifest.databaseSchema, "strata")
        XCTAssertEqual(manifest.databaseBackend, .postgresql)
        XCTAssertEqual(manifest.databaseLocation, SourceLocation(path: manifestPath, line: 2))
        XCTAssertEqual(try load(#"<manifest version="1"><database path="x.sqlite"/></manifest>"#).databaseBackend, .sqlite)
        XCTAssertNil(try load(#"<manifest version="1"/>"#).databaseBackend)
    }

    func testDatabaseURLPlaceholdersAreFilledPercentEncoded() throws {
        let manifest = try load("""
            <manifest version="1">
              <database url="postgresql://${PGUSER}:${PGPASSWORD}@${PGHOST}:${PGPORT}/${PGDATABASE}?application_name=${APP}"/>
            </manifest>
            """)
        let environment = ["PGUSER": "app", "PGPASSWORD": "p@ss:w/rd?#%& é", "PGHOST": "db.example.com", "PGPORT": "5432",
                           "PGDATABASE": "library", "APP": "strata migrate"]
        XCTAssertEqual(try manifest.resolvedDatabaseURL(environment: environment),
                       "postgresql://app:p%40ss%3Aw%2Frd%3F%23%25%26%20%C3%A9@db.example.com:5432/library?application_name=strata%20migrate",
                       "a value is data: every byte but A-Z a-z 0-9 - . _ ~ is percent-encoded, so the password cannot end the user information")
        // A socket directory as the host is encoded too, which libpq reads as a host path (postgres://%2Fvar%2Frun…).
        XCTAssertEqual(try manifest.resolvedDatabaseURL(environment: environment.merging(["PGHOST": "/var/run/postgresql"]) { $1 }),
                       "postgresql://app:p%40ss%3Aw%2Frd%3F%23%25%26%20%C3%A9@%2Fvar%2Frun%2Fpostgresql:5432/library?application_name=strata%20migrate")
        let literal = try load(#"<manifest version="1"><database url="postgres://app:pa$$word@db/x%2Fy"/></manifest>"#)
        XCTAssertEqual(try literal.resolvedDatabaseURL(environment: [:]), "postgres://app:pa$$word@db/x%2Fy",
                       "a $ not followed by { and a %XX the manifest wrote are kept as written")
    }

    func testAnUnsetVariableIsAProblemOnlyWhenTheURLIsUsed() throws {
        let manifest = try load("""
            <manifest version="1">

              <database url="postgresql://app:${PGPASSWORD}@${PGHOST}/app"/>
            </manifest>
            """)   // loads with none of them set: --database may be what is used
        let error = assertThrows(ManifestError.self) { try manifest.resolvedDatabaseURL(environment: ["PATH": "/bin"]) }
        XCTAssertEqual(error?.problems.map(\.location), [SourceLocation(path: manifestPath, line: 3)])
        XCTAssertEqual(error?.problems.first?.message,
                       #"url="postgresql://app:•••@${PGHOST}/app" cannot be used: in the environment, ${PGPASSWORD} and ${PGHOST} are not set; set them, or name the database with --database"#)
        let empty = assertThrows(ManifestError.self) {
            try manifest.resolvedDatabaseURL(environment: ["PGPASSWORD": "secret", "PGHOST": ""])
        }
        XCTAssertEqual(empty?.description,
                       "\(manifestPath):3: url=\"postgresql://app:•••@${PGHOST}/app\" cannot be used: in the environment, ${PGHOST} is set but empty; set it, or name the database with --database",
                       "an empty host would quietly connect to the local socket")
        XCTAssertFalse(empty?.description.contains("secret") ?? true)
    }

    func testResolvingAManifestWithoutAURLSaysSo() throws {
        let manifest = try load("<manifest version=\"1\">\n  <database path=\"x.sqlite\"/>\n</manifest>")
        let error = assertThrows(ManifestError.self) { try manifest.resolvedDatabaseURL(environment: [:]) }
        XCTAssertEqual(error?.description, "\(manifestPath):2: the manifest names no PostgreSQL database: add <database url=\"postgresql://…\"/> or name one with --database")
    }

    func testDatabaseNeedsExactlyOneOfPathAndURL() throws {
        XCTAssertEqual(try problem("<manifest version=\"1\">\n  <database path=\"a.sqlite\" url=\"postgresql://app:hunter2@db/x\"/>\n</manifest>", line: 2),
                       #"<database> has both path="a.sqlite" and url="postgresql://app:•••@db/x"; give one: path= for a SQLite file, url= for a PostgreSQL database"#)
        XCTAssertEqual(try problem("<manifest version=\"1\">\n\n  <database/>\n</manifest>", line: 3),
                       #"<database> names no database: give path="…" for a SQLite file or url="postgresql://…" for a PostgreSQL database"#)
    }

    func testAURLThatIsNotPostgreSQLIsRefusedSayingWhatIsExpected() throws {
        let expected = "expected postgresql://… or postgres://… (the scheme written out, not from a variable); for a SQLite file use path=\"…\""
        XCTAssertEqual(try problem("<manifest version=\"1\">\n  <database url=\"mysql://app:hunter2@db/x\"/>\n</manifest>", line: 2),
                       #"url="mysql://app:•••@db/x" is not a PostgreSQL connection URI (its scheme is 'mysql'): "# + expected)
        XCTAssertEqual(try problem(#"<manifest version="1"><database url="POSTGRESQL://db/x"/></manifest>"#, line: 1),
                       #"url="POSTGRESQL://db/x" is not a PostgreSQL connection URI (its scheme is 'POSTGRESQL'): "# + expected,
                       "libpq reads the scheme in lower case only")
        XCTAssertEqual(try problem(#"<manifest version="1"><database url="${DATABASE_URL}"/></manifest>"#, line: 1),
                       #"url="${DATABASE_URL}" is not a PostgreSQL connection URI (it is not a URI): "# + expected,
                       "the backend is known when the manifest loads, without the environment")
        XCTAssertEqual(try problem(#"<manifest version="1"><database url="library.sqlite"/></manifest>"#, line: 1),
                       #"url="library.sqlite" is not a PostgreSQL connection URI (it is not a URI): "# + expected)
    }

    func testAMalformedPlaceholderIsALoadTimeProblem() throws {
        let rule = "does not start a ${NAME} (NAME is letters, digits and _, not starting with a digit, closed by '}'); a literal '{' in a URI is written %7B"
        for (url, position) in [("postgresql://db/${", 17), ("postgresql://db/${1X}", 17), ("postgresql://db/${A-B}", 17),
                                ("postgresql://db/${A", 17), ("postgresql://é/${}", 16)] {
            XCTAssertEqual(try problem("<manifest version=\"1\">\n\n  <database url=\"\(url)\"/>\n</manifest>", line: 3),
                           "url=\"\(url)\": the '${' at character \(position) " + rule, url)
        }
        XCTAssertEqual(try problem(#"<manifest version="1"><database url="postgresql://app:50%@db/x"/></manifest>"#, line: 1),
                       #"url="postgresql://app:•••@db/x": the '%' at character 20 is not followed by two hex digits; a literal '%' in a URI is written %25"#,
                       "libpq refuses it; the message shows where, not the password around it")
    }

    func testSchemaAppliesToPostgreSQLOnly() throws {
        XCTAssertEqual(try problem("<manifest version=\"1\">\n  <database path=\"a.sqlite\" schema=\"app\"/>\n</manifest>", line: 2),
                       #"schema="app": schema applies to PostgreSQL databases (url=); a SQLite file (path=) has none"#)
        let long = String(repeating: "s", count: 64)
        XCTAssertEqual(try problem(#"<manifest version="1"><database url="postgresql://db/x" schema="\#(long)"/></manifest>"#, line: 1),
                       "schema=\"\(long)\" is 64 bytes long; PostgreSQL keeps only the first 63 bytes of a name")
        XCTAssertNil(try load(#"<manifest version="1"><database url="postgresql://db/x"/></manifest>"#).databaseSchema)
        let found = try problems(#"<manifest version="1"><database url="postgresql://db/x" schema=""/></manifest>"#)
        XCTAssertTrue(found.contains { $0.message.contains("schema") }, "an empty schema is a schema violation: \(found)")
    }

    func testRedactedHidesThePasswordAndNothingElse() {
        let cases: [(String, String)] = [
            ("postgresql://app:hunter2@db/x", "postgresql://app:•••@db/x"),
            ("postgres://app:hunter2@db:5432,db2:5433/x?sslmode=require", "postgres://app:•••@db:5432,db2:5433/x?sslmode=require"),
            ("postgresql://app@db/x", "postgresql://app@db/x"),
            ("postgresql://:hunter2@db/x", "postgresql://:•••@db/x"),
            ("postgresql://app:p@ss@db/x", "postgresql://app:•••@db/x"),                  // an unencoded @ in the password
            ("postgresql://app:pa/ss@db/x", "postgresql://app:•••@db/x"),                 // an unencoded / ends the authority early
            ("postgresql://app:12/34@db/x", "postgresql://app:•••@db/x"),                 // … even where app:12 reads as host:port
            ("postgresql://app:pa?ss@db/x", "postgresql://app:•••@db/x"),
            ("postgresql://app:pa#ss@db/x", "postgresql://app:•••@db/x"),
            ("postgresql://db/x?user=app&password=hunter2&sslpassword=k", "postgresql://db/x?user=app&password=•••&sslpassword=•••"),
            ("postgresql://db/x?pass%77ord=hunter2", "postgresql://db/x?pass%77ord=•••"),  // libpq decodes keys
            ("postgresql://db:5432/x?user=me@example.com", "postgresql://db:5432/x?user=me@example.com"),
            ("postgresql://[::1]:5432/x?user=a@b", "postgresql://[::1]:5432/x?user=a@b"),
            ("postgresql://app:${PGPASSWORD}@${PGHOST}/x", "postgresql://app:•••@${PGHOST}/x"),
            ("host=db user=app password=hunter2 dbname=x", "host=db user=app password=••• dbname=x"),
            ("host=db password = 'a b\\' c' dbname=x", "host=db password = ••• dbname=x"),
            ("library.sqlite", "library.sqlite"),
            ("/tmp/my db.sqlite", "/tmp/my db.sqlite"),
            ("file:x.db?mode=ro", "file:x.db?mode=ro"),
            ("", ""),
        ]
        for (text, shown) in cases {
            XCTAssertEqual(DatabaseURL.redacted(text), shown, text)
        }
    }

    func testABackendOutsideTheListIsASchemaViolation() throws {
        try files(["sql/1_a.sql": ""])
        let found = try problems("<manifest version=\"1\">\n  <migrations directory=\"../sql\" backend=\"mysql\"/>\n</manifest>")
        XCTAssertTrue(found.contains { $0.location.line == 2 && $0.message.contains("mysql") }, "\(found)")
        let list = try problems("<manifest version=\"1\">\n  <migrations directory=\"../sql\" backend=\"sqlite postgresql\"/>\n</manifest>")
        XCTAssertTrue(list.contains { $0.location.line == 2 && $0.message.contains("sqlite postgresql") }, "one backend, not a list: \(list)")
    }
}

// MARK: Per-backend migrations

extension ManifestTests {
    /// `sql/` for SQLite, `sql/postgresql/` for PostgreSQL, `shared/` for both, and one SQLite-only file listed on
    /// its own, with a seed after the shared migration and one at the end.
    func twoBackendManifest(seeds: String = #"<seed file="../data/a.csv" table="a" after="003_data.sql"/><seed file="../data/b.csv" table="b"/>"#) throws -> Manifest {
        try files(["sql/001_create.sql": "CREATE TABLE a (x INTEGER);", "sql/postgresql/001_create.sql": "CREATE TABLE a (x integer);",
                   "shared/003_data.sql": "INSERT INTO a VALUES (1);", "extra/002_vacuum.sql": "VACUUM;",
                   "data/a.csv": "x\n1\n", "data/b.csv": "x\n1\n"])
        return try load("""
            <manifest version="1">
              <migrations directory="../sql" backend="sqlite"/>
              <migrations directory="../sql/postgresql" backend="postgresql"/>
              <migrations directory="../shared"/>
              <migrations><migration file="../extra/002_vacuum.sql" transaction="none" backend="sqlite"/></migrations>
              <seeds>\(seeds)</seeds>
            </manifest>
            """)
    }

    func testTheManualsPerBackendExampleLoadsAsItSays() throws {
        let article = "Sources/Strata/Strata.docc/ManifestReference.md"
        let readme = try String(contentsOf: repositoryRoot().appendingPathComponent(article), encoding: .utf8)
        let section = try XCTUnwrap(readme.range(of: "\n## Per-backend migrations\n"), "\(article) lost its per-backend section")
        let start = try XCTUnwrap(readme.range(of: "```xml\n", range: section.upperBound..<readme.endIndex))
        let end = try XCTUnwrap(readme.range(of: "```", range: start.upperBound..<readme.endIndex))
        let xml = String(readme[start.upperBound..<end.lowerBound])
        try files(["sql/001_create.sql": "", "sql/002_vacuum.sql": "", "sql/postgresql/001_create.sql": "",
                   "sql/shared/003_add_genres.sql": "", "csv/genres.csv": "id\n"])
        let manifest = try load(xml)
        XCTAssertEqual(manifest.plan(for: .sqlite).map(\.id), ["001_create.sql", "002_vacuum.sql", "003_add_genres.sql", "genres.csv"])
        XCTAssertEqual(manifest.plan(for: .postgresql).map(\.id), ["001_create.sql", "003_add_genres.sql", "genres.csv"])
        XCTAssertEqual(manifest.migrations.count, 4, "ok: 4 migrations (SQLite 3, PostgreSQL 2), as the manual counts")
        XCTAssertEqual(manifest.validatedBackends, [.sqlite, .postgresql])
        XCTAssertEqual(manifest.databaseSchema, "library")
        let refused = try problems(xml.replacingOccurrences(of: #"after="003_add_genres.sql""#, with: #"after="002_vacuum.sql""#))
        XCTAssertTrue(refused.count == 1 && refused[0].message.hasPrefix(#"after="002_vacuum.sql" names a migration the PostgreSQL plan does not have"#),
                      "\(refused)")
        XCTAssertNoThrow(try load(xml.replacingOccurrences(of: #"after="003_add_genres.sql""#, with: #"after="001_create.sql""#)))
    }

    func testEachBackendHasItsOwnPlan() throws {
        let manifest = try twoBackendManifest()
        XCTAssertEqual(manifest.plan(for: .sqlite).map(\.id), ["001_create.sql", "002_vacuum.sql", "003_data.sql", "a.csv", "b.csv"])
        XCTAssertEqual(manifest.plan(for: .postgresql).map(\.id), ["001_create.sql", "003_data.sql", "a.csv", "b.csv"])
        XCTAssertEqual(manifest.migrations(for: .sqlite).first?.path, root.appendingPathComponent("sql/001_create.sql").path)
        XCTAssertEqual(manifest.migrations(for: .postgresql).first?.path, root.appendingPathComponent("sql/postgresql/001_create.sql").path)
        XCTAssertEqual(manifest.migrations.map(\.id), ["001_create.sql", "001_create.sql", "002_vacuum.sql", "003_data.sql"],
                       "every backend's migrations, each once")
        XCTAssertEqual(manifest.migrations.map(\.backends), [[.sqlite], [.postgresql], [.sqlite], nil])
        XCTAssertEqual(manifest.backends, [.sqlite, .postgresql])
        XCTAssertEqual(manifest.validatedBackends, [.sqlite, .postgresql])
        XCTAssertEqual(manifest.migrationDirectories.map(\.backend), [.sqlite, .postgresql, nil])
    }

    func testAnUnmarkedManifestHasTheSamePlanOnEveryBackend() throws {
        try files(["sql/1_a.sql": "", "sql/2_b.sql": ""])
        let manifest = try load(#"<manifest version="1"><database path="x.sqlite"/><migrations directory="../sql"/></manifest>"#)
        XCTAssertEqual(manifest.plan(for: .sqlite), manifest.plan(for: .postgresql))
        XCTAssertEqual(manifest.migrations.map(\.backends), [nil, nil])
        XCTAssertEqual(manifest.backends, Set(DatabaseBackend.allCases))
        XCTAssertEqual(manifest.validatedBackends, [.sqlite], "validate checks the backend the manifest names")
        let postgres = try load(#"<manifest version="1"><database url="postgresql://db/x"/><migrations directory="../sql"/></manifest>"#)
        XCTAssertEqual(postgres.validatedBackends, [.postgresql])
        XCTAssertEqual(try load(#"<manifest version="1"><migrations directory="../sql"/></manifest>"#).validatedBackends, [.sqlite],
                       "naming none, the default backend")
    }

    func testTheSameNameInTwoBackendsIsFineButTwiceInOnePlanIsAProblem() throws {
        try files(["sql/001_create.sql": "", "sql/postgresql/001_create.sql": "", "pg2/001_create.sql": ""])
        let unmarked = try problem("""
            <manifest version="1">
              <migrations directory="../sql"/>
              <migrations directory="../sql/postgresql" backend="postgresql"/>
            </manifest>
            """, line: 3)
        XCTAssertEqual(unmarked, "migration file name '001_create.sql' is used twice in the PostgreSQL plan (\(root.path)/sql/001_create.sql and \(root.path)/sql/postgresql/001_create.sql); a migration's file name is its identity (give one an id=\"…\"); \(root.path)/sql/001_create.sql has no backend=\"…\", so it is in every backend's plan: if it is another backend's version, mark it (or its <migrations>) backend=\"sqlite\"")
        let bothPostgres = try problem("""
            <manifest version="1">
              <migrations directory="../sql/postgresql" backend="postgresql"/>
              <migrations backend="postgresql"><migration file="../pg2/001_create.sql" id="001_create.sql"/></migrations>
            </manifest>
            """, line: 3)
        XCTAssertTrue(bothPostgres.hasPrefix("migration file name '001_create.sql' is used twice in the PostgreSQL plan"), bothPostgres)
        // Two unmarked clashes are reported once, not once per backend, and worded as before.
        let twice = try problems("""
            <manifest version="1">
              <migrations directory="../sql"/>
              <migrations directory="../pg2"/>
            </manifest>
            """)
        XCTAssertEqual(twice.map(\.message), ["migration file name '001_create.sql' is used twice (\(root.path)/sql/001_create.sql and \(root.path)/pg2/001_create.sql); a migration's file name is its identity (give one an id=\"…\")"])
    }

    func testAMigrationMayNarrowItsMigrationsBackendButNotChangeIt() throws {
        try files(["sql/1_a.sql": "", "sql/2_b.sql": ""])
        XCTAssertEqual(try problem("""
            <manifest version="1">
              <migrations directory="../sql" backend="postgresql">
                <migration file="2_b.sql" backend="sqlite"/>
              </migrations>
            </manifest>
            """, line: 3),
            #"migration '2_b.sql' is marked backend="sqlite" inside <migrations backend="postgresql"> (line 2); a <migration> may narrow its <migrations>' backend, not change it: list it in a <migrations> of its own"#)
        let narrowed = try load("""
            <manifest version="1">
              <migrations directory="../sql"><migration file="2_b.sql" backend="sqlite"/></migrations>
            </manifest>
            """)
        XCTAssertEqual(narrowed.plan(for: .sqlite).map(\.id), ["1_a.sql", "2_b.sql"])
        XCTAssertEqual(narrowed.plan(for: .postgresql).map(\.id), ["1_a.sql"])
        let same = try load("""
            <manifest version="1">
              <migrations directory="../sql" backend="sqlite"><migration file="2_b.sql" backend="sqlite" transaction="none"/></migrations>
            </manifest>
            """)
        XCTAssertEqual(same.migrations(for: .sqlite).map(\.runsInTransaction), [true, false])
        XCTAssertEqual(same.plan(for: .postgresql), [])
    }

    func testASeedAfterAMigrationOnlyOneBackendHasIsAProblem() throws {
        let seeds = "\n    <seed file=\"../data/a.csv\" table=\"a\" after=\"002_vacuum.sql\"/>\n  "
        let found = assertThrows(ManifestError.self) { try self.twoBackendManifest(seeds: seeds) }
        XCTAssertEqual(found?.problems.map(\.description), [
            "\(manifestPath):7: after=\"002_vacuum.sql\" names a migration the PostgreSQL plan does not have (it is marked backend=\"sqlite\" at \(manifestPath):5); a seed runs on every backend the manifest has migrations for, so name a migration in every backend's plan (an unmarked one, or a name each backend's migrations have)",
        ])
    }

    func testASeedAfterANameEachBackendHasRunsAfterEachBackendsOwn() throws {
        let manifest = try twoBackendManifest(seeds: #"<seed file="../data/a.csv" table="a" after="001_create.sql"/>"#)
        XCTAssertEqual(manifest.plan(for: .sqlite).map(\.id), ["001_create.sql", "a.csv", "002_vacuum.sql", "003_data.sql"])
        XCTAssertEqual(manifest.plan(for: .postgresql).map(\.id), ["001_create.sql", "a.csv", "003_data.sql"])
    }

    func testASeedMayFollowAMarkedMigrationWhenThatBackendIsTheOnlyOneWithMigrations() throws {
        try files(["sql/1_a.sql": "", "sql/2_b.sql": "", "data/a.csv": "x\n", "data/b.csv": "x\n"])
        let manifest = try load("""
            <manifest version="1">
              <migrations directory="../sql" backend="sqlite"/>
              <seeds><seed file="../data/a.csv" table="a" after="1_a.sql"/><seed file="../data/b.csv" table="b"/></seeds>
            </manifest>
            """)
        XCTAssertEqual(manifest.backends, [.sqlite])
        XCTAssertEqual(manifest.plan(for: .sqlite).map(\.id), ["1_a.sql", "a.csv", "2_b.sql", "b.csv"])
        XCTAssertEqual(manifest.plan(for: .postgresql).map(\.id), ["a.csv", "b.csv"],
                       "a backend without migrations has only the seeds (and Migrator refuses it)")
        let unknown = try problems("""
            <manifest version="1">
              <migrations directory="../sql" backend="sqlite"/>
              <seeds><seed file="../data/a.csv" table="a" after="9_z.sql"/></seeds>
            </manifest>
            """)
        XCTAssertEqual(unknown.map(\.message), [#"after="9_z.sql" names no migration of this manifest"#])
    }

    func testMigratorRunsOnlyItsBackendsMigrations() throws {
        try files(["sql/1_a.sql": "CREATE TABLE a (x INTEGER);",
                   "sql/postgresql/1_a.sql": "CREATE TABLE a (x integer GENERATED ALWAYS AS IDENTITY); CREATE EXTENSION pgcrypto;",
                   "sql/postgresql/2_pg_only.sql": "BEGIN; COMMIT;"])
        let manifest = try load("""
            <manifest version="1">
              <migrations directory="../sql" backend="sqlite"/>
              <migrations directory="../sql/postgresql" backend="postgresql"/>
            </manifest>
            """)
        let migrator = Migrator(manifest: manifest, database: try Database(path: root.appendingPathComponent("db.sqlite").path))
        XCTAssertEqual(migrator.lint(), [], "PostgreSQL's files are not SQLite's to lint")
        let report = try migrator.migrate()
        XCTAssertNil(report.failure)
        XCTAssertEqual(report.applied.map(\.id), ["1_a.sql"])
        XCTAssertEqual(try migrator.status().map(\.id), ["1_a.sql"])
        XCTAssertEqual(try migrator.sqlite.rows("SELECT identity, checksum FROM strata_history").map { try $0.get(0, as: String.self) }, ["1_a.sql"])
    }

    func testMigratorRefusesABackendTheManifestHasNoMigrationsFor() throws {
        try files(["sql/postgresql/1_a.sql": "CREATE TABLE a (x integer);"])
        let manifest = try load(#"<manifest version="1"><migrations directory="../sql/postgresql" backend="postgresql"/></manifest>"#)
        let migrator = Migrator(manifest: manifest, database: try Database(path: root.appendingPathComponent("db.sqlite").path))
        let refusals = try migrator.plan().refusals
        XCTAssertEqual(refusals.map(\.reason), [.backend])
        XCTAssertEqual(refusals.first?.message, "\(manifestPath) has no migrations for SQLite: every migration is marked for PostgreSQL; point --database at a PostgreSQL database, or add migrations for SQLite")
        let error = assertThrows(MigrationError.self) { try migrator.migrate() }
        XCTAssertEqual(error, .refused(refusals))
        XCTAssertFalse(try migrator.sqlite.tableExists("strata_history"), "nothing written")
    }

    func testValidateLintsEachBackendWithItsDialect() throws {
        try files(["sql/1_a.sql": "BEGIN; CREATE TABLE a (x); COMMIT;", "sql/postgresql/1_a.sql": "BEGIN; COMMIT;"])
        let manifest = try load("""
            <manifest version="1">
              <migrations directory="../sql" backend="sqlite"/>
              <migrations directory="../sql/postgresql" backend="postgresql"/>
            </manifest>
            """)
        let (problems, warnings) = Migrator.lint(manifest, dialect: DatabaseTargets.dialect(for:))
        XCTAssertEqual(problems.map(\.location.path),
                       ["sql/1_a.sql", "sql/1_a.sql", "sql/postgresql/1_a.sql", "sql/postgresql/1_a.sql"].map { displayPath($0.prefixed(by: root)) },
                       "each file, twice (BEGIN and COMMIT), by its own backend's lint: \(problems)")
        XCTAssertEqual(warnings, [])
        let unmarked = try load(#"<manifest version="1"><migrations directory="../sql"/></manifest>"#)
        let (once, quiet) = Migrator.lint(unmarked) { _ in SQLiteDialect() }
        XCTAssertEqual(once.count, 2, "an unmarked SQLite manifest is linted as SQLite only: \(once)")
        XCTAssertEqual(quiet, [])
    }

    func testNewCreatesTheFileInTheDirectoryForTheBackendAskedFor() throws {
        let manifest = try twoBackendManifest(seeds: "")
        XCTAssertEqual(try MigrationFile.directory(for: .postgresql, in: manifest).path, root.appendingPathComponent("sql/postgresql").path)
        XCTAssertEqual(try MigrationFile.directory(for: .sqlite, in: manifest).path, root.appendingPathComponent("sql").path)
        // Unmarked: the shared directory, numbered after every backend's migrations.
        let shared = try MigrationFile.create(named: "add index", in: manifest)
        XCTAssertEqual(shared, root.appendingPathComponent("shared/004_add_index.sql").path)
        // Marked: numbered after its backend's plan only.
        let postgres = try MigrationFile.create(named: "add index", in: try Manifest.load(path: manifestPath), backend: .postgresql)
        XCTAssertEqual(postgres, root.appendingPathComponent("sql/postgresql/005_add_index.sql").path)

        try files(["m/two.xml": """
            <manifest version="1">
              <migrations directory="../sql" backend="sqlite"/>
              <migrations directory="../sql/postgresql" backend="postgresql"/>
            </manifest>
            """])
        let two = try Manifest.load(path: root.appendingPathComponent("m/two.xml").path)
        let ambiguous = assertThrows(MigrationError.self) { try MigrationFile.create(named: "x", in: two) }
        XCTAssertEqual(ambiguous?.description, "the manifest has migrations directories for several backends (sqlite: \(displayPath(root.appendingPathComponent("sql").path)), postgresql: \(displayPath(root.appendingPathComponent("sql/postgresql").path))); say which with --backend")
        try files(["m/one.xml": #"<manifest version="1"><migrations directory="../sql/postgresql" backend="postgresql"/></manifest>"#])
        let one = try Manifest.load(path: root.appendingPathComponent("m/one.xml").path)
        XCTAssertEqual(try MigrationFile.directory(for: nil, in: one).backend, .postgresql, "one backend's directories: no question to ask")
        let none = assertThrows(MigrationError.self) { try MigrationFile.directory(for: .sqlite, in: one) }
        XCTAssertEqual(none?.description, "the manifest has no <migrations directory=\"…\"> for SQLite (nor an unmarked one); its directories are for PostgreSQL")
    }
}

private extension String {
    func prefixed(by root: URL) -> String { root.appendingPathComponent(self).path }
}

// MARK: Connection strings where a SQLite path belongs

extension ManifestTests {
    /// `<database path>` holding a connection string would name a file next to the manifest, created on `migrate`.
    func testAConnectionStringInPathIsRefusedWithoutItsPassword() throws {
        for value in ["host=127.0.0.1 port=54330 user=postgres password=secretpw dbname=postgres",
                      "postgresql://postgres:secretpw@h/db", "PostgreSQL://postgres:secretpw@h/db", "mysql://u:secretpw@h/db"] {
            let found = try problems(#"<manifest version="1"><database path="\#(value)"/></manifest>"#)
            XCTAssertEqual(found.count, 1, "\(value): \(found)")
            XCTAssertTrue(found.allSatisfy { $0.message.contains("not a SQLite file path") && !$0.message.contains("secretpw") }, "\(found)")
        }
        let both = try problems(#"<manifest version="1"><database path="file:x.db?password=secretpw" url="postgresql://db/x"/></manifest>"#)
        XCTAssertFalse(both.contains { $0.message.contains("secretpw") }, "\(both)")
        XCTAssertEqual(try load(#"<manifest version="1"><database path="./app=v2.db"/></manifest>"#).databaseBackend, .sqlite,
                       "a path whose first word is not name= is a path")
    }
}
