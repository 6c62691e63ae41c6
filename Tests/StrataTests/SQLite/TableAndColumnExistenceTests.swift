import Foundation
import XCTest
@testable import StrataCore
@testable import StrataSQLite

/// `tableExists(_:)` and `columnExists(_:in:)`: names as SQLite compares them, views, and schema-qualified names.
final class TableAndColumnExistenceTests: XCTestCase {
    func testTablesAndViewsExistWhateverTheCaseOfTheirName() throws {
        let db = try Database()
        try db.executeScript("CREATE TABLE Books (id INTEGER PRIMARY KEY); CREATE VIEW recent AS SELECT id FROM Books;")
        XCTAssertTrue(try db.tableExists("books"))
        XCTAssertTrue(try db.tableExists("BOOKS"))
        XCTAssertTrue(try db.tableExists("recent"), "a view counts as a table")
        XCTAssertFalse(try db.tableExists("authors"))
        try db.execute("CREATE INDEX books_id ON Books (id)")
        XCTAssertFalse(try db.tableExists("books_id"), "an index is not a table")
    }

    func testAPlainNameLooksInMainOnlyAndAQualifiedOneInItsSchema() throws {
        let dir = try makeTemporaryDirectory(self)
        let other = dir.appendingPathComponent("other.sqlite").path
        try Database(path: other).execute("CREATE TABLE archived (id, title)")
        let db = try Database()
        try db.execute("CREATE TEMP TABLE scratch (x)")
        try db.execute("ATTACH DATABASE ? AS Aux", [other])
        XCTAssertFalse(try db.tableExists("scratch"), "a temporary table is not in main")
        XCTAssertTrue(try db.tableExists("temp.scratch"))
        XCTAssertTrue(try db.tableExists("TEMP.SCRATCH"))
        XCTAssertFalse(try db.tableExists("archived"))
        XCTAssertTrue(try db.tableExists("aux.archived"), "schema names compare case-insensitively too")
        XCTAssertFalse(try db.tableExists("main.archived"))
        XCTAssertFalse(try db.tableExists("aux.scratch"))
        XCTAssertTrue(try db.columnExists("TITLE", in: "aux.archived"))
        XCTAssertFalse(try db.columnExists("title", in: "archived"), "the plain name is main's, which has no such table")
        XCTAssertTrue(try db.columnExists("x", in: "temp.scratch"))
    }

    func testANameWithADotThatIsNoSchemaIsTakenWhole() throws {
        let db = try Database()
        try db.execute(#"CREATE TABLE "v1.books" (id)"#)
        XCTAssertTrue(try db.tableExists("v1.books"))
        XCTAssertTrue(try db.columnExists("id", in: "v1.books"))
        XCTAssertFalse(try db.tableExists("v2.books"))
    }

    func testColumnsExistCaseInsensitivelyAndGeneratedOnesCount() throws {
        let db = try Database()
        try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, Name TEXT, upper_name TEXT AS (upper(Name)))")
        XCTAssertTrue(try db.columnExists("name", in: "t"))
        XCTAssertTrue(try db.columnExists("NAME", in: "T"))
        XCTAssertTrue(try db.columnExists("upper_name", in: "t"), "a generated column is a column")
        XCTAssertFalse(try db.columnExists("rowid", in: "t"), "the implicit rowid is not a declared column")
        XCTAssertFalse(try db.columnExists("email", in: "t"))
        XCTAssertFalse(try db.columnExists("id", in: "missing"), "no table, no column")
        try db.execute("CREATE VIEW v AS SELECT Name AS label FROM t")
        XCTAssertTrue(try db.columnExists("label", in: "v"))
    }

    func testAClosedConnectionThrowsInsteadOfAnsweringNo() throws {
        let db = try Database()
        db.close()
        XCTAssertEqual(assertThrows(DatabaseError.self) { try db.tableExists("t") }?.kind, .misuse)
        XCTAssertEqual(assertThrows(DatabaseError.self) { try db.columnExists("x", in: "t") }?.kind, .misuse)
        XCTAssertEqual(assertThrows(DatabaseError.self) { try db.tableExists("temp.t") }?.kind, .misuse)
    }
}
