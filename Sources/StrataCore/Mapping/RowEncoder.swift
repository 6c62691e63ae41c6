#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The column values of one model value, in property order.
package struct EncodedRow {
    package var properties: [String] = []
    package var values: [DatabaseValue] = []
}

/// Encodes an `Encodable` value into column values: each stored property becomes one column, nil optionals
/// become NULL (not omitted, so an UPDATE clears them), nested `Codable` values become JSON text.
final class RowEncoding {
    let typeName: String
    /// How finely the database keeps a `Date` (`SQLDialect.datePrecision`).
    let datePrecision: DatePrecision
    /// How the database stores a `Date` (`SQLDialect.dateStorage`).
    let dateStorage: DateStorage
    var row = EncodedRow()
    /// Properties whose dates are stored otherwise than the database's `dateStorage` (`<property dateStorage>`).
    var dateStorageByProperty: [String: DateStorage] = [:]
    /// Relationship properties (`<hasMany>`, `<belongsTo>`), captured into `related` rather than written as columns.
    var relationships: Set<String> = []
    /// The relationship properties the value encoded, with their values (nil for a nil optional).
    var related: [(property: String, value: Any?)] = []
    lazy var json = Self.jsonEncoder()

    /// How nested values are stored: JSON with sorted keys, so equal values store equal text.
    static func jsonEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }

    init(typeName: String, datePrecision: DatePrecision, dateStorage: DateStorage = .iso8601Text) {
        self.typeName = typeName
        self.datePrecision = datePrecision
        self.dateStorage = dateStorage
    }

    /// Encodes `value`, reusing the row's storage from the previous call.
    func encode<T: Encodable>(_ value: T) throws -> EncodedRow {
        row.properties.removeAll(keepingCapacity: true)
        row.values.removeAll(keepingCapacity: true)
        if !related.isEmpty { related.removeAll() }
        try value.encode(to: RowEncoder(encoding: self))
        return row
    }

    @inline(__always)
    func append(_ key: String, _ value: DatabaseValue) {
        row.properties.append(key)
        row.values.append(value)
    }

    /// How a property's dates are stored: its own setting, else the database's.
    @inline(__always)
    func dateStorage(for property: String) -> DateStorage {
        dateStorageByProperty.isEmpty ? dateStorage : dateStorageByProperty[property] ?? dateStorage
    }

    /// The database form of a non-primitive value: its own conversion if it has one, a single encoded value
    /// (raw-value enums), or JSON text for anything structured.
    func databaseValue<T: Encodable>(_ value: T, key: String) throws -> DatabaseValue {
        if let date = value as? Date { return dateStorage(for: key).databaseValue(of: date, precision: datePrecision) }
        if let convertible = value as? any DatabaseValueConvertible { return convertible.databaseValue }
        let single = SingleValueCapture(encoding: self, key: key)
        do {
            try value.encode(to: single)
            if let captured = single.value { return captured }
        } catch is NeedsJSON {}
        do {
            return .text(String(decoding: try json.encode(value), as: UTF8.self))
        } catch {
            throw MappingError(typeName: typeName, property: key, message: "cannot be stored as JSON: \(error)")
        }
    }
}

struct RowEncoder: Encoder {
    let encoding: RowEncoding
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(RowEncodingContainer<Key>(encoding: encoding))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        InvalidContainer(typeName: encoding.typeName)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        InvalidContainer(typeName: encoding.typeName)
    }
}

struct RowEncodingContainer<Key: CodingKey>: NullWritingContainer {
    let encoding: RowEncoding
    var codingPath: [any CodingKey] { [] }

    mutating func encodeNil(forKey key: Key) throws {
        if !encoding.relationships.isEmpty, encoding.relationships.contains(key.stringValue) {
            encoding.related.append((key.stringValue, nil))
            return
        }
        encoding.append(key.stringValue, .null)
    }
    mutating func encode(_ value: Bool, forKey key: Key) throws { encoding.append(key.stringValue, .integer(value ? 1 : 0)) }
    mutating func encode(_ value: String, forKey key: Key) throws { encoding.append(key.stringValue, .text(value)) }
    mutating func encode(_ value: Double, forKey key: Key) throws { encoding.append(key.stringValue, .real(value)) }
    mutating func encode(_ value: Float, forKey key: Key) throws { encoding.append(key.stringValue, .real(Double(value))) }
    mutating func encode(_ value: Int, forKey key: Key) throws { encoding.append(key.stringValue, .integer(Int64(value))) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { encoding.append(key.stringValue, .integer(Int64(value))) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { encoding.append(key.stringValue, .integer(Int64(value))) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { encoding.append(key.stringValue, .integer(Int64(value))) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { encoding.append(key.stringValue, .integer(value)) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try encodeUnsigned(UInt64(value), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { encoding.append(key.stringValue, .integer(Int64(value))) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { encoding.append(key.stringValue, .integer(Int64(value))) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { encoding.append(key.stringValue, .integer(Int64(value))) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try encodeUnsigned(value, key) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        if !encoding.relationships.isEmpty, encoding.relationships.contains(key.stringValue) {
            encoding.related.append((key.stringValue, value))
            return
        }
        encoding.append(key.stringValue, try encoding.databaseValue(value, key: key.stringValue))
    }

    private func encodeUnsigned(_ value: UInt64, _ key: Key) throws {
        encoding.append(key.stringValue, .integer(try signed64(value, typeName: encoding.typeName, property: key.stringValue)))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(InvalidContainer(typeName: encoding.typeName))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        InvalidContainer(typeName: encoding.typeName)
    }

    mutating func superEncoder() -> any Encoder { RowEncoder(encoding: encoding) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { RowEncoder(encoding: encoding) }
}

/// An unsigned property as a signed 64-bit integer (SQLite's INTEGER, PostgreSQL's bigint: the widest either
/// stores), or an error naming it when it does not fit.
func signed64(_ value: UInt64, typeName: String, property: String) throws -> Int64 {
    guard let exact = Int64(exactly: value) else {
        throw MappingError(typeName: typeName, property: property, value: String(value),
                           message: "does not fit a 64-bit signed integer, the widest integer SQLite and PostgreSQL store")
    }
    return exact
}

/// A keyed container that writes NULL for nil optionals. Synthesized `encode(to:)` skips nil optionals, which
/// would leave their columns out; Strata's containers write NULL so every value fills the same columns (and an
/// UPDATE clears what became nil).
protocol NullWritingContainer: KeyedEncodingContainerProtocol {}

extension NullWritingContainer {
    mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) } }
    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }
}

/// Captures a value that encodes itself as one single value (a raw-value enum, a wrapper); asking it for a
/// keyed or unkeyed container means the value is structured and goes to JSON.
final class SingleValueCapture: Encoder, SingleValueEncodingContainer {
    let encoding: RowEncoding
    /// The property being captured, for errors.
    let key: String
    var value: DatabaseValue?
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(encoding: RowEncoding, key: String) {
        self.encoding = encoding
        self.key = key
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(InvalidContainer(typeName: "", failure: NeedsJSON()))
    }
    func unkeyedContainer() -> any UnkeyedEncodingContainer { InvalidContainer<AnyKey>(typeName: "", failure: NeedsJSON()) }
    func singleValueContainer() -> any SingleValueEncodingContainer { self }

    func encodeNil() throws { value = .null }
    func encode(_ value: Bool) throws { self.value = .integer(value ? 1 : 0) }
    func encode(_ value: String) throws { self.value = .text(value) }
    func encode(_ value: Double) throws { self.value = .real(value) }
    func encode(_ value: Float) throws { self.value = .real(Double(value)) }
    func encode(_ value: Int) throws { self.value = .integer(Int64(value)) }
    func encode(_ value: Int8) throws { self.value = .integer(Int64(value)) }
    func encode(_ value: Int16) throws { self.value = .integer(Int64(value)) }
    func encode(_ value: Int32) throws { self.value = .integer(Int64(value)) }
    func encode(_ value: Int64) throws { self.value = .integer(value) }
    // An enum's or wrapper's unsigned raw value beyond Int64.max is refused, never stored as an approximate REAL.
    func encode(_ value: UInt) throws { self.value = .integer(try signed64(UInt64(value), typeName: encoding.typeName, property: key)) }
    func encode(_ value: UInt8) throws { self.value = .integer(Int64(value)) }
    func encode(_ value: UInt16) throws { self.value = .integer(Int64(value)) }
    func encode(_ value: UInt32) throws { self.value = .integer(Int64(value)) }
    func encode(_ value: UInt64) throws { self.value = .integer(try signed64(value, typeName: encoding.typeName, property: key)) }
    func encode<T: Encodable>(_ value: T) throws { self.value = try encoding.databaseValue(value, key: "") }
}

/// A container for shapes a row cannot hold; the first use throws.
struct InvalidContainer<Key: CodingKey>: KeyedEncodingContainerProtocol, UnkeyedEncodingContainer, SingleValueEncodingContainer {
    let typeName: String
    var failure: any Error
    var codingPath: [any CodingKey] { [] }
    var count: Int { 0 }

    init(typeName: String, failure: (any Error)? = nil) {
        self.typeName = typeName
        self.failure = failure ?? MappingError(typeName: typeName,
            message: "only keyed values (structs and classes) map to rows; nested values are stored as JSON")
    }

    mutating func encodeNil(forKey key: Key) throws { throw failure }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { throw failure }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(InvalidContainer<NestedKey>(typeName: typeName, failure: failure))
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer { self }
    mutating func superEncoder() -> any Encoder { FailingEncoder(failure: failure) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { FailingEncoder(failure: failure) }

    mutating func encodeNil() throws { throw failure }
    mutating func encode<T: Encodable>(_ value: T) throws { throw failure }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(InvalidContainer<NestedKey>(typeName: typeName, failure: failure))
    }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { self }
}

extension InvalidContainer where Key == AnyKey {
    init(typeName: String) { self.init(typeName: typeName, failure: nil) }
}

struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

struct FailingEncoder: Encoder {
    let failure: any Error
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(InvalidContainer<Key>(typeName: "", failure: failure))
    }
    func unkeyedContainer() -> any UnkeyedEncodingContainer { InvalidContainer<AnyKey>(typeName: "", failure: failure) }
    func singleValueContainer() -> any SingleValueEncodingContainer { InvalidContainer<AnyKey>(typeName: "", failure: failure) }
}
