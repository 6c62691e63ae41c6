import CSQLite
import Foundation
import Strata

/// Decoding rows into a struct and inserting structs, Strata against hand-written SQLite C API code.
struct DecodeBenchmark {
    struct Item: Codable {
        var id: Int64
        var name: String
        var quantity: Int
        var active: Bool
        var price: Double
        var day: Date
        var note: String?
    }

    /// The same fields, not `Encodable`, for the Mirror path.
    struct PlainItem {
        var id: Int64
        var name: String
        var quantity: Int
        var active: Bool
        var price: Double
        var day: Date
        var note: String?
    }

    static let schema = """
        CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL, quantity INTEGER NOT NULL,
                           active BOOLEAN NOT NULL, price REAL NOT NULL, day TEXT NOT NULL, note TEXT);
        """

    let rows: Int
    let decodeRepeats: Int
    let insertRepeats: Int

    init(arguments: [String]) throws {
        rows = Int(option("--rows", in: arguments) ?? "1000000") ?? 1_000_000
        decodeRepeats = max(1, Int(option("--repeat", in: arguments) ?? "7") ?? 7)
        insertRepeats = max(1, (decodeRepeats + 1) / 2)
    }

    func run() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("strata-decode-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let items = Self.items(rows)
        print("decode benchmark: \(grouped(rows)) rows, 7 columns (integer, text, integer, boolean, real, date, optional text)")

        // Each measurement is repeated and the best time kept: this machine's run-to-run noise (±10%) is larger
        // than the margins being checked. Raw and Strata alternate within a round so drift hits both alike.

        // Inserts: hand-bound prepared statement vs Strata's Encodable and Mirror paths, each into a fresh file.
        var handInserts: [Double] = [], encodableInserts: [Double] = []
        for round in 0..<insertRepeats {
            handInserts.append(try time {
                try Self.handInsert(items, path: directory.appendingPathComponent("hand\(round).sqlite").path)
            })
            encodableInserts.append(try time {
                let db = try Self.fresh(directory.appendingPathComponent("encodable\(round).sqlite").path)
                try ModelStore(database: db).insert(contentsOf: items)
            })
        }
        let plain = items.map { PlainItem(id: $0.id, name: $0.name, quantity: $0.quantity, active: $0.active,
                                          price: $0.price, day: $0.day, note: $0.note) }
        let mirrorInsert = try time {
            let db = try Self.fresh(directory.appendingPathComponent("mirror.sqlite").path)
            let store = ModelStore(database: db, mappings: [ModelMapping(typeName: "PlainItem", table: "item")])
            try store.insert(contentsOf: plain)
        }

        // Decoding: the same file read by hand and by Strata.
        let path = directory.appendingPathComponent("hand0.sqlite").path
        var handDecodes: [Double] = [], strataDecodes: [Double] = [], floors: [Double] = []
        for _ in 0..<decodeRepeats {
            var handCount = 0
            handDecodes.append(try time { handCount = try Self.handDecode(path: path).count })
            var strataCount = 0
            strataDecodes.append(try time {
                strataCount = try ModelStore(database: try Database(path: path)).fetchAll(Item.self).count
            })
            guard handCount == rows, strataCount == rows else { throw BenchError("row counts differ") }
            var checksum = 0
            floors.append(try time {
                let decoder = ConstantDecoder()
                for _ in 0..<rows { checksum &+= try Item(from: decoder).quantity }
            })
            guard checksum == rows else { throw BenchError("constant decoder returned other values") }
        }
        let handDecode = handDecodes.min() ?? 0, strataDecode = strataDecodes.min() ?? 0, codableFloor = floors.min() ?? 0
        let handInsert = handInserts.min() ?? 0, encodableInsert = encodableInserts.min() ?? 0
        let roundRatios = zip(strataDecodes, handDecodes).map { $0 / $1 }

        print("  best of \(decodeRepeats) decode rounds and \(insertRepeats) insert rounds (the Mirror insert runs once)")
        print("  decode   raw C API loop         \(format(handDecode)) s")
        print("  decode   Strata (Decodable)     \(format(strataDecode)) s   \(format(strataDecode / handDecode))x the raw loop (target ≤ 1.5x; "
              + "rounds \(format(roundRatios.min() ?? 0))–\(format(roundRatios.max() ?? 0))x)")
        print("  decode   Decodable machinery    \(format(codableFloor)) s   (constant values, no database, no array: "
              + "\(format(codableFloor / handDecode))x the raw loop by itself)")
        print("  decode   floor for any decoder  \(format(handDecode + codableFloor)) s   "
              + "\(format((handDecode + codableFloor) / handDecode))x: the raw loop plus the machinery")
        print("  insert   hand-bound statement   \(format(handInsert)) s")
        print("  insert   Strata (Encodable)     \(format(encodableInsert)) s   \(format(encodableInsert / handInsert))x hand-bound (target ≤ 1.5x)")
        print("  insert   Strata (Mirror)        \(format(mirrorInsert)) s   \(format(mirrorInsert / handInsert))x hand-bound")
    }

    func profileDecode() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("strata-decode-profile.sqlite").path
        if !FileManager.default.fileExists(atPath: path) { try Self.handInsert(Self.items(rows), path: path) }
        let elapsed = try time { _ = try ModelStore(database: try Database(path: path)).fetchAll(Item.self) }
        print("decode \(format(elapsed)) s")
    }

    func time(_ body: () throws -> Void) throws -> Double {
        let start = ContinuousClock.now
        try body()
        return seconds(ContinuousClock.now - start)
    }

    static func items(_ count: Int) -> [Item] {
        var source = SampleSource(seed: 0x2545_F491_4F6C_DD1D)
        let words = SampleSource.words
        return (1...count).map { id in
            let r = source.next()
            return Item(id: Int64(id), name: words[Int(r % 10)] + " " + words[Int((r >> 4) % 10)], quantity: Int(r % 1000),
                        active: r & 1 == 0, price: Double(r % 100_000) / 100,
                        day: Date(timeIntervalSince1970: Double(r % 20_000) * 86_400),
                        note: id % 3 == 0 ? nil : "note \(words[Int((r >> 8) % 10)])")
        }
    }

    static func fresh(_ path: String) throws -> Database {
        let db = try Database(path: path)
        try db.executeScript(schema)
        return db
    }

    /// What a careful hand-written loader does: one prepared statement, one transaction, typed binds.
    static func handInsert(_ items: [Item], path: String) throws {
        var db: OpaquePointer?
        guard sqlite3_open(path, &db) == SQLITE_OK, let db else { throw BenchError("cannot open \(path)") }
        defer { sqlite3_close(db) }
        sqlite3_exec(db, schema, nil, nil, nil)
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        sqlite3_exec(db, "BEGIN", nil, nil, nil)
        var statement: OpaquePointer?
        sqlite3_prepare_v2(db, "INSERT INTO item (id, name, quantity, active, price, day, note) VALUES (?, ?, ?, ?, ?, ?, ?)",
                           -1, &statement, nil)
        for item in items {
            sqlite3_bind_int64(statement, 1, item.id)
            sqlite3_bind_text(statement, 2, item.name, -1, transient)
            sqlite3_bind_int64(statement, 3, Int64(item.quantity))
            sqlite3_bind_int64(statement, 4, item.active ? 1 : 0)
            sqlite3_bind_double(statement, 5, item.price)
            sqlite3_bind_text(statement, 6, ISO8601.format(item.day), -1, transient)
            if let note = item.note { sqlite3_bind_text(statement, 7, note, -1, transient) } else { sqlite3_bind_null(statement, 7) }
            guard sqlite3_step(statement) == SQLITE_DONE else { throw BenchError(String(cString: sqlite3_errmsg(db))) }
            sqlite3_reset(statement)
        }
        sqlite3_finalize(statement)
        sqlite3_exec(db, "COMMIT", nil, nil, nil)
    }

    /// The floor for decoding: columns read by index straight into the struct.
    static func handDecode(path: String) throws -> [Item] {
        var db: OpaquePointer?
        guard sqlite3_open(path, &db) == SQLITE_OK, let db else { throw BenchError("cannot open \(path)") }
        defer { sqlite3_close(db) }
        var statement: OpaquePointer?
        sqlite3_prepare_v2(db, "SELECT * FROM item", -1, &statement, nil)
        defer { sqlite3_finalize(statement) }
        func text(_ index: Int32) -> String {
            String(decoding: UnsafeBufferPointer(start: sqlite3_column_text(statement, index),
                                                 count: Int(sqlite3_column_bytes(statement, index))), as: UTF8.self)
        }
        var items: [Item] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            let day = UnsafeBufferPointer(start: sqlite3_column_text(statement, 5), count: Int(sqlite3_column_bytes(statement, 5)))
            guard let date = ISO8601.parse(bytes: day)?.date else { throw BenchError("bad date") }
            items.append(Item(id: sqlite3_column_int64(statement, 0), name: text(1),
                              quantity: Int(sqlite3_column_int64(statement, 2)), active: sqlite3_column_int64(statement, 3) != 0,
                              price: sqlite3_column_double(statement, 4), day: date,
                              note: sqlite3_column_type(statement, 6) == SQLITE_NULL ? nil : text(6)))
        }
        return items
    }
}
