import Foundation
import Strata
@testable import StrataCore
@testable import StrataPostgres
import XCTest

/// A session's repeated SQL runs as a prepared statement whose result comes in binary where every column has a
/// binary reading: it must read exactly as the first, unprepared run in text does, and must survive what changes
/// or drops prepared statements behind it.
final class PostgresPreparedStatementTests: XCTestCase {
    func connect(_ schema: String = "") throws -> PostgresConnection {
        let root = try makeTemporaryDirectory(self)
        let db = try PostgresConnection(url: try PostgresServer.shared().url(for: root))
        if !schema.isEmpty { try db.executeSimple(schema) }
        return db
    }

    /// Every type read in binary, with its edge values: the second run (prepared, binary) reads the same rows as the
    /// first (text), value for value.
    func testBinaryResultsReadAsTheTextDoes() throws {
        let db = try connect("""
            CREATE TABLE v (id serial PRIMARY KEY, b boolean, s smallint, i integer, l bigint, o oid, d double precision,
                            raw bytea, t text, vc varchar(10), c char(5), n name, j json, jb jsonb, u uuid, num numeric,
                            day date, ts timestamp, tstz timestamptz);
            INSERT INTO v (b, s, i, l, o, d, raw, t, vc, c, n, j, jb, u, num, day, ts, tstz) VALUES
              (true, -32768, -2147483648, -9223372036854775808, 4294967295, 'NaN', '', '', '', '', '', '[]', '{}',
               '00000000-0000-0000-0000-000000000000', 'NaN', '-infinity', '-infinity', '-infinity'),
              (false, 32767, 2147483647, 9223372036854775807, 0, 'Infinity', '\\x00ff41', 'naïve ✓', 'ab  ', 'ab',
               'n', '{"a": [1, 2.50]}', '{"b": [true, null], "a": 1.50}', 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11',
               '-0.0010', 'infinity', 'infinity', 'infinity'),
              (NULL, 0, 0, 0, 1, '-Infinity', '\\x5c', 'x', NULL, NULL, NULL, NULL, NULL, NULL, '123456789.000',
               '0044-03-15 BC', '0001-01-01 00:00:00 BC', '0044-03-15 12:00:00.5+00 BC'),
              (true, 1, 1, 1, 2, '-0', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '0.00000000000000000001',
               '1999-12-31', '1999-12-31 23:59:59.999999', '1969-12-31 23:59:59.000001+00'),
              (false, 2, 2, 2, 3, '4.9e-324', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '10000',
               '2000-01-01', '2000-01-01 00:00:00', '2000-01-01 00:00:00.1+00'),
              (false, 3, 3, 3, 4, '0.1', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '-99999999999999999999.99999',
               '5874897-12-31', '294276-12-31 23:59:59.999999', '12345-01-01 00:00:00+00'),
              (true, 4, 4, 4, 5, '1.7976931348623157e308', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '0',
               '4713-01-01 BC', '4713-01-01 00:00:00 BC', '2024-02-29 12:34:56.00001+00'),
              (true, 5, 5, 5, 6, '-2.5', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '-Infinity',
               '1970-01-01', '1900-03-01 00:00:00.123', '1600-02-29 00:00:00+00'),
              (true, 6, 6, 6, 7, '2.5', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '0.0001',
               '2024-01-01', '2024-01-01 00:00:00', '2024-01-01 00:00:00+00'),
              (true, 7, 7, 7, 8, '3', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '12345678901234567890.123456789012',
               '2024-01-01', '2024-01-01 00:00:00', '2024-01-01 00:00:00+00'),
              (true, 8, 8, 8, 9, '3', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'Infinity',
               '2024-01-01', '2024-01-01 00:00:00', '2024-01-01 00:00:00+00');
            INSERT INTO v (num, tstz) SELECT (random() * 10 ^ (random() * 30 - 15))::numeric(40, 20) * sign(random() - 0.5),
                                             timestamptz '1900-01-01 00:00:00+00' + random() * interval '200 years'
            FROM generate_series(1, 500)
            """)
        let sql = "SELECT * FROM v ORDER BY id"
        let text = try db.rows(sql, .none)
        let binary = try db.rows(sql, .none)
        XCTAssertEqual(db.prepared.entry(for: sql)?.binaryResult, true, "the second run was not prepared with a binary result")
        XCTAssertEqual(text.count, 511)
        for (first, second) in zip(text, binary) where !Self.same(first, second) {
            XCTFail("text \(first) but binary \(second)")
        }
    }

    /// Equal values, NaN equal to NaN and -0.0 not equal to 0.0: the same bits.
    static func same(_ a: Row, _ b: Row) -> Bool {
        a.layout.names == b.layout.names && a.values.count == b.values.count && zip(a.values, b.values).allSatisfy { pair in
            if case .real(let x) = pair.0, case .real(let y) = pair.1 { return x.bitPattern == y.bitPattern }
            return pair.0 == pair.1
        }
    }

    /// A column without a binary reading (here `real`, `interval`, an enum and an array) keeps the whole result in text.
    func testAResultWithATypeWithoutABinaryReadingStaysText() throws {
        let db = try connect("""
            CREATE TYPE mood AS ENUM ('sad', 'happy');
            CREATE TABLE w (f real, span interval, m mood, tags text[]);
            INSERT INTO w VALUES (1.1, '1 day 02:00:00', 'happy', '{a,"b c"}')
            """)
        for sql in ["SELECT f FROM w", "SELECT span FROM w", "SELECT m FROM w", "SELECT tags FROM w"] {
            let first = try db.rows(sql, .none)
            XCTAssertEqual(try db.rows(sql, .none), first, sql)
            XCTAssertEqual(db.prepared.entry(for: sql)?.binaryResult, false, sql)
        }
        struct W: Codable, Equatable { var f: Double; var tags: [String] }
        let store = ModelStore(database: db)
        let first = try store.fetchAll(W.self, sql: "SELECT f, tags FROM w", .none)
        XCTAssertEqual(try store.fetchAll(W.self, sql: "SELECT f, tags FROM w", .none), first)
        XCTAssertEqual(first, [W(f: 1.1, tags: ["a", "b c"])])
    }

    /// A model read again and again (the prepared, binary path from the second read) reads what was written.
    func testAModelReadRepeatedlyReadsTheSameValues() throws {
        struct Event: Codable, Equatable {
            var id: UUID; var at: Date; var day: Date; var amount: Decimal; var payload: Data; var done: Bool; var score: Double
        }
        let db = try connect("""
            CREATE TABLE event (id uuid PRIMARY KEY, at timestamptz NOT NULL, day date NOT NULL, amount numeric NOT NULL,
                                payload bytea NOT NULL, done boolean NOT NULL, score double precision NOT NULL)
            """)
        let store = ModelStore(database: db)
        var events: [Event] = []
        for index in 0..<50 {
            let at = Date(timeIntervalSince1970: 1_700_000_000.125 + Double(index) * 86_400.5)
            let day = Date(timeIntervalSince1970: Double(index) * 86_400)
            let amount = Decimal(string: "-12345.678\(index)") ?? 0
            events.append(Event(id: UUID(), at: at, day: day, amount: amount, payload: Data([UInt8(index), 0, 255]),
                                done: index % 2 == 0, score: Double(index) / 3))
        }
        try store.insert(contentsOf: events)
        let sorted = events.sorted { $0.id.uuidString < $1.id.uuidString }
        for _ in 0..<3 {
            let read = try store.fetchAll(Event.self).sorted { $0.id.uuidString < $1.id.uuidString }
            XCTAssertEqual(read, sorted)
        }
        XCTAssertEqual(db.prepared.entry(for: "SELECT * FROM \"event\"")?.binaryResult, true)
    }

    /// A table altered (here by another session, as a deploy does) after its query was prepared: the server refuses
    /// the prepared statement ("cached plan must not change result type"). Outside a transaction the next run
    /// prepares it again and reads the new columns; inside one a query runs unprepared (unless its own statement
    /// object runs it again), so the refusal cannot abort the caller's transaction.
    func testATableAlteredAfterItsQueryWasPrepared() throws {
        let root = try makeTemporaryDirectory(self)
        let url = try PostgresServer.shared().url(for: root)
        let db = try PostgresConnection(url: url)
        try db.executeSimple("CREATE TABLE t (a integer); INSERT INTO t VALUES (1)")
        let sql = "SELECT * FROM t"
        let deployer = try PostgresConnection(url: url)
        _ = try db.rows(sql, .none)
        _ = try db.rows(sql, .none)
        XCTAssertNotNil(db.prepared.entry(for: sql))
        try deployer.execute("ALTER TABLE t ADD COLUMN b text DEFAULT 'x'", .none)
        XCTAssertEqual(try db.rows(sql, .none).first?.values, [.integer(1), .text("x")])

        try deployer.execute("ALTER TABLE t ADD COLUMN c integer DEFAULT 7", .none)
        XCTAssertEqual(try db.withTransaction { try db.rows(sql, .none) }.first?.values, [.integer(1), .text("x"), .integer(7)])
        try deployer.execute("ALTER TABLE t ALTER COLUMN c TYPE bigint", .none)
        let store = ModelStore(database: db)
        struct T: Codable, Equatable { var a: Int; var b: String; var c: Int }
        for _ in 0..<3 {
            XCTAssertEqual(try db.withTransaction { try store.fetchAll(T.self) }, [T(a: 1, b: "x", c: 7)])
        }
    }

    /// Prepared statements dropped behind Strata's back: by `DEALLOCATE ALL` (seen in the command tag), in a script,
    /// or by a function (seen only when the name is missing: run again outside a transaction).
    func testPreparedStatementsDeallocatedBehindStrata() throws {
        let db = try connect("""
            CREATE TABLE t (a integer); INSERT INTO t VALUES (1);
            CREATE FUNCTION drop_prepared() RETURNS void LANGUAGE sql AS 'DEALLOCATE ALL'
            """)
        let sql = "SELECT a FROM t"
        _ = try db.rows(sql, .none)
        _ = try db.rows(sql, .none)
        XCTAssertNotNil(db.prepared.entry(for: sql))
        try db.execute("DEALLOCATE ALL", .none)
        XCTAssertNil(db.prepared.entry(for: sql))
        XCTAssertEqual(try db.withTransaction { try db.rows(sql, .none) }.count, 1)
        try db.executeSimple("SELECT 1; DEALLOCATE ALL")
        XCTAssertEqual(try db.withTransaction { try db.rows(sql, .none) }.count, 1)
        _ = try db.rows("SELECT drop_prepared()", .none)
        XCTAssertEqual(try db.rows(sql, .none).count, 1)
    }

    /// A session set to another time zone or date style reads dates as the server prints them there, not as a UTC
    /// session's text.
    func testASessionInAnotherTimeZoneReadsTheServersText() throws {
        let db = try connect("CREATE TABLE t (at timestamptz); INSERT INTO t VALUES ('2024-01-01 00:00:00+00')")
        let sql = "SELECT at FROM t"
        _ = try db.rows(sql, .none)
        try db.execute("SET TimeZone = 'Europe/Paris'", .none)
        XCTAssertEqual(try db.rows(sql, .none).first?.values, [.text("2024-01-01 01:00:00+01")])
        try db.executeSimple("SET TimeZone = 'UTC'; SET DateStyle = 'German'")
        XCTAssertEqual(try db.rows(sql, .none).first?.values, [.text("01.01.2024 00:00:00 UTC")])
    }

    /// The same SQL bound with other parameter types than it was prepared with runs unprepared, as it would have.
    func testTheSameSQLWithOtherParameterTypes() throws {
        let db = try connect("CREATE TABLE t (raw bytea); INSERT INTO t VALUES ('\\x41')")
        let sql = "SELECT count(*) FROM t WHERE raw = $1"
        XCTAssertEqual(try db.scalar(sql, [Data([0x41])], as: Int.self), 1)
        XCTAssertEqual(try db.scalar(sql, [Data([0x41])], as: Int.self), 1)
        XCTAssertEqual(try db.scalar(sql, ["\\x41"], as: Int.self), 1)
        XCTAssertEqual(try db.scalar(sql, [nil as String?], as: Int.self), 0)
    }
}
