import Foundation

/// Decodes rows of one statement into a `Decodable` type, reading columns straight from SQLite.
///
/// The coding-key → column lookup is learned once per statement: synthesized `init(from:)` asks for keys in
/// the same order on every row, so each field costs one comparison against the predicted key instead of a
/// dictionary lookup.
final class DecodingContext {
    let statement: Statement
    /// The statement's column reader, kept as a value so field reads need no reference counting.
    let columns: ColumnValues
    let typeName: String
    let layout: ModelLayout?
    /// 1-based position of the current row in the result.
    var row = 0
    /// Keys and their columns in the order the type asks for them (-1: no such column). Kept behind pointers
    /// so the per-field path reads and writes them without dynamic exclusivity checks.
    private static let capacity = 128
    private let orderKeys = UnsafeMutablePointer<String>.allocate(capacity: DecodingContext.capacity)
    private let orderColumns = UnsafeMutablePointer<Int32>.allocate(capacity: DecodingContext.capacity)
    private let counters = UnsafeMutablePointer<Int>.allocate(capacity: 2) // [learned, position]
    private var byKey: [String: Int32] = [:]
    lazy var json = JSONDecoder()

    init(statement: Statement, typeName: String, layout: ModelLayout?) {
        self.statement = statement
        columns = statement.columns
        self.typeName = typeName
        self.layout = layout
        counters.initialize(repeating: 0, count: 2)
    }

    deinit {
        orderKeys.deinitialize(count: counters[0])
        orderKeys.deallocate()
        orderColumns.deallocate()
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

    func startRow() {
        row += 1
        counters[1] = 0
    }

    /// The column index for a coding key, or -1 when the result has no such column.
    @inline(__always)
    func column(for key: String) -> Int32 {
        let position = counters[1]
        if position < counters[0] && orderKeys[position] == key {
            counters[1] = position + 1
            return orderColumns[position]
        }
        let column = byKey[key] ?? resolve(key)
        if position == counters[0] && position < Self.capacity {
            (orderKeys + position).initialize(to: key)
            orderColumns[position] = column
            counters[0] = position + 1
            counters[1] = position + 1
        }
        return column
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
        var text = value.description
        if text.count > 60 { text = String(text.prefix(57)) + "..." }
        return value == .null ? "NULL" : "\(text) (\(value.storageClass))"
    }

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
        context.column(for: key.stringValue) >= 0
    }

    /// The column for a key that must be present.
    @inline(__always)
    private func column(_ key: Key) throws -> Int32 {
        let column = context.column(for: key.stringValue)
        guard column >= 0 else {
            throw context.error(key.stringValue, column,
                                "has no column in the result (columns: \(context.statement.layout.names.joined(separator: ", ")))",
                                showValue: false)
        }
        return column
    }

    /// The column for an optional key, or nil when it is absent or NULL.
    @inline(__always)
    private func optionalColumn(_ key: Key) -> Int32? {
        let column = context.column(for: key.stringValue)
        guard column >= 0, context.columns.storageClass(at: column) != .null else { return nil }
        return column
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        context.columns.storageClass(at: try column(key)) == .null
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        try ColumnReader.bool(context, try column(key), key.stringValue)
    }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try ColumnReader.string(context, try column(key), key.stringValue)
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        try ColumnReader.double(context, try column(key), key.stringValue)
    }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
        Float(try ColumnReader.double(context, try column(key), key.stringValue))
    }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int {
        try ColumnReader.integer(context, try column(key), key.stringValue)
    }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 {
        try ColumnReader.integer(context, try column(key), key.stringValue)
    }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 {
        try ColumnReader.integer(context, try column(key), key.stringValue)
    }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 {
        try ColumnReader.integer(context, try column(key), key.stringValue)
    }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 {
        try ColumnReader.integer(context, try column(key), key.stringValue)
    }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt {
        try ColumnReader.integer(context, try column(key), key.stringValue)
    }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 {
        try ColumnReader.integer(context, try column(key), key.stringValue)
    }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 {
        try ColumnReader.integer(context, try column(key), key.stringValue)
    }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 {
        try ColumnReader.integer(context, try column(key), key.stringValue)
    }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 {
        try ColumnReader.integer(context, try column(key), key.stringValue)
    }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try ColumnReader.value(T.self, context, try column(key), key.stringValue)
    }

    // Optionals: a missing column or NULL is nil; anything else must convert.
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
        try optionalColumn(key).map { try ColumnReader.bool(context, $0, key.stringValue) }
    }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        try optionalColumn(key).map { try ColumnReader.string(context, $0, key.stringValue) }
    }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        try optionalColumn(key).map { try ColumnReader.double(context, $0, key.stringValue) }
    }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? {
        try optionalColumn(key).map { Float(try ColumnReader.double(context, $0, key.stringValue)) }
    }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
        try optionalColumn(key).map { try ColumnReader.integer(context, $0, key.stringValue) }
    }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? {
        try optionalColumn(key).map { try ColumnReader.integer(context, $0, key.stringValue) }
    }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? {
        try optionalColumn(key).map { try ColumnReader.integer(context, $0, key.stringValue) }
    }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? {
        try optionalColumn(key).map { try ColumnReader.integer(context, $0, key.stringValue) }
    }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? {
        try optionalColumn(key).map { try ColumnReader.integer(context, $0, key.stringValue) }
    }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? {
        try optionalColumn(key).map { try ColumnReader.integer(context, $0, key.stringValue) }
    }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? {
        try optionalColumn(key).map { try ColumnReader.integer(context, $0, key.stringValue) }
    }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? {
        try optionalColumn(key).map { try ColumnReader.integer(context, $0, key.stringValue) }
    }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? {
        try optionalColumn(key).map { try ColumnReader.integer(context, $0, key.stringValue) }
    }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? {
        try optionalColumn(key).map { try ColumnReader.integer(context, $0, key.stringValue) }
    }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        try optionalColumn(key).map { try ColumnReader.value(T.self, context, $0, key.stringValue) }
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

/// Typed reads of one column with strict conversion rules; every mismatch is a `MappingError`.
enum ColumnReader {
    @inline(__always)
    static func integer<T: FixedWidthInteger>(_ context: DecodingContext, _ column: Int32, _ key: String) throws -> T {
        let statement = context.columns
        switch statement.storageClass(at: column) {
        case .integer:
            let value = statement.int64(at: column)
            guard let fitted = T(exactly: value) else {
                throw context.error(key, column, "does not fit \(T.self) (\(T.min)...\(T.max))")
            }
            return fitted
        case .real:
            let value = statement.double(at: column)
            guard let fitted = T(exactly: value) else { throw context.error(key, column, "is not a whole \(T.self)") }
            return fitted
        case .null:
            throw context.error(key, column, "is NULL but \(key) is not optional")
        default:
            throw context.error(key, column, "is not an integer for \(T.self)")
        }
    }

    @inline(__always)
    static func double(_ context: DecodingContext, _ column: Int32, _ key: String) throws -> Double {
        let statement = context.columns
        switch statement.storageClass(at: column) {
        case .real: return statement.double(at: column)
        case .integer: return Double(statement.int64(at: column))
        case .null: throw context.error(key, column, "is NULL but \(key) is not optional")
        default: throw context.error(key, column, "is not a number")
        }
    }

    @inline(__always)
    static func bool(_ context: DecodingContext, _ column: Int32, _ key: String) throws -> Bool {
        let statement = context.columns
        switch statement.storageClass(at: column) {
        case .integer:
            switch statement.int64(at: column) {
            case 0: return false
            case 1: return true
            default: throw context.error(key, column, "is not a boolean (0 or 1)")
            }
        case .null: throw context.error(key, column, "is NULL but \(key) is not optional")
        default: throw context.error(key, column, "is not a boolean (0 or 1)")
        }
    }

    @inline(__always)
    static func string(_ context: DecodingContext, _ column: Int32, _ key: String) throws -> String {
        let statement = context.columns
        switch statement.storageClass(at: column) {
        case .text: return statement.string(at: column)
        case .null: throw context.error(key, column, "is NULL but \(key) is not optional")
        default: throw context.error(key, column, "is not text")
        }
    }

    /// Any other `Decodable`: Foundation value types by their database forms, types adopting
    /// `DatabaseValueConvertible`, single values (raw-value enums), and anything else from JSON text.
    static func value<T: Decodable>(_ type: T.Type, _ context: DecodingContext, _ column: Int32, _ key: String) throws -> T {
        let statement = context.columns
        let storage = statement.storageClass(at: column)
        if storage == .null {
            throw context.error(key, column, "is NULL but \(key) is not optional")
        }
        // The common Foundation type, read without building an intermediate value.
        if T.self == Date.self {
            let date: Date
            switch storage {
            case .text:
                guard let instant = statement.withText(at: column, { ISO8601.parse(bytes: $0) }) else {
                    throw context.error(key, column, "is not an ISO-8601 date")
                }
                date = instant.date
            case .integer, .real:
                date = Date(timeIntervalSince1970: statement.double(at: column))
            default:
                throw context.error(key, column, "is not a date (ISO-8601 text or unix seconds)")
            }
            // T is Date (checked above); a cast through the runtime would cost more than the parse.
            return unsafeBitCast(date, to: T.self)
        }
        if let convertible = T.self as? any DatabaseValueConvertible.Type {
            guard let value = convertible.fromDatabaseValue(context.statement.value(at: column)) as? T else {
                throw context.error(key, column, "does not convert to \(T.self)")
            }
            return value
        }
        do {
            return try T(from: ColumnDecoder(context: context, column: column, key: key))
        } catch is NeedsJSON {
            guard statement.storageClass(at: column) == .text else {
                throw context.error(key, column, "is not JSON text for \(T.self)")
            }
            do {
                return try context.json.decode(T.self, from: Data(statement.string(at: column).utf8))
            } catch {
                throw context.error(key, column, "is not JSON for \(T.self): \(error)")
            }
        } catch is DecodingError {
            // e.g. a raw value that names no case of an enum
            throw context.error(key, column, "is not a valid \(T.self)")
        }
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

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> { throw NeedsJSON() }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw NeedsJSON() }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func decodeNil() -> Bool { context.columns.storageClass(at: column) == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try ColumnReader.bool(context, column, key) }
    func decode(_ type: String.Type) throws -> String { try ColumnReader.string(context, column, key) }
    func decode(_ type: Double.Type) throws -> Double { try ColumnReader.double(context, column, key) }
    func decode(_ type: Float.Type) throws -> Float { Float(try ColumnReader.double(context, column, key)) }
    func decode(_ type: Int.Type) throws -> Int { try ColumnReader.integer(context, column, key) }
    func decode(_ type: Int8.Type) throws -> Int8 { try ColumnReader.integer(context, column, key) }
    func decode(_ type: Int16.Type) throws -> Int16 { try ColumnReader.integer(context, column, key) }
    func decode(_ type: Int32.Type) throws -> Int32 { try ColumnReader.integer(context, column, key) }
    func decode(_ type: Int64.Type) throws -> Int64 { try ColumnReader.integer(context, column, key) }
    func decode(_ type: UInt.Type) throws -> UInt { try ColumnReader.integer(context, column, key) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try ColumnReader.integer(context, column, key) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try ColumnReader.integer(context, column, key) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try ColumnReader.integer(context, column, key) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try ColumnReader.integer(context, column, key) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try ColumnReader.value(T.self, context, column, key) }
}
