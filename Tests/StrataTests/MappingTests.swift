import Foundation
import XCTest
import Strata
@testable import StrataCore
@testable import StrataSQLite

enum Genre: String, Codable, CaseIterable { case fiction, poetry }
enum Priority: Int, Codable { case low = 1, high = 2 }
struct Dimensions: Codable, Equatable { var width: Double; var height: Double; var tags: [String] }

struct Everything: Codable, Equatable {
    var id: Int64?
    var int: Int, int8: Int8, int16: Int16, int32: Int32, int64: Int64
    var uint: UInt, uint8: UInt8, uint16: UInt16, uint32: UInt32, uint64: UInt64
    var double: Double, float: Float, bool: Bool, string: String, data: Data
    var date: Date, uuid: UUID, url: URL, decimal: Decimal
    var genre: Genre, priority: Priority, dimensions: Dimensions
    var optionalInt: Int?, optionalString: String?, optionalDate: Date?, optionalGenre: Genre?, optionalDimensions: Dimensions?
}

struct Book: Codable, Equatable {
    var isbn: String
    var title: String
    var authorId: Int
    var publishedOn: String?
    var inPrint: Bool
}

final class Member: Codable {
    var id: Int64?
    var name: String
    var joinedAt: Date
    init(id: Int64? = nil, name: String, joinedAt: Date) { self.id = id; self.name = name; self.joinedAt = joinedAt }
}

struct Edition: Codable, Equatable {
    var isbn: String
    var number: Int
    var note: String?
}

/// Not Encodable: written through Mirror.
struct Visit {
    var id: Int64?
    var memberName: String
    var at: Date
    var priority: Priority
    var notes: String?
}

final class MappingTests: XCTestCase {
    func database(_ schema: String) throws -> Database {
        let db = try Database()
        try db.executeScript(schema)
        return db
    }

    static let everythingSchema = """
        CREATE TABLE everything (
            id INTEGER PRIMARY KEY, int INTEGER NOT NULL, int8 INTEGER NOT NULL, int16 INTEGER NOT NULL,
            int32 INTEGER NOT NULL, int64 INTEGER NOT NULL, uint INTEGER NOT NULL, uint8 INTEGER NOT NULL,
            uint16 INTEGER NOT NULL, uint32 INTEGER NOT NULL, uint64 INTEGER NOT NULL, double REAL NOT NULL,
            float REAL NOT NULL, bool BOOLEAN NOT NULL, string TEXT NOT NULL, data BLOB NOT NULL, date TEXT NOT NULL,
            uuid TEXT NOT NULL, url TEXT NOT NULL, decimal TEXT NOT NULL, genre TEXT NOT NULL, priority INTEGER NOT NULL,
            dimensions TEXT NOT NULL, optional_int INTEGER, optional_string TEXT, optional_date TEXT,
            optional_genre TEXT, optional_dimensions TEXT);
        """

    func sample() -> Everything {
        Everything(id: nil, int: -5, int8: -8, int16: 16, int32: 32, int64: .min, uint: 7, uint8: 255, uint16: 16, uint32: 32,
                   uint64: UInt64(Int64.max), double: 2.5, float: 1.25, bool: true, string: "héllo; 'quoted'",
                   data: Data([0, 1, 255]), date: Date(timeIntervalSince1970: 1_700_000_000.5), uuid: UUID(),
                   url: URL(string: "https://example.org/a?b=c")!, decimal: Decimal(string: "12345.6789")!,
                   genre: .poetry, priority: .high, dimensions: Dimensions(width: 1.5, height: 2, tags: ["a", "b"]),
                   optionalInt: nil, optionalString: "x", optionalDate: nil, optionalGenre: .fiction, optionalDimensions: nil)
    }

    func testEverySupportedTypeRoundTrips() throws {
        let store = ModelStore(database: try database(Self.everythingSchema))
        var value = sample()
        value.id = try store.insert(value)
        XCTAssertEqual(value.id, 1)
        XCTAssertEqual(try store.fetchAll(Everything.self), [value])
        let raw = try XCTUnwrap(store.sqlite.query("SELECT * FROM everything").next())
        XCTAssertEqual(raw["genre"], .text("poetry"))
        XCTAssertEqual(raw["priority"], .integer(2))
        XCTAssertEqual(raw["dimensions"], .text(#"{"height":2,"tags":["a","b"],"width":1.5}"#))
        XCTAssertEqual(raw["date"], .text("2023-11-14T22:13:20.500Z"))
        XCTAssertEqual(raw["optional_int"], .null)
        XCTAssertEqual(raw["bool"], .integer(1))
        XCTAssertEqual(raw["decimal"], .text("12345.6789"))
    }

    func testDatesReadFromUnixSecondsAndUUIDsFromBlobs() throws {
        struct Stamp: Codable { var at: Date; var uuid: UUID }
        let db = try database("CREATE TABLE stamp (at INTEGER, uuid BLOB);")
        try db.execute("INSERT INTO stamp VALUES (86400, X'000102030405060708090A0B0C0D0E0F')")
        let stamp = try XCTUnwrap(ModelStore(database: db).fetchAll(Stamp.self).first)
        XCTAssertEqual(stamp.at.timeIntervalSince1970, 86_400)
        XCTAssertEqual(stamp.uuid.uuidString, "00010203-0405-0607-0809-0A0B0C0D0E0F")
    }

    func testOptionalsReadNullAndMissingColumnsAsNil() throws {
        struct Partial: Codable { var id: Int; var missing: String?; var empty: Int? }
        let db = try database("CREATE TABLE partial (id INTEGER, empty INTEGER); INSERT INTO partial VALUES (1, NULL);")
        let value = try XCTUnwrap(ModelStore(database: db).fetchAll(Partial.self).first)
        XCTAssertNil(value.missing)
        XCTAssertNil(value.empty)
    }

    func testDefaultNamesSnakeCaseAndPluralTables() throws {
        let db = try database("""
            CREATE TABLE books (isbn TEXT PRIMARY KEY, title TEXT NOT NULL, author_id INTEGER NOT NULL,
                                published_on TEXT, in_print INTEGER NOT NULL);
            """)
        let store = ModelStore(database: db)
        XCTAssertEqual(try store.layout(of: Book.self).table, "books")
        XCTAssertEqual(try store.layout(of: Book.self).column(for: "authorId"), "author_id")
        let book = Book(isbn: "1", title: "T", authorId: 3, publishedOn: nil, inPrint: true)
        try store.insert(book)
        XCTAssertEqual(try store.find(Book.self, key: "1"), book)
        XCTAssertEqual(snakeCase("bookID"), "book_id")
        XCTAssertEqual(snakeCase("URLString"), "url_string")
        XCTAssertEqual(snakeCase("publishedOn"), "published_on")
    }

    func testExactNameMatchesComeFirst() throws {
        struct Reading: Codable, Equatable { var readingID: Int; var camelCase: String }
        let db = try database("CREATE TABLE Reading (readingID INTEGER PRIMARY KEY, camelCase TEXT);")
        let store = ModelStore(database: db)
        try store.insert(Reading(readingID: 1, camelCase: "x"))
        XCTAssertEqual(try store.layout(of: Reading.self).table, "Reading")
        XCTAssertEqual(try store.fetchAll(Reading.self), [Reading(readingID: 1, camelCase: "x")])
    }

    func testManifestMappingBeatsTheDefaults() throws {
        let db = try database("""
            CREATE TABLE catalogue (code TEXT PRIMARY KEY, name TEXT NOT NULL, author_id INTEGER NOT NULL,
                                    first_printed TEXT, in_print INTEGER NOT NULL);
            CREATE TABLE books (isbn TEXT);
            """)
        let mapping = ModelMapping(typeName: "Book", table: "catalogue", primaryKey: ["code"],
                                   columns: ["isbn": "code", "title": "name", "publishedOn": "first_printed"])
        let store = ModelStore(database: db, mappings: [mapping])
        let book = Book(isbn: "9", title: "Mapped", authorId: 1, publishedOn: "2001-01-01", inPrint: false)
        try store.insert(book)
        XCTAssertEqual(try db.query("SELECT code, name, first_printed FROM catalogue").next()?.values,
                       [.text("9"), .text("Mapped"), .text("2001-01-01")])
        XCTAssertEqual(try store.find(Book.self, key: "9"), book)
        XCTAssertEqual(try store.count(Book.self), 1)
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

    func testQueriesCountsAndDeletes() throws {
        let db = try database("CREATE TABLE edition (isbn TEXT, number INTEGER, note TEXT, PRIMARY KEY (isbn, number));")
        let store = ModelStore(database: db)
        try store.insert(contentsOf: (1...5).map { Edition(isbn: $0 % 2 == 0 ? "a" : "b", number: $0, note: nil) })
        XCTAssertEqual(try store.count(Edition.self), 5)
        XCTAssertEqual(try store.count(Edition.self, where: "isbn = ?", ["a"]), 2)
        XCTAssertEqual(try store.fetchFirst(Edition.self, where: "number > ? ORDER BY number", [3])?.number, 4)
        XCTAssertNil(try store.fetchFirst(Edition.self, where: "number > 99"))
        XCTAssertEqual(try store.find(Edition.self, key: ["isbn": "b", "number": 3]), Edition(isbn: "b", number: 3, note: nil))
        XCTAssertNil(try store.find(Edition.self, key: ["isbn": "a", "number": 3]))
        XCTAssertThrowsError(try store.find(Edition.self, key: "b"), "a composite key needs a dictionary")
        XCTAssertThrowsError(try store.find(Edition.self, key: ["isbn": "b"]), "every key column is needed")
        XCTAssertTrue(try store.delete(Edition(isbn: "b", number: 1, note: nil)))
        XCTAssertFalse(try store.delete(Edition(isbn: "b", number: 1, note: nil)))
        XCTAssertTrue(try store.delete(Edition.self, key: ["isbn": "a", "number": 2]))
        XCTAssertEqual(try store.deleteAll(Edition.self, where: "number = ?", [4]), 1)
        XCTAssertEqual(try store.deleteAll(Edition.self), 2)
        XCTAssertEqual(try store.fetchAll(Edition.self, sql: "SELECT 'x' AS isbn, 9 AS number, NULL AS note"),
                       [Edition(isbn: "x", number: 9, note: nil)])
    }

    func testSaveInsertsThenUpdatesAndUpdateNeedsARow() throws {
        let db = try database("CREATE TABLE member (id INTEGER PRIMARY KEY, name TEXT NOT NULL, joined_at TEXT NOT NULL);")
        let store = ModelStore(database: db)
        let member = Member(name: "Ada", joinedAt: Date(timeIntervalSince1970: 0))
        try store.save(member)
        let saved = try XCTUnwrap(store.fetchAll(Member.self).first)
        XCTAssertEqual(saved.id, 1)
        saved.name = "Ada Lovelace"
        try store.save(saved)
        XCTAssertEqual(try store.fetchAll(Member.self).map(\.name), ["Ada Lovelace"])
        saved.name = "Countess"
        try store.update(saved)
        XCTAssertEqual(try store.find(Member.self, key: 1)?.name, "Countess")
        let ghost = Member(id: 42, name: "Ghost", joinedAt: Date())
        let error = assertThrows(MappingError.self) { try store.update(ghost) }
        XCTAssertTrue(error?.description.contains("no row has this primary key") ?? false, "\(String(describing: error))")
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

    func testUpdateWritesNullForNilOptionals() throws {
        let db = try database("CREATE TABLE edition (isbn TEXT, number INTEGER, note TEXT, PRIMARY KEY (isbn, number));")
        let store = ModelStore(database: db)
        try store.insert(Edition(isbn: "a", number: 1, note: "first"))
        try store.update(Edition(isbn: "a", number: 1, note: nil))
        XCTAssertEqual(try db.scalar("SELECT note FROM edition", as: String.self), nil)
    }

    func testBatchOfTenThousandRollsBackWhenOneRowFails() throws {
        let db = try database("CREATE TABLE edition (isbn TEXT, number INTEGER CHECK (number <> 7777), note TEXT, PRIMARY KEY (isbn, number));")
        let store = ModelStore(database: db)
        let editions = (1...10_000).map { Edition(isbn: "x", number: $0, note: nil) }
        let error = assertThrows(MappingError.self) { try store.insert(contentsOf: editions) }
        XCTAssertEqual(error?.row, 7777)
        XCTAssertTrue(error?.message.contains("CHECK constraint failed") ?? false, "\(String(describing: error))")
        XCTAssertEqual(try store.count(Edition.self), 0)
        try store.insert(contentsOf: editions.filter { $0.number != 7777 })
        XCTAssertEqual(try store.count(Edition.self), 9_999)
        try store.save(contentsOf: [Edition(isbn: "x", number: 1, note: "updated"), Edition(isbn: "y", number: 1, note: "new")])
        XCTAssertEqual(try store.count(Edition.self), 10_000)
        XCTAssertEqual(try store.find(Edition.self, key: ["isbn": "x", "number": 1])?.note, "updated")
    }

    func testNonEncodableValuesGoThroughMirror() throws {
        let db = try database("CREATE TABLE visits (id INTEGER PRIMARY KEY, member_name TEXT, at TEXT, priority INTEGER, notes TEXT);")
        let store = ModelStore(database: db)
        let id = try store.insert(Visit(id: nil, memberName: "Ada", at: Date(timeIntervalSince1970: 60), priority: .high, notes: nil))
        XCTAssertEqual(id, 1)
        XCTAssertEqual(try db.query("SELECT * FROM visits").next()?.values,
                       [.integer(1), .text("Ada"), .text("1970-01-01T00:01:00Z"), .integer(2), .null])
        try store.update(Visit(id: 1, memberName: "Ada L.", at: Date(timeIntervalSince1970: 60), priority: .low, notes: "ok"))
        try store.insert(contentsOf: [Visit(id: nil, memberName: "B", at: Date(), priority: .low, notes: nil)])
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM visits", as: Int.self), 2)
        XCTAssertTrue(try store.delete(Visit(id: 2, memberName: "", at: Date(), priority: .low, notes: nil)))
        XCTAssertEqual(try db.scalar("SELECT member_name FROM visits", as: String.self), "Ada L.")
    }

    func testDecodingErrorsNameTypePropertyColumnRowAndValue() throws {
        struct Small: Codable { var id: Int; var tiny: Int8; var name: String }
        let db = try database("""
            CREATE TABLE small (id INTEGER, tiny INTEGER, name TEXT);
            INSERT INTO small VALUES (1, 1, 'a'), (2, 300, 'b'), (3, 1, NULL), ('x', 1, 'c');
            """)
        let store = ModelStore(database: db)
        var error = assertThrows(MappingError.self) { try store.fetchAll(Small.self, where: "id = 2 OR id = 1 ORDER BY id") }
        XCTAssertEqual(error?.description, "Small.tiny (column 'tiny', row 2): 300 (integer) does not fit Int8 (-128...127)")
        error = assertThrows(MappingError.self) { try store.fetchAll(Small.self, where: "id = 3") }
        XCTAssertEqual(error?.description, "Small.name (column 'name', row 1): NULL is NULL but name is not optional")
        error = assertThrows(MappingError.self) { try store.fetchAll(Small.self, where: "id = 'x'") }
        XCTAssertEqual(error?.description, "Small.id (column 'id', row 1): 'x' (text) is not an integer for Int")
        error = assertThrows(MappingError.self) { try store.fetchAll(Small.self, sql: "SELECT id, tiny FROM small") }
        XCTAssertTrue(error?.description.hasPrefix("Small.name (column 'name', row 1): has no column in the result") ?? false,
                      "\(String(describing: error))")
        struct WithEnum: Codable { var genre: Genre }
        try db.execute("CREATE TABLE with_enum (genre TEXT)")
        try db.execute("INSERT INTO with_enum VALUES ('opera')")
        error = assertThrows(MappingError.self) { try store.fetchAll(WithEnum.self) }
        XCTAssertTrue(error?.description.contains("'opera' (text) is not a valid Genre") ?? false, "\(String(describing: error))")
    }

    func testARealBeyondFloatsRangeIsAnErrorNotInfinity() throws {
        struct Measure: Codable { var id: Int; var value: Float; var maybe: Float? }
        let db = try database("CREATE TABLE measure (id INTEGER, value REAL, maybe REAL); INSERT INTO measure VALUES (1, 1e300, 2), (2, 1, -1e300);")
        let store = ModelStore(database: db)
        var error = assertThrows(MappingError.self) { try store.fetchAll(Measure.self, where: "id = 1") }
        XCTAssertTrue(error?.description.contains("does not fit Float") ?? false, "\(String(describing: error))")
        error = assertThrows(MappingError.self) { try store.fetchAll(Measure.self, where: "id = 2") }
        XCTAssertTrue(error?.description.contains("Measure.maybe") ?? false, "\(String(describing: error))")
        try db.execute("UPDATE measure SET value = 0.1, maybe = NULL")
        XCTAssertEqual(try store.fetchAll(Measure.self).map(\.value), [0.1, 0.1])
    }

    func testEncodingErrors() throws {
        struct Huge: Codable { var id: Int; var big: UInt64 }
        let store = ModelStore(database: try database("CREATE TABLE huge (id INTEGER, big INTEGER);"))
        let error = assertThrows(MappingError.self) { try store.insert(Huge(id: 1, big: .max)) }
        XCTAssertTrue(error?.description.contains("does not fit SQLite's 64-bit signed integer") ?? false)
        struct NoKey: Codable { var a: Int }
        let noKey = ModelStore(database: try database("CREATE TABLE no_key (a INTEGER);"))
        XCTAssertThrowsError(try noKey.update(NoKey(a: 1))) { XCTAssertTrue("\($0)".contains("has no primary key")) }
    }

    func testCheckFindsEveryKindOfMismatch() throws {
        struct Checked: Codable {
            var id: Int
            var name: String
            var score: Double
            var missing: String
            var loose: Int
            var flag: Bool?
            var genre: Genre
        }
        let db = try database("""
            CREATE TABLE checked (id INTEGER PRIMARY KEY, name BLOB NOT NULL, score TEXT NOT NULL, loose INTEGER,
                                  flag INTEGER, genre TEXT NOT NULL);
            """)
        let mismatches = try ModelStore(database: db).check(Checked.self)
        XCTAssertEqual(mismatches.map(\.kind), [.typeMismatch, .typeMismatch, .missingColumn, .nullability])
        XCTAssertEqual(mismatches.map(\.property), ["name", "score", "missing", "loose"])
        XCTAssertTrue(mismatches[0].description.contains("declared BLOB"), mismatches[0].description)
        struct Absent: Codable { var id: Int }
        XCTAssertEqual(try ModelStore(database: db).check(Absent.self).map(\.kind), [.missingTable])
        try db.execute("CREATE TABLE book (isbn TEXT NOT NULL, title TEXT NOT NULL, author_id INTEGER NOT NULL, published_on TEXT, in_print INTEGER NOT NULL)")
        XCTAssertEqual(try ModelStore(database: db).check(Book.self), [])
    }

    func testCheckModelsOfAManifestReportsMissingTablesAndColumns() throws {
        let project = try Project(self, manifest: """
            <manifest version="1"><database path="db.sqlite"/><migrations directory="sql"/>
              <models>
                <model type="Book" table="books" primaryKey="isbn"><property name="publishedOn" column="published"/></model>
                <model type="Ghost"/>
              </models>
            </manifest>
            """, files: ["sql/1.sql": "CREATE TABLE books (isbn TEXT PRIMARY KEY, published_on TEXT);"])
        _ = try project.migrator().migrate()
        let problems = try checkModels(of: try project.manifest(), in: try project.database())
        XCTAssertEqual(problems.count, 2)
        XCTAssertTrue(problems[0].message.contains("column 'published'"), problems[0].message)
        XCTAssertEqual(problems[0].location.line, 3)
        XCTAssertTrue(problems[1].message.contains("table 'ghost' does not exist"), problems[1].message)
        let cli = try project.strata(["check"])
        XCTAssertEqual(cli.status, 3)
        XCTAssertTrue(cli.stderr.contains("manifest.xml:3: model Book"), cli.stderr)
    }

    /// The decoder predicts each row's keys from the first row's order; a row that asks for another key at the
    /// same position must still read the right column, whether keys are compared by type and bytes or by name.
    func testRowsThatAskForDifferentKeysReadTheRightColumns() throws {
        enum KindKeys: CodingKey { case kind, unused }
        /// Two key types whose first cases have the same single byte.
        enum CircleKeys: CodingKey { case radius, unused }
        enum SquareKeys: CodingKey { case side, unused }
        /// Plain data of 8 bytes: compared by its bytes.
        struct IndexKey: CodingKey {
            let index: Int
            var stringValue: String { index == 1 ? "radius" : "side" }
            init(_ index: Int) { self.index = index }
            init?(stringValue: String) { nil }
            var intValue: Int? { nil }
            init?(intValue: Int) { nil }
        }
        /// Not plain data: compared by name.
        struct NameKey: CodingKey {
            var stringValue: String
            init?(stringValue: String) { self.stringValue = stringValue }
            var intValue: Int? { nil }
            init?(intValue: Int) { nil }
        }
        struct Shape<Mode>: Decodable {
            var size: Double
            init(from decoder: any Decoder) throws {
                let circle = try decoder.container(keyedBy: KindKeys.self).decode(String.self, forKey: .kind) == "circle"
                switch Mode.self {
                case is CircleKeys.Type:
                    size = circle ? try decoder.container(keyedBy: CircleKeys.self).decode(Double.self, forKey: .radius)
                                  : try decoder.container(keyedBy: SquareKeys.self).decode(Double.self, forKey: .side)
                case is IndexKey.Type:
                    size = try decoder.container(keyedBy: IndexKey.self).decode(Double.self, forKey: IndexKey(circle ? 1 : 2))
                default:
                    let key = NameKey(stringValue: circle ? "radius" : "side")!
                    size = try decoder.container(keyedBy: NameKey.self).decode(Double.self, forKey: key)
                }
            }
        }
        XCTAssertEqual(MemoryLayout<CircleKeys>.size, 1)
        XCTAssertEqual(MemoryLayout<IndexKey>.size, 8)
        let db = try database("""
            CREATE TABLE shapes (kind TEXT, radius REAL, side REAL);
            INSERT INTO shapes VALUES ('circle', 1.5, 99), ('square', 99, 2.5), ('circle', 3.5, 99), ('square', 99, 4.5);
            """)
        let store = ModelStore(database: db)
        let sql = "SELECT * FROM shapes ORDER BY rowid"
        XCTAssertEqual(try store.fetchAll(Shape<CircleKeys>.self, sql: sql).map(\.size), [1.5, 2.5, 3.5, 4.5])
        XCTAssertEqual(try store.fetchAll(Shape<IndexKey>.self, sql: sql).map(\.size), [1.5, 2.5, 3.5, 4.5])
        XCTAssertEqual(try store.fetchAll(Shape<NameKey>.self, sql: sql).map(\.size), [1.5, 2.5, 3.5, 4.5])
    }

    func testFetchingScalarsAndCursorStyleIteration() throws {
        let db = try database("CREATE TABLE n (x INTEGER); INSERT INTO n VALUES (1), (2), (3);")
        let store = ModelStore(database: db)
        XCTAssertEqual(try store.fetchAll(Int.self, sql: "SELECT x FROM n ORDER BY x"), [1, 2, 3])
        var seen = 0
        try store.forEach(Int.self, sql: "SELECT x FROM n") { seen += $0 }
        XCTAssertEqual(seen, 6)
    }

    func testValuesThatWouldChangeOnTheWayInOrOutAreErrors() throws {
        let db = try Database()
        let store = ModelStore(database: db)
        enum Flags: UInt64, Codable { case small = 1, huge = 18446744073709551615 }
        struct F: Codable { var id: Int; var f: Flags }
        try db.execute("CREATE TABLE f (id INTEGER PRIMARY KEY, f)")
        try store.insert(F(id: 1, f: .small))
        let huge = assertThrows(MappingError.self) { try store.insert(F(id: 2, f: .huge)) }
        XCTAssertTrue(huge?.description.contains("does not fit SQLite's 64-bit signed integer") ?? false, String(describing: huge))
        XCTAssertThrowsError(try store.insert(contentsOf: [F(id: 3, f: .huge)]))
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM f", as: Int.self), 1, "nothing stored as an approximate REAL")

        struct D: Codable { var id: Int; var d: Double }
        try db.executeScript("CREATE TABLE d (id INTEGER PRIMARY KEY, d); INSERT INTO d VALUES (1, 9007199254740992), (2, 9007199254740993);")
        XCTAssertEqual(try store.find(D.self, key: 1)?.d, 9007199254740992)
        XCTAssertThrowsError(try store.find(D.self, key: 2), "2^53 + 1 would read as 2^53")
        XCTAssertNil(Double.fromDatabaseValue(.integer(9007199254740993)))

        struct P: Codable { var id: Int; var amount: Decimal }
        try db.executeScript("CREATE TABLE p (id INTEGER PRIMARY KEY, amount TEXT NOT NULL); CREATE TABLE money (id INTEGER PRIMARY KEY, amount DECIMAL(20,4) NOT NULL);")
        for (text, expected) in [("1234567.8901234567", Decimal(string: "1234567.8901234567")), ("-0.5", Decimal(string: "-0.5")),
                                 ("12abc", nil), ("1,5", nil), (" 7", nil), (String(repeating: "9", count: 44), nil)] {
            try db.execute("DELETE FROM p")
            try db.execute("INSERT INTO p VALUES (1, ?)", [text])
            if let expected {
                XCTAssertEqual(try store.find(P.self, key: 1)?.amount, expected, text)
            } else {
                XCTAssertThrowsError(try store.find(P.self, key: 1), "'\(text)' is not exactly a decimal")
            }
        }
        XCTAssertEqual(try store.check(P.self).count, 0)
        let mismatches = try ModelStore(database: db, manifest: try Manifest.load(xml: """
            <manifest version="1"><models><model type="P" table="money"/></models></manifest>
            """, path: "m.xml", directory: NSTemporaryDirectory())).check(P.self)
        XCTAssertEqual(mismatches.count, 1, "a DECIMAL(p,s) column has NUMERIC affinity, which rounds decimal text")
    }
}
