import Foundation
import XCTest
import Strata
@testable import StrataCore
@testable import StrataSQLite

/// `Database.Configuration.dateStorage`: dates written as ISO-8601 text (the default), unix seconds or Julian day
/// numbers, whichever way they reach a statement; text read as ISO-8601 whatever the setting, numbers as configured.
final class DateStorageTests: XCTestCase {
    struct Event: Codable, Equatable { var id: Int; var at: Date }
    final class Plain { let id: Int; let at: Date; init(id: Int, at: Date) { self.id = id; self.at = at } }

    /// 2023-11-14T22:13:20.123Z.
    let date = Date(timeIntervalSince1970: 1_700_000_000.123)

    private func database(_ storage: DateStorage) throws -> Database {
        let db = try Database(configuration: .init(dateStorage: storage))
        try db.executeScript("""
            CREATE TABLE event (id INTEGER PRIMARY KEY, at NOT NULL);
            CREATE TABLE plain (id INTEGER PRIMARY KEY, at NOT NULL);
            CREATE VIEW every AS SELECT id, at FROM event UNION ALL SELECT id, at FROM plain;
            """)
        return db
    }

    /// Writes the date in every way a statement takes one: the mapper's four writes, an interpolated `SQL`
    /// fragment, positional and named arguments.
    private func writeEveryWay(_ db: Database) throws {
        let store = ModelStore(database: db)
        try store.insert(Event(id: 1, at: date))
        try store.insert(contentsOf: [Event(id: 2, at: date)])
        try store.save(Event(id: 3, at: date))
        try store.insert(Plain(id: 4, at: date))
        try db.execute("INSERT INTO event VALUES (\(5), \(date))")
        try db.execute("INSERT INTO event VALUES (?, ?)", [6, date])
        try db.execute("INSERT INTO event VALUES (:id, :at)", ["id": 7, "at": date])
    }

    func testUnixSecondsAreWrittenAsARealWhicheverWayTheDateIsWritten() throws {
        let db = try database(.unixSeconds)
        try writeEveryWay(db)
        XCTAssertEqual(try db.query("SELECT at FROM every ORDER BY id").all().map { $0[0] },
                       Array(repeating: .real(1_700_000_000.123), count: 7))
        XCTAssertEqual(try db.scalar("SELECT DISTINCT strftime('%Y-%m-%d %H:%M:%f', at, 'unixepoch') FROM every", as: String.self),
                       "2023-11-14 22:13:20.123", "SQLite's own functions read it as unix seconds")
        XCTAssertEqual(try ModelStore(database: db).fetchAll(Event.self).map(\.at), Array(repeating: date, count: 6))
        XCTAssertEqual(try db.scalar("SELECT at FROM event WHERE id = 1", as: Date.self), date)
    }

    func testJulianDaysAreWhatSQLitesJuliandayGivesAndReadBackToTheMillisecond() throws {
        let db = try database(.julianDay)
        try writeEveryWay(db)
        let expected = try XCTUnwrap(db.scalar("SELECT julianday('2023-11-14T22:13:20.123Z')", as: Double.self))
        for value in try db.query("SELECT at FROM every ORDER BY id").all().map({ $0[0] }) {
            guard case .real(let day) = value else { return XCTFail("\(value) is not a REAL") }
            XCTAssertEqual(day, expected, accuracy: 1e-9)
        }
        XCTAssertEqual(try db.scalar("SELECT DISTINCT strftime('%Y-%m-%dT%H:%M:%fZ', at) FROM every", as: String.self),
                       "2023-11-14T22:13:20.123Z")
        for event in try ModelStore(database: db).fetchAll(Event.self) {
            XCTAssertEqual(event.at.timeIntervalSince1970, date.timeIntervalSince1970, accuracy: 0.000_5)
        }
        let now = try XCTUnwrap(db.scalar("SELECT julianday('2000-01-01T12:00:00Z')", as: Date.self))
        XCTAssertEqual(now, Date(timeIntervalSince1970: 946_728_000))
    }

    func testTextIsReadAsISO8601WhateverTheStorage() throws {
        for storage in [DateStorage.iso8601Text, .unixSeconds, .julianDay] {
            let db = try database(storage)
            try db.execute("INSERT INTO event VALUES (1, '2023-11-14T22:13:20.123Z')", .none)
            XCTAssertEqual(try db.scalar("SELECT at FROM event", as: Date.self), date, "\(storage)")
            XCTAssertEqual(try ModelStore(database: db).fetchAll(Event.self).first?.at, date, "\(storage)")
        }
    }

    func testTheDefaultStaysISO8601TextReadingNumbersAsUnixSeconds() throws {
        let db = try database(.iso8601Text)
        XCTAssertEqual(db.configuration.dateStorage, .iso8601Text)
        try db.execute("INSERT INTO event VALUES (?, ?)", [1, date])
        try db.execute("INSERT INTO event VALUES (2, 1700000000)", .none)
        XCTAssertEqual(try db.query("SELECT at FROM event ORDER BY id").all().map { $0[0] },
                       [.text("2023-11-14T22:13:20.123Z"), .integer(1_700_000_000)])
        XCTAssertEqual(try ModelStore(database: db).fetchAll(Event.self).map(\.at),
                       [date, Date(timeIntervalSince1970: 1_700_000_000)])
    }

    func testTheSameNumberMeansWhatEachStorageCounts() throws {
        let unix = try database(.unixSeconds)
        let julian = try database(.julianDay)
        for db in [unix, julian] { try db.execute("INSERT INTO event VALUES (1, 2460000.5)", .none) }
        XCTAssertEqual(try unix.scalar("SELECT at FROM event", as: Date.self), Date(timeIntervalSince1970: 2_460_000.5))
        XCTAssertEqual(try julian.scalar("SELECT at FROM event", as: Date.self),
                       ISO8601.parse("2023-02-25T00:00:00Z"), "Julian day 2460000.5 is midnight, 25 February 2023")
    }

    func testANumberThatIsNoDateInTheStorageIsAnErrorNamingTheColumn() throws {
        let cases: [(DateStorage, String)] = [
            (.julianDay, "-1"), (.julianDay, "5373484.5"), (.unixSeconds, "1e15"), (.unixSeconds, "-1e12"),
            (.iso8601Text, "1e300"), (.unixSeconds, "9e999"),
        ]
        for (storage, number) in cases {
            let db = try database(storage)
            try db.execute("INSERT INTO event VALUES (1, \(number))", .none)
            let mapping = assertThrows(MappingError.self) { try ModelStore(database: db).fetchAll(Event.self) }
            XCTAssertEqual(mapping?.column, "at", "\(storage) \(number)")
            XCTAssertTrue(mapping?.message.contains("is not a date") ?? false, "\(storage) \(number): \(String(describing: mapping))")
            let row = assertThrows(DatabaseError.self) { try db.scalar("SELECT at AS happened FROM event", as: Date.self) }
            XCTAssertEqual(row?.kind, .conversion)
            XCTAssertTrue(row?.message.contains("column 'happened'") ?? false, "\(storage) \(number): \(String(describing: row))")
        }
        let julian = try database(.julianDay)
        try julian.execute("INSERT INTO event VALUES (1, 0)", .none)
        XCTAssertEqual(try julian.scalar("SELECT at FROM event", as: Date.self),
                       Date(timeIntervalSince1970: DateStorage.earliestUnixSeconds), "Julian day 0 is the first date")
    }

    func testNullReadsAsNilAndABlobIsNoDate() throws {
        let db = try database(.julianDay)
        XCTAssertNil(try db.scalar("SELECT NULL", .none, as: Date.self))
        XCTAssertNil(try db.query("SELECT NULL AS d", .none).all().first?.get("d", as: Date?.self) ?? nil)
        let error = assertThrows(DatabaseError.self) { try db.query("SELECT x'00' AS d", .none).all().first?.get("d", as: Date.self) }
        XCTAssertEqual(error?.kind, .conversion)
        XCTAssertTrue(error?.message.contains("Julian day") ?? false, String(describing: error))
    }

    func testAPoolsConnectionsStoreDatesAsConfigured() throws {
        let path = try makeTemporaryDirectory(self).appendingPathComponent("pool.sqlite").path
        let pool = try DatabasePool(path: path, configuration: .init(database: .init(dateStorage: .unixSeconds)))
        try pool.write { db in
            try db.execute("CREATE TABLE t (at REAL)")
            try db.execute("INSERT INTO t VALUES (\(date))")
        }
        XCTAssertEqual(try pool.read { db in try db.scalar("SELECT at FROM t", as: Date.self) }, date)
        XCTAssertEqual(try pool.read { db in try db.scalar("SELECT typeof(at) FROM t", as: String.self) }, "real")
    }

    /// Found by a hostile review: a `Date` a registered function returned was stored as ISO-8601 text whatever the
    /// connection's storage, so a column mixed text and numbers and `WHERE at < \(date)` missed the row.
    func testADateAFunctionReturnsIsStoredAsTheConnectionStoresDates() throws {
        let date = Date(timeIntervalSince1970: 1_700_000_000.5)
        for storage in [DateStorage.unixSeconds, .julianDay, .iso8601Text] {
            let db = try Database(.inMemory, configuration: .init(dateStorage: storage))
            try db.execute("CREATE TABLE t (at)", .none)
            try db.createFunction("stamp", argumentCount: 0) { _ in date }
            try db.execute("INSERT INTO t VALUES (stamp())", .none)
            XCTAssertEqual(try db.scalar("SELECT typeof(at) FROM t", as: String.self), storage == .iso8601Text ? "text" : "real", "\(storage)")
            let later = date.addingTimeInterval(60)
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM t WHERE at < \(later)", as: Int.self), 1, "\(storage)")
            XCTAssertEqual(try db.scalar("SELECT at FROM t", as: Date.self), date, "\(storage)")
        }
    }

    // MARK: Per column

    struct Stamp: Codable, Equatable { var id: Int; var at: Date; var seen: Date?; var logged: Date }
    final class PlainStamp {
        let id: Int, at: Date, seen: Date?, logged: Date
        init(id: Int, at: Date, seen: Date?, logged: Date) { (self.id, self.at, self.seen, self.logged) = (id, at, seen, logged) }
    }

    /// `<property dateStorage>` overrides the database's storage for one column, on every write path of the mapper,
    /// and reads that column's numbers the same way.
    func testAPropertysDateStorageOverridesTheDatabasesForItsColumn() throws {
        let manifest = try Manifest.load(xml: """
            <manifest version="1"><database path="x.sqlite"/><models>
              <model type="Stamp" table="stamp">
                <property name="at" dateStorage="unixSeconds"/>
                <property name="seen" column="seen_jd" dateStorage="julianDay"/>
              </model>
              <model type="PlainStamp" table="stamp">
                <property name="at" dateStorage="unixSeconds"/>
                <property name="seen" column="seen_jd" dateStorage="julianDay"/>
              </model>
            </models></manifest>
            """, directory: NSTemporaryDirectory())
        XCTAssertEqual(manifest.models.first?.dateStorage, ["at": .unixSeconds, "seen": .julianDay])
        let db = try Database() // the database stores dates as ISO-8601 text
        try db.executeScript("CREATE TABLE stamp (id INTEGER PRIMARY KEY, at NOT NULL, seen_jd, logged NOT NULL);")
        let store = ModelStore(database: db, manifest: manifest)
        let stamp = Stamp(id: 1, at: date, seen: date, logged: date)
        try store.insert(stamp)
        try store.insert(contentsOf: [Stamp(id: 2, at: date, seen: date, logged: date)])
        try store.save(Stamp(id: 3, at: date, seen: date, logged: date))
        try store.insert(PlainStamp(id: 4, at: date, seen: date, logged: date))
        let julian = try XCTUnwrap(db.scalar("SELECT julianday('2023-11-14T22:13:20.123Z')", as: Double.self))
        for row in try db.query("SELECT at, seen_jd, logged FROM stamp ORDER BY id").all() {
            XCTAssertEqual(row[0], .real(1_700_000_000.123))
            guard case .real(let day) = row[1] else { return XCTFail("\(row[1]) is not a REAL") }
            XCTAssertEqual(day, julian, accuracy: 1e-9)
            XCTAssertEqual(row[2], .text("2023-11-14T22:13:20.123Z"), "a column without its own setting follows the database")
        }
        let read = try store.fetchAll(Stamp.self, where: "1 = 1 ORDER BY id", .none)
        XCTAssertEqual(read.count, 4)
        for stamp in read {
            XCTAssertEqual(stamp.at, date)
            XCTAssertEqual(try XCTUnwrap(stamp.seen).timeIntervalSince1970, date.timeIntervalSince1970, accuracy: 0.000_5)
            XCTAssertEqual(stamp.logged, date)
        }
        // Read without the setting, the unix seconds would be taken as unix seconds too, but a Julian day number
        // would be a date in 1970: the setting is what reads it right.
        let unmapped = try ModelStore(database: db).fetchAll(Stamp.self, sql: "SELECT id, at, seen_jd AS seen, logged FROM stamp", .none)
        XCTAssertNotEqual(unmapped.first?.seen, read.first?.seen)
        // A number that is no date in the column's storage is an error naming the column and its storage's range.
        try db.execute("UPDATE stamp SET seen_jd = -5 WHERE id = 1", .none)
        XCTAssertThrowsError(try store.fetchAll(Stamp.self)) { error in
            XCTAssertTrue("\(error)".contains("seen_jd"), "\(error)")
            XCTAssertTrue("\(error)".contains("Julian day"), "\(error)")
        }
    }

    func testTheManifestRefusesAnUnknownDateStorageAndAnEmptyProperty() throws {
        for (property, expected) in [(#"<property name="at" dateStorage="epoch"/>"#, "epoch"),
                                     (#"<property name="at"/>"#, "says nothing")] {
            XCTAssertThrowsError(try Manifest.load(xml: """
                <manifest version="1"><database path="x.sqlite"/><models><model type="Stamp">\(property)</model></models></manifest>
                """, directory: NSTemporaryDirectory())) { error in
                XCTAssertTrue("\(error)".contains(expected), "\(error)")
            }
        }
    }

    // MARK: Dates with no stored form

    /// A NaN or infinite `Date`, and a NaN `Double`, are refused on every write path and storage: SQLite would
    /// store NULL for NaN, and ISO-8601 text would have been 1970-01-01 (or a clamped date) in silence.
    func testANaNOrInfiniteDateAndANaNDoubleAreRefusedNotStored() throws {
        struct Reading: Codable { var id: Int; var at: Date; var value: Double }
        final class PlainReading { let id: Int, at: Date, value: Double; init(id: Int, at: Date, value: Double) { (self.id, self.at, self.value) = (id, at, value) } }
        for storage in [DateStorage.iso8601Text, .unixSeconds, .julianDay] {
            let db = try Database(configuration: .init(dateStorage: storage))
            try db.executeScript("CREATE TABLE reading (id INTEGER PRIMARY KEY, at, value); CREATE TABLE plain_reading (id INTEGER PRIMARY KEY, at, value);")
            let store = ModelStore(database: db)
            for bad in [Date(timeIntervalSince1970: .nan), Date(timeIntervalSince1970: .infinity), Date(timeIntervalSince1970: -.infinity)] {
                let writes: [(String, () throws -> Void)] = [
                    ("fragment", { try db.execute("INSERT INTO reading VALUES (1, \(bad), 0)") }),
                    ("argument", { try db.execute("INSERT INTO reading VALUES (?, ?, 0)", [1, bad]) }),
                    ("insert", { try store.insert(Reading(id: 1, at: bad, value: 0)) }),
                    ("batch", { try store.insert(contentsOf: [Reading(id: 1, at: bad, value: 0)]) }),
                    ("save", { try store.save(Reading(id: 1, at: bad, value: 0)) }),
                    ("mirror", { try store.insert(PlainReading(id: 1, at: bad, value: 0)) }),
                ]
                for (path, write) in writes {
                    XCTAssertThrowsError(try write(), "\(storage) \(path) \(bad.timeIntervalSince1970)") { error in
                        XCTAssertTrue("\(error)".contains("NaN"), "\(error)")
                    }
                    XCTAssertEqual(try db.scalar("SELECT (SELECT count(*) FROM reading) + (SELECT count(*) FROM plain_reading)", as: Int.self), 0,
                                   "\(storage) \(path)")
                }
            }
            XCTAssertThrowsError(try db.execute("INSERT INTO reading VALUES (1, NULL, ?)", [Double.nan]))
            XCTAssertThrowsError(try store.insert(contentsOf: [Reading(id: 1, at: date, value: .nan)]))
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM reading", as: Int.self), 0)
            // Infinity is a REAL SQLite keeps, as a Double; only as a Date is it refused.
            try db.execute("INSERT INTO reading VALUES (1, NULL, ?)", [Double.infinity])
            XCTAssertEqual(try db.scalar("SELECT value FROM reading", as: Double.self), .infinity)
        }
    }
}
