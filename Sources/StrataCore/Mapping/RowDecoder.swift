#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Thrown by a column decoder when the value is a nested keyed or unkeyed structure, stored as JSON text.
struct NeedsJSON: Error {}

struct RowDecoder: Decoder {
    let context: DecodingContext
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        context.container(keyedBy: Key.self)
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw MappingError(typeName: context.typeName, row: context.row,
                           message: "a row decodes into a keyed type (a struct or class), not an array")
    }

    /// A whole row read as a single value reads its first column (`SELECT count(*) …` into `Int`).
    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        ColumnDecoder(context: context, column: 0, key: context.statement.layout.names.first ?? "")
    }
}

/// A decoder positioned at one column, for values that decode themselves from a single value (raw-value enums,
/// wrappers). Asking it for a keyed or unkeyed container means the column holds JSON.
struct ColumnDecoder: Decoder, SingleValueDecodingContainer {
    let context: DecodingContext
    let column: Int32
    let key: String
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    private var field: Field { Field(context: context, column: column) }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> { throw NeedsJSON() }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw NeedsJSON() }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func decodeNil() -> Bool { field.storage == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try field.bool(key) }
    func decode(_ type: String.Type) throws -> String { try field.string(key) }
    func decode(_ type: Double.Type) throws -> Double { try field.double(key) }
    func decode(_ type: Float.Type) throws -> Float { try field.float(key) }
    func decode(_ type: Int.Type) throws -> Int { try field.integer(key) }
    func decode(_ type: Int8.Type) throws -> Int8 { try field.integer(key) }
    func decode(_ type: Int16.Type) throws -> Int16 { try field.integer(key) }
    func decode(_ type: Int32.Type) throws -> Int32 { try field.integer(key) }
    func decode(_ type: Int64.Type) throws -> Int64 { try field.integer(key) }
    func decode(_ type: UInt.Type) throws -> UInt { try field.integer(key) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try field.integer(key) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try field.integer(key) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try field.integer(key) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try field.integer(key) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try field.value(T.self, key) }
}
