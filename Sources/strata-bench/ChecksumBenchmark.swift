import Foundation
import Strata

/// Hashing speed of a migration file under each checksum version's rules (2: SQLite's, 3: PostgreSQL's), with LF
/// line endings (nothing to rewrite) and CRLF (every line's ending rewritten), best of `rounds`.
struct ChecksumBenchmark {
    let megabytes: Int
    let rounds: Int

    init(arguments: [String]) {
        megabytes = Int(option("--mb", in: arguments) ?? "200") ?? 200
        rounds = Int(option("--rounds", in: arguments) ?? "3") ?? 3
    }

    func run() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("strata-checksum-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        print("checksum benchmark: \(megabytes) MB of INSERT statements with strings, best of \(rounds)")
        for ending in ["\n", "\r\n"] {
            let path = directory.appendingPathComponent(ending == "\n" ? "lf.sql" : "crlf.sql").path
            let size = try Self.write(path, bytes: megabytes << 20, lineEnding: ending)
            for version in [2, 3] {
                // Run against an older build for a before-and-after figure, a version it lacks is skipped.
                guard (try? Checksum.of([], version: version)) != nil else {
                    print("  version \(version): not known to this build")
                    continue
                }
                var best = Double.infinity
                for _ in 0..<max(rounds, 1) {
                    let started = Date()
                    _ = try Checksum.ofFile(atPath: path, content: .sql, version: version)
                    best = min(best, Date().timeIntervalSince(started))
                }
                let rate = Double(size) / 1_048_576 / best
                print("  version \(version), \(ending == "\n" ? "LF  " : "CRLF"): \(format(best)) s, \(format(rate, 0)) MB/s")
            }
        }
    }

    private static func write(_ path: String, bytes target: Int, lineEnding: String) throws -> Int {
        guard FileManager.default.createFile(atPath: path, contents: nil), let handle = FileHandle(forWritingAtPath: path) else {
            throw BenchError("cannot create \(path)")
        }
        defer { try? handle.close() }
        var written = 0
        var chunk = ""
        var n = 0
        while written < target {
            n += 1
            chunk += "INSERT INTO loaded VALUES (\(n), 'row \(n); it''s -- no comment', $$body \(n)$$);" + lineEnding
            if chunk.utf8.count > 1 << 20 {
                handle.write(Data(chunk.utf8))
                written += chunk.utf8.count
                chunk = ""
            }
        }
        handle.write(Data(chunk.utf8))
        return written + chunk.utf8.count
    }
}
