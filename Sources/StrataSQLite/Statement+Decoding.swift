import StrataCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Rows of a SQLite statement decode through a container of SQLite's own, in which each field's column read is
/// `Statement.column(of:at:)` inlined, instead of a dynamic call through `PreparedStatement`.
extension Statement: RowDecodingStatement {
    package var columnSource: OpaquePointer { handle }

    package func rowContainer<Key: CodingKey>(context: DecodingContext, keyedBy type: Key.Type) -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(SQLiteRowContainer<Key>(context: context))
    }
}

/// Holds the context alone: a container of one reference is copied by the standard library's box (once per field)
/// as a plain retain, where two references cost a call into the type's value witnesses.
struct SQLiteRowContainer<Key: CodingKey>: RowFieldReading {
    let context: DecodingContext

    @inline(__always) func column(at index: Int32) -> ColumnValue {
        // Present: the context was made for a `Statement`, which supplies it.
        Statement.column(of: context.columnSource.unsafelyUnwrapped, at: index)
    }

    // Restated from `RowFieldReading`'s defaults: the compiler does not inline a protocol extension's methods into
    // a generic container, so a default would run generic over the container and call `column(at:)` dynamically.
    // Declared here, each read compiles with the column read inlined. The conversions are `Field`'s.
    @inline(__always) func field(_ key: Key) throws -> Field {
        let index = context.column(for: key)
        guard index >= 0 else { throw context.missingColumn(key.stringValue) }
        return Field(context: context, column: index, value: column(at: index))
    }

    @inline(__always) func presentField(_ key: Key) -> Field? {
        let index = context.column(for: key)
        guard index >= 0 else { return nil }
        let field = Field(context: context, column: index, value: column(at: index))
        return field.storage == .null ? nil : field
    }

    @inline(__always) func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try field(key).bool(key.stringValue) }
    @inline(__always) func decode(_ type: String.Type, forKey key: Key) throws -> String { try field(key).string(key.stringValue) }
    @inline(__always) func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try field(key).double(key.stringValue) }
    @inline(__always) func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try field(key).float(key.stringValue) }
    @inline(__always) func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try field(key).integer(key.stringValue) }
    @inline(__always) func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try field(key).integer(key.stringValue) }
    @inline(__always) func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try field(key).integer(key.stringValue) }
    @inline(__always) func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try field(key).integer(key.stringValue) }
    @inline(__always) func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try field(key).integer(key.stringValue) }
    @inline(__always) func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try field(key).integer(key.stringValue) }
    @inline(__always) func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try field(key).integer(key.stringValue) }
    @inline(__always) func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try field(key).integer(key.stringValue) }
    @inline(__always) func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try field(key).integer(key.stringValue) }
    @inline(__always) func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try field(key).integer(key.stringValue) }
    @inline(__always) func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let field = try field(key)
        // Dates are read here, outside the generic path, whose set-up (metadata for `T?`) costs more than the parse.
        if T.self == Date.self { return unsafeBitCast(try field.date(key.stringValue), to: T.self) }
        return try field.value(T.self, key.stringValue)
    }

    // Optionals: a missing column or NULL is nil; anything else must convert.
    @inline(__always) func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
        try presentField(key)?.bool(key.stringValue)
    }
    @inline(__always) func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        try presentField(key)?.string(key.stringValue)
    }
    @inline(__always) func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        try presentField(key)?.double(key.stringValue)
    }
    @inline(__always) func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? {
        try presentField(key).map { try $0.float(key.stringValue) }
    }
    @inline(__always) func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
        try presentField(key)?.integer(key.stringValue)
    }
    @inline(__always) func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? {
        try presentField(key)?.integer(key.stringValue)
    }
    @inline(__always) func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? {
        try presentField(key)?.integer(key.stringValue)
    }
    @inline(__always) func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? {
        try presentField(key)?.integer(key.stringValue)
    }
    @inline(__always) func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? {
        try presentField(key)?.integer(key.stringValue)
    }
    @inline(__always) func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? {
        try presentField(key)?.integer(key.stringValue)
    }
    @inline(__always) func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? {
        try presentField(key)?.integer(key.stringValue)
    }
    @inline(__always) func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? {
        try presentField(key)?.integer(key.stringValue)
    }
    @inline(__always) func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? {
        try presentField(key)?.integer(key.stringValue)
    }
    @inline(__always) func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? {
        try presentField(key)?.integer(key.stringValue)
    }
    @inline(__always) func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let field = presentField(key) else { return nil }
        if T.self == Date.self { return unsafeBitCast(try field.date(key.stringValue), to: T.self) }
        return try field.value(T.self, key.stringValue)
    }
}
