#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The state of decoding rows of one statement into a `Decodable` type: the current row, the learned key order and
/// the keyed container every row reuses.
///
/// The coding-key → column lookup is learned once per statement: synthesized `init(from:)` asks for keys in
/// the same order on every row, so each field costs one comparison against the predicted key instead of a
/// dictionary lookup. Package-visible and partly inlinable so a backend's container (`RowContainer`) runs this
/// per-field path with its own column read inlined.
@usableFromInline
package final class DecodingContext {
    package let statement: any PreparedStatement
    /// The backend's own handle for reading the current row (SQLite: the `sqlite3_stmt`), from
    /// `RowDecodingStatement.columnSource`. A raw handle, not the statement object: reading through an object
    /// reference costs a retain and a release per field. Valid while `statement` is, which this context keeps alive.
    package let columnSource: OpaquePointer?
    package let typeName: String
    /// How the statement's database stores dates: what a number read as a `Date` means.
    package let dateStorage: DateStorage
    let layout: ModelLayout?
    /// The result's columns whose dates are stored otherwise than `dateStorage` (`<property dateStorage>`).
    private var columnDateStorage: [Int32: DateStorage] = [:]
    /// Fills relationship properties, when the type has any (its rows are then read into memory first).
    var graph: GraphReading?
    /// 1-based position of the current row in the result.
    package var row: Int { counters[2] }

    /// One learned step of the order in which the type asks for keys.
    @usableFromInline
    struct Step {
        @usableFromInline let keyType: ObjectIdentifier
        /// The key's bytes, when its type is plain data of 1, 2, 4 or 8 bytes (a synthesized `CodingKeys` case
        /// is one byte): comparing them skips the `stringValue` call and a string comparison per field. Other
        /// keys are compared by name.
        @usableFromInline let bits: UInt64?
        @usableFromInline let name: String
        @usableFromInline let column: Int32
    }

    /// Steps in the order the type asks for them (column -1: no such column). Kept behind pointers so the
    /// per-field path reads and writes them without dynamic exclusivity checks.
    private static let capacity = 128
    @usableFromInline let steps = UnsafeMutablePointer<Step>.allocate(capacity: DecodingContext.capacity)
    @usableFromInline let counters = UnsafeMutablePointer<Int>.allocate(capacity: 3) // [learned, position, row]
    private var byKey: [String: Int32] = [:]
    lazy var json = JSONDecoder()

    package init(statement: any PreparedStatement, typeName: String, layout: ModelLayout?,
                 dateStorage: DateStorage = .iso8601Text) {
        self.statement = statement
        columnSource = (statement as? any RowDecodingStatement)?.columnSource
        self.typeName = typeName
        self.dateStorage = dateStorage
        self.layout = layout
        counters.initialize(repeating: 0, count: 3)
        for (property, storage) in layout?.mapping?.dateStorage ?? [:] {
            if let layout, let index = statement.layout.index(of: layout.column(for: property)) {
                columnDateStorage[Int32(index)] = storage
            }
        }
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
        return makeContainer(keyedBy: Key.self)
    }

    /// Out of line: the metadata this needs would otherwise be looked up on every row, not just the first.
    @inline(never)
    private func makeContainer<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedDecodingContainer<Key> {
        // A backend that supplies its own container reads each column with a direct call; any other goes
        // through the statement protocol.
        let container = (statement as? any RowDecodingStatement)?.rowContainer(context: self, keyedBy: Key.self)
            ?? KeyedDecodingContainer(RowContainer<Key, StatementColumns>(context: self))
        cachedContainer = ContainerHolder(container)
        cachedKeyType = ObjectIdentifier(Key.self)
        return container
    }

    /// Breaks the cycle through the cached container once the statement is done.
    func finish() {
        cachedContainer = nil
        cachedKeyType = nil
    }

    /// How the dates of a result column are stored.
    @inline(__always)
    func dateStorage(at column: Int32) -> DateStorage {
        columnDateStorage.isEmpty ? dateStorage : columnDateStorage[column] ?? dateStorage
    }

    /// Steps to the next row; false after the last.
    @usableFromInline
    func nextRow() throws -> Bool {
        guard try statement.step() else { return false }
        counters[2] += 1
        counters[1] = 0
        return true
    }

    /// The current row as a `T` the mapper reads from the first column itself (`readsRowAsOneValue`).
    @usableFromInline
    func decodeRowAsOneValue<T: Decodable>(_ type: T.Type) throws -> T {
        try ColumnDecoder(context: self, column: 0, key: statement.layout.names.first ?? "").decode(T.self)
    }

    /// Whether a whole row read as `type` is read by the mapper from its first column: a `Date`, or a
    /// `DatabaseValueConvertible` such as `Data` or `UUID`. Their own `init(from:)` would read a `Date` as seconds
    /// since 2001 and refuse ISO-8601 text.
    @inlinable
    static func readsRowAsOneValue<T>(_ type: T.Type) -> Bool {
        T.self == Date.self || T.self is any DatabaseValueConvertible.Type
    }

    /// The column index for a coding key, or -1 when the result has no such column.
    @inlinable @inline(__always)
    package func column<Key: CodingKey>(for key: Key) -> Int32 {
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
    @usableFromInline
    func learn<Key: CodingKey>(_ key: Key, at position: Int) -> Int32 {
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
    @inlinable @inline(__always)
    static func bits<Key>(of key: Key) -> UInt64 {
        switch MemoryLayout<Key>.size {
        case 1: UInt64(unsafeBitCast(key, to: UInt8.self))
        case 2: UInt64(unsafeBitCast(key, to: UInt16.self))
        case 4: UInt64(unsafeBitCast(key, to: UInt32.self))
        case 8: unsafeBitCast(key, to: UInt64.self)
        default: 0
        }
    }

    /// The column `column(for:)` gives a relationship property, which no column holds.
    @usableFromInline static let relationshipColumn: Int32 = -2

    private func resolve(_ key: String) -> Int32 {
        if graph != nil, layout?.mapping?.relationship(key) != nil {
            byKey[key] = Self.relationshipColumn
            return Self.relationshipColumn
        }
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

    /// A property with no column: a relationship's value (`GraphReading`), or an error for a missing column.
    @usableFromInline @inline(never)
    package func related<T: Decodable>(_ type: T.Type, _ key: String, _ column: Int32) throws -> T {
        guard column == Self.relationshipColumn, let graph, let value = try graph.value(T.self, key, optional: false) else {
            throw missingColumn(key)
        }
        return value
    }

    /// `related` for an optional property: nil for a missing column, or a belongsTo whose key is NULL.
    @usableFromInline @inline(never)
    package func relatedIfPresent<T: Decodable>(_ type: T.Type, _ key: String, _ column: Int32) throws -> T? {
        guard column == Self.relationshipColumn, let graph else { return nil }
        return try graph.value(T.self, key, optional: true)
    }

    /// A property whose column the result does not have.
    @usableFromInline @inline(never)
    package func missingColumn(_ key: String) -> MappingError {
        error(key, -1, "has no column in the result (columns: \(statement.layout.names.joined(separator: ", ")))",
              showValue: false)
    }

    @usableFromInline @inline(never)
    package func error(_ key: String, _ column: Int32, _ message: String, showValue: Bool = true) -> MappingError {
        MappingError(typeName: typeName, property: key, column: columnName(column, key: key), row: row,
                     value: showValue && column >= 0 ? describe(column) : nil, message: message)
    }
}
