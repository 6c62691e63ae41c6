import Foundation
import XCTest
import Strata

/// The README's model example, run as written (in a temporary copy of the database).
final class ReadmeExampleTests: XCTestCase {
    struct Book: Codable {
        var isbn: String
        var title: String
        var authorId: Int
        var publishedOn: Date?
        var inPrint: Bool
        var copies: Int
    }

    func testTheReadmeModelExample() throws {
        let dir = try makeTemporaryDirectory(self)
        let manifest = try Manifest.load(path: repositoryRoot().appendingPathComponent("manifests/example.xml").path)
        let db = try Database(path: dir.appendingPathComponent("library.sqlite").path)
        var titles: [String] = []
        if let failure = try Migrator(manifest: manifest, database: db).migrate().failure {
            XCTFail("migration failed: \(failure)")
        } else {
            let store = ModelStore(database: db, manifest: manifest)
            let byLeGuin = try store.fetchAll(Book.self, where: "author_id = ? ORDER BY published_on", [1])
            if var book = try store.find(Book.self, key: "9780547773742") {
                book.copies += 1
                try store.save(book)
            }
            titles = byLeGuin.map(\.title)
            XCTAssertEqual(try store.count(Book.self, where: "in_print = :flag", ["flag": true]), 4)
        }
        XCTAssertEqual(titles, ["A Wizard of Earthsea", "The Dispossessed"])
        XCTAssertEqual(try db.scalar("SELECT copies FROM books WHERE isbn = '9780547773742'", as: Int.self), 4)
    }
}
