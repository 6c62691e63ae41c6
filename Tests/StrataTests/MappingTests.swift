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

/// The mapper on every backend: reads and writes, conversions and the errors that name type, property, column, row
/// and value, batch atomicity, and `check`. What only SQLite does (conflict clauses, affinity) is in
/// `SQLite/SQLiteMappingTests.swift`.
final class MappingTests: XCTestCase {
    /// An empty database on `backend` (a fresh project's) with `schema` run on it.
    func database(_ backend: TestBackend, _ schema: String) throws -> any MigrationDatabase {
        let db = try Project(self, backend: backend, files: [:]).connection()
        try run(schema, on: db)
        return db
    }

    /// Runs several statements (the connection's `execute` runs one).
    func run(_ script: String, on db: any MigrationDatabase) throws {
        try db.runScript(Array(script.utf8), startLine: 1, insideTransaction: false, afterEach: nil)
    }

    static func everythingSchema(_ backend: TestBackend) -> String {
        """
        CREATE TABLE everything (
            id \(backend.autoIncrementingKey), int BIGINT NOT NULL, int8 INTEGER NOT NULL, int16 INTEGER NOT NULL,
            int32 INTEGER NOT NULL, int64 BIGINT NOT NULL, uint BIGINT NOT NULL, uint8 INTEGER NOT NULL,
            uint16 INTEGER NOT NULL, uint32 BIGINT NOT NULL, uint64 BIGINT NOT NULL, double DOUBLE PRECISION NOT NULL,
            float REAL NOT NULL, bool BOOLEAN NOT NULL, string TEXT NOT NULL, data \(backend.bytesType) NOT NULL,
            date TEXT NOT NULL, uuid TEXT NOT NULL, url TEXT NOT NULL, decimal TEXT NOT NULL, genre TEXT NOT NULL,
            priority INTEGER NOT NULL, dimensions TEXT NOT NULL, optional_int INTEGER, optional_string TEXT,
            optional_date TEXT, optional_genre TEXT, optional_dimensions TEXT);
        """
    }

    func sample() -> Everything {
        Everything(id: nil, int: -5, int8: -8, int16: 16, int32: 32, int64: .min, uint: 7, uint8: 255, uint16: 16, uint32: 32,
                   uint64: UInt64(Int64.max), double: 2.5, float: 1.25, bool: true, string: "héllo; 'quoted'",
                   data: Data([0, 1, 255]), date: Date(timeIntervalSince1970: 1_700_000_000.5), uuid: UUID(),
                   url: URL(string: "https://example.org/a?b=c")!, decimal: Decimal(string: "12345.6789")!,
                   genre: .poetry, priority: .high, dimensions: Dimensions(width: 1.5, height: 2, tags: ["a", "b"]),
                   optionalInt: nil, optionalString: "x", optionalDate: nil, optionalGenre: .fiction, optionalDimensions: nil)
    }

    func testEverySupportedTypeRoundTrips() throws {
        try forEachBackend(needing: .models) { backend in
            let store = ModelStore(database: try database(backend, Self.everythingSchema(backend)))
            var value = sample()
            value.id = try store.insert(value)
            XCTAssertEqual(value.id, 1)
            XCTAssertEqual(try store.fetchAll(Everything.self), [value])
            let raw = try XCTUnwrap(store.database.rows("SELECT * FROM everything").first)
            XCTAssertEqual(raw["genre"], .text("poetry"))
            XCTAssertEqual(raw["priority"], .integer(2))
            XCTAssertEqual(raw["dimensions"], .text(#"{"height":2,"tags":["a","b"],"width":1.5}"#))
            XCTAssertEqual(raw["date"], .text("2023-11-14T22:13:20.500Z"))
            XCTAssertEqual(raw["optional_int"], .null)
            XCTAssertEqual(raw["bool"], .integer(1))
            XCTAssertEqual(raw["decimal"], .text("12345.6789"))
        }
    }

    func testDatesReadFromUnixSecondsAndUUIDsFromBlobs() throws {
        struct Stamp: Codable { var at: Date; var uuid: UUID }
        try forEachBackend(needing: .models) { backend in
            let db = try database(backend, "CREATE TABLE stamp (at INTEGER, uuid \(backend.bytesType));")
            try db.execute("INSERT INTO stamp VALUES (86400, \(db.dialect.placeholder(1)))", [Data((0...15) as ClosedRange<UInt8>)])
            let stamp = try XCTUnwrap(ModelStore(database: db).fetchAll(Stamp.self).first)
            XCTAssertEqual(stamp.at.timeIntervalSince1970, 86_400)
            XCTAssertEqual(stamp.uuid.uuidString, "00010203-0405-0607-0809-0A0B0C0D0E0F")
        }
    }

    func testOptionalsReadNullAndMissingColumnsAsNil() throws {
        struct Partial: Codable { var id: Int; var missing: String?; var empty: Int? }
        try forEachBackend(needing: .models) { backend in
            let db = try database(backend, "CREATE TABLE partial (id INTEGER, empty INTEGER); INSERT INTO partial VALUES (1, NULL);")
            let value = try XCTUnwrap(ModelStore(database: db).fetchAll(Partial.self).first)
            XCTAssertNil(value.missing)
            XCTAssertNil(value.empty)
        }
    }

    func testDefaultNamesSnakeCaseAndPluralTables() throws {
        try forEachBackend(needing: .models) { backend in
            let db = try database(backend, """
                CREATE TABLE books (isbn TEXT PRIMARY KEY, title TEXT NOT NULL, author_id INTEGER NOT NULL,
                                    published_on TEXT, in_print INTEGER NOT NULL);
                """)
            let store = ModelStore(database: db)
            XCTAssertEqual(try store.layout(of: Book.self).table, "books")
            XCTAssertEqual(try store.layout(of: Book.self).column(for: "authorId"), "author_id")
            let book = Book(isbn: "1", title: "T", authorId: 3, publishedOn: nil, inPrint: true)
            try store.insert(book)
            XCTAssertEqual(try store.find(Book.self, key: "1"), book)
        }
        XCTAssertEqual(snakeCase("bookID"), "book_id")
        XCTAssertEqual(snakeCase("URLString"), "url_string")
        XCTAssertEqual(snakeCase("publishedOn"), "published_on")
    }

    func testExactNameMatchesComeFirst() throws {
        struct Reading: Codable, Equatable { var readingID: Int; var camelCase: String }
        try forEachBackend(needing: .models) { backend in
            // Quoted, so every backend keeps the names' case as written.
            let db = try database(backend, #"CREATE TABLE "Reading" ("readingID" INTEGER PRIMARY KEY, "camelCase" TEXT);"#)
            let store = ModelStore(database: db)
            try store.insert(Reading(readingID: 1, camelCase: "x"))
            XCTAssertEqual(try store.layout(of: Reading.self).table, "Reading")
            XCTAssertEqual(try store.fetchAll(Reading.self), [Reading(readingID: 1, camelCase: "x")])
        }
    }

    func testManifestMappingBeatsTheDefaults() throws {
        try forEachBackend(needing: .models) { backend in
            let db = try database(backend, """
                CREATE TABLE catalogue (code TEXT PRIMARY KEY, name TEXT NOT NULL, author_id INTEGER NOT NULL,
                                        first_printed TEXT, in_print INTEGER NOT NULL);
                CREATE TABLE books (isbn TEXT);
                """)
            let mapping = ModelMapping(typeName: "Book", table: "catalogue", primaryKey: ["code"],
                                       columns: ["isbn": "code", "title": "name", "publishedOn": "first_printed"])
            let store = ModelStore(database: db, mappings: [mapping])
            let book = Book(isbn: "9", title: "Mapped", authorId: 1, publishedOn: "2001-01-01", inPrint: false)
            try store.insert(book)
            XCTAssertEqual(try db.rows("SELECT code, name, first_printed FROM catalogue").first?.values,
                           [.text("9"), .text("Mapped"), .text("2001-01-01")])
            XCTAssertEqual(try store.find(Book.self, key: "9"), book)
            XCTAssertEqual(try store.count(Book.self), 1)
        }
    }

    func testQueriesCountsAndDeletes() throws {
        try forEachBackend(needing: .models) { backend in
            let db = try database(backend, "CREATE TABLE edition (isbn TEXT, number INTEGER, note TEXT, PRIMARY KEY (isbn, number));")
            let store = ModelStore(database: db)
            let p1 = db.dialect.placeholder(1)
            try store.insert(contentsOf: (1...5).map { Edition(isbn: $0 % 2 == 0 ? "a" : "b", number: $0, note: nil) })
            XCTAssertEqual(try store.count(Edition.self), 5)
            XCTAssertEqual(try store.count(Edition.self, where: "isbn = \(p1)", ["a"]), 2)
            XCTAssertEqual(try store.fetchFirst(Edition.self, where: "number > \(p1) ORDER BY number", [3])?.number, 4)
            XCTAssertNil(try store.fetchFirst(Edition.self, where: "number > 99"))
            XCTAssertEqual(try store.find(Edition.self, key: ["isbn": "b", "number": 3]), Edition(isbn: "b", number: 3, note: nil))
            XCTAssertNil(try store.find(Edition.self, key: ["isbn": "a", "number": 3]))
            XCTAssertThrowsError(try store.find(Edition.self, key: "b"), "a composite key needs a dictionary")
            XCTAssertThrowsError(try store.find(Edition.self, key: ["isbn": "b"]), "every key column is needed")
            XCTAssertTrue(try store.delete(Edition(isbn: "b", number: 1, note: nil)))
            XCTAssertFalse(try store.delete(Edition(isbn: "b", number: 1, note: nil)))
            XCTAssertTrue(try store.delete(Edition.self, key: ["isbn": "a", "number": 2]))
            XCTAssertEqual(try store.deleteAll(Edition.self, where: "number = \(p1)", [4]), 1)
            XCTAssertEqual(try store.deleteAll(Edition.self), 2)
            XCTAssertEqual(try store.fetchAll(Edition.self, sql: "SELECT 'x' AS isbn, 9 AS number, NULL AS note"),
                           [Edition(isbn: "x", number: 9, note: nil)])
        }
    }

    func testFragmentConditionsBindWhatTheyInterpolate() throws {
        try forEachBackend(needing: .models) { backend in
            let db = try database(backend, "CREATE TABLE edition (isbn TEXT, number INTEGER, note TEXT, PRIMARY KEY (isbn, number));")
            let store = ModelStore(database: db)
            let hostile = "it's'; DELETE FROM edition; --"
            try store.insert(contentsOf: (1...5).map { Edition(isbn: $0 % 2 == 0 ? "a" : "b", number: $0, note: $0 == 5 ? hostile : nil) })
            let isbn = "a", missing: String? = nil
            XCTAssertEqual(try store.fetchAll(Edition.self, where: "isbn = \(isbn) ORDER BY number").map(\.number), [2, 4])
            XCTAssertEqual(try store.fetchFirst(Edition.self, where: "note = \(hostile)")?.number, 5)
            XCTAssertEqual(try store.count(Edition.self, where: "note IS NOT DISTINCT FROM \(missing)"), 4)
            XCTAssertEqual(try store.fetchAll(Int.self, sql: "SELECT number FROM edition WHERE number > \(3) ORDER BY number"), [4, 5])
            var seen: [String] = []
            try store.forEach(Edition.self, sql: "SELECT * FROM edition WHERE isbn = \(isbn) AND number < \(3)") { seen.append($0.isbn) }
            XCTAssertEqual(seen, ["a"])
            XCTAssertEqual(try store.deleteAll(Edition.self, where: "note = \(hostile)"), 1)
            XCTAssertEqual(try store.count(Edition.self), 4)
        }
    }

    func testSaveInsertsThenUpdatesAndUpdateNeedsARow() throws {
        try forEachBackend(needing: .models) { backend in
            let db = try database(backend, "CREATE TABLE member (id \(backend.autoIncrementingKey), name TEXT NOT NULL, joined_at TEXT NOT NULL);")
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
    }

    func testUpdateWritesNullForNilOptionals() throws {
        try forEachBackend(needing: .models) { backend in
            let db = try database(backend, "CREATE TABLE edition (isbn TEXT, number INTEGER, note TEXT, PRIMARY KEY (isbn, number));")
            let store = ModelStore(database: db)
            try store.insert(Edition(isbn: "a", number: 1, note: "first"))
            try store.update(Edition(isbn: "a", number: 1, note: nil))
            XCTAssertEqual(try db.scalar("SELECT note FROM edition", as: String.self), nil)
        }
    }

    func testBatchOfTenThousandRollsBackWhenOneRowFails() throws {
        try forEachBackend(needing: .models) { backend in
            let db = try database(backend, "CREATE TABLE edition (isbn TEXT, number INTEGER CHECK (number <> 7777), note TEXT, PRIMARY KEY (isbn, number));")
            let store = ModelStore(database: db)
            let editions = (1...10_000).map { Edition(isbn: "x", number: $0, note: nil) }
            let error = assertThrows(MappingError.self) { try store.insert(contentsOf: editions) }
            XCTAssertEqual(error?.row, 7777)
            XCTAssertTrue(error?.message.contains(backend.checkViolation) ?? false, "\(String(describing: error))")
            XCTAssertEqual(try store.count(Edition.self), 0)
            try store.insert(contentsOf: editions.filter { $0.number != 7777 })
            XCTAssertEqual(try store.count(Edition.self), 9_999)
            try store.save(contentsOf: [Edition(isbn: "x", number: 1, note: "updated"), Edition(isbn: "y", number: 1, note: "new")])
            XCTAssertEqual(try store.count(Edition.self), 10_000)
            XCTAssertEqual(try store.find(Edition.self, key: ["isbn": "x", "number": 1])?.note, "updated")
        }
    }

    func testNonEncodableValuesGoThroughMirror() throws {
        try forEachBackend(needing: .models) { backend in
            let db = try database(backend, "CREATE TABLE visits (id \(backend.autoIncrementingKey), member_name TEXT, at TEXT, priority INTEGER, notes TEXT);")
            let store = ModelStore(database: db)
            let id = try store.insert(Visit(id: nil, memberName: "Ada", at: Date(timeIntervalSince1970: 60), priority: .high, notes: nil))
            XCTAssertEqual(id, 1)
            XCTAssertEqual(try db.rows("SELECT * FROM visits").first?.values,
                           [.integer(1), .text("Ada"), .text("1970-01-01T00:01:00Z"), .integer(2), .null])
            try store.update(Visit(id: 1, memberName: "Ada L.", at: Date(timeIntervalSince1970: 60), priority: .low, notes: "ok"))
            try store.insert(contentsOf: [Visit(id: nil, memberName: "B", at: Date(), priority: .low, notes: nil)])
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM visits", as: Int.self), 2)
            XCTAssertTrue(try store.delete(Visit(id: 2, memberName: "", at: Date(), priority: .low, notes: nil)))
            XCTAssertEqual(try db.scalar("SELECT member_name FROM visits", as: String.self), "Ada L.")
        }
    }

    func testDecodingErrorsNameTypePropertyColumnRowAndValue() throws {
        struct Small: Codable { var id: Int; var tiny: Int8; var name: String }
        struct WithEnum: Codable { var genre: Genre }
        try forEachBackend(needing: .models) { backend in
            let db = try database(backend, """
                CREATE TABLE small (id INTEGER, tiny INTEGER, name TEXT);
                INSERT INTO small VALUES (1, 1, 'a'), (2, 300, 'b'), (3, 1, NULL);
                """)
            let store = ModelStore(database: db)
            var error = assertThrows(MappingError.self) { try store.fetchAll(Small.self, where: "id = 2 OR id = 1 ORDER BY id") }
            XCTAssertEqual(error?.description, "Small.tiny (column 'tiny', row 2): 300 (integer) does not fit Int8 (-128...127)")
            error = assertThrows(MappingError.self) { try store.fetchAll(Small.self, where: "id = 3") }
            XCTAssertEqual(error?.description, "Small.name (column 'name', row 1): NULL is NULL but name is not optional")
            // Text where an integer is read: a typed column holds none, so the query makes it.
            error = assertThrows(MappingError.self) { try store.fetchAll(Small.self, sql: "SELECT 'x' AS id, 1 AS tiny, 'c' AS name") }
            XCTAssertEqual(error?.description, "Small.id (column 'id', row 1): 'x' (text) is not an integer for Int")
            error = assertThrows(MappingError.self) { try store.fetchAll(Small.self, sql: "SELECT id, tiny FROM small") }
            XCTAssertTrue(error?.description.hasPrefix("Small.name (column 'name', row 1): has no column in the result") ?? false,
                          "\(String(describing: error))")
            try db.execute("CREATE TABLE with_enum (genre TEXT)")
            try db.execute("INSERT INTO with_enum VALUES ('opera')")
            error = assertThrows(MappingError.self) { try store.fetchAll(WithEnum.self) }
            XCTAssertTrue(error?.description.contains("'opera' (text) is not a valid Genre") ?? false, "\(String(describing: error))")
        }
    }

    func testARealBeyondFloatsRangeIsAnErrorNotInfinity() throws {
        struct Measure: Codable { var id: Int; var value: Float; var maybe: Float? }
        try forEachBackend(needing: .models) { backend in
            let db = try database(backend, """
                CREATE TABLE measure (id INTEGER, value DOUBLE PRECISION, maybe DOUBLE PRECISION);
                INSERT INTO measure VALUES (1, 1e300, 2), (2, 1, -1e300);
                """)
            let store = ModelStore(database: db)
            var error = assertThrows(MappingError.self) { try store.fetchAll(Measure.self, where: "id = 1") }
            XCTAssertTrue(error?.description.contains("does not fit Float") ?? false, "\(String(describing: error))")
            error = assertThrows(MappingError.self) { try store.fetchAll(Measure.self, where: "id = 2") }
            XCTAssertTrue(error?.description.contains("Measure.maybe") ?? false, "\(String(describing: error))")
            try db.execute("UPDATE measure SET value = 0.1, maybe = NULL")
            XCTAssertEqual(try store.fetchAll(Measure.self).map(\.value), [0.1, 0.1])
        }
    }

    func testEncodingErrors() throws {
        struct Huge: Codable { var id: Int; var big: UInt64 }
        struct NoKey: Codable { var a: Int }
        try forEachBackend(needing: .models) { backend in
            let store = ModelStore(database: try database(backend, "CREATE TABLE huge (id INTEGER, big BIGINT);"))
            let error = assertThrows(MappingError.self) { try store.insert(Huge(id: 1, big: .max)) }
            XCTAssertTrue(error?.description.contains(backend.unsignedTooLarge) ?? false)
            let noKey = ModelStore(database: try database(backend, "CREATE TABLE no_key (a INTEGER);"))
            XCTAssertThrowsError(try noKey.update(NoKey(a: 1))) { XCTAssertTrue("\($0)".contains("has no primary key")) }
        }
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
        struct Absent: Codable { var id: Int }
        try forEachBackend(needing: .models) { backend in
            let db = try database(backend, """
                CREATE TABLE checked (id INTEGER PRIMARY KEY, name \(backend.bytesType) NOT NULL, score TEXT NOT NULL,
                                      loose INTEGER, flag INTEGER, genre TEXT NOT NULL);
                """)
            let mismatches = try ModelStore(database: db).check(Checked.self)
            XCTAssertEqual(mismatches.map(\.kind), [.typeMismatch, .typeMismatch, .missingColumn, .nullability])
            XCTAssertEqual(mismatches.map(\.property), ["name", "score", "missing", "loose"])
            XCTAssertTrue(mismatches[0].description.contains("declared \(backend.bytesType)"), mismatches[0].description)
            XCTAssertEqual(try ModelStore(database: db).check(Absent.self).map(\.kind), [.missingTable])
            try db.execute("CREATE TABLE book (isbn TEXT NOT NULL, title TEXT NOT NULL, author_id INTEGER NOT NULL, published_on TEXT, in_print INTEGER NOT NULL)")
            XCTAssertEqual(try ModelStore(database: db).check(Book.self), [])
        }
    }

    func testCheckModelsOfAManifestReportsMissingTablesAndColumns() throws {
        try forEachBackend(needing: .models) { backend in
            let project = try Project(self, backend: backend, files: [
                "sql/1.sql": "CREATE TABLE books (isbn TEXT PRIMARY KEY, published_on TEXT);"])
            try project.file("manifest.xml", """
                <manifest version="1">\(backend.databaseElement(project.root))<migrations directory="sql"/>
                  <models>
                    <model type="Book" table="books" primaryKey="isbn"><property name="publishedOn" column="published"/></model>
                    <model type="Ghost"/>
                  </models>
                </manifest>
                """)
            _ = try project.migrator().migrate()
            let problems = try checkModels(of: try project.manifest(), in: try project.connection())
            XCTAssertEqual(problems.count, 2)
            XCTAssertTrue(problems[0].message.contains("column 'published'"), problems[0].message)
            XCTAssertEqual(problems[0].location.line, 3)
            XCTAssertTrue(problems[1].message.contains("table 'ghost' does not exist"), problems[1].message)
            let cli = try project.strataOnBackend(["check"])
            XCTAssertEqual(cli.status, 3)
            XCTAssertTrue(cli.stderr.contains("manifest.xml:3: model Book"), cli.stderr)
        }
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
        try forEachBackend(needing: .models) { backend in
            let db = try database(backend, """
                CREATE TABLE shapes (position INTEGER, kind TEXT, radius DOUBLE PRECISION, side DOUBLE PRECISION);
                INSERT INTO shapes VALUES (1, 'circle', 1.5, 99), (2, 'square', 99, 2.5), (3, 'circle', 3.5, 99), (4, 'square', 99, 4.5);
                """)
            let store = ModelStore(database: db)
            let sql = "SELECT kind, radius, side FROM shapes ORDER BY position"
            XCTAssertEqual(try store.fetchAll(Shape<CircleKeys>.self, sql: sql, .none).map(\.size), [1.5, 2.5, 3.5, 4.5])
            XCTAssertEqual(try store.fetchAll(Shape<IndexKey>.self, sql: sql, .none).map(\.size), [1.5, 2.5, 3.5, 4.5])
            XCTAssertEqual(try store.fetchAll(Shape<NameKey>.self, sql: sql, .none).map(\.size), [1.5, 2.5, 3.5, 4.5])
        }
    }

    func testFetchingScalarsAndCursorStyleIteration() throws {
        try forEachBackend(needing: .models) { backend in
            let db = try database(backend, "CREATE TABLE n (x INTEGER); INSERT INTO n VALUES (1), (2), (3);")
            let store = ModelStore(database: db)
            XCTAssertEqual(try store.fetchAll(Int.self, sql: "SELECT x FROM n ORDER BY x"), [1, 2, 3])
            var seen = 0
            try store.forEach(Int.self, sql: "SELECT x FROM n") { seen += $0 }
            XCTAssertEqual(seen, 6)
        }
    }

    /// A DECIMAL(p,s) column's NUMERIC affinity is SQLite's: see `SQLiteMappingTests`.
    func testValuesThatWouldChangeOnTheWayInOrOutAreErrors() throws {
        enum Flags: UInt64, Codable { case small = 1, huge = 18446744073709551615 }
        struct F: Codable { var id: Int; var f: Flags }
        struct D: Codable { var id: Int; var d: Double }
        struct P: Codable { var id: Int; var amount: Decimal }
        try forEachBackend(needing: .models) { backend in
            let db = try Project(self, backend: backend, files: [:]).connection()
            let store = ModelStore(database: db)
            let p1 = db.dialect.placeholder(1)
            try db.execute("CREATE TABLE f (id INTEGER PRIMARY KEY, f BIGINT)")
            try store.insert(F(id: 1, f: .small))
            let huge = assertThrows(MappingError.self) { try store.insert(F(id: 2, f: .huge)) }
            XCTAssertTrue(huge?.description.contains(backend.unsignedTooLarge) ?? false, String(describing: huge))
            XCTAssertThrowsError(try store.insert(contentsOf: [F(id: 3, f: .huge)]))
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM f", as: Int.self), 1, "nothing stored as an approximate REAL")

            try run("CREATE TABLE d (id INTEGER PRIMARY KEY, d BIGINT); INSERT INTO d VALUES (1, 9007199254740992), (2, 9007199254740993);", on: db)
            XCTAssertEqual(try store.find(D.self, key: 1)?.d, 9007199254740992)
            XCTAssertThrowsError(try store.find(D.self, key: 2), "2^53 + 1 would read as 2^53")
            XCTAssertNil(Double.fromDatabaseValue(.integer(9007199254740993)))

            try db.execute("CREATE TABLE p (id INTEGER PRIMARY KEY, amount TEXT NOT NULL)")
            for (text, expected) in [("1234567.8901234567", Decimal(string: "1234567.8901234567")), ("-0.5", Decimal(string: "-0.5")),
                                     ("12abc", nil), ("1,5", nil), (" 7", nil), (String(repeating: "9", count: 44), nil)] {
                try db.execute("DELETE FROM p")
                try db.execute("INSERT INTO p VALUES (1, \(p1))", [text])
                if let expected {
                    XCTAssertEqual(try store.find(P.self, key: 1)?.amount, expected, text)
                } else {
                    XCTAssertThrowsError(try store.find(P.self, key: 1), "'\(text)' is not exactly a decimal")
                }
            }
            XCTAssertEqual(try store.check(P.self).count, 0)
        }
    }

    // MARK: What identifies a row: a key several rows share would make one write change all of them.

    struct Copy: Codable, Equatable {
        var title: String
        var shelf: String
    }

    func testAKeyThatIsNotUniqueInTheTableIsRefusedBeforeAnyRowChanges() throws {
        try forEachBackend(needing: .models) { backend in
            let project = try Project(self, backend: backend, files: [:])
            let db = try project.connection()
            try db.execute("CREATE TABLE copies (title TEXT NOT NULL, shelf TEXT NOT NULL)")
            try db.execute("INSERT INTO copies (title, shelf) VALUES ('Dune', 'a'), ('Dune', 'b'), ('Emma', 'c')")
            let manifest = try Manifest.load(path: try writeManifest(project, """
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
        try forEachBackend(needing: .models) { backend in
            let project = try Project(self, backend: backend, files: [:])
            let db = try project.connection()
            try db.execute("CREATE TABLE copies (id INTEGER PRIMARY KEY, title TEXT NOT NULL, shelf TEXT NOT NULL)")
            try db.execute("CREATE UNIQUE INDEX copies_title_shelf ON copies (shelf, title)")
            try db.execute("INSERT INTO copies (id, title, shelf) VALUES (1, 'Dune', 'a'), (2, 'Dune', 'b')")
            let manifest = try Manifest.load(path: try writeManifest(project, """
                <manifest version="1"><models><model type="Copy" table="copies" primaryKey="title, shelf"/></models></manifest>
                """))
            let store = ModelStore(database: db, manifest: manifest)
            try store.save(Copy(title: "Dune", shelf: "b"))
            XCTAssertTrue(try store.delete(Copy(title: "Dune", shelf: "a")))
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM copies", as: Int.self), 1)
            XCTAssertEqual(try checkModels(of: manifest, in: db), [])
        }
    }

    private func writeManifest(_ project: Project, _ manifest: String) throws -> String {
        try project.file("models.xml", manifest)
        return project.root.appendingPathComponent("models.xml").path
    }

}

/// What the mapper tests declare or expect that each database spells its own way.
extension TestBackend {
    /// A 64-bit integer primary key the database fills in when an insert leaves it NULL.
    var autoIncrementingKey: String {
        switch kind {
        case .sqlite: "INTEGER PRIMARY KEY"
        case .postgres: "bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
        }
    }

    /// The column type that holds bytes (`Data`), as the catalog reports it back.
    var bytesType: String {
        switch kind {
        case .sqlite: "BLOB"
        case .postgres: "bytea"
        }
    }

    /// What the database says when a row breaks a CHECK constraint.
    var checkViolation: String {
        switch kind {
        case .sqlite: "CHECK constraint failed"
        case .postgres: "violates check constraint"
        }
    }

    /// The mapper's message for an unsigned value above the largest integer the database stores.
    var unsignedTooLarge: String {
        switch kind {
        case .sqlite, .postgres: "does not fit a 64-bit signed integer"
        }
    }
}
