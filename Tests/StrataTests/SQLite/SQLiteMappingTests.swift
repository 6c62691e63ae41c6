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

    func testAStringConditionKeepsSQLitesPlaceholdersAndALiteralBinds() throws {
        let store = ModelStore(database: try database("CREATE TABLE edition (isbn TEXT, number INTEGER, note TEXT, PRIMARY KEY (isbn, number));"))
        try store.insert(Edition(isbn: "?", number: 1, note: "a ? b"))
        XCTAssertEqual(try store.fetchAll(Edition.self, where: "number = ?", [1]).count, 1)
        XCTAssertEqual(try store.count(Edition.self, where: "number = :n", ["n": 1]), 1)
        // The `?` inside the value is data: a splice would leave a placeholder without an argument.
        XCTAssertEqual(try store.fetchFirst(Edition.self, where: "note = \("a ? b") AND number = \(1)")?.isbn, "?")
        let condition = "number = \(1)"                        // a String: runs only with arguments
        XCTAssertEqual(try store.count(Edition.self, where: condition, .none), 1)
    }

    /// SQLite keeps its stored form of a `Date` (UTC ISO-8601 text, rounded to the millisecond) whichever way
    /// the date is written, while PostgreSQL writes microseconds (`PostgresModelEdgeTests`).
    func testADateIsStoredAsMillisecondTextWhicheverWayItIsWritten() throws {
        struct Event: Codable { var id: Int; var at: Date }
        final class Plain { let id: Int; let at: Date; init(id: Int, at: Date) { self.id = id; self.at = at } }
        let db = try database("""
            CREATE TABLE event (id INTEGER PRIMARY KEY, at TEXT NOT NULL);
            CREATE TABLE plain (id INTEGER PRIMARY KEY, at TEXT NOT NULL);
            CREATE VIEW every AS SELECT id, at FROM event UNION ALL SELECT id, at FROM plain;
            """)
        let store = ModelStore(database: db)
        let date = Date(timeIntervalSince1970: 1_700_000_000.1234568)
        try store.insert(Event(id: 1, at: date))
        try store.insert(contentsOf: [Event(id: 2, at: date)])
        try store.save(Event(id: 3, at: date))
        try store.insert(Plain(id: 4, at: date))
        try db.execute("INSERT INTO event VALUES (\(5), \(date))")
        try db.execute("INSERT INTO event VALUES (?, ?)", [6, date])
        try db.execute("INSERT INTO event VALUES (:id, :at)", ["id": 7, "at": date])
        XCTAssertEqual(try db.query("SELECT at FROM every ORDER BY id").all().map { $0[0] },
                       Array(repeating: .text("2023-11-14T22:13:20.123Z"), count: 7))
        XCTAssertEqual(try store.find(Event.self, key: date)?.id, nil, "a key finer than the stored text finds nothing")
        XCTAssertEqual(try store.count(Event.self, where: "at = \(Date(timeIntervalSince1970: 1_700_000_000.123))"), 6)
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

    /// A statement read only through `PreparedStatement`, as rows of a backend without a container of its own are.
    final class ProtocolOnlyStatement: PreparedStatement {
        let base: Statement
        init(_ base: Statement) { self.base = base }
        var sql: String { base.sql }
        var layout: RowLayout { base.layout }
        func bind(_ arguments: StatementArguments) throws { try base.bind(arguments) }
        func bind(_ value: DatabaseValue, at index: Int32) throws { try base.bind(value, at: index) }
        func bindNull(at index: Int32) { base.bindNull(at: index) }
        func bind(int64 value: Int64, at index: Int32) { base.bind(int64: value, at: index) }
        func bind(double value: Double, at index: Int32) { base.bind(double: value, at: index) }
        func bind(text bytes: UnsafeBufferPointer<UInt8>, at index: Int32, copying: Bool) {
            base.bind(text: bytes, at: index, copying: copying)
        }
        func bind(blob bytes: UnsafeBufferPointer<UInt8>, at index: Int32) { base.bind(blob: bytes, at: index) }
        func run() throws { try base.run() }
        func step() throws -> Bool { try base.step() }
        func reset() { base.reset() }
        func column(at index: Int32) -> ColumnValue { base.column(at: index) }
        func value(at index: Int32) -> DatabaseValue { base.value(at: index) }
    }

    func testSQLitesOwnContainerDecodesExactlyAsTheProtocolReadingOne() throws {
        // SQLite rows decode through a container compiled in the SQLite module (for speed); any other backend's
        // through the statement protocol. Both must give the same values and the same errors.
        struct Row: Decodable, Equatable {
            var id: Int; var small: UInt8; var name: String; var price: Double; var ratio: Float; var flag: Bool
            var note: String?; var day: Date; var size: Int64?
        }
        let db = try database("""
            CREATE TABLE t (id INTEGER, small INTEGER, name TEXT, price REAL, ratio REAL, flag INTEGER, note TEXT, day TEXT, size INTEGER);
            INSERT INTO t VALUES (1, 255, 'héllo', 2.5, 0.5, 1, NULL, '2024-01-02', NULL),
                                 (2, 3, 'b', 1, 2, 0, 'n', '2024-01-03T10:00:00Z', 9007199254740993);
            """)
        func decode(_ sql: String, protocolOnly: Bool) -> Result<[Row], MappingError> {
            guard let compiled = try? db.prepare(sql) else { return .failure(MappingError(typeName: "", message: "prepare")) }
            let statement: any PreparedStatement = protocolOnly ? ProtocolOnlyStatement(compiled) : compiled
            let context = DecodingContext(statement: statement, typeName: "Row", layout: nil)
            defer { context.finish(); statement.reset() }
            let decoder = RowDecoder(context: context)
            var rows: [Row] = []
            do {
                while try context.nextRow() { rows.append(try Row(from: decoder)) }
                return .success(rows)
            } catch let error as MappingError {
                return .failure(error)
            } catch {
                return .failure(MappingError(typeName: "", message: "\(error)"))
            }
        }
        let good = decode("SELECT * FROM t ORDER BY id", protocolOnly: false)
        XCTAssertEqual(try good.get().map(\.name), ["héllo", "b"])
        XCTAssertEqual(try good.get()[1].size, 9_007_199_254_740_993)
        XCTAssertEqual(good, decode("SELECT * FROM t ORDER BY id", protocolOnly: true))
        for bad in ["SELECT id, 256 AS small, name, price, ratio, flag, note, day, size FROM t",
                    "SELECT id, small, CAST(x'FF' AS TEXT) AS name, price, ratio, flag, note, day, size FROM t",
                    "SELECT id, small, name, price, ratio, 2 AS flag, note, day, size FROM t",
                    "SELECT id, small, name, 'x' AS price, ratio, flag, note, day, size FROM t",
                    "SELECT id, small, name, price, 1e300 AS ratio, flag, note, day, size FROM t",
                    "SELECT id, small, name, price, ratio, flag, 5 AS note, day, size FROM t",
                    "SELECT id, small, name, price, ratio, flag, note, 'someday' AS day, size FROM t",
                    "SELECT id, name, price, ratio, flag, note, day, size FROM t"] {
            let fast = decode(bad, protocolOnly: false)
            guard case .failure(let error) = fast else { return XCTFail("\(bad) decoded") }
            XCTAssertNotEqual(error.message, "prepare", bad)
            XCTAssertEqual(fast, decode(bad, protocolOnly: true), bad)
        }
    }

    func testTextThatIsNotUTF8IsAnErrorAtEveryLengthAndPosition() throws {
        // Decoding would otherwise replace the bytes with U+FFFD, and a save would write that over the stored text.
        struct Note: Decodable { var text: String; var other: String? }
        let db = try database("CREATE TABLE note (text TEXT, other TEXT);")
        for length in [1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 40] {
            for position in Set([0, length / 2, length - 1]) {
                var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                bytes[position] = 0xFF
                for column in ["text", "other"] {
                    try db.execute("DELETE FROM note")
                    let hex = bytes.map { String(format: "%02X", $0) }.joined()
                    let valid = "'ok'"
                    try db.execute("INSERT INTO note VALUES (\(column == "text" ? "CAST(x'\(hex)' AS TEXT)" : valid), "
                                   + "\(column == "other" ? "CAST(x'\(hex)' AS TEXT)" : valid))", .none)
                    XCTAssertThrowsError(try ModelStore(database: db).fetchAll(Note.self), "\(length) \(position)") { error in
                        XCTAssertEqual((error as? MappingError)?.message, "is not valid UTF-8 text")
                        XCTAssertEqual((error as? MappingError)?.property, column)
                    }
                }
            }
            // Valid text of the same length, with a multi-byte character where it fits, reads back unchanged.
            let text = length >= 2 ? String(repeating: "b", count: length - 2) + "é" : "c"
            try db.execute("DELETE FROM note")
            try db.execute("INSERT INTO note VALUES (?, ?)", [text, text])
            let read = try XCTUnwrap(ModelStore(database: db).fetchAll(Note.self).first)
            XCTAssertEqual(read.text, text)
            XCTAssertEqual(read.other, text)
        }
    }

    func testAWholeRowReadAsADateFollowsTheMappersRulesNotFoundations() throws {
        // Date's own init(from:) counts seconds from 2001 and refuses text.
        let store = ModelStore(database: try Database())
        XCTAssertEqual(try store.fetchAll(Date.self, sql: "SELECT 0"), [Date(timeIntervalSince1970: 0)])
        XCTAssertEqual(try store.fetchAll(Date.self, sql: "SELECT '2024-01-01T00:00:00Z'"),
                       [Date(timeIntervalSince1970: 1_704_067_200)])
        XCTAssertEqual(try store.fetchAll(UUID.self, sql: "SELECT 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'").map(\.uuidString),
                       ["A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"])
        XCTAssertEqual(try store.fetchAll(Int.self, sql: "SELECT 7"), [7])
        XCTAssertThrowsError(try store.fetchAll(Date.self, sql: "SELECT 'someday'"))
    }

    func testTextThatIsNotUTF8IsAnErrorWhateverTypeReadsIt() throws {
        struct Email: DatabaseValueConvertible, Decodable {
            var address: String
            var databaseValue: DatabaseValue { .text(address) }
            static func fromDatabaseValue(_ value: DatabaseValue) -> Email? {
                if case .text(let text) = value { return Email(address: text) }
                return nil
            }
            init(address: String) { self.address = address }
            init(from decoder: any Decoder) throws { address = try decoder.singleValueContainer().decode(String.self) }
        }
        struct Explicit: Decodable {
            var text: String?
            enum CodingKeys: String, CodingKey { case text }
            init(from decoder: any Decoder) throws {
                text = try decoder.container(keyedBy: CodingKeys.self).decode(String?.self, forKey: .text)
            }
        }
        struct Bytes: Decodable { var text: Data }
        struct Wrapped: Decodable { var text: Email }
        let db = try database("CREATE TABLE note (text TEXT); INSERT INTO note VALUES (CAST(x'41FF42' AS TEXT));")
        let store = ModelStore(database: db)
        let sql = "SELECT text FROM note"
        for (name, read) in [("String?", { _ = try store.fetchAll(Explicit.self, sql: sql, .none) }),
                             ("Data", { _ = try store.fetchAll(Bytes.self, sql: sql, .none) }),
                             ("wrapper", { _ = try store.fetchAll(Wrapped.self, sql: sql, .none) })] as [(String, () throws -> Void)] {
            XCTAssertThrowsError(try read(), name) { error in
                XCTAssertEqual((error as? MappingError)?.message, "is not valid UTF-8 text", "\(name): \(error)")
            }
        }
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

    // MARK: Keys, text and columns as SQLite compares and compiles them (found by the review of the backend split)

    struct Code: Codable, Equatable {
        var code: String
        var label: String
    }

    struct Person: Codable, Equatable {
        var id: Int
        var first: String
        var last: String
    }

    private func manifest(_ project: Project, _ xml: String) throws -> Manifest {
        try project.file("models.xml", xml)
        return try Manifest.load(path: project.root.appendingPathComponent("models.xml").path)
    }

    /// README ("Names"): `save`, `update` and `delete` write by key only when the key tells rows apart; an index
    /// unique under BINARY on a NOCASE column does not count. The table's PRIMARY KEY is accepted without that
    /// check, so a primary key declared `PRIMARY KEY (code COLLATE BINARY)` on a `COLLATE NOCASE` column (rows
    /// 'a' and 'A' both allowed, `WHERE code = 'a'` matches both) lets one `save` overwrite two rows, and `delete`
    /// remove both; `check` reports nothing.
    func testAPrimaryKeyUniqueOnlyUnderAnotherCollationThanItsColumnsIsNotAKeyThatTellsRowsApart() throws {
        let project = try Project(self, files: [:])
        let db = try project.database()
        try db.execute("CREATE TABLE codes (code TEXT COLLATE NOCASE NOT NULL, label TEXT NOT NULL, PRIMARY KEY (code COLLATE BINARY))")
        try db.execute("INSERT INTO codes VALUES ('a', 'lower'), ('A', 'upper')")
        let manifest = try manifest(project, """
            <manifest version="1"><models><model type="Code" table="codes"/></models></manifest>
            """)
        XCTAssertEqual(try checkModels(of: manifest, in: db).count, 1,
                       "check should report that (code) does not tell rows apart as WHERE compares them")
        let store = ModelStore(database: db, manifest: manifest)
        let error = assertThrows(MappingError.self) { try store.save(Code(code: "a", label: "changed")) }
        XCTAssertTrue(error?.message.contains("not unique") ?? false, "\(String(describing: error))")
        XCTAssertEqual(try db.rows("SELECT code, label FROM codes ORDER BY label").map { "\($0[0]) \($0[1])" },
                       ["'a' 'lower'", "'A' 'upper'"], "one save must never change the row 'A'")
    }

    /// The same without a manifest: the declared primary key is used, and `delete(_:key:)` removes both rows.
    func testDeleteByADeclaredPrimaryKeyWithAnotherCollationRemovesOneRowAtMost() throws {
        let project = try Project(self, files: [:])
        let db = try project.database()
        try db.execute("CREATE TABLE codes (code TEXT COLLATE NOCASE NOT NULL, label TEXT NOT NULL, PRIMARY KEY (code COLLATE BINARY)) WITHOUT ROWID")
        try db.execute("INSERT INTO codes VALUES ('a', 'lower'), ('A', 'upper')")
        let store = ModelStore(database: db)
        _ = try? store.delete(Code.self, key: "a")
        XCTAssertGreaterThanOrEqual(try db.scalar("SELECT count(*) FROM codes", as: Int.self) ?? 0, 1,
                                    "delete by key removed every row equal under the column's NOCASE collation")
    }

    /// A legitimate key refused: an index unique under NOCASE on a BINARY column (the usual case-insensitive unique
    /// e-mail) allows no two rows equal under NOCASE, so none equal under BINARY either: `WHERE email = ?` matches
    /// one row at most. The rule compares collation names and refuses it; the commit before wrote by it.
    func testAnIndexUniqueUnderNOCASEOnABinaryColumnTellsRowsApart() throws {
        struct Member: Codable { var email: String; var name: String }
        let project = try Project(self, files: [:])
        let db = try project.database()
        try db.execute("CREATE TABLE members (id INTEGER PRIMARY KEY, email TEXT NOT NULL, name TEXT NOT NULL)")
        try db.execute("CREATE UNIQUE INDEX members_email ON members (email COLLATE NOCASE)")
        try db.execute("INSERT INTO members (email, name) VALUES ('ada@example.org', 'Ada'), ('bob@example.org', 'Bob')")
        let manifest = try manifest(project, """
            <manifest version="1"><models><model type="Member" table="members" primaryKey="email"/></models></manifest>
            """)
        XCTAssertEqual(try checkModels(of: manifest, in: db), [])
        let store = ModelStore(database: db, manifest: manifest)
        XCTAssertNoThrow(try store.save(Member(email: "ada@example.org", name: "Ada L.")))
        XCTAssertEqual(try db.scalar("SELECT name FROM members WHERE email = 'ada@example.org'", as: String.self), "Ada L.")
    }

    /// README: "No value is changed silently"; a value that does not fit throws a `MappingError`. Text that is not
    /// UTF-8 reads into `String` with U+FFFD in place of its bytes, and `save` writes that back: a read-modify-save
    /// of another column changes this one's bytes.
    func testTextThatIsNotUTF8IsAnErrorNotReplacedAndWrittenBack() throws {
        let project = try Project(self, files: [:])
        let db = try project.database()
        try db.execute("CREATE TABLE codes (code TEXT PRIMARY KEY, label TEXT NOT NULL)")
        try db.execute("INSERT INTO codes VALUES ('k', CAST(X'6361FE66E9' AS TEXT))")   // "ca\xFEf\xE9"
        let store = ModelStore(database: db)
        let read = try? store.find(Code.self, key: "k")
        if var code = read {
            code.code = "k"
            try store.save(code)
        }
        XCTAssertEqual(try db.scalar("SELECT hex(label) FROM codes", as: String.self), "6361FE66E9",
                       "the stored bytes changed after a read and a save: \(String(describing: read))")
        XCTAssertNil(read, "reading text that is not UTF-8 into String should throw, not replace bytes")
    }

    /// A cached statement keeps the column names it was first prepared with (`Statement.layout` is computed once),
    /// but SQLite re-prepares it after a schema change, and `SELECT *` then returns the columns in the new order.
    /// A migration that rebuilds a table with its columns in another order (SQLite's documented procedure) makes
    /// every later `fetchAll` on the same connection read `first` from the `last` column, silently, even after
    /// `invalidateLayouts()` (which its documentation says to call "after a migration changed tables").
    func testReadsAfterAMigrationRebuiltTheTableReadTheRightColumns() throws {
        let project = try Project(self, files: [:])
        let db = try project.database()
        try db.execute("CREATE TABLE person (id INTEGER PRIMARY KEY, first TEXT NOT NULL, last TEXT NOT NULL)")
        try db.execute("INSERT INTO person VALUES (1, 'Ada', 'Lovelace')")
        let store = ModelStore(database: db)
        XCTAssertEqual(try store.fetchAll(Person.self), [Person(id: 1, first: "Ada", last: "Lovelace")])
        XCTAssertEqual(try db.query("SELECT * FROM person").next()?.get("first", as: String.self), "Ada")
        try db.executeScript("""
            CREATE TABLE person_new (id INTEGER PRIMARY KEY, last TEXT NOT NULL, first TEXT NOT NULL);
            INSERT INTO person_new (id, last, first) SELECT id, last, first FROM person;
            DROP TABLE person;
            ALTER TABLE person_new RENAME TO person;
            """)
        store.invalidateLayouts()
        XCTAssertEqual(try store.fetchAll(Person.self), [Person(id: 1, first: "Ada", last: "Lovelace")])
        XCTAssertEqual(try db.query("SELECT * FROM person").next()?.get("first", as: String.self), "Ada")
    }

    /// README: "an unsigned integer above `Int64.max` … in arguments … throws instead of becoming a REAL". A key
    /// passed to `find(_:key:)` / `delete(_:key:)` is bound as the REAL 1.8446744073709552e19 instead: no error, and
    /// a row whose key is that REAL is found and deleted for `UInt64.max`.
    func testAKeyAboveInt64MaxIsRefusedNotMatchedAsAnApproximateReal() throws {
        struct Reading: Codable { var k: Double; var v: String }
        let db = try Database(.inMemory)
        try db.execute("CREATE TABLE reading (k REAL PRIMARY KEY, v TEXT)")
        try db.execute("INSERT INTO reading VALUES (18446744073709551616.0, 'not UInt64.max')")
        let store = ModelStore(database: db)
        XCTAssertThrowsError(try store.delete(Reading.self, key: UInt64.max))
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM reading", as: Int.self), 1)
    }
}
