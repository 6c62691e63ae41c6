#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One SQLite value, in SQLite's five storage classes.
public enum DatabaseValue: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// SQL NULL.
    case null
    /// A 64-bit integer.
    case integer(Int64)
    /// A double-precision floating-point number.
    case real(Double)
    /// Text.
    case text(String)
    /// Bytes.
    case blob(Data)

    /// Whether the value is NULL.
    public var isNull: Bool { self == .null }

    /// The storage class name, as SQLite's `typeof()` spells it.
    public var storageClass: String {
        switch self {
        case .null: "null"
        case .integer: "integer"
        case .real: "real"
        case .text: "text"
        case .blob: "blob"
        }
    }

    /// The value as SQL would write it, for messages.
    public var description: String {
        switch self {
        case .null: "NULL"
        case .integer(let value): String(value)
        case .real(let value): String(value)
        case .text(let value): "'" + value.replacingEvery("'", with: "''") + "'"
        case .blob(let data): "X'" + data.map { printfFormat("%02X", $0) }.joined() + "'"
        }
    }
}

/// SQLite's five storage classes, without a value.
public enum StorageClass: Sendable, Equatable {
    /// One of SQLite's storage classes.
    case null, integer, real, text, blob
}

/// A type that can be stored in and read from a database column.
///
/// Adopt it for your own types by mapping them onto a `DatabaseValue`:
/// ```swift
/// extension Money: DatabaseValueConvertible {
///     public var databaseValue: DatabaseValue { .integer(cents) }
///     public static func fromDatabaseValue(_ value: DatabaseValue) -> Money? {
///         if case .integer(let cents) = value { return Money(cents: cents) }
///         return nil
///     }
/// }
/// ```
public protocol DatabaseValueConvertible {
    /// The value to bind or store.
    var databaseValue: DatabaseValue { get }
    /// The Swift value for a stored one, or nil when it does not convert (never a lossy guess).
    static func fromDatabaseValue(_ value: DatabaseValue) -> Self?
}

extension DatabaseValue: DatabaseValueConvertible {
    /// The value itself.
    public var databaseValue: DatabaseValue { self }
    /// The value itself.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> DatabaseValue? { value }
}

extension Optional: DatabaseValueConvertible where Wrapped: DatabaseValueConvertible {
    /// The wrapped value's database value, or NULL.
    public var databaseValue: DatabaseValue { self?.databaseValue ?? .null }
    /// Nil wrapped in an optional for NULL, else the wrapped type's reading of the value.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Wrapped?? {
        if case .null = value { return .some(nil) }
        return Wrapped.fromDatabaseValue(value).map { .some($0) }
    }
}

extension Int64: DatabaseValueConvertible {
    /// The integer.
    public var databaseValue: DatabaseValue { .integer(self) }
    /// The integer, or a real with an exact integer value; nil for anything else.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Int64? {
        switch value {
        case .integer(let v): v
        // A REAL with an exact integral value converts; anything fractional does not.
        case .real(let d): Int64(exactly: d)
        default: nil
        }
    }
}

extension BinaryInteger where Self: DatabaseValueConvertible {
    /// A value above `Int64.max` (only `UInt64`/`UInt` have them) becomes the nearest REAL, since this property
    /// cannot throw; `StatementArguments`, function results and `ModelStore` refuse such values instead.
    public var databaseValue: DatabaseValue {
        if let exact = Int64(exactly: self) { return .integer(exact) }
        return .real(Double(self))
    }
    /// The integer when it fits `Self`; nil for anything else.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Self? {
        Int64.fromDatabaseValue(value).flatMap { Self(exactly: $0) }
    }
}

extension Int: DatabaseValueConvertible {}
extension Int8: DatabaseValueConvertible {}
extension Int16: DatabaseValueConvertible {}
extension Int32: DatabaseValueConvertible {}
extension UInt: DatabaseValueConvertible {}
extension UInt8: DatabaseValueConvertible {}
extension UInt16: DatabaseValueConvertible {}
extension UInt32: DatabaseValueConvertible {}
extension UInt64: DatabaseValueConvertible {}

extension Double: DatabaseValueConvertible {
    /// The number as a real.
    public var databaseValue: DatabaseValue { .real(self) }
    /// A real, or an integer a `Double` holds exactly; nil for anything else.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Double? {
        switch value {
        case .real(let d): d
        // An integer beyond 2^53 that a Double cannot hold exactly does not convert (rather than rounding).
        case .integer(let i): Double(exactly: i)
        default: nil
        }
    }
}

extension Float: DatabaseValueConvertible {
    /// The number as a real.
    public var databaseValue: DatabaseValue { .real(Double(self)) }
    /// Rounds to the nearest `Float`; a finite number beyond Float's range does not convert (rather than
    /// becoming infinity).
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Float? {
        guard let double = Double.fromDatabaseValue(value) else { return nil }
        let float = Float(double)
        return float.isFinite || !double.isFinite ? float : nil
    }
}

extension Bool: DatabaseValueConvertible {
    /// 1 for true, 0 for false.
    public var databaseValue: DatabaseValue { .integer(self ? 1 : 0) }
    /// Reads 0 and 1 only; any other number is not a boolean and does not convert.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Bool? {
        switch Int64.fromDatabaseValue(value) {
        case 0: false
        case 1: true
        default: nil
        }
    }
}

extension String: DatabaseValueConvertible {
    /// The string as text.
    public var databaseValue: DatabaseValue { .text(self) }
    /// The text; nil for anything else.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> String? {
        if case .text(let s) = value { return s }
        return nil
    }
}

extension Data: DatabaseValueConvertible {
    /// The bytes as a blob.
    public var databaseValue: DatabaseValue { .blob(self) }
    /// The blob's bytes, or text's UTF-8 bytes; nil for anything else.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Data? {
        switch value {
        case .blob(let d): d
        case .text(let s): Data(s.utf8)
        default: nil
        }
    }
}

extension Date: DatabaseValueConvertible {
    /// Dates are stored as UTC ISO-8601 text (`2024-05-01T09:30:00Z`, milliseconds when present),
    /// which sorts and compares correctly in SQL. This is SQLite's form; a statement on another database writes a
    /// date at that database's precision (`SQLDialect.datePrecision`) when the `Date` itself is its argument.
    public var databaseValue: DatabaseValue { databaseValue(precision: .milliseconds) }

    /// The date as UTC ISO-8601 text rounded to `precision`; NaN (`Date.unstorableValue`) for a date no text
    /// can hold.
    public func databaseValue(precision: DatePrecision) -> DatabaseValue {
        isStorable ? .text(ISO8601.format(self, precision: precision)) : Date.unstorableValue
    }

    /// Whether the date has a written form: a finite number of seconds, within ±2^53 of 1970 (ISO-8601 text would
    /// write a clamped date, or 1970 for NaN, in silence).
    var isStorable: Bool {
        // Both writers' limits: the millisecond one counts from 1970, the microsecond one from 2001.
        abs(timeIntervalSince1970) <= 9_007_199_254_740_992 && abs(timeIntervalSinceReferenceDate) <= 9_007_199_254_740_992
    }

    /// What a NaN or infinite date converts to: NaN, which SQLite refuses to bind (it would store NULL) and a
    /// PostgreSQL date or timestamp column refuses to take, so such a date is an error, never a stored 1970.
    static let unstorableValue = DatabaseValue.real(.nan)
    /// Reads ISO-8601 text (date only, with or without time, fraction and offset) or unix seconds (from 4714 BC
    /// through 9999, as `DateStorage` reads them). A row read from a database that stores dates otherwise reads a
    /// number as that database's storage counts (`Row.get`, `ModelStore`).
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Date? {
        DateStorage.iso8601Text.date(from: value)
    }
}

extension UUID: DatabaseValueConvertible {
    /// UUIDs are stored as lowercase text, readable in any SQLite tool.
    public var databaseValue: DatabaseValue { .text(uuidString.lowercased()) }
    /// Reads text in any case, or a 16-byte blob.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> UUID? {
        switch value {
        case .text(let s): return UUID(uuidString: s)
        case .blob(let d) where d.count == 16:
            let b = [UInt8](d)
            return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
                               b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
        default: return nil
        }
    }
}

extension URL: DatabaseValueConvertible {
    /// The URL's absolute string as text.
    public var databaseValue: DatabaseValue { .text(absoluteString) }
    /// The URL the text spells; nil for anything else.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> URL? {
        if case .text(let s) = value { return URL(string: s) }
        return nil
    }
}

extension Decimal: DatabaseValueConvertible {
    /// Decimals are stored as text so no digit is lost to binary floating point.
    public var databaseValue: DatabaseValue { .text(description) }
    /// The decimal that text spells exactly, or an integer or real as a decimal; nil for anything else.
    public static func fromDatabaseValue(_ value: DatabaseValue) -> Decimal? {
        switch value {
        case .text(let s): exactDecimal(s)
        case .integer(let i): Decimal(i)
        case .real(let d): Decimal(d)
        default: nil
        }
    }
}

/// The decimal a text holds, only when the whole text is one and it reads back the same: `Decimal(string:)` takes
/// a prefix (`"12abc"` → 12) and keeps 38 digits, which would change the value silently.
private func exactDecimal(_ text: String) -> Decimal? {
    let scalars = text.unicodeScalars
    var index = scalars.startIndex
    if index < scalars.endIndex, scalars[index] == "-" || scalars[index] == "+" { index = scalars.index(after: index) }
    var digits = 0, dots = 0
    while index < scalars.endIndex {
        let c = scalars[index]
        if c == "." { dots += 1 } else if c.properties.numericType == .decimal && c.isASCII { digits += 1 } else { break }
        index = scalars.index(after: index)
    }
    if index < scalars.endIndex, scalars[index] == "e" || scalars[index] == "E" {
        index = scalars.index(after: index)
        if index < scalars.endIndex, scalars[index] == "-" || scalars[index] == "+" { index = scalars.index(after: index) }
        var exponentDigits = 0
        while index < scalars.endIndex, scalars[index].isASCII, scalars[index].properties.numericType == .decimal {
            exponentDigits += 1
            index = scalars.index(after: index)
        }
        guard exponentDigits > 0 else { return nil }
    }
    guard index == scalars.endIndex, digits > 0, dots <= 1, digits <= 38,
          let value = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) else { return nil }
    return value
}

/// The value to bind for `value`, or a message when it has none without changing it: an integer above
/// `Int64.max` would otherwise be stored as an approximate REAL. The check costs a cast only for REALs.
package func checkedDatabaseValue(_ value: any DatabaseValueConvertible) -> Result<DatabaseValue, DatabaseError> {
    let converted = value.databaseValue
    if case .real = converted, let integer = value as? any BinaryInteger {
        return .failure(DatabaseError(kind: .conversion,
            message: "\(integer) (\(type(of: integer))) does not fit a 64-bit signed integer"))
    }
    return .success(converted)
}
