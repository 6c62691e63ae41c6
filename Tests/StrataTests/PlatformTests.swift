import Foundation
import XCTest
@testable import StrataCore

/// The string, path, lock and sleep helpers that stand in for Foundation APIs FoundationEssentials lacks give what
/// those APIs gave, except where the difference is the point (quoting by bytes, padding without cutting).
final class PlatformTests: XCTestCase {
    static let samples = ["", " ", "\t a b \t", "\u{A0}x\u{2003}", "\n x \r\n", "\u{85}y\u{2028}", "\u{2029} z \u{3000}",
                          " \u{301}a", "é ", "\u{FEFF}w", "a\u{0B}", "\u{200B}v",
                          "\u{180E}u\u{200C}", "\u{2000}\u{200A}t\u{1680}", "\u{202F}s\u{205F}", "\u{0C}r\u{0D}"]

    func testTrimmingWhitespaceMatchesFoundation() {
        for sample in Self.samples {
            XCTAssertEqual(Array(sample.trimmingWhitespace().unicodeScalars),
                           Array(sample.trimmingCharacters(in: .whitespaces).unicodeScalars), sample.debugDescription)
            XCTAssertEqual(Array(sample.trimmingWhitespace(newlines: true).unicodeScalars),
                           Array(sample.trimmingCharacters(in: .whitespacesAndNewlines).unicodeScalars), sample.debugDescription)
        }
    }

    func testReplacingEveryComparesBytes() {
        XCTAssertEqual("a'b''c".replacingEvery("'", with: "''"), "a''b''''c")
        XCTAssertEqual("x--y-".replacingEvery("--", with: "-"), "x-y-")
        XCTAssertEqual("abc".replacingEvery("", with: "z"), "abc")
        XCTAssertEqual("ab".replacingEvery("abc", with: "z"), "ab")
        // One character to Swift (and to Foundation, which leaves it alone), two scalars to a SQL parser.
        XCTAssertEqual(Array("'\u{301}".replacingEvery("'", with: "''").utf8), Array("''\u{301}".utf8))
        XCTAssertEqual("Element 'x': Element 'y'".replacingEvery("Element '", with: "element '"), "element 'x': element 'y'")
    }

    func testPrintfFormatMatchesStringFormat() {
        for value in [0, 0.05, 0.25, 2.25, 9.95, 1234.5678, -3.04] {
            XCTAssertEqual(printfFormat("%.1f s", value), String(format: "%.1f s", value))
        }
        for byte: UInt8 in [0, 9, 0x1F, 0xAB, 0xFF] {
            XCTAssertEqual(printfFormat("%02X", byte), String(format: "%02X", byte))
        }
        XCTAssertEqual(printfFormat("\\u%04x", Int32(0x1F)), "\\u001f")
        // Longer than the first buffer.
        XCTAssertEqual(printfFormat("%.1f", 1e80), String(format: "%.1f", 1e80))
    }

    func testPathComponentsAsNSStringComputesThem() {
        let cases: [(path: String, last: String, parent: String)] = [
            ("/a/b", "b", "/a"), ("/", "/", "/"), ("/a", "a", "/"), ("a/b/", "b", "a"), ("", "", ""),
            ("a//b", "b", "a"), ("/a/b//", "b", "/a"), ("./a", "a", "."), ("../x/y", "y", "../x"), ("//a", "a", "/"),
            ("a", "a", ""), ("/a/./b", "b", "/a/."),
        ]
        for (path, last, parent) in cases {
            XCTAssertEqual(PathComponents.last(path), last, path)
            XCTAssertEqual(PathComponents.deletingLast(path), parent, path)
        }
        XCTAssertEqual(PathComponents.appending("c.sql", to: "/a/b"), "/a/b/c.sql")
        XCTAssertEqual(PathComponents.appending("c.sql", to: "/a/b/"), "/a/b/c.sql")
        XCTAssertEqual(PathComponents.appending("c.sql", to: "/"), "/c.sql")
        XCTAssertEqual(PathComponents.appending("c.sql", to: ""), "c.sql")
    }

    func testPaddingCountsCharactersAndNeverCuts() {
        XCTAssertEqual("ab".padded(to: 4), "ab  ")
        XCTAssertEqual("abcd".padded(to: 2), "abcd")
        // NSString's padding counts UTF-16 units, so it cut this one-character name to "e".
        XCTAssertEqual("e\u{301}".padded(to: 2), "e\u{301} ")
    }

    func testLockExcludesAndSleepWaits() {
        let lock = Lock()
        let counter = Counter()
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<1000 { lock.withLock { counter.value += 1 } }
        }
        XCTAssertEqual(counter.value, 8000)
        let start = ContinuousClock.now
        sleepBlocking(for: .milliseconds(30))
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - start, .milliseconds(30))
    }

    private final class Counter: @unchecked Sendable { var value = 0 }
}
