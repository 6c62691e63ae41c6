#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Strata

/// The live "rows, rows/s, percent" line for a large seed on a terminal.
struct ProgressLine {
    let enabled: Bool
    private var started: ContinuousClock.Instant?
    private var shown = false
    /// When a statement line was last drawn.
    private var drawn: ContinuousClock.Instant?

    init(enabled: Bool) { self.enabled = enabled }

    mutating func update(id: String, rows: Int, bytesRead: Int, totalBytes: Int) {
        guard enabled else { return }
        let start = started ?? ContinuousClock.now
        started = start
        let elapsed = (ContinuousClock.now - start).components
        let seconds = max(Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18, 0.001)
        let percent = totalBytes > 0 ? bytesRead * 100 / totalBytes : 100
        let rate = Int(Double(rows) / seconds)
        _ = StandardOutput.writeAll("\r  loading \(id): \(formatCount(rows)) rows, \(formatCount(rate)) rows/s, \(percent)%\u{1B}[K", to: STDERR_FILENO)
        shown = true
    }

    /// A long SQL file: shown once it spans more than one read.
    mutating func update(id: String, bytesRead: Int, totalBytes: Int) {
        guard enabled, totalBytes > 1 << 20 else { return }
        let percent = totalBytes > 0 ? bytesRead * 100 / totalBytes : 100
        _ = StandardOutput.writeAll("\r  applying \(id): \(percent)% of \(totalBytes >> 20) MiB\u{1B}[K", to: STDERR_FILENO)
        shown = true
    }

    /// A migration file's statements: `statement 3 of 40, 12.4 s`. The first is always drawn (a step slow from its
    /// first statement is seen at once), then at most ten times a second, so a file of many quick statements does
    /// not spend its time writing to the terminal.
    mutating func update(id: String, statement: Int, of total: Int?, elapsed: Duration) {
        guard enabled else { return }
        let now = ContinuousClock.now
        if statement > 1, let last = drawn, now - last < .milliseconds(100) { return }
        drawn = now
        let (whole, fraction) = elapsed.components
        let counted = total.map { statement <= $0 ? "statement \(statement) of \($0)" : "statement \(statement)" } ?? "statement \(statement)"
        _ = StandardOutput.writeAll("\r  applying \(id): \(counted), \(whole).\(fraction / 100_000_000_000_000_000) s\u{1B}[K", to: STDERR_FILENO)
        shown = true
    }

    mutating func clear() {
        guard shown else { return }
        _ = StandardOutput.writeAll("\r\u{1B}[K", to: STDERR_FILENO)
        shown = false
        started = nil
        drawn = nil
    }
}
