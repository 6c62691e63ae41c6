#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Encodes values of one type straight into a prepared statement's parameters, for batch writes: no
/// intermediate row, one comparison per property against the order learned from the first value.
final class BindingEncoding {
    let statement: any PreparedStatement
    let typeName: String
    let fallback: RowEncoding
    private let keys: UnsafeMutablePointer<String>
    private let count: Int
    /// The next parameter's 0-based position, behind a pointer to keep the per-field path free of
    /// dynamic exclusivity checks.
    private let position = UnsafeMutablePointer<Int>.allocate(capacity: 1)
    private let dateBuffer = UnsafeMutablePointer<UInt8>.allocate(capacity: 40)

    init(statement: any PreparedStatement, typeName: String, properties: [String], datePrecision: DatePrecision,
         dateStorage: DateStorage = .iso8601Text) {
        self.statement = statement
        self.typeName = typeName
        fallback = RowEncoding(typeName: typeName, datePrecision: datePrecision, dateStorage: dateStorage)
        count = properties.count
        keys = .allocate(capacity: max(count, 1))
        keys.initialize(from: properties, count: count)
        position.initialize(to: 0)
    }

    deinit {
        keys.deinitialize(count: count)
        keys.deallocate()
        position.deallocate()
        dateBuffer.deallocate()
    }

    /// Binds every property of `value`; the statement is then ready to run.
    func bind<T: Encodable>(_ value: T) throws {
        position.pointee = 0
        try value.encode(to: BindingEncoder(encoding: self))
        guard position.pointee == count else {
            throw MappingError(typeName: typeName, message: "encodes different properties than the first value")
        }
    }

    /// The 1-based parameter for the next key, which must be the one the first value had in that place.
    @inline(__always)
    func parameter(_ key: String) throws -> Int32 {
        let current = position.pointee
        guard current < count, keys[current] == key else {
            throw MappingError(typeName: typeName, property: key, message: "encodes different properties than the first value")
        }
        position.pointee = current + 1
        return Int32(current + 1)
    }

    @inline(__always)
    func bindDate(_ date: Date, at parameter: Int32, property: String) throws {
        let storage = fallback.dateStorage(for: property)
        guard storage == .iso8601Text, date.isStorable else {
            return try statement.bind(storage.databaseValue(of: date, precision: fallback.datePrecision), at: parameter)
        }
        let precision = fallback.datePrecision
        let instant = precision == .milliseconds ? ISO8601.instant(of: date) : ISO8601.microsecondInstant(of: date)
        let length = ISO8601.write(instant, includeTime: true, into: dateBuffer)
        if length > 0 {
            statement.bind(text: UnsafeBufferPointer(start: dateBuffer, count: length), at: parameter, copying: true)
        } else {
            try statement.bind(date.databaseValue(precision: precision), at: parameter)
        }
    }
}

struct BindingEncoder: Encoder {
    let encoding: BindingEncoding
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(BindingContainer<Key>(encoding: encoding))
    }
    func unkeyedContainer() -> any UnkeyedEncodingContainer { InvalidContainer(typeName: encoding.typeName) }
    func singleValueContainer() -> any SingleValueEncodingContainer { InvalidContainer(typeName: encoding.typeName) }
}

struct BindingContainer<Key: CodingKey>: NullWritingContainer {
    let encoding: BindingEncoding
    var codingPath: [any CodingKey] { [] }
    private var statement: any PreparedStatement { encoding.statement }

    mutating func encodeNil(forKey key: Key) throws { statement.bindNull(at: try encoding.parameter(key.stringValue)) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { statement.bind(int64: value ? 1 : 0, at: try encoding.parameter(key.stringValue)) }
    mutating func encode(_ value: String, forKey key: Key) throws { try statement.bind(.text(value), at: try encoding.parameter(key.stringValue)) }
    mutating func encode(_ value: Double, forKey key: Key) throws { statement.bind(double: value, at: try encoding.parameter(key.stringValue)) }
    mutating func encode(_ value: Float, forKey key: Key) throws { statement.bind(double: Double(value), at: try encoding.parameter(key.stringValue)) }
    mutating func encode(_ value: Int, forKey key: Key) throws { statement.bind(int64: Int64(value), at: try encoding.parameter(key.stringValue)) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { statement.bind(int64: Int64(value), at: try encoding.parameter(key.stringValue)) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { statement.bind(int64: Int64(value), at: try encoding.parameter(key.stringValue)) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { statement.bind(int64: Int64(value), at: try encoding.parameter(key.stringValue)) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { statement.bind(int64: value, at: try encoding.parameter(key.stringValue)) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { statement.bind(int64: Int64(value), at: try encoding.parameter(key.stringValue)) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { statement.bind(int64: Int64(value), at: try encoding.parameter(key.stringValue)) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { statement.bind(int64: Int64(value), at: try encoding.parameter(key.stringValue)) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try encode(UInt64(value), forKey: key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws {
        let exact = try signed64(value, typeName: encoding.typeName, property: key.stringValue)
        statement.bind(int64: exact, at: try encoding.parameter(key.stringValue))
    }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        let parameter = try encoding.parameter(key.stringValue)
        if T.self == Date.self, let date = value as? Date {
            try encoding.bindDate(date, at: parameter, property: key.stringValue)
        } else {
            try statement.bind(try encoding.fallback.databaseValue(value, key: key.stringValue), at: parameter)
        }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(InvalidContainer<NestedKey>(typeName: encoding.typeName))
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer { InvalidContainer(typeName: encoding.typeName) }
    mutating func superEncoder() -> any Encoder { BindingEncoder(encoding: encoding) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { BindingEncoder(encoding: encoding) }
}
