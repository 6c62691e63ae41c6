#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Reads through the statement protocol: the source for a backend without one of its own.
struct StatementColumns: ColumnSource {
    static func column(in context: DecodingContext, at index: Int32) -> ColumnValue {
        context.statement.column(at: index)
    }
}

/// The keyed container rows decode through: a field is the column its key resolves to, read once by `Source` and
/// converted under `Field`'s strict rules.
///
/// Every read is a method of this struct rather than a protocol extension's default, which the compiler would call
/// generically over the container, reaching the context through a witness and retaining it per field. The container
/// holds the context alone: the standard library's box copies a one-reference container (once per field) as a
/// plain retain, where two references cost a call into the type's value witnesses.
package struct RowContainer<Key: CodingKey, Source: ColumnSource>: KeyedDecodingContainerProtocol {
    package let context: DecodingContext

    package init(context: DecodingContext) { self.context = context }

    @inline(__always) func column(at index: Int32) -> ColumnValue { Source.column(in: context, at: index) }

    package var codingPath: [any CodingKey] { [] }

    package var allKeys: [Key] {
        context.statement.layout.names.compactMap { Key(stringValue: $0) }
    }

    @inline(__always) package func contains(_ key: Key) -> Bool {
        context.column(for: key) >= 0
    }

    /// The field for a key that must be present.
    @inline(__always) package func field(_ key: Key) throws -> Field {
        let index = context.column(for: key)
        guard index >= 0 else {
            throw context.missingColumn(key.stringValue)
        }
        return Field(context: context, column: index, value: column(at: index))
    }

    /// The field for an optional key, or nil when its column is absent or NULL.
    @inline(__always) package func presentField(_ key: Key) -> Field? {
        let index = context.column(for: key)
        guard index >= 0 else { return nil }
        let field = Field(context: context, column: index, value: column(at: index))
        return field.storage == .null ? nil : field
    }

    @inline(__always) package func decodeNil(forKey key: Key) throws -> Bool {
        try field(key).storage == .null
    }

    // Each read is inlined into its protocol witness: the standard library's type-erasing box already costs
    // two calls per field before reaching here.
    @inline(__always) package func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try field(key).bool(key.stringValue) }
    @inline(__always) package func decode(_ type: String.Type, forKey key: Key) throws -> String { try field(key).string(key.stringValue) }
    @inline(__always) package func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try field(key).double(key.stringValue) }
    @inline(__always) package func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try field(key).float(key.stringValue) }
    @inline(__always) package func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try field(key).integer(key.stringValue) }
    @inline(__always) package func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try field(key).integer(key.stringValue) }
    @inline(__always) package func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try field(key).integer(key.stringValue) }
    @inline(__always) package func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try field(key).integer(key.stringValue) }
    @inline(__always) package func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try field(key).integer(key.stringValue) }
    @inline(__always) package func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try field(key).integer(key.stringValue) }
    @inline(__always) package func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try field(key).integer(key.stringValue) }
    @inline(__always) package func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try field(key).integer(key.stringValue) }
    @inline(__always) package func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try field(key).integer(key.stringValue) }
    @inline(__always) package func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try field(key).integer(key.stringValue) }
    @inline(__always) package func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let index = context.column(for: key)
        guard index >= 0 else { return try context.related(T.self, key.stringValue, index) }
        let field = Field(context: context, column: index, value: column(at: index))
        // Dates are read here, outside the generic path, whose set-up (metadata for `T?`) costs more than the parse.
        if T.self == Date.self { return unsafeBitCast(try field.date(key.stringValue), to: T.self) }
        return try field.value(T.self, key.stringValue)
    }

    // Optionals: a missing column or NULL is nil; anything else must convert.
    @inline(__always) package func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
        try presentField(key)?.bool(key.stringValue)
    }
    @inline(__always) package func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        try presentField(key)?.string(key.stringValue)
    }
    @inline(__always) package func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        try presentField(key)?.double(key.stringValue)
    }
    @inline(__always) package func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? {
        try presentField(key).map { try $0.float(key.stringValue) }
    }
    @inline(__always) package func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
        try presentField(key)?.integer(key.stringValue)
    }
    @inline(__always) package func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? {
        try presentField(key)?.integer(key.stringValue)
    }
    @inline(__always) package func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? {
        try presentField(key)?.integer(key.stringValue)
    }
    @inline(__always) package func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? {
        try presentField(key)?.integer(key.stringValue)
    }
    @inline(__always) package func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? {
        try presentField(key)?.integer(key.stringValue)
    }
    @inline(__always) package func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? {
        try presentField(key)?.integer(key.stringValue)
    }
    @inline(__always) package func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? {
        try presentField(key)?.integer(key.stringValue)
    }
    @inline(__always) package func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? {
        try presentField(key)?.integer(key.stringValue)
    }
    @inline(__always) package func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? {
        try presentField(key)?.integer(key.stringValue)
    }
    @inline(__always) package func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? {
        try presentField(key)?.integer(key.stringValue)
    }
    @inline(__always) package func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        let index = context.column(for: key)
        guard index >= 0 else { return try context.relatedIfPresent(T.self, key.stringValue, index) }
        let field = Field(context: context, column: index, value: column(at: index))
        guard field.storage != .null else { return nil }
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
