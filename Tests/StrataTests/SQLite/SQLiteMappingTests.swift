import Foundation
import XCTest
import Strata
@testable import StrataCore
@testable import StrataSQLite

/// The mapper where SQLite's own rules decide: conflict clauses a table declares, type affinity, and the
/// repository's example project (written in SQLite's SQL). The mapper on every backend is `MappingTests`.
final class SQLiteMappingTests: XCTestCase {
    func database(_ schema: String) throws -> Database {
        let db = try Database()
        try db.executeScript(schema)
        return db
    }

    func testTheExampleManifestsModelMapping() throws {
        let dir = try makeTemporaryDirectory(self)
        let manifest = try Manifest.load(path: repositoryRoot().appendingPathComponent("manifests/example.xml").path)
        let db = try Database(path: dir.appendingPathComponent("library.sqlite").path)
        XCTAssertNil(try Migrator(manifest: manifest, database: db).migrate().failure)
        struct Book: Codable { var isbn: String; var title: String; var publishedOn: Date?; var inPrint: Bool; var copies: Int }
        let store = ModelStore(database: db, manifest: manifest)
        var books = try store.fetchAll(Book.self, where: "author_id = :author ORDER BY isbn", ["author": 1])
        XCTAssertEqual(books.map(\.title), ["The Dispossessed", "A Wizard of Earthsea"])
        XCTAssertEqual(books[1].publishedOn.map(ISO8601.format), "1968-11-01T00:00:00Z")
        books[1].copies = 7
        try store.save(books[1])
        XCTAssertEqual(try store.find(Book.self, key: books[1].isbn)?.copies, 7)
        XCTAssertEqual(try checkModels(of: manifest, in: db), [])
    }

    struct Author: Codable, Equatable { var id: Int64?; var email: String; var name: String }
    struct Tag: Codable, Equatable { var id: Int64; var name: String }

    func testTableLevelConflictClausesNeverTurnAWriteIntoADeletionOrASkip() throws {
        // REPLACE on a constraint would make insert, update and save delete the other row (and its books, by
        // cascade); IGNORE would make them do nothing without a word.
        let db = try database("""
            CREATE TABLE author (id INTEGER PRIMARY KEY, email TEXT UNIQUE ON CONFLICT REPLACE, name TEXT);
            CREATE TABLE book (id INTEGER PRIMARY KEY, author_id INTEGER REFERENCES author(id) ON DELETE CASCADE);
            CREATE TABLE tag (id INTEGER PRIMARY KEY ON CONFLICT REPLACE, name TEXT UNIQUE ON CONFLICT IGNORE);
            INSERT INTO author VALUES (1, 'ann@x', 'Ann'), (2, 'bo@x', 'Bo');
            INSERT INTO book VALUES (10, 1), (20, 2);
            INSERT INTO tag VALUES (1, 'red'), (2, 'blue');
            """)
        let store = ModelStore(database: db)
        let authors = [Author(id: 1, email: "ann@x", name: "Ann"), Author(id: 2, email: "bo@x", name: "Bo")]
        let tags = [Tag(id: 1, name: "red"), Tag(id: 2, name: "blue")]
        let writes: [(String, () throws -> Void)] = [
            ("insert", { try store.insert(Author(id: nil, email: "ann@x", name: "Ann Two")) }),
            ("update", { try store.update(Author(id: 2, email: "ann@x", name: "Bo")) }),
            ("save", { try store.save(Author(id: 2, email: "ann@x", name: "Bo")) }),
            ("save new", { try store.save(Author(id: 3, email: "ann@x", name: "Cy")) }),
            ("insert contentsOf", { try store.insert(contentsOf: [Author(id: 3, email: "ann@x", name: "Cy")]) }),
            ("save contentsOf", { try store.save(contentsOf: [Author(id: 3, email: "ann@x", name: "Cy")]) }),
            ("insert tag", { try store.insert(Tag(id: 1, name: "green")) }),
            ("insert tag name", { try store.insert(Tag(id: 3, name: "red")) }),
            ("update tag", { try store.update(Tag(id: 2, name: "red")) }),
            ("save tag", { try store.save(Tag(id: 2, name: "red")) }),
        ]
        for (label, write) in writes {
            do {
                try write()
                XCTFail("\(label): no error")
            } catch {
                XCTAssertTrue("\(error)".contains("UNIQUE constraint failed"), "\(label): \(error)")
            }
            XCTAssertEqual(try store.fetchAll(Author.self, sql: "SELECT * FROM author ORDER BY id"), authors, label)
            XCTAssertEqual(try store.fetchAll(Tag.self, sql: "SELECT * FROM tag ORDER BY id"), tags, label)
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM book", as: Int.self), 2, label)
        }
        // Writes that conflict with nothing still work.
        try store.save(Author(id: 2, email: "bo@y", name: "Bo"))
        try store.update(Tag(id: 2, name: "navy"))
        XCTAssertEqual(try db.scalar("SELECT group_concat(email) FROM author", as: String.self), "ann@x,bo@y")
        XCTAssertEqual(try db.scalar("SELECT name FROM tag WHERE id = 2", as: String.self), "navy")
    }

    /// Split from `MappingTests.testValuesThatWouldChangeOnTheWayInOrOutAreErrors`: affinity is SQLite's.
    func testADecimalColumnOfNumericAffinityIsAMismatchForDecimal() throws {
        let db = try Database()
        struct P: Codable { var id: Int; var amount: Decimal }
        try db.executeScript("CREATE TABLE p (id INTEGER PRIMARY KEY, amount TEXT NOT NULL); CREATE TABLE money (id INTEGER PRIMARY KEY, amount DECIMAL(20,4) NOT NULL);")
        XCTAssertEqual(try ModelStore(database: db).check(P.self).count, 0)
        let mismatches = try ModelStore(database: db, manifest: try Manifest.load(xml: """
            <manifest version="1"><models><model type="P" table="money"/></models></manifest>
            """, path: "m.xml", directory: NSTemporaryDirectory())).check(P.self)
        XCTAssertEqual(mismatches.count, 1, "a DECIMAL(p,s) column has NUMERIC affinity, which rounds decimal text")
    }
}
