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

/// Where a command's output goes: text or JSON on stdout, logs and errors on stderr, nothing with `--quiet`.
struct Output {
    let json: Bool
    let quiet: Bool

    init(_ invocation: Invocation) {
        json = invocation.value("format") == "json"
        quiet = invocation.has("quiet")
    }

    /// Normal text output (suppressed by --quiet and by --format json).
    func line(_ text: String) {
        guard !json && !quiet else { return }
        StandardOutput.print(text)
    }

    /// The single JSON object of a command (printed even with --quiet, which silences only text).
    func object(_ value: JSON) {
        guard json else { return }
        StandardOutput.print(value.rendered)
    }

    /// A message for a human on stderr, e.g. an out-of-order note; suppressed by --quiet.
    func log(_ text: String) {
        guard !quiet else { return }
        printError(text)
    }

    /// Errors always reach stderr.
    func error(_ text: String) {
        printError(text)
    }

    /// True when a live progress line makes sense: a terminal on stderr, text output, not quiet.
    var showsProgress: Bool { !json && !quiet && isatty(STDERR_FILENO) == 1 }
}

/// Pads columns so text tables line up.
func table(_ rows: [[String]], indent: String = "  ") -> String {
    guard let width = rows.map(\.count).max() else { return "" }
    var widths = [Int](repeating: 0, count: width)
    for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
    return rows.map { row in
        indent + row.enumerated().map { i, cell in
            i == row.count - 1 ? cell : cell.padded(to: widths[i])
        }.joined(separator: "  ").trimmingWhitespace()
    }.joined(separator: "\n")
}

/// "1 step", "3 steps".
func counted(_ count: Int, _ noun: String) -> String {
    "\(count) \(noun)\(count == 1 ? "" : "s")"
}

func formatCount(_ value: Int) -> String {
    let digits = String(value)
    var result = ""
    for (offset, character) in digits.reversed().enumerated() {
        if offset > 0 && offset % 3 == 0 { result.append(",") }
        result.append(character)
    }
    return String(result.reversed())
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
