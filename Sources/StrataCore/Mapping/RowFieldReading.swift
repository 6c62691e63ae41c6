#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The keyed container rows decode through: a field is the column its key resolves to, read once and converted
/// under `Field`'s strict rules.
///
/// The defaults below serve `RowContainer`, which reads each column through `PreparedStatement`. A backend whose
/// statement adopts `RowDecodingStatement` declares a container of its own that restates the reads (the compiler
/// does not inline a protocol extension's methods into a generic container), so that each field's column read
/// compiles inline in the backend's module instead of as a dynamic call: what keeps the seam between the mapper
/// and a backend from costing time per field.
package protocol RowFieldReading: KeyedDecodingContainerProtocol {
    var context: DecodingContext { get }
    /// The current row's column, read by the backend.
    func column(at index: Int32) -> ColumnValue
}

/// A statement whose backend supplies the keyed container its rows decode through.
package protocol RowDecodingStatement: PreparedStatement {
    /// The handle the backend's container reads columns through (`DecodingContext.columnSource`).
    var columnSource: OpaquePointer { get }
    func rowContainer<Key: CodingKey>(context: DecodingContext, keyedBy type: Key.Type) -> KeyedDecodingContainer<Key>
}

extension RowFieldReading {
    package var codingPath: [any CodingKey] { [] }

    package var allKeys: [Key] {
        context.statement.layout.names.compactMap { Key(stringValue: $0) }
    }

    package func contains(_ key: Key) -> Bool {
        context.column(for: key) >= 0
    }

    /// The field for a key that must be present.
    package func field(_ key: Key) throws -> Field {
        let index = context.column(for: key)
        guard index >= 0 else {
            throw context.missingColumn(key.stringValue)
        }
        return Field(context: context, column: index, value: column(at: index))
    }

    /// The field for an optional key, or nil when its column is absent or NULL.
    package func presentField(_ key: Key) -> Field? {
        let index = context.column(for: key)
        guard index >= 0 else { return nil }
        let field = Field(context: context, column: index, value: column(at: index))
        return field.storage == .null ? nil : field
    }

    package func decodeNil(forKey key: Key) throws -> Bool {
        try field(key).storage == .null
    }

    // Each read is inlined into its protocol witness: the standard library's type-erasing box already costs
    // two calls per field before reaching here.
    package func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try field(key).bool(key.stringValue) }
    package func decode(_ type: String.Type, forKey key: Key) throws -> String { try field(key).string(key.stringValue) }
    package func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try field(key).double(key.stringValue) }
    package func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try field(key).float(key.stringValue) }
    package func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try field(key).integer(key.stringValue) }
    package func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try field(key).integer(key.stringValue) }
    package func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try field(key).integer(key.stringValue) }
    package func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try field(key).integer(key.stringValue) }
    package func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try field(key).integer(key.stringValue) }
    package func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try field(key).integer(key.stringValue) }
    package func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try field(key).integer(key.stringValue) }
    package func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try field(key).integer(key.stringValue) }
    package func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try field(key).integer(key.stringValue) }
    package func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try field(key).integer(key.stringValue) }
    package func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let field = try field(key)
        // Dates are read here, outside the generic path, whose set-up (metadata for `T?`) costs more than the parse.
        if T.self == Date.self { return unsafeBitCast(try field.date(key.stringValue), to: T.self) }
        return try field.value(T.self, key.stringValue)
    }

    // Optionals: a missing column or NULL is nil; anything else must convert.
    package func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
        try presentField(key)?.bool(key.stringValue)
    }
    package func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        try presentField(key)?.string(key.stringValue)
    }
    package func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        try presentField(key)?.double(key.stringValue)
    }
    package func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? {
        try presentField(key).map { try $0.float(key.stringValue) }
    }
    package func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
        try presentField(key)?.integer(key.stringValue)
    }
    package func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? {
        try presentField(key)?.integer(key.stringValue)
    }
    package func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? {
        try presentField(key)?.integer(key.stringValue)
    }
    package func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? {
        try presentField(key)?.integer(key.stringValue)
    }
    package func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? {
        try presentField(key)?.integer(key.stringValue)
    }
    package func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? {
        try presentField(key)?.integer(key.stringValue)
    }
    package func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? {
        try presentField(key)?.integer(key.stringValue)
    }
    package func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? {
        try presentField(key)?.integer(key.stringValue)
    }
    package func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? {
        try presentField(key)?.integer(key.stringValue)
    }
    package func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? {
        try presentField(key)?.integer(key.stringValue)
    }
    package func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let field = presentField(key) else { return nil }
        if T.self == Date.self { return unsafeBitCast(try field.date(key.stringValue), to: T.self) }
        return try field.value(T.self, key.stringValue)
    }

    package func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey> {
        throw context.error(key.stringValue, -1, "nested containers are stored as JSON text; decode a Codable property instead",
                            showValue: false)
    }

    package func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        throw context.error(key.stringValue, -1, "nested containers are stored as JSON text; decode a Codable property instead",
                            showValue: false)
    }

    package func superDecoder() throws -> any Decoder { RowDecoder(context: context) }
    package func superDecoder(forKey key: Key) throws -> any Decoder { RowDecoder(context: context) }
}

/// The container for a backend without one of its own: each column is read through `PreparedStatement`.
struct RowContainer<Key: CodingKey>: RowFieldReading {
    let context: DecodingContext

    func column(at index: Int32) -> ColumnValue { context.statement.column(at: index) }
}
