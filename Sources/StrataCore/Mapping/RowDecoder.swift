import Foundation

/// Decodes rows of one statement into a `Decodable` type, reading columns straight from the backend's statement.
///
/// The coding-key → column lookup is learned once per statement: synthesized `init(from:)` asks for keys in
/// the same order on every row, so each field costs one comparison against the predicted key instead of a
/// dictionary lookup.
@usableFromInline
final class DecodingContext {
    let statement: any PreparedStatement
    let typeName: String
    let layout: ModelLayout?
    /// 1-based position of the current row in the result.
    var row = 0

    /// One learned step of the order in which the type asks for keys.
    private struct Step {
        let keyType: ObjectIdentifier
        /// The key's bytes, when its type is plain data of 1, 2, 4 or 8 bytes (a synthesized `CodingKeys` case
        /// is one byte): comparing them skips the `stringValue` call and a string comparison per field. Other
        /// keys are compared by name.
        let bits: UInt64?
        let name: String
        let column: Int32
    }

    /// Steps in the order the type asks for them (column -1: no such column). Kept behind pointers so the
    /// per-field path reads and writes them without dynamic exclusivity checks.
    private static let capacity = 128
    private let steps = UnsafeMutablePointer<Step>.allocate(capacity: DecodingContext.capacity)
    private let counters = UnsafeMutablePointer<Int>.allocate(capacity: 2) // [learned, position]
    private var byKey: [String: Int32] = [:]
    lazy var json = JSONDecoder()

    init(statement: any PreparedStatement, typeName: String, layout: ModelLayout?) {
        self.statement = statement
        self.typeName = typeName
        self.layout = layout
        counters.initialize(repeating: 0, count: 2)
    }

    deinit {
        steps.deinitialize(count: counters[0])
        steps.deallocate()
        counters.deallocate()
    }

    /// The keyed container is stateless (the state lives here), so one instance serves every row: building a
    /// new one per row costs an allocation and generic metadata lookups.
    private var cachedContainer: AnyObject?
    private var cachedKeyType: ObjectIdentifier?

    private final class ContainerHolder<Key: CodingKey> {
        let container: KeyedDecodingContainer<Key>
        init(_ container: KeyedDecodingContainer<Key>) { self.container = container }
    }

    @inline(__always)
    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedDecodingContainer<Key> {
        if cachedKeyType == ObjectIdentifier(Key.self), let holder = cachedContainer {
            return unsafeDowncast(holder, to: ContainerHolder<Key>.self).container
        }
        let container = KeyedDecodingContainer(RowContainer<Key>(context: self))
        cachedContainer = ContainerHolder(container)
        cachedKeyType = ObjectIdentifier(Key.self)
        return container
    }

    /// Breaks the cycle through the cached container once the statement is done.
    func finish() {
        cachedContainer = nil
        cachedKeyType = nil
    }

    /// Steps to the next row; false after the last.
    @usableFromInline
    func nextRow() throws -> Bool {
        guard try statement.step() else { return false }
        row += 1
        counters[1] = 0
        return true
    }

    /// The column index for a coding key, or -1 when the result has no such column.
    @inline(__always)
    func column<Key: CodingKey>(for key: Key) -> Int32 {
        let position = counters[1]
        if position < counters[0] {
            let step = steps + position
            if step.pointee.keyType == ObjectIdentifier(Key.self) {
                let matches = if let learned = step.pointee.bits { learned == Self.bits(of: key) }
                              else { step.pointee.name == key.stringValue }
                if matches {
                    counters[1] = position + 1
                    return step.pointee.column
                }
            }
        }
        return learn(key, at: position)
    }

    /// Resolves a key the predicted order did not cover, and extends the order while it is still being learned.
    private func learn<Key: CodingKey>(_ key: Key, at position: Int) -> Int32 {
        let name = key.stringValue
        let column = byKey[name] ?? resolve(name)
        if position == counters[0] && position < Self.capacity {
            let plain = _isPOD(Key.self) && [1, 2, 4, 8].contains(MemoryLayout<Key>.size)
            (steps + position).initialize(to: Step(keyType: ObjectIdentifier(Key.self), bits: plain ? Self.bits(of: key) : nil,
                                                   name: name, column: column))
            counters[0] = position + 1
            counters[1] = position + 1
        }
        return column
    }

    /// The bytes of a plain-data key of 1, 2, 4 or 8 bytes, zero-extended. Reinterpreting the key as an integer
    /// of its size is a plain load; copying it through a pointer or closure would call the key type's value
    /// witnesses, which costs more than the comparison saves.
    @inline(__always)
    private static func bits<Key>(of key: Key) -> UInt64 {
        switch MemoryLayout<Key>.size {
        case 1: UInt64(unsafeBitCast(key, to: UInt8.self))
        case 2: UInt64(unsafeBitCast(key, to: UInt16.self))
        case 4: UInt64(unsafeBitCast(key, to: UInt32.self))
        case 8: unsafeBitCast(key, to: UInt64.self)
        default: 0
        }
    }

    private func resolve(_ key: String) -> Int32 {
        let layoutNames = statement.layout
        let name = layout?.column(for: key) ?? key
        let index = layoutNames.index(of: name) ?? layoutNames.index(of: key) ?? layoutNames.index(of: snakeCase(key))
        let column = Int32(index ?? -1)
        byKey[key] = column
        return column
    }

    func columnName(_ index: Int32, key: String) -> String {
        index >= 0 ? statement.layout.names[Int(index)] : (layout?.column(for: key) ?? key)
    }

    /// The current value at a column, described for an error message.
    func describe(_ index: Int32) -> String {
        let value = statement.value(at: index)
        return value == .null ? "NULL" : "\(value.description.truncated(to: 60)) (\(value.storageClass))"
    }

    @inline(never)
    func error(_ key: String, _ column: Int32, _ message: String, showValue: Bool = true) -> MappingError {
        MappingError(typeName: typeName, property: key, column: columnName(column, key: key), row: row,
                     value: showValue && column >= 0 ? describe(column) : nil, message: message)
    }
}

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

struct RowContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let context: DecodingContext
    var codingPath: [any CodingKey] { [] }

    var allKeys: [Key] {
        context.statement.layout.names.compactMap { Key(stringValue: $0) }
    }

    func contains(_ key: Key) -> Bool {
        context.column(for: key) >= 0
    }

    /// The field for a key that must be present.
    @inline(__always)
    private func field(_ key: Key) throws -> Field {
        let column = context.column(for: key)
        guard column >= 0 else {
            throw context.error(key.stringValue, column,
                                "has no column in the result (columns: \(context.statement.layout.names.joined(separator: ", ")))",
                                showValue: false)
        }
        return Field(context: context, column: column)
    }

    /// The field for an optional key, or nil when its column is absent or NULL.
    @inline(__always)
    private func presentField(_ key: Key) -> Field? {
        let column = context.column(for: key)
        guard column >= 0 else { return nil }
        let field = Field(context: context, column: column)
        return field.storage == .null ? nil : field
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        try field(key).storage == .null
    }

    // Each read is inlined into its protocol witness: the standard library's type-erasing box already costs
    // two calls per field before reaching here.
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

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey> {
        throw context.error(key.stringValue, -1, "nested containers are stored as JSON text; decode a Codable property instead",
                            showValue: false)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        throw context.error(key.stringValue, -1, "nested containers are stored as JSON text; decode a Codable property instead",
                            showValue: false)
    }

    func superDecoder() throws -> any Decoder { RowDecoder(context: context) }
    func superDecoder(forKey key: Key) throws -> any Decoder { RowDecoder(context: context) }
}

/// One column of the current row being read into a property, with strict conversion rules: every mismatch is a
/// `MappingError`. The key's name is asked for only when a read fails, so the success path never builds it.
struct Field {
    /// Unretained: a field lives only inside a call on a container or decoder that holds the context, and
    /// retaining it again per field is a measurable share of decoding.
    private let unretainedContext: Unmanaged<DecodingContext>
    private var context: DecodingContext { unretainedContext.takeUnretainedValue() }
    let column: Int32
    /// Read once, with one call into the backend: every conversion below branches on it.
    let value: ColumnValue

    @inline(__always)
    init(context: DecodingContext, column: Int32) {
        unretainedContext = .passUnretained(context)
        self.column = column
        value = context.statement.column(at: column)
    }

    var storage: StorageClass { value.storageClass }

    @inline(__always)
    func integer<T: FixedWidthInteger>(_ key: @autoclosure () -> String) throws -> T {
        switch value {
        case .integer(let integer):
            guard let fitted = T(exactly: integer) else {
                throw failure(key) { "does not fit \(T.self) (\(T.min)...\(T.max))" }
            }
            return fitted
        case .real(let real):
            guard let fitted = T(exactly: real) else { throw failure(key) { "is not a whole \(T.self)" } }
            return fitted
        case .null:
            throw nullFailure(key)
        default:
            throw failure(key) { "is not an integer for \(T.self)" }
        }
    }

    @inline(__always)
    func double(_ key: @autoclosure () -> String) throws -> Double {
        switch value {
        case .real(let real): return real
        case .integer(let integer):
            // Beyond 2^53 a Double cannot hold every integer: an error, not a rounded value.
            guard let exact = Double(exactly: integer) else {
                throw failure(key) { "is an integer a Double cannot hold exactly" }
            }
            return exact
        case .null: throw nullFailure(key)
        default: throw failure(key) { "is not a number" }
        }
    }

    /// A number as `Float`, rounded; a finite value beyond Float's range is an error, not infinity.
    @inline(__always)
    func float(_ key: @autoclosure () -> String) throws -> Float {
        let double = try double(key())
        let float = Float(double)
        guard float.isFinite || !double.isFinite else {
            throw failure(key) { "does not fit Float (±\(Float.greatestFiniteMagnitude))" }
        }
        return float
    }

    @inline(__always)
    func bool(_ key: @autoclosure () -> String) throws -> Bool {
        switch value {
        case .integer(let integer):
            switch integer {
            case 0: return false
            case 1: return true
            default: throw failure(key) { "is not a boolean (0 or 1)" }
            }
        case .null: throw nullFailure(key)
        default: throw failure(key) { "is not a boolean (0 or 1)" }
        }
    }

    @inline(__always)
    func string(_ key: @autoclosure () -> String) throws -> String {
        switch value {
        case .text(let bytes):
            // Invalid UTF-8 is an error, not U+FFFD: a value read, changed elsewhere and saved would write the
            // replaced text back over the stored bytes. Valid UTF-8 decodes to the very same bytes, so comparing
            // them is the check (`String(validating:)` costs a generic metadata lookup per call).
            let text = String(decoding: bytes, as: UTF8.self)
            guard Self.isExactly(text, bytes) else { throw failure(key) { "is not valid UTF-8 text" } }
            return text
        case .null: throw nullFailure(key)
        default: throw failure(key) { "is not text" }
        }
    }

    /// True when `text`'s UTF-8 is `bytes`, byte for byte. ASCII (the common case) needs no comparison: it is
    /// always valid, and is checked eight bytes at a time.
    @inline(__always)
    private static func isExactly(_ text: String, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard text.utf8.count == bytes.count else { return false }
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return true }
        if isASCII(base, bytes.count) { return true }
        return text.utf8.withContiguousStorageIfAvailable { utf8 in
            utf8.baseAddress.map { memcmp($0, base, bytes.count) == 0 } ?? false
        } ?? text.utf8.elementsEqual(bytes)
    }

    @inline(__always)
    private static func isASCII(_ base: UnsafePointer<UInt8>, _ count: Int) -> Bool {
        let raw = UnsafeRawPointer(base)
        var offset = 0
        var high: UInt64 = 0
        while offset &+ 8 <= count {
            high |= raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            offset &+= 8
        }
        while offset < count {
            high |= UInt64(base[offset])
            offset &+= 1
        }
        return high & 0x8080_8080_8080_8080 == 0
    }

    /// ISO-8601 text or unix seconds.
    func date(_ key: @autoclosure () -> String) throws -> Date {
        switch value {
        case .text(let bytes):
            guard let instant = ISO8601.parse(bytes: bytes) else {
                throw failure(key) { "is not an ISO-8601 date" }
            }
            return instant.date
        case .integer(let integer):
            return Date(timeIntervalSince1970: Double(integer))
        case .real(let real):
            return Date(timeIntervalSince1970: real)
        case .null:
            throw nullFailure(key)
        default:
            throw failure(key) { "is not a date (ISO-8601 text or unix seconds)" }
        }
    }

    /// Any other `Decodable`: types adopting `DatabaseValueConvertible`, single values (raw-value enums), and
    /// anything else from JSON text.
    func value<T: Decodable>(_ type: T.Type, _ key: @autoclosure () -> String) throws -> T {
        if storage == .null { throw nullFailure(key) }
        if T.self == Date.self { return unsafeBitCast(try date(key()), to: T.self) }
        if let convertible = T.self as? any DatabaseValueConvertible.Type {
            guard let converted = convertible.fromDatabaseValue(context.statement.value(at: column)) as? T else {
                throw failure(key) { "does not convert to \(T.self)" }
            }
            return converted
        }
        let name = key()
        do {
            return try T(from: ColumnDecoder(context: context, column: column, key: name))
        } catch is NeedsJSON {
            guard storage == .text else {
                throw context.error(name, column, "is not JSON text for \(T.self)")
            }
            do {
                guard case .text(let bytes) = value else { throw NeedsJSON() }
                return try context.json.decode(T.self, from: Data(bytes))
            } catch {
                throw context.error(name, column, "is not JSON for \(T.self): \(error)")
            }
        } catch is DecodingError {
            // e.g. a raw value that names no case of an enum
            throw context.error(name, column, "is not a valid \(T.self)")
        }
    }

    // Failures are built out of line so the conversions above stay small on their success paths.

    @inline(never)
    private func failure(_ key: () -> String, _ message: () -> String) -> MappingError {
        context.error(key(), column, message())
    }

    @inline(never)
    private func nullFailure(_ key: () -> String) -> MappingError {
        let name = key()
        return context.error(name, column, "is NULL but \(name) is not optional")
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
