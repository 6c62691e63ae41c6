import CSQLite
import Foundation
import Strata

/// The floor: the benchmark's rows, parsed in advance, inserted through the raw SQLite C API with one prepared
/// statement in one transaction. No tool that goes through SQLite's SQL layer can load faster than this.
enum BareInsert {
    struct Item {
        var id: Int64, name: String, quantity: Int64, active: Int64, price: Double, day: String, note: String?
    }

    static func items(_ rows: Int) -> [Item] {
        // The same seed as the CSV the seed benchmark writes, so both load the same rows.
        var source = SampleSource(seed: 0x9E37_79B9_7F4A_7C15)
        let words = SampleSource.words
        return (1...rows).map { id in
            let r = source.next()
            return Item(id: Int64(id), name: words[Int(r % 10)] + " " + words[Int((r >> 4) % 10)],
                        quantity: Int64(r % 10_000), active: Int64(r & 1), price: Double(r % 100_000) / 100,
                        day: ISO8601.format(seconds: Int64(r % 20_000) * 86_400, includeTime: false),
                        note: id % 10 == 5 ? nil : "note \(words[Int((r >> 8) % 10)])")
        }
    }

    /// Seconds to insert `items` into a fresh database at `path`.
    static func run(_ items: [Item], path: String, schema: String) throws -> Double {
        var db: OpaquePointer?
        guard sqlite3_open(path, &db) == SQLITE_OK, let db else { throw BenchError("cannot open \(path)") }
        defer { sqlite3_close(db) }
        guard sqlite3_exec(db, schema, nil, nil, nil) == SQLITE_OK else { throw BenchError("schema failed") }
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        let start = ContinuousClock.now
        sqlite3_exec(db, "BEGIN", nil, nil, nil)
        var statement: OpaquePointer?
        sqlite3_prepare_v2(db, "INSERT INTO items VALUES (?, ?, ?, ?, ?, ?, ?)", -1, &statement, nil)
        for item in items {
            sqlite3_bind_int64(statement, 1, item.id)
            sqlite3_bind_text(statement, 2, item.name, -1, transient)
            sqlite3_bind_int64(statement, 3, item.quantity)
            sqlite3_bind_int64(statement, 4, item.active)
            sqlite3_bind_double(statement, 5, item.price)
            sqlite3_bind_text(statement, 6, item.day, -1, transient)
            if let note = item.note { sqlite3_bind_text(statement, 7, note, -1, transient) } else { sqlite3_bind_null(statement, 7) }
            guard sqlite3_step(statement) == SQLITE_DONE else { throw BenchError(String(cString: sqlite3_errmsg(db))) }
            sqlite3_reset(statement)
        }
        sqlite3_finalize(statement)
        guard sqlite3_exec(db, "COMMIT", nil, nil, nil) == SQLITE_OK else { throw BenchError("commit failed") }
        return seconds(ContinuousClock.now - start)
    }
}
