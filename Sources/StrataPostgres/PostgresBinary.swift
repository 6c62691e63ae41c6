import CLibPQ
import StrataCore

/// Readers of PostgreSQL's binary format (each type's `_send` function) for the types a result is asked for in it.
///
/// A value read in binary is handed on exactly as the same value read as text would be: numbers as numbers, and
/// uuid, numeric, dates and timestamps as the very text the server prints for them in a Strata session (UTC, ISO
/// dates), so a result reads the same whichever format it came in. The server saves its text conversion, which for
/// timestamps and floats costs more than the bytes it sends.
enum PostgresBinary {
    /// Whether a column of `type` is read in binary: every column of a result must be, or the result is asked for
    /// as text.
    static func isReadable(_ type: Oid) -> Bool {
        PostgresColumnKind(type: type, binary: true) != nil
    }

    @inline(__always)
    static func bigEndian<T: FixedWidthInteger>(_ bytes: UnsafeBufferPointer<UInt8>, at offset: Int = 0, as type: T.Type) -> T? {
        guard let base = bytes.baseAddress, offset >= 0, bytes.count - offset >= MemoryLayout<T>.size else { return nil }
        return T(bigEndian: UnsafeRawPointer(base).loadUnaligned(fromByteOffset: offset, as: T.self))
    }

    /// `int2`, `int4`, `int8` and `oid` (unsigned), by their byte count.
    @inline(__always)
    static func integer(_ bytes: UnsafeBufferPointer<UInt8>, type: Oid) -> Int64? {
        switch (type, bytes.count) {
        case (PostgresType.int2, 2): bigEndian(bytes, as: Int16.self).map(Int64.init)
        case (PostgresType.int4, 4): bigEndian(bytes, as: Int32.self).map(Int64.init)
        case (PostgresType.oid, 4): bigEndian(bytes, as: UInt32.self).map(Int64.init)
        case (PostgresType.int8, 8): bigEndian(bytes, as: Int64.self)
        default: nil
        }
    }

    static func double(_ bytes: UnsafeBufferPointer<UInt8>) -> Double? {
        guard bytes.count == 8 else { return nil }
        return bigEndian(bytes, as: UInt64.self).map(Double.init(bitPattern:))
    }

    /// `jsonb`: a version byte (1) before the text.
    static func jsonb(_ bytes: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8>? {
        guard bytes.first == 1 else { return nil }
        return UnsafeBufferPointer(rebasing: bytes[1...])
    }

    /// `uuid`: 16 bytes, printed as the server does (lowercase, 8-4-4-4-12).
    static func uuidText(_ bytes: UnsafeBufferPointer<UInt8>, into text: inout [UInt8]) -> Bool {
        guard bytes.count == 16 else { return false }
        let digits = Array("0123456789abcdef".utf8)
        text.removeAll(keepingCapacity: true)
        for (index, byte) in bytes.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return true
    }

    /// Days from 1970-01-01 to 2000-01-01, PostgreSQL's epoch for dates and timestamps.
    static let postgresEpochDays: Int64 = 10_957

    /// `date`: days from 2000-01-01 as `int4`, the extremes meaning ±infinity; printed `YYYY-MM-DD[ BC]`.
    static func dateText(_ bytes: UnsafeBufferPointer<UInt8>, into text: inout [UInt8]) -> Bool {
        guard bytes.count == 4, let days = bigEndian(bytes, as: Int32.self) else { return false }
        text.removeAll(keepingCapacity: true)
        if days == .max { text.append(contentsOf: "infinity".utf8); return true }
        if days == .min { text.append(contentsOf: "-infinity".utf8); return true }
        let era = appendDate(days: Int64(days) + postgresEpochDays, into: &text)
        if era { text.append(contentsOf: " BC".utf8) }
        return true
    }

    /// `timestamp`/`timestamptz`: microseconds from 2000-01-01 00:00 (UTC for `timestamptz`) as `int8`, the extremes
    /// meaning ±infinity; printed `YYYY-MM-DD HH:MM:SS[.ffffff]` with trailing zeros of the fraction dropped, then
    /// `+00` for `timestamptz` (the session's zone is UTC), then ` BC` before year 1.
    static func timestampText(_ bytes: UnsafeBufferPointer<UInt8>, withZone: Bool, into text: inout [UInt8]) -> Bool {
        guard bytes.count == 8, let micros = bigEndian(bytes, as: Int64.self) else { return false }
        text.removeAll(keepingCapacity: true)
        if micros == .max { text.append(contentsOf: "infinity".utf8); return true }
        if micros == .min { text.append(contentsOf: "-infinity".utf8); return true }
        let perDay: Int64 = 86_400_000_000
        // Floor division: an instant before 2000 is a day before it plus a non-negative time of day.
        let (quotient, remainder) = micros.quotientAndRemainder(dividingBy: perDay)
        let days = remainder < 0 ? quotient - 1 : quotient
        let timeOfDay = remainder < 0 ? remainder + perDay : remainder
        let beforeChrist = appendDate(days: days + postgresEpochDays, into: &text)
        let seconds = timeOfDay / 1_000_000
        text.append(UInt8(ascii: " "))
        appendDigits(seconds / 3600, width: 2, into: &text)
        text.append(UInt8(ascii: ":"))
        appendDigits(seconds / 60 % 60, width: 2, into: &text)
        text.append(UInt8(ascii: ":"))
        appendDigits(seconds % 60, width: 2, into: &text)
        var fraction = timeOfDay % 1_000_000
        if fraction != 0 {
            var width = 6
            while fraction % 10 == 0 { fraction /= 10; width -= 1 }
            text.append(UInt8(ascii: "."))
            appendDigits(fraction, width: width, into: &text)
        }
        if withZone { text.append(contentsOf: "+00".utf8) }
        if beforeChrist { text.append(contentsOf: " BC".utf8) }
        return true
    }

    /// Appends `YYYY-MM-DD` for days from 1970-01-01 (proleptic Gregorian, years before 1 printed as BC years);
    /// returns whether the year is BC.
    private static func appendDate(days: Int64, into text: inout [UInt8]) -> Bool {
        // Howard Hinnant's civil_from_days.
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        let beforeChrist = year <= 0
        appendDigits(beforeChrist ? 1 - year : year, width: 4, into: &text)
        text.append(UInt8(ascii: "-"))
        appendDigits(month, width: 2, into: &text)
        text.append(UInt8(ascii: "-"))
        appendDigits(day, width: 2, into: &text)
        return beforeChrist
    }

    /// `numeric`: counts and base-10000 digits as `int2`s (digit count, weight of the first digit, sign, display
    /// scale), printed as `numeric_out` does: the integer part without leading zeros (`0` when empty), then exactly
    /// `scale` fraction digits.
    static func numericText(_ bytes: UnsafeBufferPointer<UInt8>, into text: inout [UInt8]) -> Bool {
        guard let count = bigEndian(bytes, at: 0, as: Int16.self), let weight = bigEndian(bytes, at: 2, as: Int16.self),
              let sign = bigEndian(bytes, at: 4, as: UInt16.self), let scale = bigEndian(bytes, at: 6, as: Int16.self),
              count >= 0, scale >= 0, bytes.count == 8 + 2 * Int(count) else { return false }
        text.removeAll(keepingCapacity: true)
        switch sign {
        case 0xC000: text.append(contentsOf: "NaN".utf8); return true
        case 0xD000: text.append(contentsOf: "Infinity".utf8); return true
        case 0xF000: text.append(contentsOf: "-Infinity".utf8); return true
        case 0x0000, 0x4000: break
        default: return false
        }
        var digits: [Int64] = []
        digits.reserveCapacity(Int(count))
        for index in 0..<Int(count) {
            guard let digit = bigEndian(bytes, at: 8 + 2 * index, as: Int16.self), (0..<10_000).contains(digit) else { return false }
            digits.append(Int64(digit))
        }
        func group(_ position: Int) -> Int64 { position >= 0 && position < digits.count ? digits[position] : 0 }
        if sign == 0x4000 { text.append(UInt8(ascii: "-")) }
        if weight < 0 {
            text.append(UInt8(ascii: "0"))
        } else {
            for position in 0...Int(weight) {
                appendDigits(group(position), width: position == 0 ? 1 : 4, into: &text)
            }
        }
        if scale > 0 {
            text.append(UInt8(ascii: "."))
            var written = 0
            var position = Int(weight) + 1
            while written < Int(scale) {
                let value = group(position)
                for divisor: Int64 in [1000, 100, 10, 1] where written < Int(scale) {
                    text.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
                    written += 1
                }
                position += 1
            }
        }
        return true
    }

    /// Appends a non-negative number's decimal digits, zero-padded to at least `width`.
    private static func appendDigits(_ value: Int64, width: Int, into text: inout [UInt8]) {
        // The fields of dates and times, one append per digit.
        if width == 2, value >= 0, value < 100 {
            text.append(UInt8(ascii: "0") + UInt8(value / 10))
            text.append(UInt8(ascii: "0") + UInt8(value % 10))
            return
        }
        if width == 4, value >= 0, value < 10_000 {
            text.append(UInt8(ascii: "0") + UInt8(value / 1000))
            text.append(UInt8(ascii: "0") + UInt8(value / 100 % 10))
            text.append(UInt8(ascii: "0") + UInt8(value / 10 % 10))
            text.append(UInt8(ascii: "0") + UInt8(value % 10))
            return
        }
        var count = 1
        var probe = value
        while probe >= 10 { probe /= 10; count += 1 }
        let start = text.count
        text.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: max(width, count)))
        var rest = value
        var index = text.count - 1
        while rest > 0 && index >= start {
            text[index] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
            index -= 1
        }
    }
}
