#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A strict ISO-8601 reader and writer working on UTF-8 bytes.
///
/// Foundation's formatters are locale-bound and slow on hot paths (seeding, row decoding); this one accepts
/// exactly `YYYY-MM-DD`, optionally followed by `T` or a space, `HH:MM[:SS[.fraction]]` and `Z`, `±HH`, `±HHMM`
/// or `±HH:MM`. Anything else, or an impossible date such as February 30, is rejected rather than guessed.
public enum ISO8601 {
    /// A parsed instant: whole seconds since 1970 (UTC), the sub-second part, and whether a time was given.
    public struct Instant: Equatable, Sendable {
        /// Whole seconds since 1970-01-01T00:00:00Z.
        public var seconds: Int64
        /// The sub-second part, in nanoseconds.
        public var nanoseconds: Int32
        /// Whether the text gave a time, not only a date.
        public var hasTime: Bool

        /// The instant as a `Date`.
        public var date: Date {
            Date(timeIntervalSince1970: TimeInterval(seconds) + TimeInterval(nanoseconds) / 1e9)
        }
    }

    /// The date an ISO-8601 date or datetime spells; nil when the text is not one.
    public static func parse(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { parse(bytes: $0)?.date }
    }

    /// The instant an ISO-8601 date or datetime in UTF-8 bytes spells; nil when the bytes are not one.
    public static func parse(bytes: UnsafeBufferPointer<UInt8>) -> Instant? {
        var reader = ByteReader(bytes: bytes)
        guard let year = reader.digits(4), reader.take(UInt8(ascii: "-")),
              let month = reader.digits(2), reader.take(UInt8(ascii: "-")),
              let day = reader.digits(2),
              (1...12).contains(month), day >= 1, day <= daysInMonth(year: year, month: month)
        else { return nil }
        var seconds = daysFromCivil(year: year, month: month, day: day) * 86_400
        if reader.atEnd { return Instant(seconds: seconds, nanoseconds: 0, hasTime: false) }

        guard reader.take(UInt8(ascii: "T")) || reader.take(UInt8(ascii: "t")) || reader.take(UInt8(ascii: " ")),
              let hour = reader.digits(2), reader.take(UInt8(ascii: ":")),
              let minute = reader.digits(2), hour < 24, minute < 60
        else { return nil }
        var second: Int64 = 0
        var nanos: Int32 = 0
        if reader.take(UInt8(ascii: ":")) {
            guard let s = reader.digits(2), s < 60 else { return nil }
            second = s
            if reader.take(UInt8(ascii: ".")) || reader.take(UInt8(ascii: ",")) {
                guard let fraction = reader.fraction() else { return nil }
                nanos = fraction
            }
        }
        seconds += hour * 3600 + minute * 60 + second

        if reader.take(UInt8(ascii: "Z")) || reader.take(UInt8(ascii: "z")) {
            // UTC
        } else if let sign = reader.peek, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
            reader.advance()
            guard let offsetHours = reader.digits(2), offsetHours < 24 else { return nil }
            var offsetMinutes: Int64 = 0
            if !reader.atEnd {
                _ = reader.take(UInt8(ascii: ":"))
                guard let m = reader.digits(2), m < 60 else { return nil }
                offsetMinutes = m
            }
            let offset = offsetHours * 3600 + offsetMinutes * 60
            seconds -= sign == UInt8(ascii: "+") ? offset : -offset
        }
        guard reader.atEnd else { return nil }
        return Instant(seconds: seconds, nanoseconds: nanos, hasTime: true)
    }

    /// `2024-05-01T09:30:00Z`, with `.SSS` milliseconds when the date has a sub-second part.
    public static func format(_ date: Date) -> String {
        let instant = instant(of: date)
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 40) { buffer in
            guard let base = buffer.baseAddress else { return "" }
            let length = write(instant, includeTime: true, into: base)
            if length > 0 { return String(decoding: UnsafeBufferPointer(start: base, count: length), as: UTF8.self) }
            return format(seconds: instant.seconds, includeTime: true)
        }
    }

    /// `date` at `precision`: `format(_:)` to the millisecond; to the microsecond, any year keeps its fraction.
    public static func format(_ date: Date, precision: DatePrecision) -> String {
        switch precision {
        case .milliseconds:
            return format(date)
        case .microseconds:
            let instant = microsecondInstant(of: date)
            return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 40) { buffer in
                guard let base = buffer.baseAddress else { return "" }
                let length = write(instant, includeTime: true, into: base)
                if length > 0 { return String(decoding: UnsafeBufferPointer(start: base, count: length), as: UTF8.self) }
                // A year `write` does not spell (beyond 9999): the fraction is kept all the same.
                let whole = format(seconds: instant.seconds, includeTime: true)
                guard instant.nanoseconds > 0 else { return whole }
                let micros = String(instant.nanoseconds / 1000)
                return String(whole.dropLast()) + "." + String(repeating: "0", count: 6 - micros.count) + micros + "Z"
            }
        }
    }

    /// A date as whole seconds and microseconds, rounded to the nearest microsecond (PostgreSQL's timestamp
    /// resolution). Worked out from the date's own offset from 2001, which is what a `Date` holds, so the only
    /// rounding is the one to the microsecond: a date read from a microsecond value comes back to it exactly.
    /// Intervals beyond ±2^53 seconds are clamped and NaN reads as 0, rather than trapping.
    public static func microsecondInstant(of date: Date) -> Instant {
        let limit = 9_007_199_254_740_992.0
        let reference = date.timeIntervalSinceReferenceDate
        let interval = reference.isNaN ? 0 : min(max(reference, -limit), limit)
        let floor = interval.rounded(.down)
        var whole = Int64(floor)
        // `interval - floor` is exact: the fraction of a double is itself a double.
        var micros = Int64(((interval - floor) * 1_000_000).rounded())
        if micros >= 1_000_000 { whole += 1; micros -= 1_000_000 }
        return Instant(seconds: whole + referenceDateUnixSeconds, nanoseconds: Int32(micros * 1000), hasTime: true)
    }

    /// 2001-01-01T00:00:00Z, where `Date` counts from, in unix seconds.
    static let referenceDateUnixSeconds: Int64 = 978_307_200

    /// A date as whole seconds and milliseconds (the precision Strata stores on SQLite).
    /// Intervals beyond ±2^53 seconds are clamped there and NaN reads as 0, rather than trapping; such dates
    /// lie outside 0000–9999, which `format` writes with as many year digits as it needs.
    public static func instant(of date: Date) -> Instant {
        let limit = 9_007_199_254_740_992.0
        let interval = date.timeIntervalSince1970.isNaN ? 0 : min(max(date.timeIntervalSince1970, -limit), limit)
        var whole = Int64(interval.rounded(.down))
        var millis = Int64(((interval - Double(whole)) * 1000).rounded())
        if millis >= 1000 { whole += 1; millis -= 1000 }
        return Instant(seconds: whole, nanoseconds: Int32(millis * 1_000_000), hasTime: true)
    }

    /// `YYYY-MM-DD` (date only) or `YYYY-MM-DDTHH:MM:SSZ` for whole seconds since 1970, UTC.
    public static func format(seconds: Int64, includeTime: Bool) -> String {
        let days = floorDiv(seconds, 86_400)
        let secondOfDay = floorMod(seconds, 86_400)
        let (y, m, d) = civilFromDays(days)
        var text = pad(y, 4) + "-" + pad(m, 2) + "-" + pad(d, 2)
        if includeTime {
            text += "T" + pad(secondOfDay / 3600, 2) + ":" + pad(secondOfDay / 60 % 60, 2) + ":"
                + pad(secondOfDay % 60, 2) + "Z"
        }
        return text
    }

    /// Writes `YYYY-MM-DD` or `YYYY-MM-DDTHH:MM:SS[.fff]Z` into `out` (at least 32 bytes); returns the length.
    /// Allocation-free, for bulk loads.
    static func write(_ instant: Instant, includeTime: Bool, into out: UnsafeMutablePointer<UInt8>) -> Int {
        let days = floorDiv(instant.seconds, 86_400)
        let secondOfDay = floorMod(instant.seconds, 86_400)
        let (year, month, day) = civilFromDays(days)
        var length = 0
        func put(_ value: Int64, _ width: Int) {
            var v = value
            for i in stride(from: width - 1, through: 0, by: -1) {
                out[length + i] = UInt8(48 + v % 10)
                v /= 10
            }
            length += width
        }
        func put(_ character: Unicode.Scalar) { out[length] = UInt8(ascii: character); length += 1 }
        guard (0...9999).contains(year) else { return 0 }
        put(year, 4); put("-"); put(month, 2); put("-"); put(day, 2)
        guard includeTime else { return length }
        put("T"); put(secondOfDay / 3600, 2); put(":"); put(secondOfDay / 60 % 60, 2); put(":"); put(secondOfDay % 60, 2)
        if instant.nanoseconds > 0 {
            // Keep every given digit: milliseconds, microseconds or nanoseconds.
            put(".")
            let nanos = Int64(instant.nanoseconds)
            if nanos % 1_000_000 == 0 { put(nanos / 1_000_000, 3) }
            else if nanos % 1000 == 0 { put(nanos / 1000, 6) }
            else { put(nanos, 9) }
        }
        put("Z")
        return length
    }

    static func daysInMonth(year: Int64, month: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 in the proleptic Gregorian calendar.
    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = floorDiv(y, 400)
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func civilFromDays(_ days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = floorDiv(z, 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// `a / b` rounded toward negative infinity, for `b > 0`. Written without `a - b + 1`, which overflows for
    /// seconds near `Int64.min` (a CSV can hold any 64-bit number of unix seconds).
    static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        let quotient = a / b
        return a % b < 0 ? quotient - 1 : quotient
    }

    /// The remainder that goes with `floorDiv`: in `0..<b`, for `b > 0`; never overflows.
    static func floorMod(_ a: Int64, _ b: Int64) -> Int64 {
        let remainder = a % b
        return remainder < 0 ? remainder + b : remainder
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(abs(value))
        let padded = digits.count < width ? String(repeating: "0", count: width - digits.count) + digits : digits
        return value < 0 ? "-" + padded : padded
    }
}

/// A cursor over ASCII bytes for the small hand-written parsers.
struct ByteReader {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0

    var atEnd: Bool { index >= bytes.count }
    var peek: UInt8? { atEnd ? nil : bytes[index] }
    mutating func advance() { index += 1 }

    mutating func take(_ byte: UInt8) -> Bool {
        guard peek == byte else { return false }
        index += 1
        return true
    }

    /// Exactly `count` ASCII digits as a number.
    mutating func digits(_ count: Int) -> Int64? {
        guard index + count <= bytes.count else { return nil }
        var value: Int64 = 0
        for i in index..<(index + count) {
            let digit = bytes[i] &- 48
            guard digit < 10 else { return nil }
            value = value * 10 + Int64(digit)
        }
        index += count
        return value
    }

    /// 1 to 9 fractional digits as nanoseconds.
    mutating func fraction() -> Int32? {
        var value: Int32 = 0
        var count = 0
        while let b = peek, b &- 48 < 10 {
            guard count < 9 else { return nil }
            value = value * 10 + Int32(b &- 48)
            count += 1
            index += 1
        }
        guard count > 0 else { return nil }
        for _ in count..<9 { value *= 10 }
        return value
    }
}
