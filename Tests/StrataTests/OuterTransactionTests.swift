import Foundation
import XCTest
import Strata
@testable import StrataCore

/// A file wrapped in its own outer `BEGIN; … COMMIT;` (issue 29): under a declared format it runs as the step's one
/// transaction, its history row inside it, checksum that of the file as written; only the exact outer pair is
/// taken, found by each dialect's lexer, and anything else that starts or ends a transaction stays refused.
final class OuterTransactionTests: XCTestCase {
    static let wrapped = "BEGIN;\nCREATE TABLE a (x INTEGER);\nINSERT INTO a VALUES (1);\nCOMMIT;\n"

    func project(_ backend: TestBackend, format: String? = "golang-migrate", up: String, down: String = "BEGIN;\nDROP TABLE a;\nCOMMIT;\n") throws -> Project {
        let attribute = format.map { " format=\"\($0)\"" } ?? ""
        let name = format == nil ? "1_a.sql" : "1_a.up.sql"
        var files = ["sql/\(name)": up]
        if format != nil { files["sql/1_a.down.sql"] = down }
        return try Project(self, backend: backend, manifestBody: #"<migrations directory="sql"\#(attribute)/>"#, files: files)
    }

    func testAnOuterPairRunsAsTheStepsTransactionAndItsDownToo() throws {
        try forEachBackend { backend in
            let project = try project(backend, up: "-- users\n" + Self.wrapped.replacingOccurrences(of: "COMMIT;", with: "  commit ;"))
            XCTAssertEqual(try project.migrator().lint(), [])
            let report = try project.migrator().migrate()
            XCTAssertNil(report.failure, "\(String(describing: report.failure))")
            let db = try project.connection()
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM a", .none, as: Int.self), 1)
            let record = try XCTUnwrap(try db.history.all().first { $0.identity == "1_a.up.sql" })
            let path = project.root.appendingPathComponent("sql/1_a.up.sql").path
            XCTAssertEqual(record.checksum, try Checksum.ofFile(atPath: path, content: .sql, version: record.checksumVersion),
                           "the checksum of the file as written")
            XCTAssertNil(try project.migrator().rollback(.steps(1)).failure)
            XCTAssertFalse(try db.schemaSnapshot().tables.contains { $0.name.hasSuffix("a") && !$0.name.hasSuffix("strata_history") })
        }
    }

    /// All or nothing: a failing statement inside the pair rolls the whole step back, the statements before it too.
    func testAFailureInsideThePairLeavesNothing() throws {
        try forEachBackend { backend in
            let project = try project(backend, up: "BEGIN;\nCREATE TABLE a (x INTEGER);\nINSERT INTO no_such_table VALUES (1);\nCOMMIT;\n")
            let report = try project.migrator().migrate()
            let failure = try XCTUnwrap(report.failure)
            XCTAssertEqual(failure.line, 3, "the file's own line")
            XCTAssertEqual(failure.aftermath, .rolledBack)
            XCTAssertFalse(try project.connection().schemaSnapshot().tables.contains { $0.name.hasSuffix("a") && !$0.name.hasSuffix("strata_history") })
        }
    }

    /// What is not exactly one outer pair stays refused: without a declared format, a pair with options, a second
    /// COMMIT inside, a pair that does not close the file, or BEGIN only in a comment or string.
    func testAnythingButTheExactOuterPairStaysRefused() throws {
        try forEachBackend { backend in
            var cases: [(String?, String)] = [
                (nil, Self.wrapped),
                ("golang-migrate", "BEGIN;\nCREATE TABLE a (x INTEGER);\nCOMMIT;\nBEGIN;\nCREATE TABLE b (x INTEGER);\nCOMMIT;\n"),
                ("golang-migrate", "BEGIN;\nCREATE TABLE a (x INTEGER);\nCOMMIT;\nCREATE TABLE b (x INTEGER);\n"),
                ("golang-migrate", "-- BEGIN;\nCREATE TABLE a (x TEXT DEFAULT 'BEGIN;');\nCOMMIT;\n"),
            ]
            cases.append(("golang-migrate", backend.kind == .sqlite ? "BEGIN IMMEDIATE;\nCREATE TABLE a (x INTEGER);\nCOMMIT;\n"
                          : "BEGIN ISOLATION LEVEL SERIALIZABLE;\nCREATE TABLE a (x INTEGER);\nCOMMIT;\n"))
            if backend.kind == .postgres {
                cases.append(("golang-migrate", "DO $$ BEGIN PERFORM 1; END $$;\nCREATE TABLE a (x INTEGER);\nCOMMIT;\n"))
            }
            for (format, up) in cases {
                let project = try project(backend, format: format, up: up)
                let found = try project.migrator().lint()
                XCTAssertFalse(found.isEmpty, "\(format ?? "plain"): \(up)")
                XCTAssertTrue(found.contains { $0.message.contains("COMMIT") || $0.message.contains("BEGIN") }, "\(found)")
            }
        }
    }

    func testTheLexersFindTheStatementsOfEachDialect() throws {
        let text = Array("BEGIN;\n/* BEGIN; */ SELECT 'a;b';\nCOMMIT".utf8)
        for backend in DatabaseBackend.allCases {
            let ranges = try XCTUnwrap(OuterTransaction.statements(text, backend: backend))
            XCTAssertEqual(ranges.map { String(decoding: text[$0], as: UTF8.self) }, ["BEGIN;", "SELECT 'a;b';", "COMMIT"], "\(backend)")
            let unwrapped = try XCTUnwrap(OuterTransaction.unwrapped(text, backend: backend))
            XCTAssertEqual(unwrapped.count, text.count, "lines and columns stay the file's")
            XCTAssertEqual(String(decoding: unwrapped, as: UTF8.self), "      \n/* BEGIN; */ SELECT 'a;b';\n      ")
        }
        XCTAssertNil(OuterTransaction.unwrapped(Array("BEGIN;\nSELECT $$;\nCOMMIT;".utf8), backend: .postgresql), "unterminated")
    }
}
