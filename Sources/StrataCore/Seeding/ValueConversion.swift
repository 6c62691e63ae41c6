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

/// How blob fields are written in CSV.
package enum BlobFormat: Equatable, Sendable {
    /// `\x…` is hex, anything else base64.
    case automatic, hex, base64
}

/// How one CSV column's text becomes a bound SQL value. A trivial enum, so the per-field switch costs no
/// reference counting.
package enum ValueKind: Equatable, Sendable {
    case integer, real, numeric, text, boolean
    /// Text stored as written (a column declared without a type).
    case untyped
    case blob(BlobFormat)
    case date(inputUnix: Bool, storage: SeedColumn.DateStorage)
    case datetime(inputUnix: Bool, storage: SeedColumn.DateStorage)
    // The kinds below check the field and pass its text on unchanged, for a database that parses text itself
    // (PostgreSQL's COPY): the text is exactly what the file says, so nothing is lost to a conversion.
    /// `[+-]digits` within `minimum...maximum` (a column's integer type).
    case integerText(minimum: Int64, maximum: Int64)
    /// A real number as `real` accepts it, within a 4-byte float's range when `single`.
    case realText(single: Bool)
    /// An exact number: `[+-]digits[.digits][e±digits]` of any length, with no more digits after the point
    /// than `scale` when there is one (the column would round them away).
    case decimalText(scale: Int?)
    /// Text of at most `maximum` characters (Unicode scalars), or bytes when `bytes`: the column's length limit,
    /// checked here because the database would cut trailing spaces silently.
    case limitedText(maximum: Int, bytes: Bool)

    /// The kind for a column: the seed's `<column type=…>` if given, else the table's declared type, classified
    /// by the database's dialect (`affinity`).
    package init(column: SeedColumn?, declaredType: String, affinity: Affinity) {
        let inputUnix = column?.format == "unix"
        let storage = column?.storage ?? .text
        if let type = column?.type {
            switch type {
            case .integer: self = .integer
            case .real: self = .real
            case .text: self = .text
            case .blob: self = .blob(column?.format == "hex" ? .hex : column?.format == "base64" ? .base64 : .automatic)
            case .boolean: self = .boolean
            case .date: self = .date(inputUnix: inputUnix, storage: storage)
            case .datetime: self = .datetime(inputUnix: inputUnix, storage: storage)
            }
            return
        }
        let declared = declaredType.uppercased()
        if declared.contains("BOOL") { self = .boolean; return }
        if declared.contains("DATETIME") || declared.contains("TIMESTAMP") {
            self = .datetime(inputUnix: false, storage: .text)
            return
        }
        if declared.contains("DATE") { self = .date(inputUnix: false, storage: .text); return }
        switch affinity {
        case .integer: self = .integer
        case .real: self = .real
        case .numeric: self = .numeric
        case .text: self = .text
        case .blob: self = declared.isEmpty ? .untyped : .blob(.automatic)
        }
    }

    var name: String {
        switch self {
        case .integer: "an integer"
        case .integerText(let minimum, let maximum):
            minimum == .min && maximum == .max ? "an integer" : "an integer from \(minimum) to \(maximum)"
        case .real: "a real number"
        case .realText(let single): single ? "a real number (within real's range, about ±3.4e38)" : "a real number"
        case .numeric: "a number"
        case .decimalText(let scale): scale.map { "a number with at most \($0) digit\($0 == 1 ? "" : "s") after the point" } ?? "a number"
        case .limitedText(let maximum, let bytes): "text of at most \(maximum) \(bytes ? "byte" : "character")\(maximum == 1 ? "" : "s")"
        case .text, .untyped: "text"
        case .boolean: "a boolean (1/0, true/false, yes/no, t/f)"
        case .blob(let format): format == .hex ? "hex bytes" : format == .base64 ? "base64 bytes" : "bytes (\\x… hex or base64)"
        case .date(let unix, _): unix ? "unix seconds" : "an ISO-8601 date (YYYY-MM-DD)"
        case .datetime(let unix, _): unix ? "unix seconds" : "an ISO-8601 datetime (e.g. 2010-12-01T21:35:43+0900)"
        }
    }
}

/// How a seed converts the fields of one column, chosen by the seed's target (`SeedTarget.conversion(of:configured:)`):
/// SQLite's rules by default, a backend's own where its types say more (PostgreSQL's integer ranges, exact
/// numerics, length limits, timestamp precision).
public struct SeedConversion: Sendable, Equatable {
    package let kind: ValueKind
    /// Digits of fractional seconds the column keeps: a datetime with more is refused rather than rounded by the
    /// database. 9 (nanoseconds, every digit a file may hold) checks nothing.
    package let fractionDigits: Int

    package init(kind: ValueKind, fractionDigits: Int = 9) {
        self.kind = kind
        self.fractionDigits = fractionDigits
    }

    /// The conversion SQLite's rules give: the seed's `<column type=…>` (`configured`) if any, else the column's
    /// declared type as the README's Seeds section describes.
    public static func standard(for column: ColumnInfo, configured: SeedColumn?) -> SeedConversion {
        SeedConversion(kind: ValueKind(column: configured, declaredType: column.declaredType, affinity: column.affinity))
    }
}

/// Parsers for CSV field bytes; each returns nil rather than guess.
enum FieldParser {
    static func integer(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        var index = 0
        var negative = false
        guard !bytes.isEmpty else { return nil }
        if bytes[0] == UInt8(ascii: "-") || bytes[0] == UInt8(ascii: "+") {
            negative = bytes[0] == UInt8(ascii: "-")
            index = 1
        }
        guard index < bytes.count else { return nil }
        var value: Int64 = 0
        while index < bytes.count {
            let digit = bytes[index] &- 48
            guard digit < 10 else { return nil }
            let (times, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = negative ? times.subtractingReportingOverflow(Int64(digit)) : times.addingReportingOverflow(Int64(digit))
            guard !o1 && !o2 else { return nil }
            value = sum
            index += 1
        }
        return value
    }

    private static let powersOfTen: [Double] = (0...22).map { pow(10, Double($0)) }

    /// `[+-]digits[.digits][e[+-]digits]` (or `.5`); no inf, nan or hex floats.
    static func real(_ bytes: UnsafeBufferPointer<UInt8>) -> Double? {
        var index = 0
        let count = bytes.count
        guard count > 0, count < 400 else { return nil }
        var negative = false
        if bytes[0] == UInt8(ascii: "-") || bytes[0] == UInt8(ascii: "+") { negative = bytes[0] == UInt8(ascii: "-"); index = 1 }
        var mantissa: UInt64 = 0
        var digits = 0
        var significant = 0
        var fractionDigits = 0
        var exact = true
        while index < count, bytes[index] &- 48 < 10 {
            if significant < 19 { mantissa = mantissa * 10 + UInt64(bytes[index] &- 48); if mantissa > 0 { significant += 1 } }
            else { exact = false }
            digits += 1
            index += 1
        }
        if index < count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            while index < count, bytes[index] &- 48 < 10 {
                if significant < 19 { mantissa = mantissa * 10 + UInt64(bytes[index] &- 48); fractionDigits += 1; if mantissa > 0 { significant += 1 } }
                else { exact = false }
                digits += 1
                index += 1
            }
        }
        guard digits > 0 else { return nil }
        var hasExponent = false
        if index < count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            hasExponent = true
            index += 1
            if index < count, bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") { index += 1 }
            var exponentDigits = 0
            while index < count, bytes[index] &- 48 < 10 { index += 1; exponentDigits += 1 }
            guard exponentDigits > 0 else { return nil }
        }
        guard index == count else { return nil }
        // Clinger's fast path: an exact mantissa below 2^53 divided by an exact power of ten rounds correctly.
        if exact && !hasExponent && mantissa < (1 << 53) && fractionDigits <= 22 {
            let value = Double(mantissa) / powersOfTen[fractionDigits]
            return negative ? -value : value
        }
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: count + 1) { text -> Double? in
            guard let start = text.baseAddress else { return nil }
            for i in 0..<count { text[i] = CChar(bitPattern: bytes[i]) }
            text[count] = 0
            var end: UnsafeMutablePointer<CChar>?
            let value = strtod(start, &end)
            guard end == start + count, value.isFinite else { return nil }
            return value
        }
    }

    /// `[+-]digits[.digits][e[+-]digits]` (or `.5`) of any length, as an exact numeric type reads it: how many
    /// digits after the point the value needs (0 for a whole number, negative when it ends in zeros before the
    /// point), or nil when the text is not such a number.
    static func decimalScale(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        let count = bytes.count
        var index = 0
        guard count > 0 else { return nil }
        if bytes[0] == UInt8(ascii: "-") || bytes[0] == UInt8(ascii: "+") { index = 1 }
        var digits = 0
        var fraction = 0
        var trailingZeros = 0
        var isZero = true
        func digit(_ byte: UInt8, inFraction: Bool) {
            digits += 1
            if inFraction { fraction += 1 }
            if byte == UInt8(ascii: "0") { trailingZeros += 1 } else { trailingZeros = 0; isZero = false }
        }
        while index < count, bytes[index] &- 48 < 10 { digit(bytes[index], inFraction: false); index += 1 }
        if index < count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            while index < count, bytes[index] &- 48 < 10 { digit(bytes[index], inFraction: true); index += 1 }
        }
        guard digits > 0 else { return nil }
        var exponent = 0
        if index < count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            var negative = false
            if index < count, bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") {
                negative = bytes[index] == UInt8(ascii: "-")
                index += 1
            }
            var exponentDigits = 0
            while index < count, bytes[index] &- 48 < 10 {
                // Clamped: an exponent this large overflows any numeric, which the database reports itself.
                exponent = min(exponent * 10 + Int(bytes[index] &- 48), 1_000_000_000)
                exponentDigits += 1
                index += 1
            }
            guard exponentDigits > 0 else { return nil }
            if negative { exponent = -exponent }
        }
        guard index == count else { return nil }
        return isZero ? 0 : fraction - exponent - trailingZeros
    }

    /// Unicode scalars in valid UTF-8 (the reader has checked it): the bytes that do not continue a sequence.
    static func scalarCount(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var count = 0
        for byte in bytes where byte & 0xC0 != 0x80 { count += 1 }
        return count
    }

    static func boolean(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool? {
        guard bytes.count <= 5 else { return nil }
        var lower: UInt64 = 0
        for byte in bytes {
            guard byte != 0 else { return nil }
            let folded = byte >= 65 && byte <= 90 ? byte + 32 : byte
            lower = lower << 8 | UInt64(folded)
        }
        switch lower {
        case 0x31, 0x74, 0x74727565, 0x796573: return true                // 1 t true yes
        case 0x30, 0x66, 0x66616c7365, 0x6e6f: return false               // 0 f false no
        default: return nil
        }
    }

    static func blob(_ bytes: UnsafeBufferPointer<UInt8>, format: BlobFormat) -> [UInt8]? {
        let hasHexPrefix = bytes.count >= 2 && bytes[0] == UInt8(ascii: "\\") && (bytes[1] == UInt8(ascii: "x") || bytes[1] == UInt8(ascii: "X"))
        if format == .hex || (format == .automatic && hasHexPrefix) {
            let digits = hasHexPrefix ? UnsafeBufferPointer(rebasing: bytes[2...]) : bytes
            guard digits.count % 2 == 0 else { return nil }
            var result: [UInt8] = []
            result.reserveCapacity(digits.count / 2)
            var index = 0
            while index < digits.count {
                guard let high = hexValue(digits[index]), let low = hexValue(digits[index + 1]) else { return nil }
                result.append(high << 4 | low)
                index += 2
            }
            return result
        }
        guard format != .hex else { return nil }
        return Data(base64Encoded: Data(bytes)).map { [UInt8]($0) }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 48...57: byte - 48
        case 65...70: byte - 55
        case 97...102: byte - 87
        default: nil
        }
    }
}
