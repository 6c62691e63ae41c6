import Foundation
import XCTest
import Strata
@testable import StrataCore
@testable import StrataSQLite

final class ISO8601Tests: XCTestCase {
    func testParsesTheAcceptedForms() {
        XCTAssertEqual(ISO8601.parse("1970-01-01")?.timeIntervalSince1970, 0)
        XCTAssertEqual(ISO8601.parse("2010-12-01T21:35:43+0900")?.timeIntervalSince1970, 1_291_206_943)
        XCTAssertEqual(ISO8601.parse("2010-12-01T12:35:43Z")?.timeIntervalSince1970, 1_291_206_943)
        XCTAssertEqual(ISO8601.parse("2010-12-01 12:35:43")?.timeIntervalSince1970, 1_291_206_943)
        XCTAssertEqual(ISO8601.parse("2010-12-01T07:35:43-05:00")?.timeIntervalSince1970, 1_291_206_943)
        XCTAssertEqual(ISO8601.parse("2010-12-01T12:35")?.timeIntervalSince1970, 1_291_206_900)
        XCTAssertEqual(ISO8601.parse("2000-02-29T00:00:00.5Z")?.timeIntervalSince1970, 951_782_400.5)
        XCTAssertEqual(ISO8601.parse("1969-12-31T23:59:59Z")?.timeIntervalSince1970, -1)
    }

    func testRejectsWhatIsNotADate() {
        for text in ["", "2010-13-01", "2010-02-30", "2019-02-29", "2010-1-01", "2010-12-01T24:00",
                     "2010-12-01T12:60", "2010-12-01T12:35:43+2500", "2010-12-01Z", "2010-12-01T", "yesterday",
                     "2010-12-01T12:35:43.", "2010-12-01T12:35:43 extra", "１９７０-01-01"] {
            XCTAssertNil(ISO8601.parse(text), text)
        }
    }

    func testFormatsUTCAndRoundTrips() {
        XCTAssertEqual(ISO8601.format(Date(timeIntervalSince1970: 1_291_206_943)), "2010-12-01T12:35:43Z")
        XCTAssertEqual(ISO8601.format(Date(timeIntervalSince1970: 0.125)), "1970-01-01T00:00:00.125Z")
        XCTAssertEqual(ISO8601.format(seconds: -86_400, includeTime: false), "1969-12-31")
        for seconds in stride(from: Int64(-5_000_000_000), to: 5_000_000_000, by: 123_456_789) {
            let text = ISO8601.format(seconds: seconds, includeTime: true)
            XCTAssertEqual(ISO8601.parse(text).map { Int64($0.timeIntervalSince1970) }, seconds, text)
        }
    }

    /// PostgreSQL's precision: a date is written to the nearest microsecond, worked out from the date's own
    /// value (a carry into the next second included), and a date parsed from a microsecond value is written back as
    /// that value, which is what reading a row and saving it again does. Milliseconds stay `format(_:)`'s.
    func testMicrosecondsRoundToTheNearestAndComeBackAsRead() {
        func micro(_ interval: TimeInterval) -> String { ISO8601.format(Date(timeIntervalSince1970: interval), precision: .microseconds) }
        XCTAssertEqual(micro(1_700_000_000.1234562), "2023-11-14T22:13:20.123456Z")
        XCTAssertEqual(micro(1_700_000_000.1234568), "2023-11-14T22:13:20.123457Z")
        XCTAssertEqual(micro(1_700_000_000.9999997), "2023-11-14T22:13:21Z")
        XCTAssertEqual(micro(-0.2500004), "1969-12-31T23:59:59.750Z")
        XCTAssertEqual(micro(253_402_300_800.5), "10000-01-01T00:00:00.500000Z", "a year past 9999 keeps its fraction")
        for interval in [1e300, -1e300, Double.infinity, Double.nan] { XCTAssertFalse(micro(interval).isEmpty) }
        let date = Date(timeIntervalSince1970: 1_700_000_000.1234568)
        XCTAssertEqual(ISO8601.format(date, precision: .milliseconds), ISO8601.format(date))
        XCTAssertEqual(ISO8601.format(date), "2023-11-14T22:13:20.123Z")
        var changed: [String] = []
        for base in ["2024-02-29T23:59:59", "2099-12-31T23:59:59", "1901-01-01T00:00:00"] {
            for micros in stride(from: 0, to: 1_000_000, by: 13) {
                let digits = String(micros)
                let text = base + "." + String(repeating: "0", count: 6 - digits.count) + digits + "Z"
                guard let read = ISO8601.parse(text) else { return XCTFail(text) }
                if ISO8601.microsecondInstant(of: read).nanoseconds != Int32(micros * 1000) { changed.append(text) }
            }
        }
        XCTAssertEqual(changed, [], "written back as another microsecond than read")
    }

    func testExtremeValuesAreRefusedNeverTrapped() {
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: 64)
        defer { buffer.deallocate() }
        for seconds in [Int64.min, Int64.min + 1, Int64.min + 86_399, -62_167_219_201, Int64.max, Int64.max - 1] {
            for includeTime in [false, true] {
                let instant = ISO8601.Instant(seconds: seconds, nanoseconds: 999_999_999, hasTime: includeTime)
                XCTAssertEqual(ISO8601.write(instant, includeTime: includeTime, into: buffer), 0, "\(seconds)")
                XCTAssertFalse(ISO8601.format(seconds: seconds, includeTime: includeTime).isEmpty)
            }
        }
        XCTAssertEqual(ISO8601.write(ISO8601.Instant(seconds: -62_167_219_200, nanoseconds: 0, hasTime: true),
                                     includeTime: true, into: buffer), 20, "0000-01-01T00:00:00Z is the first")
        for interval in [1e300, -1e300, Double.infinity, -Double.infinity, Double.nan, 9.3e18, -9.3e18] {
            let date = Date(timeIntervalSince1970: interval)
            XCTAssertFalse(ISO8601.format(date).isEmpty, "\(interval)")
        }
        XCTAssertEqual(ISO8601.floorDiv(Int64.min, 86_400), -106_751_991_167_301)
        XCTAssertEqual(ISO8601.floorDiv(-1, 86_400), -1)
        XCTAssertEqual(ISO8601.floorDiv(-86_400, 86_400), -1)
        XCTAssertEqual(ISO8601.floorDiv(Int64.max, 86_400), 106_751_991_167_300)
    }
}
