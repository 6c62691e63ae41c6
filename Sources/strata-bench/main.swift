import Foundation
import Strata

// strata-bench: performance figures measured against a reference in the same run.
//   swift run -c release strata-bench seed [--rows N] [--quick]
//   swift run -c release strata-bench seed --postgres [--rows N] [--rounds N] [--insert-rounds N]
//   swift run -c release strata-bench decode [--rows N] [--repeat N]
//   swift run -c release strata-bench decode --postgres [--rows N] [--insert-rows N] [--repeat N]
//   swift run -c release strata-bench stream [--csv-mb 1024] [--sql-mb 100]
//   swift run -c release strata-bench pool [--readers 8] [--queries N] [--rounds N] [--rows N]
//   swift run -c release strata-bench checksum [--mb 200] [--rounds 3]

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch arguments.first {
    case "seed" where arguments.contains("--postgres"):
        try PostgresSeedBenchmark(arguments: Array(arguments.dropFirst())).run()
    case "seed":
        try SeedBenchmark(arguments: Array(arguments.dropFirst())).run()
    case "seed-child-postgres":
        // Internal: one migrate of the PostgreSQL benchmark's seed, in a child process so its peak memory is its own.
        guard arguments.count == 3 else { throw BenchError("usage: strata-bench seed-child-postgres DIR URL") }
        try PostgresSeedBenchmark.child(directory: arguments[1], url: arguments[2])
    case "seed-child":
        // Internal: loads one seed in a child process so its peak memory is measured alone.
        guard arguments.count == 2 else { throw BenchError("usage: strata-bench seed-child DIR") }
        try SeedBenchmark.child(directory: arguments[1])
    case "seed-prepare":
        // Internal: writes the benchmark's manifest and CSV into DIR (for profiling the child alone).
        guard arguments.count == 3, let rows = Int(arguments[2]) else { throw BenchError("usage: strata-bench seed-prepare DIR ROWS") }
        _ = try SeedBenchmark.prepare(directory: URL(fileURLWithPath: arguments[1]), rows: rows)
    case "pool":
        try PoolBenchmark(arguments: Array(arguments.dropFirst())).run()
    case "stream":
        try StreamBenchmark(arguments: Array(arguments.dropFirst())).run()
    case "checksum":
        try ChecksumBenchmark(arguments: Array(arguments.dropFirst())).run()
    case "decode-only":
        // Internal: decoding alone, for profiling.
        try DecodeBenchmark(arguments: Array(arguments.dropFirst())).profileDecode()
    case "decode" where arguments.contains("--postgres"):
        try PostgresDecodeBenchmark(arguments: Array(arguments.dropFirst())).run()
    case "decode":
        try DecodeBenchmark(arguments: Array(arguments.dropFirst())).run()
    default:
        print("usage: strata-bench seed [--rows N] [--quick] | seed --postgres [--rows N] [--rounds N] | decode [--postgres] [--rows N] [--repeat N] | stream [--csv-mb N] [--sql-mb N] | pool [--readers N] [--queries N] [--rounds N] [--rows N] | checksum [--mb N] [--rounds N]")
        exit(2)
    }
} catch {
    FileHandle.standardError.write(Data("strata-bench: \(error)\n".utf8))
    exit(1)
}

/// The benchmarks' reproducible rows: a 64-bit linear congruential generator and ten words to build text from.
struct SampleSource {
    static let words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    /// The next 31 random bits.
    mutating func next() -> UInt64 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return state >> 33
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

func option(_ name: String, in arguments: [String]) -> String? {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

func format(_ value: Double, _ digits: Int = 2) -> String {
    String(format: "%.\(digits)f", value)
}

func grouped(_ value: Int) -> String {
    let formatter = NumberFormatter()
    formatter.numberStyle = .decimal
    formatter.groupingSeparator = ","
    return formatter.string(from: NSNumber(value: value)) ?? String(value)
}

/// The high-water RSS of a running process, from /proc; nil once it has exited.
func highWaterRSS(of pid: pid_t) -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
          let kilobytes = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
    else { return nil }
    return kilobytes * 1024
}

/// Polls a child's VmHWM until it exits. wait4's ru_maxrss would not do: after posix_spawn it starts from the
/// parent's resident size, so a child of a large parent looks large.
final class PeakWatcher: @unchecked Sendable {
    private let lock = NSLock()
    private var last: Int?
    private let pid: pid_t
    private var done = false

    init(pid: pid_t) {
        self.pid = pid
        Thread.detachNewThread { [self] in
            while true {
                lock.lock()
                let stop = done
                lock.unlock()
                if stop { break }
                if let value = highWaterRSS(of: pid) {
                    lock.lock(); last = value; lock.unlock()
                }
                usleep(5_000)
            }
        }
    }

    /// The last VmHWM seen; call before reaping the child.
    func finish() -> Int? {
        if let value = highWaterRSS(of: pid) { lock.lock(); last = value; lock.unlock() }
        lock.lock(); defer { lock.unlock() }
        done = true
        return last
    }
}

/// Runs a program, waits for it, and returns wall time and the child's own peak RSS in bytes.
func spawn(_ path: String, _ arguments: [String], stdin: String? = nil) throws -> (seconds: Double, peakBytes: Int, output: String) {
    var inPipe: [Int32] = [0, 0], outPipe: [Int32] = [0, 0]
    guard pipe(&inPipe) == 0, pipe(&outPipe) == 0 else { throw BenchError("pipe failed") }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    posix_spawn_file_actions_adddup2(&actions, inPipe[0], 0)
    posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
    posix_spawn_file_actions_addclose(&actions, inPipe[1])
    posix_spawn_file_actions_addclose(&actions, outPipe[0])
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    let start = ContinuousClock.now
    let code = posix_spawn(&pid, path, &actions, nil, argv, environ)
    posix_spawn_file_actions_destroy(&actions)
    close(inPipe[0]); close(outPipe[1])
    guard code == 0 else { throw BenchError("cannot start \(path): \(String(cString: strerror(code)))") }
    let watcher = PeakWatcher(pid: pid)
    if let stdin { _ = stdin.utf8CString.withUnsafeBufferPointer { write(inPipe[1], $0.baseAddress, $0.count - 1) } }
    close(inPipe[1])
    var output = Data()
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = read(outPipe[0], &buffer, buffer.count)
        if count <= 0 { break }
        output.append(buffer, count: count)
    }
    close(outPipe[0])
    // A zombie keeps its /proc entry until reaped, so the final VmHWM is still readable here.
    var info = siginfo_t()
    waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT)
    let peak = watcher.finish()
    var status: Int32 = 0
    var usage = rusage()
    wait4(pid, &status, 0, &usage)
    let elapsed = seconds(ContinuousClock.now - start)
    guard status == 0 else { throw BenchError("\(path) \(arguments.joined(separator: " ")) failed (status \(status)): \(String(decoding: output, as: UTF8.self))") }
    return (elapsed, peak ?? Int(usage.ru_maxrss) * 1024, String(decoding: output, as: UTF8.self))
}

func megabytes(_ bytes: Int) -> String { format(Double(bytes) / 1_048_576, 1) + " MB" }
