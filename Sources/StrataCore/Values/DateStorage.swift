#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How a database stores a `Date`, chosen per database (`Database.Configuration.dateStorage` on SQLite).
///
/// Text is read as ISO-8601 whatever the storage, so a database that changed its storage reads its older rows; a
/// number is read as the storage counts it. A number outside the dates SQLite's date functions handle (Julian day
/// 0, in 4714 BC, through the end of 9999), or not finite, is not a date: reading it is an error naming the column.
public enum DateStorage: Sendable, Equatable {
    /// UTC ISO-8601 text to the millisecond (`2024-05-01T09:30:00.123Z`): sorts and compares as text, and reads
    /// in any SQLite tool. A number is read as unix seconds. The default.
    case iso8601Text
    /// Seconds since 1970-01-01 UTC as a REAL, as FMDB stores dates (`timeIntervalSince1970`); SQL reads it with
    /// `datetime(x, 'unixepoch')`.
    case unixSeconds
    /// The Julian day number as a REAL, as SQLite's `julianday()` returns it (days since noon UTC on 24 November
    /// 4714 BC), to the millisecond; SQL reads it with `datetime(x)`.
    case julianDay

    /// The storage a manifest names (`<property dateStorage="unixSeconds">`): the case's name.
    public init?(manifestName: String) {
        switch manifestName {
        case "iso8601Text": self = .iso8601Text
        case "unixSeconds": self = .unixSeconds
        case "julianDay": self = .julianDay
        default: return nil
        }
    }

    /// The Julian day of 1970-01-01T00:00:00Z.
    static let unixEpochJulianDay = 2_440_587.5
    /// Unix seconds of Julian day 0 and of the first instant after 9999-12-31T23:59:59.999Z (Julian day 5373484.5).
    static let earliestUnixSeconds = -210_866_760_000.0
    static let endUnixSeconds = 253_402_300_800.0

    /// `date` as this storage keeps it; ISO-8601 text is rounded to `precision`.
    public func databaseValue(of date: Date, precision: DatePrecision) -> DatabaseValue {
        guard date.isStorable else { return Date.unstorableValue }
        switch self {
        case .iso8601Text:
            return date.databaseValue(precision: precision)
        case .unixSeconds:
            return .real(date.timeIntervalSince1970)
        case .julianDay:
            // Through whole milliseconds, as SQLite's own date functions count: a Julian day read back as a date
            // then gives the same millisecond.
            let milliseconds = (date.timeIntervalSince1970 * 1000).rounded()
            return .real(milliseconds / 86_400_000 + Self.unixEpochJulianDay)
        }
    }

    /// A stored value as a date: text as ISO-8601, a number as this storage counts; nil for anything else (NULL,
    /// a blob, text that is not ISO-8601, a number no date of this storage has).
    public func date(from value: DatabaseValue) -> Date? {
        switch value {
        case .text(let text): ISO8601.parse(text)
        case .integer(let integer): date(fromNumber: Double(integer))
        case .real(let real): date(fromNumber: real)
        case .null, .blob: nil
        }
    }

    /// A number as a date of this storage, or nil when it is none (out of range, or not finite).
    package func date(fromNumber number: Double) -> Date? {
        guard number.isFinite else { return nil }
        let seconds: Double
        switch self {
        case .iso8601Text, .unixSeconds:
            seconds = number
        case .julianDay:
            let milliseconds = ((number - Self.unixEpochJulianDay) * 86_400_000).rounded()
            seconds = milliseconds / 1000
        }
        guard seconds >= Self.earliestUnixSeconds, seconds < Self.endUnixSeconds else { return nil }
        return Date(timeIntervalSince1970: seconds)
    }

    /// What a stored date may be, for error messages.
    package var accepted: String {
        switch self {
        case .iso8601Text, .unixSeconds: "ISO-8601 text, or unix seconds from 4714 BC through 9999"
        case .julianDay: "ISO-8601 text, or a Julian day number from 0 through 9999 (5373484.5)"
        }
    }
}
