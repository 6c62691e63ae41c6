import CLibPQ
import Foundation
import Strata

/// Decoding rows into a struct and inserting structs on PostgreSQL, Strata against a hand-written libpq loop, on
/// one server in one run: `strata-bench decode --postgres`. The hand loop is what a careful programmer writes
/// without a library: one `PQexecParams`, `PQgetvalue` per field, numbers and timestamps parsed from the bytes
/// without intermediate strings; and for inserts one prepared statement run per row in one transaction.
struct PostgresDecodeBenchmark {
    typealias Item = DecodeBenchmark.Item

    static let schema = """
        DROP TABLE IF EXISTS item;
        CREATE TABLE item (id bigint PRIMARY KEY, name text NOT NULL, quantity integer NOT NULL, active boolean NOT NULL,
                           price double precision NOT NULL, day timestamptz NOT NULL, note text)
        """

    let rows: Int
    let insertRows: Int
    let repeats: Int

    init(arguments: [String]) throws {
        rows = Int(option("--rows", in: arguments) ?? "1000000") ?? 1_000_000
        insertRows = Int(option("--insert-rows", in: arguments) ?? "100000") ?? 100_000
        repeats = max(1, Int(option("--repeat", in: arguments) ?? "5") ?? 5)
    }

    func run() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("strata-pg-decode-\(getpid())")
        let server = try ThrowawayPostgres.fromEnvironmentOrStart(in: directory)
        defer {
            server.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        let db = try PostgresConnection(url: server.url)
        print("postgres decode benchmark: \(grouped(rows)) rows, 7 columns (bigint, text, integer, boolean, double precision, timestamptz, optional text), PostgreSQL \(db.serverVersion / 10000)")

        // Inserts first, each into an empty table: the hand-written prepared loop against insert(contentsOf:).
        let items = DecodeBenchmark.items(insertRows)
        var handInserts: [Double] = [], strataInserts: [Double] = []
        for _ in 0..<repeats {
            try Self.recreate(db)
            handInserts.append(try time { try Self.handInsert(items, url: server.url) })
            try Self.verify(db, count: insertRows)
            try Self.recreate(db)
            strataInserts.append(try time { try ModelStore(database: db).insert(contentsOf: items) })
            try Self.verify(db, count: insertRows)
        }

        // Decoding: the table filled by the server, read by hand and by Strata, alternating.
        try Self.recreate(db)
        try db.execute("""
            INSERT INTO item SELECT g, 'name ' || (g % 97), g % 1000, g % 2 = 0, (g % 100000) / 100.0,
                   timestamptz '1970-01-01 00:00:00+00' + (g % 20000) * interval '1 day' + (g % 1000) * interval '1 millisecond',
                   CASE WHEN g % 3 = 0 THEN NULL ELSE 'note ' || (g % 10) END
            FROM generate_series(1, \(rows)) AS g
            """)
        try db.execute("VACUUM ANALYZE item")
        var handDecodes: [Double] = [], strataDecodes: [Double] = []
        for _ in 0..<repeats {
            var hand: [Item] = [], strata: [Item] = []
            handDecodes.append(try time { hand = try Self.handDecode(url: server.url) })
            strataDecodes.append(try time { strata = try ModelStore(database: db).fetchAll(Item.self, sql: "SELECT * FROM item") })
            guard hand.count == rows, strata.count == rows else { throw BenchError("row counts differ") }
            guard Self.same(hand[rows / 2], strata[rows / 2]), Self.same(hand[rows - 1], strata[rows - 1]) else {
                throw BenchError("the hand loop and Strata read different values: \(hand[rows / 2]) against \(strata[rows / 2])")
            }
        }
        let handDecode = handDecodes.min() ?? 0, strataDecode = strataDecodes.min() ?? 0
        let handInsert = handInserts.min() ?? 0, strataInsert = strataInserts.min() ?? 0
        print("  best of \(repeats) rounds each (order: hand, Strata)")
        print("  decode   hand-written libpq loop   \(format(handDecode)) s")
        print("  decode   Strata fetchAll           \(format(strataDecode)) s   \(format(strataDecode / handDecode))x the hand loop (target ≤ 1.5x)")
        print("  insert   hand prepared, \(grouped(insertRows)) rows \(format(handInsert)) s")
        print("  insert   Strata insert(contentsOf:) \(format(strataInsert)) s   \(format(strataInsert / handInsert))x the hand loop (target ≤ 1.5x)")
    }

    static func same(_ a: Item, _ b: Item) -> Bool {
        a.id == b.id && a.name == b.name && a.quantity == b.quantity && a.active == b.active && a.price == b.price
            && abs(a.day.timeIntervalSince1970 - b.day.timeIntervalSince1970) < 0.000_5 && a.note == b.note
    }

    static func recreate(_ db: PostgresConnection) throws {
        for statement in schema.split(separator: ";") { try db.execute(String(statement), .none) }
    }

    static func verify(_ db: PostgresConnection, count: Int) throws {
        guard try db.scalar("SELECT count(*) FROM item", as: Int.self) == count else { throw BenchError("insert lost rows") }
    }

    func time(_ body: () throws -> Void) throws -> Double {
        let start = ContinuousClock.now
        try body()
        return seconds(ContinuousClock.now - start)
    }

    static func connect(_ url: String) throws -> OpaquePointer {
        guard let connection = PQconnectdb(url), PQstatus(connection) == CONNECTION_OK else { throw BenchError("cannot connect") }
        PQclear(PQexec(connection, "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET extra_float_digits = 3"))
        return connection
    }

    /// One prepared INSERT per row in one transaction, text parameters.
    static func handInsert(_ items: [Item], url: String) throws {
        let connection = try connect(url)
        defer { PQfinish(connection) }
        PQclear(PQexec(connection, "BEGIN"))
        PQclear(PQprepare(connection, "item", "INSERT INTO item VALUES ($1, $2, $3, $4, $5, $6, $7)", 7, nil))
        for item in items {
            let values = [String(item.id), item.name, String(item.quantity), item.active ? "t" : "f", "\(item.price)",
                          ISO8601.format(item.day), item.note]
            let result = withArrayOfCStrings(values) { pointers in
                PQexecPrepared(connection, "item", 7, pointers, nil, nil, 0)
            }
            defer { PQclear(result) }
            guard PQresultStatus(result) == PGRES_COMMAND_OK else { throw BenchError(String(cString: PQerrorMessage(connection))) }
        }
        PQclear(PQexec(connection, "COMMIT"))
    }

    /// `SELECT *`, every field read with `PQgetvalue` and parsed from its bytes.
    static func handDecode(url: String) throws -> [Item] {
        let connection = try connect(url)
        defer { PQfinish(connection) }
        guard let result = PQexecParams(connection, "SELECT * FROM item", 0, nil, nil, nil, nil, 0),
              PQresultStatus(result) == PGRES_TUPLES_OK else { throw BenchError(String(cString: PQerrorMessage(connection))) }
        defer { PQclear(result) }
        let count = PQntuples(result)
        var items: [Item] = []
        items.reserveCapacity(Int(count))
        func bytes(_ row: Int32, _ column: Int32) -> UnsafeBufferPointer<UInt8> {
            UnsafeBufferPointer(start: UnsafeRawPointer(PQgetvalue(result, row, column)).assumingMemoryBound(to: UInt8.self),
                                count: Int(PQgetlength(result, row, column)))
        }
        for row in 0..<count {
            guard let day = timestamp(bytes(row, 5)) else { throw BenchError("bad timestamp") }
            items.append(Item(id: integer(bytes(row, 0)), name: String(decoding: bytes(row, 1), as: UTF8.self),
                              quantity: Int(integer(bytes(row, 2))), active: bytes(row, 3).first == UInt8(ascii: "t"),
                              price: strtod(PQgetvalue(result, row, 4), nil), day: day,
                              note: PQgetisnull(result, row, 6) == 1 ? nil : String(decoding: bytes(row, 6), as: UTF8.self)))
        }
        return items
    }

    static func integer(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64 {
        var value: Int64 = 0
        var negative = false
        for byte in bytes {
            if byte == UInt8(ascii: "-") { negative = true } else { value = value &* 10 &+ Int64(byte &- 48) }
        }
        return negative ? -value : value
    }

    /// `YYYY-MM-DD HH:MM:SS[.ffffff]+00`, as a UTC session prints a timestamptz.
    static func timestamp(_ bytes: UnsafeBufferPointer<UInt8>) -> Date? {
        guard bytes.count >= 19 else { return nil }
        func number(_ start: Int, _ length: Int) -> Int {
            var value = 0
            for index in start..<(start + length) { value = value * 10 + Int(bytes[index] &- 48) }
            return value
        }
        let year = number(0, 4), month = number(5, 2), day = number(8, 2)
        // Days from 1970-01-01 (Howard Hinnant's days_from_civil).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        var seconds = Double(days * 86_400 + number(11, 2) * 3600 + number(14, 2) * 60 + number(17, 2))
        var index = 19
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            var scale = 0.1
            index += 1
            while index < bytes.count, (48...57).contains(bytes[index]) {
                seconds += Double(bytes[index] &- 48) * scale
                scale /= 10
                index += 1
            }
        }
        return Date(timeIntervalSince1970: seconds)
    }
}

/// Calls `body` with C strings for `values` (NULL for nil), valid during the call.
func withArrayOfCStrings<R>(_ values: [String?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    let copies = values.map { $0.map { strdup($0) } ?? nil }
    defer { for copy in copies { free(copy) } }
    return body(copies.map { $0.map { UnsafePointer($0) } })
}
