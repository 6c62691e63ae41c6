import Foundation
import Strata
@testable import StrataCore
@testable import StrataPostgres
@testable import StrataSQLite
import XCTest

/// Values a PostgreSQL column or session would change without an error, and pool calls that must not write or
/// fail: each was a wrong result (or an error where the README promises success) a hostile review reproduced.
final class PostgresModelEdgeTests: XCTestCase {
    func pg(_ schema: String) throws -> (ModelStore, PostgresConnection, url: String) {
        let root = try makeTemporaryDirectory(self)
        let url = try PostgresServer.shared().url(for: root)
        let db = try PostgresConnection(url: url)
        if !schema.isEmpty { try db.executeSimple(schema) }
        return (ModelStore(database: db), db, url)
    }

    // MARK: Silent wrong values

    /// a `Data` property reads back as the bytes of PostgreSQL's *escape* text (`\000\001\377A\\`, 15 bytes)
    /// instead of the 5 bytes written, with no error. Strata forces TimeZone/DateStyle/extra_float_digits per session
    /// but not `bytea_output`, so a database or role with `bytea_output = 'escape'` (common for legacy clients) makes
    /// `PostgresText.bytea` fail to parse, the column falls back to `.text`, and `Data.fromDatabaseValue(.text)`
    /// turns the text's UTF-8 into the value. README: `Data` ↔ `bytea` both ways; "No value is changed silently".
    func testByteaReadsBackWhenTheDatabaseDefaultsToEscapeOutput() throws {
        struct Blob: Codable, Equatable { var id: Int; var raw: Data }
        let (_, admin, url) = try pg("CREATE TABLE blob (id integer PRIMARY KEY, raw bytea NOT NULL)")
        let name = try admin.scalar("SELECT current_database()", .none, as: String.self) ?? ""
        try admin.executeSimple("ALTER DATABASE \(quoteIdentifier(name)) SET bytea_output = 'escape'")
        let store = ModelStore(database: try PostgresConnection(url: url))   // a new session picks up the default
        let written = Blob(id: 1, raw: Data([0x00, 0x01, 0xFF, 0x41, 0x5C]))
        try store.insert(written)
        XCTAssertEqual(try store.find(Blob.self, key: 1), written)
    }

    /// a `Decimal` with more fraction digits than `numeric(p, s)` keeps is rounded by the server
    /// (1.005 → 1.01) and the insert succeeds; `check` raises nothing. README: "`Decimal` | `numeric(p, s)`, exact
    /// both ways" and "No value is changed silently". Either refuse the write or report it in `check`.
    func testDecimalBeyondTheColumnsScaleIsNotRoundedSilently() throws {
        struct Price: Codable, Equatable { var id: Int; var amount: Decimal }
        let (store, _, _) = try pg("CREATE TABLE price (id integer PRIMARY KEY, amount numeric(10, 2) NOT NULL)")
        let written = Price(id: 1, amount: Decimal(string: "1.005")!)
        do { try store.insert(written) } catch { return }   // refusing would be correct
        XCTAssertEqual(try store.find(Price.self, key: 1), written, "stored other than written")
    }

    /// PostgreSQL's own rule, silent through Strata: a `String` longer than `varchar(n)` only by
    /// trailing spaces is truncated to n characters without an error ("ab     " → "ab "), where any other overlong
    /// string is refused. README: `String` ↔ `varchar(n)`; "No value is changed silently".
    func testVarcharTrailingSpacesAreNotTruncatedSilently() throws {
        struct Code: Codable, Equatable { var id: Int; var code: String }
        let (store, _, _) = try pg("CREATE TABLE code (id integer PRIMARY KEY, code varchar(3) NOT NULL)")
        let written = Code(id: 1, code: "ab     ")
        do { try store.insert(written) } catch { return }
        XCTAssertEqual(try store.find(Code.self, key: 1), written, "stored other than written")
    }

    /// `save` of a row read back from a table keyed by a `timestamptz` holding microseconds (as `now()` writes)
    /// inserted a second row: `Date` parameters were written to the millisecond, so `ON CONFLICT` found no
    /// conflict. They carry microseconds now, PostgreSQL's timestamp resolution, so the value read is the value
    /// written back; `timestamp` keys likewise, and batches.
    func testTimestampKeyReadThenSavedDoesNotDuplicate() throws {
        struct Event: Codable, Equatable { var at: Date; var name: String }
        for type in ["timestamptz", "timestamp"] {
            let (store, db, _) = try pg("""
                CREATE TABLE event (at \(type) PRIMARY KEY, name text NOT NULL);
                INSERT INTO event VALUES ('2024-01-01 00:00:00.123456+00', 'x'), ('2024-01-01 00:00:00.999999+00', 'z')
                """)
            var events = try store.fetchAll(Event.self)
            XCTAssertEqual(events.count, 2, type)
            events[0].name = "y"
            try store.save(events[0])
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM event", .none, as: Int.self), 2, "\(type): save wrote a second row")
            events[1].name = "w"
            try store.save(contentsOf: events)
            XCTAssertEqual(try db.scalar("SELECT string_agg(name, ',' ORDER BY at) FROM event", .none, as: String.self), "y,w", type)
        }
    }

    /// A row keyed by a microsecond timestamp is found, updated and deleted by the `Date` read from it, through
    /// every way a date reaches the server: the model's own writes, a key, a fragment's interpolation, plain
    /// arguments (a `Date` or an optional one).
    func testAMicrosecondTimestampKeyIsFoundUpdatedAndDeletedByTheDateReadFromIt() throws {
        struct Event: Codable, Equatable { var at: Date; var name: String }
        let (store, db, _) = try pg("""
            CREATE TABLE event (at timestamptz PRIMARY KEY, name text NOT NULL);
            INSERT INTO event VALUES ('2024-01-01 00:00:00.123456+00', 'x'), ('2024-06-30 23:59:59.000001+00', 'y')
            """)
        let events = try store.fetchAll(Event.self).sorted { $0.at < $1.at }
        let at = try XCTUnwrap(events.first?.at)
        XCTAssertEqual(try store.find(Event.self, key: at), events[0])
        XCTAssertEqual(try store.find(Event.self, key: ["at": at]), events[0])
        XCTAssertEqual(try store.fetchAll(Event.self, where: "at = \(at)"), [events[0]])
        XCTAssertEqual(try store.count(Event.self, where: "at = $1", [at]), 1)
        XCTAssertEqual(try db.scalar("SELECT name FROM event WHERE at = $1", [at], as: String.self), "x")
        let optional: Date? = at
        XCTAssertEqual(try db.scalar("SELECT name FROM event WHERE at = $1", [optional], as: String.self), "x")
        XCTAssertEqual(try db.scalar("SELECT name FROM event WHERE at = \(at)", as: String.self), "x")
        var changed = events[0]
        changed.name = "changed"
        try store.update(changed)
        XCTAssertEqual(try store.find(Event.self, key: at)?.name, "changed")
        XCTAssertTrue(try store.delete(changed))
        XCTAssertTrue(try store.delete(Event.self, key: events[1].at))
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM event", .none, as: Int.self), 0)
    }

    /// A `Date` finer than a microsecond is written rounded to the nearest microsecond, the same way whichever path
    /// writes it (a carry into the next second included), so a row written one way is found by the same date
    /// another way.
    func testADateIsWrittenRoundedToTheNearestMicrosecondWhicheverWayItIsSent() throws {
        struct Event: Codable, Equatable { var id: Int; var at: Date }
        final class Plain { let id: Int; let at: Date; init(id: Int, at: Date) { self.id = id; self.at = at } }   // through Mirror
        let (store, db, _) = try pg("CREATE TABLE event (id integer PRIMARY KEY, at timestamptz NOT NULL)")
        let plainStore = ModelStore(database: db, mappings: [ModelMapping(typeName: "Plain", table: "event")])
        let base = 1_700_000_000.0   // 2023-11-14T22:13:20Z
        let cases: [(Date, String)] = [
            (Date(timeIntervalSince1970: base + 0.1234562), "2023-11-14 22:13:20.123456"),
            (Date(timeIntervalSince1970: base + 0.1234568), "2023-11-14 22:13:20.123457"),
            (Date(timeIntervalSince1970: base + 0.9999997), "2023-11-14 22:13:21.000000"),
            (Date(timeIntervalSince1970: base - 0.0000003), "2023-11-14 22:13:20.000000"),
            (Date(timeIntervalSince1970: -0.2500004), "1969-12-31 23:59:59.750000"),
        ]
        for (offset, (date, expected)) in cases.enumerated() {
            let id = offset * 10
            try store.insert(Event(id: id, at: date))
            try store.insert(contentsOf: [Event(id: id + 1, at: date)])
            try store.save(Event(id: id + 2, at: date))
            try db.execute("INSERT INTO event VALUES (\(id + 3), \(date))")
            try db.execute("INSERT INTO event VALUES ($1, $2)", [id + 4, date])
            try plainStore.insert(Plain(id: id + 5, at: date))
            let stored = try db.rows("""
                SELECT to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') AS at FROM event
                WHERE id BETWEEN \(id) AND \(id + 9) ORDER BY id
                """).map { try $0.get("at", as: String.self) }
            XCTAssertEqual(stored, Array(repeating: expected, count: 6), "\(date.timeIntervalSince1970)")
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM event WHERE at = $1", [date], as: Int.self), 6)
        }
    }

    // MARK: Pools

    /// `PostgresPool.read` writes. A body that runs `COMMIT` (or a script with its own BEGIN/COMMIT) ends the
    /// READ ONLY transaction; the next statement autocommits outside it and the closing `COMMIT` is only a
    /// warning, so the call returns normally with the row stored. README: `read` — "a write fails `.readOnly`";
    /// the SQLite pool's read does refuse the same body (its reader is opened read-only).
    func testAPostgresReadCannotWriteEvenAfterACommitInTheBody() throws {
        let (_, admin, url) = try pg("CREATE TABLE t (x int)")
        let pool = PostgresPool(url: url, configuration: .init(size: 1))
        _ = try? pool.read { db in
            try db.execute("COMMIT", .none)
            try db.execute("INSERT INTO t VALUES (1)", .none)
        }
        XCTAssertEqual(try admin.scalar("SELECT count(*) FROM t", .none, as: Int.self), 0, "read wrote")
    }

    /// A `write` whose body throws leaves no row, even when the body ran its own `ROLLBACK` first: the body is
    /// stopped at the statement that ended the pool's transaction, so nothing after it runs on its own.
    func testAPostgresWriteThatThrowsLeavesNoRow() throws {
        let (_, admin, url) = try pg("CREATE TABLE t (x int)")
        let pool = PostgresPool(url: url, configuration: .init(size: 1))
        let error = assertThrows(DatabaseError.self) {
            try pool.write { db in
                try db.execute("INSERT INTO t VALUES (1)", .none)
                try db.execute("ROLLBACK", .none)
                try db.execute("INSERT INTO t VALUES (2)", .none)
                throw CancellationError()
            }
        }
        XCTAssertTrue(error?.message.contains("ROLLBACK would end a pool's write's transaction") ?? false, "\(String(describing: error))")
        XCTAssertTrue(error?.message.contains("did not run") ?? false, "\(String(describing: error))")
        XCTAssertEqual(try admin.scalar("SELECT count(*) FROM t", .none, as: Int.self), 0, "a write that threw left a row")
    }

    /// A `COMMIT` in a `write` body would commit what ran before it and leave what follows to run outside any
    /// transaction: it is refused before it runs, the call fails, and nothing is committed.
    func testACommitInAPostgresWriteIsRefusedAndNothingIsCommitted() throws {
        let (_, admin, url) = try pg("CREATE TABLE t (x int)")
        let pool = PostgresPool(url: url, configuration: .init(size: 1))
        let error = assertThrows(DatabaseError.self) {
            try pool.write { db in
                try db.execute("INSERT INTO t VALUES (1)", .none)
                try db.execute("COMMIT", .none)
                try db.execute("INSERT INTO t VALUES (2)", .none)
            }
        }
        XCTAssertTrue(error?.message.contains("COMMIT would end a pool's write's transaction") ?? false, "\(String(describing: error))")
        XCTAssertEqual(try admin.rows("SELECT x FROM t", .none).count, 0)
        // The connection goes back to the pool fit for the next caller.
        XCTAssertEqual(try pool.write { db in try db.scalar("SELECT count(*) FROM t", .none, as: Int.self) }, 0)
    }

    /// A body that swallows the refusal goes on inside its transaction, and the call ends it by the body's outcome:
    /// a throw rolls everything back, a return commits what the body did (its refused statement never ran).
    func testAPostgresWriteThatSwallowsTheRefusalStaysInItsTransaction() throws {
        let (_, admin, url) = try pg("CREATE TABLE t (x int)")
        let pool = PostgresPool(url: url, configuration: .init(size: 1))
        _ = try? pool.write { db in
            try db.execute("INSERT INTO t VALUES (1)", .none)
            _ = try? db.execute("ROLLBACK", .none)
            _ = try? db.execute("INSERT INTO t VALUES (2)", .none)
            throw CancellationError()
        }
        XCTAssertEqual(try admin.scalar("SELECT count(*) FROM t", .none, as: Int.self), 0, "a write that threw left a row")
        try pool.write { db in
            try db.execute("INSERT INTO t VALUES (3)", .none)
            _ = try? db.execute("COMMIT", .none)
            _ = try? db.execute("END; SELECT 1", .none)
            try db.execute("INSERT INTO t VALUES (4)", .none)
        }
        XCTAssertEqual(try admin.rows("SELECT x FROM t ORDER BY x", .none).map { $0[0] }, [.integer(3), .integer(4)])
    }

    /// Values a `real`, `date` or `char(n)` column would change without an error (found by a hostile review): a
    /// `Double` single precision cannot hold, a `Date` with a time of day, a `String` shorter than `n`. Each is
    /// refused naming the column's type; values the column holds as they are go in and read back the same.
    func testRealDateAndCharColumnsRefuseWhatTheyWouldChange() throws {
        struct Reading: Codable, Equatable { var id: Int; var value: Double; var on: Date; var code: String }
        let (store, admin, _) = try pg("""
            CREATE TABLE reading (id integer PRIMARY KEY, value real NOT NULL, "on" date NOT NULL, code char(2) NOT NULL)
            """)
        let midnight = Date(timeIntervalSince1970: 1_699_920_000)     // 2023-11-14 00:00:00 UTC
        let good = Reading(id: 1, value: 0.5, on: midnight, code: "US")
        try store.insert(good)
        XCTAssertEqual(try store.find(Reading.self, key: 1), good)
        let refusals: [(Reading, String)] = [
            (Reading(id: 2, value: 0.123456789, on: midnight, code: "US"), "more precision than real"),
            (Reading(id: 3, value: 0.5, on: midnight.addingTimeInterval(80_000), code: "US"), "has a time of day"),
            (Reading(id: 4, value: 0.5, on: midnight, code: "U"), "pads it with spaces"),
        ]
        for (value, expected) in refusals {
            let error = assertThrows(Error.self) { try store.insert(value) }
            XCTAssertTrue("\(String(describing: error))".contains(expected), "\(expected): \(String(describing: error))")
        }
        XCTAssertEqual(try admin.scalar("SELECT count(*) FROM reading", .none, as: Int.self), 1)
    }

    /// Found by a hostile review: more writes a column would change without an error. An array of `real`, `date`,
    /// `char(n)` or `numeric(p, s)` (elements are not checked one by one, so the column is refused); a domain over
    /// such a type (its base type is checked); an `Int` `real` or `double precision` cannot hold; an `Int` a
    /// negative-scale `numeric` would round; anything into `money` (rounded by `lc_monetary`). And the other way: a
    /// value a negative-scale `numeric` holds exactly is accepted.
    func testMoreColumnsRefuseWhatTheyWouldChange() throws {
        struct Samples: Codable { var id: Int; var values: [Double] }
        struct Reading: Codable { var id: Int; var value: Double }
        struct Count: Codable { var id: Int; var n: Int }
        struct Lot: Codable, Equatable { var id: Int; var size: Decimal }
        struct Price: Codable { var id: Int; var amount: Decimal }
        let (store, admin, _) = try pg("""
            CREATE TABLE samples (id integer PRIMARY KEY, "values" real[] NOT NULL);
            CREATE DOMAIN r4 AS real; CREATE TABLE reading (id integer PRIMARY KEY, value r4 NOT NULL);
            CREATE TABLE count (id integer PRIMARY KEY, n real NOT NULL);
            CREATE TABLE lot (id integer PRIMARY KEY, size numeric(7, -2) NOT NULL);
            CREATE TABLE price (id integer PRIMARY KEY, amount money NOT NULL)
            """)
        let refusals: [(String, () throws -> Void)] = [
            ("checks the values of plain columns, not each element", { try store.insert(Samples(id: 1, values: [0.123456789])) }),
            ("more precision than real", { try store.insert(Reading(id: 1, value: 0.123456789)) }),
            ("more digits than real", { try store.insert(Count(id: 1, n: 16_777_217)) }),
            ("is not a multiple of 100", { try store.insert(Lot(id: 1, size: 123)) }),
            ("lc_monetary", { try store.insert(Price(id: 1, amount: Decimal(string: "1.005") ?? 0)) }),
        ]
        for (expected, write) in refusals {
            let error = assertThrows(Error.self, write)
            XCTAssertTrue("\(String(describing: error))".contains(expected), "\(expected): \(String(describing: error))")
        }
        try store.insert(Reading(id: 2, value: 0.5))
        try store.insert(Count(id: 2, n: 16_777_216))
        try store.insert(Lot(id: 2, size: 12_300))
        XCTAssertEqual(try store.find(Lot.self, key: 2), Lot(id: 2, size: 12_300))
        XCTAssertEqual(try admin.scalar("SELECT (SELECT count(*) FROM samples) + (SELECT count(*) FROM price)", .none, as: Int.self), 0)
    }

    // MARK: Errors where the README promises success

    /// `save` of a value read back from a table keyed by `GENERATED ALWAYS AS IDENTITY` (the form PostgreSQL
    /// recommends, and the one `PostgresModelTests` uses) always fails with 428C9: the upsert names the key column
    /// in its INSERT without `OVERRIDING SYSTEM VALUE`. `update` works; `save`/`save(contentsOf:)` cannot. README:
    /// "`save(v)` updates the row with `v`'s key if it exists … on PostgreSQL one `INSERT … ON CONFLICT`".
    func testSaveOnAnIdentityAlwaysKeyUpdates() throws {
        struct Item: Codable, Equatable { var id: Int64?; var name: String }
        let (store, _, _) = try pg("CREATE TABLE item (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name text NOT NULL)")
        var item = Item(id: nil, name: "a")
        item.id = try store.insert(item)
        item.name = "b"
        try store.save(item)
        XCTAssertEqual(try store.fetchAll(Item.self), [item])
    }

    /// A dirty connection handed to the next caller: after one caller's `DISCARD ALL` (or `DEALLOCATE ALL`,
    /// what PgBouncer-style resets run) the next caller's batch fails at its second element with "prepared statement
    /// strata_1 does not exist": the connection's cache of prepared names is stale and the failing call is not
    /// retried (only forgotten for *next* time). README: batches are "each statement prepared once"; a pool lends a
    /// working session.
    func testABatchAfterAnotherCallersDiscardAllSucceeds() throws {
        struct T: Codable, Equatable { var x: Int; var at: Date }
        let (_, _, url) = try pg("CREATE TABLE t (x int PRIMARY KEY, at timestamptz NOT NULL)")
        let pool = PostgresPool(url: url, configuration: .init(size: 1))
        try pool.write { db in try ModelStore(database: db).insert(contentsOf: (1...3).map { T(x: $0, at: Date(timeIntervalSince1970: 0)) }) }
        try pool.writeWithoutTransaction { db in try db.execute("DISCARD ALL", .none) }
        try pool.write { db in try ModelStore(database: db).insert(contentsOf: (4...6).map { T(x: $0, at: Date(timeIntervalSince1970: 0)) }) }
        XCTAssertEqual(try pool.read { db in try db.scalar("SELECT count(*) FROM t", .none, as: Int.self) }, 6)
    }
}
