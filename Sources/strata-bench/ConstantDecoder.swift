import Foundation

/// A decoder that answers every field with a constant and touches no database: the cost of the `Decodable`
/// machinery alone (container boxes, dispatch, generic metadata), which no row decoder can go below.
final class ConstantDecoder: Decoder {
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// One container serves every row, as in Strata's decoder, so the floor excludes a per-row allocation.
    private var cached: AnyObject?
    private var cachedKeyType: ObjectIdentifier?
    private final class Holder<Key: CodingKey> {
        let container: KeyedDecodingContainer<Key>
        init(_ container: KeyedDecodingContainer<Key>) { self.container = container }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        if cachedKeyType == ObjectIdentifier(Key.self), let holder = cached {
            return unsafeDowncast(holder, to: Holder<Key>.self).container
        }
        let container = KeyedDecodingContainer(Container<Key>())
        cached = Holder(container)
        cachedKeyType = ObjectIdentifier(Key.self)
        return container
    }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw BenchError("not used") }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { throw BenchError("not used") }

    struct Container<Key: CodingKey>: KeyedDecodingContainerProtocol {
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { [] }
        func contains(_ key: Key) -> Bool { true }
        func decodeNil(forKey key: Key) throws -> Bool { false }
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { true }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { "golf hotel" }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { 1 }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { 1 }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { 1 }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { 1 }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { 1 }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { 1 }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { 1 }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { 1 }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { 1 }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { 1 }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { 1 }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { 1 }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            guard T.self == Date.self else { throw BenchError("unexpected \(T.self)") }
            return unsafeBitCast(Date(timeIntervalSince1970: 0), to: T.self)
        }
        func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { "note" }
        func nestedContainer<N: CodingKey>(keyedBy type: N.Type, forKey key: Key) throws -> KeyedDecodingContainer<N> {
            throw BenchError("not used")
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { throw BenchError("not used") }
        func superDecoder() throws -> any Decoder { ConstantDecoder() }
        func superDecoder(forKey key: Key) throws -> any Decoder { ConstantDecoder() }
    }
}
