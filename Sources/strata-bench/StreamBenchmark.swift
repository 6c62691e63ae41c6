import Foundation
import Strata

/// Peak memory of `migrate` on a large SQL file and a large CSV seed, against files a tenth of the size:
/// streaming means the two peaks are about the same.
struct StreamBenchmark {
    let csvMegabytes: Int
    let sqlMegabytes: Int

    init(arguments: [String]) {
        csvMegabytes = Int(option("--csv-mb", in: arguments) ?? "1024") ?? 1024
        sqlMegabytes = Int(option("--sql-mb", in: arguments) ?? "100") ?? 100
    }

    func run() throws {
        print("stream benchmark: peak RSS of one migrate (a SQL file and a CSV seed) at 1/10 size and full size")
        for scale in [10, 1] {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("strata-stream-\(getpid())-\(scale)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let sqlBytes = try Self.writeSQL(directory, bytes: sqlMegabytes << 20 / scale)
            let csvBytes = try Self.writeCSV(directory, bytes: csvMegabytes << 20 / scale)
            let result = try spawn(CommandLine.arguments[0], ["seed-child", directory.path])
            print("  SQL \(megabytes(sqlBytes)) + CSV \(megabytes(csvBytes)): \(format(result.seconds)) s, peak RSS \(megabytes(result.peakBytes))")
        }
    }

    static func writeSQL(_ directory: URL, bytes target: Int) throws -> Int {
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("sql"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("csv"), withIntermediateDirectories: true)
        try Data("""
            <manifest version="1"><database path="strata.sqlite"/><migrations directory="sql"/>
              <seeds><seed file="csv/items.csv" table="items"/></seeds></manifest>
            """.utf8).write(to: directory.appendingPathComponent("manifest.xml"))
        try Data(SeedBenchmark.schema.utf8).write(to: directory.appendingPathComponent("sql/001_items.sql"))
        let path = directory.appendingPathComponent("sql/002_load.sql").path
        guard FileManager.default.createFile(atPath: path, contents: nil), let handle = FileHandle(forWritingAtPath: path) else {
            throw BenchError("cannot create \(path)")
        }
        defer { try? handle.close() }
        var written = 0
        var chunk = "CREATE TABLE loaded (n INTEGER, text TEXT);\n"
        var n = 0
        while written < target {
            n += 1
            chunk += "INSERT INTO loaded VALUES (\(n), 'row \(n); with a semicolon and -- no comment');\n"
            if chunk.utf8.count > 1 << 20 {
                handle.write(Data(chunk.utf8))
                written += chunk.utf8.count
                chunk = ""
            }
        }
        handle.write(Data(chunk.utf8))
        return written + chunk.utf8.count
    }

    static func writeCSV(_ directory: URL, bytes target: Int) throws -> Int {
        // About 60 bytes a row in SeedBenchmark's generator.
        try SeedBenchmark.writeCSV(directory.appendingPathComponent("csv/items.csv").path, rows: max(target / 60, 1))
    }
}
