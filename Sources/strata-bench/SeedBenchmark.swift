import Foundation
import Strata

/// Loads a generated 7-column CSV with Strata and with `sqlite3 .import` into the same schema.
struct SeedBenchmark {
    static let schema = """
        CREATE TABLE items (
            id INTEGER PRIMARY KEY, name TEXT NOT NULL, quantity INTEGER, active BOOLEAN,
            price REAL, day DATE, note TEXT
        );
        """

    let rows: Int
    let quick: Bool

    init(arguments: [String]) throws {
        rows = Int(option("--rows", in: arguments) ?? "1000000") ?? 1_000_000
        quick = arguments.contains("--quick")
    }

    func run() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("strata-bench-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let size = try Self.prepare(directory: directory, rows: rows)
        print("seed benchmark: \(grouped(rows)) rows, 7 columns, \(megabytes(size)) CSV (typed conversion on)")

        let strata = try spawn(CommandLine.arguments[0], ["seed-child", directory.path])
        let sqlite = try spawn("/usr/bin/env", ["sqlite3", directory.appendingPathComponent("import.sqlite").path], stdin: """
            \(Self.schema)
            .mode csv
            .import --skip 1 \(directory.appendingPathComponent("csv/items.csv").path) items
            SELECT count(*) FROM items;
            """)
        let loadedByStrata = try Database(path: directory.appendingPathComponent("strata.sqlite").path)
            .scalar("SELECT count(*) FROM items", as: Int.self) ?? 0
        let loadedBySQLite = Int(sqlite.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        guard loadedByStrata == rows, loadedBySQLite == rows else {
            throw BenchError("row counts differ: strata \(loadedByStrata), sqlite3 \(loadedBySQLite), expected \(rows)")
        }
        print("  strata migrate (seed)  \(format(strata.seconds)) s  \(grouped(Int(Double(rows) / strata.seconds))) rows/s  peak RSS \(megabytes(strata.peakBytes))")
        print("  sqlite3 .import        \(format(sqlite.seconds)) s  \(grouped(Int(Double(rows) / sqlite.seconds))) rows/s  peak RSS \(megabytes(sqlite.peakBytes))")
        let bare = try BareInsert.run(BareInsert.items(rows), path: directory.appendingPathComponent("bare.sqlite").path,
                                      schema: Self.schema)
        print("  bare prepared inserts  \(format(bare)) s  (pre-parsed values, raw C API: the floor for any SQLite loader)")
        print("  ratio                  strata is \(format(sqlite.seconds / strata.seconds))x as fast as sqlite3 .import (target: 2x)")

        guard !quick else { return }
        let larger = directory.appendingPathComponent("larger")
        try FileManager.default.createDirectory(at: larger, withIntermediateDirectories: true)
        let largerSize = try Self.prepare(directory: larger, rows: rows * 5)
        let big = try spawn(CommandLine.arguments[0], ["seed-child", larger.path])
        print("  5x file (\(grouped(rows * 5)) rows, \(megabytes(largerSize))): strata \(format(big.seconds)) s, peak RSS \(megabytes(big.peakBytes)) (vs \(megabytes(strata.peakBytes)) for 1x)")
    }

    /// Writes the manifest, migration and CSV; returns the CSV size in bytes.
    static func prepare(directory: URL, rows: Int) throws -> Int {
        let fm = FileManager.default
        try fm.createDirectory(at: directory.appendingPathComponent("sql"), withIntermediateDirectories: true)
        try fm.createDirectory(at: directory.appendingPathComponent("csv"), withIntermediateDirectories: true)
        try Data(schema.utf8).write(to: directory.appendingPathComponent("sql/001_items.sql"))
        try Data("""
            <manifest version="1"><database path="strata.sqlite"/><migrations directory="sql"/>
              <seeds><seed file="csv/items.csv" table="items"/></seeds></manifest>
            """.utf8).write(to: directory.appendingPathComponent("manifest.xml"))
        return try writeCSV(directory.appendingPathComponent("csv/items.csv").path, rows: rows)
    }

    /// Writes the benchmark's CSV (7 columns, every tenth note quoted with a comma, quotes and a line break).
    static func writeCSV(_ path: String, rows: Int) throws -> Int {
        guard FileManager.default.createFile(atPath: path, contents: nil), let handle = FileHandle(forWritingAtPath: path) else {
            throw BenchError("cannot create \(path)")
        }
        defer { try? handle.close() }
        var out = Data("id,name,quantity,active,price,day,note\n".utf8)
        var source = SampleSource(seed: 0x9E37_79B9_7F4A_7C15)
        var size = 0
        for id in 1...rows {
            let line = fields(id: id, source: &source).map { field -> String in
                guard let field else { return "" }
                guard field.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" }) else { return field }
                return "\"" + field.replacingOccurrences(of: "\"", with: "\"\"") + "\""
            }.joined(separator: ",")
            out.append(contentsOf: line.utf8)
            out.append(0x0A)
            if out.count > 1 << 20 {
                size += out.count
                handle.write(out)
                out.removeAll(keepingCapacity: true)
            }
        }
        size += out.count
        handle.write(out)
        return size
    }

    /// The seven fields of row `id` as the CSV holds them, nil for an unquoted empty field (NULL). Every tenth
    /// note holds a comma, quotes and a line break; every tenth from the fifth is NULL.
    static func fields(id: Int, source: inout SampleSource) -> [String?] {
        let words = SampleSource.words
        let r = source.next()
        let note: String? = switch id % 10 {
        case 0: "a note, with a comma and \"quotes\"\nand a second line"
        case 5: nil
        default: "note \(words[Int((r >> 8) % 10)])"
        }
        return [String(id), words[Int(r % 10)] + " " + words[Int((r >> 4) % 10)], String(r % 10_000),
                r & 1 == 0 ? "true" : "false", "\(r % 100_000 / 100).\(String(format: "%02d", r % 100))",
                ISO8601.format(seconds: Int64(r % 20_000) * 86_400, includeTime: false), note]
    }

    /// The child process: one `migrate`, as `strata migrate` would run it.
    static func child(directory: String) throws {
        let manifest = try Manifest.load(path: directory + "/manifest.xml")
        let database = try Database(path: directory + "/strata.sqlite")
        let report = try Migrator(manifest: manifest, database: database).migrate()
        if let failure = report.failure { throw BenchError("\(failure)") }
    }
}
