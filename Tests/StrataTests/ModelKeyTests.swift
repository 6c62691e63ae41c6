import Foundation
import Strata
@testable import StrataCore
import XCTest

/// What identifies a row to the mapper: a key that is not unique in the table would make one `save`, `update` or
/// `delete` change every row sharing its value.
final class ModelKeyTests: XCTestCase {
    struct Copy: Codable, Equatable {
        var title: String
        var shelf: String
    }

    func testAKeyThatIsNotUniqueInTheTableIsRefusedBeforeAnyRowChanges() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, files: [:])
            let db = try project.connection()
            try db.execute("CREATE TABLE copies (title TEXT NOT NULL, shelf TEXT NOT NULL)")
            try db.execute("INSERT INTO copies (title, shelf) VALUES ('Dune', 'a'), ('Dune', 'b'), ('Emma', 'c')")
            let manifest = try Manifest.load(path: try write(project, """
                <manifest version="1"><models><model type="Copy" table="copies" primaryKey="title"/></models></manifest>
                """))
            let store = ModelStore(database: db, manifest: manifest)
            for (name, write) in [("save", { try store.save(Copy(title: "Dune", shelf: "z")) }),
                                  ("update", { try store.update(Copy(title: "Dune", shelf: "z")) }),
                                  ("delete", { _ = try store.delete(Copy(title: "Dune", shelf: "a")) })] as [(String, () throws -> Void)] {
                let error = assertThrows(MappingError.self, write)
                XCTAssertTrue(error?.message.contains("not unique in table 'copies'") ?? false, "\(name): \(String(describing: error))")
            }
            XCTAssertEqual(try db.rows("SELECT shelf FROM copies ORDER BY shelf").map { $0[0] },
                           [.text("a"), .text("b"), .text("c")], "no row changed")
            let problems = try checkModels(of: manifest, in: db)
            XCTAssertTrue(problems.contains { $0.message.contains("primary key (title) is not unique in table 'copies'") },
                          "\(problems)")
        }
    }

    func testAKeyMatchingAUniqueIndexOrThePrimaryKeyIsAccepted() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, files: [:])
            let db = try project.connection()
            try db.execute("CREATE TABLE copies (id INTEGER PRIMARY KEY, title TEXT NOT NULL, shelf TEXT NOT NULL)")
            try db.execute("CREATE UNIQUE INDEX copies_title_shelf ON copies (shelf, title)")
            try db.execute("INSERT INTO copies (id, title, shelf) VALUES (1, 'Dune', 'a'), (2, 'Dune', 'b')")
            let manifest = try Manifest.load(path: try write(project, """
                <manifest version="1"><models><model type="Copy" table="copies" primaryKey="title, shelf"/></models></manifest>
                """))
            let store = ModelStore(database: db, manifest: manifest)
            try store.save(Copy(title: "Dune", shelf: "b"))
            XCTAssertTrue(try store.delete(Copy(title: "Dune", shelf: "a")))
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM copies", as: Int.self), 1)
            XCTAssertEqual(try checkModels(of: manifest, in: db), [])
        }
    }

    private func write(_ project: Project, _ manifest: String) throws -> String {
        try project.file("models.xml", manifest)
        return project.root.appendingPathComponent("models.xml").path
    }
}
