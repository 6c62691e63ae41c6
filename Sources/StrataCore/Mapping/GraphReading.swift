#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Fills the relationship properties of the rows being decoded (`<hasMany>`, `<belongsTo>`): the first row that
/// asks for one loads it for every row of the result with one query (per `KeyList.maximumCount` keys), and each row
/// takes its part.
///
/// A relationship the type does not decode is never asked for, so never loaded. The children are decoded by the
/// same store, so their own relationships load the same way, one query per relationship per level.
package final class GraphReading {
    private let store: ModelStore
    private let typeName: String
    private let layout: ModelLayout
    private let rows: BufferedStatement
    /// What each relationship loaded, by property: `[ExactValue: [Element]]` for a hasMany, `[ExactValue: T]`
    /// for a belongsTo.
    private var loaded: [String: Any] = [:]

    init(store: ModelStore, typeName: String, layout: ModelLayout, rows: BufferedStatement) {
        self.store = store
        self.typeName = typeName
        self.layout = layout
        self.rows = rows
    }

    private func error(_ relationship: Relationship, _ message: String) -> MappingError {
        MappingError(typeName: typeName, property: relationship.property, row: rows.current >= 0 ? rows.current + 1 : nil,
                     message: message)
    }

    /// The value of a relationship property for the current row; nil for an optional belongsTo whose key is NULL.
    func value<T: Decodable>(_ type: T.Type, _ property: String, optional: Bool) throws -> T? {
        guard let relationship = layout.mapping?.relationship(property) else {
            throw MappingError(typeName: typeName, property: property, message: "is not a relationship")
        }
        switch relationship.kind {
        case .hasMany:
            guard let array = T.self as? any RelatedArray.Type else {
                throw error(relationship, "is a hasMany of \(relationship.model): declare it as [\(relationship.model)], not \(T.self)")
            }
            let groups = try loaded[property] ?? array.loadGroups(self, relationship)
            loaded[property] = groups
            let key = rows.value(row: rows.current, column: try keyColumn(relationship))
            guard let value = array.group(groups, key) as? T else {
                throw error(relationship, "could not be read as \(T.self)")
            }
            return value
        case .belongsTo:
            let referenced: [ExactValue: T]
            if let cached = loaded[property] {
                guard let typed = cached as? [ExactValue: T] else { throw error(relationship, "is read as two different types") }
                referenced = typed
            } else {
                referenced = try parents(T.self, relationship)
                loaded[property] = referenced
            }
            let key = rows.value(row: rows.current, column: try foreignKeyColumn(relationship))
            if key == .null {
                if optional { return nil }
                throw error(relationship, "column '\(relationship.foreignKey)' is NULL but \(property) is not optional; make it \(T.self)?")
            }
            guard let value = referenced[ExactValue(key)] else {
                throw error(relationship, "column '\(relationship.foreignKey)' holds \(key), but no \(relationship.model) row has that key")
            }
            return value
        }
    }

    /// The result column holding this row's own key, which a hasMany's children name.
    private func keyColumn(_ relationship: Relationship) throws -> Int {
        guard layout.primaryKey.count == 1 else {
            throw error(relationship, layout.primaryKey.isEmpty
                ? "needs \(typeName) to have a primary key (declare one in table '\(layout.table)' or the manifest's primaryKey)"
                : "needs \(typeName) to have a one-column primary key; it has \(layout.primaryKey.joined(separator: ", "))")
        }
        guard let index = rows.layout.index(of: layout.primaryKey[0]) else {
            throw error(relationship, "needs the key column '\(layout.primaryKey[0])' in the result (columns: \(rows.layout.names.joined(separator: ", ")))")
        }
        return index
    }

    /// The result column holding a belongsTo's foreign key.
    private func foreignKeyColumn(_ relationship: Relationship) throws -> Int {
        guard let index = rows.layout.index(of: relationship.foreignKey) else {
            throw error(relationship, "needs the column '\(relationship.foreignKey)' in the result (columns: \(rows.layout.names.joined(separator: ", ")))")
        }
        return index
    }

    /// The distinct non-NULL values of a column over every row, in the order first seen.
    private func distinctValues(column: Int) -> [DatabaseValue] {
        var seen: Set<ExactValue> = []
        var values: [DatabaseValue] = []
        for row in 0..<rows.rowCount {
            let value = rows.value(row: row, column: column)
            if value != .null, seen.insert(ExactValue(value)).inserted { values.append(value) }
        }
        return values
    }

    /// The children of every row, grouped by the key they name, in `orderBy` order then by their key.
    func children<Element: Decodable>(_ type: Element.Type, _ relationship: Relationship) throws -> [ExactValue: [Element]] {
        let child = try store.relatedLayout(Element.self, relationship, from: typeName)
        let keys = distinctValues(column: try keyColumn(relationship))
        let known = Set(keys.map(ExactValue.init))
        var order = relationship.orderBy.map { "\(quoteIdentifier($0.column))\($0.descending ? " DESC" : "")" }
        order += child.primaryKey.map(quoteIdentifier)
        var groups: [ExactValue: [Element]] = [:]
        for list in KeyList.lists(of: keys, dialect: store.database.dialect) {
            let sql = "SELECT * FROM \(quoteIdentifier(child.table)) WHERE \(quoteIdentifier(relationship.foreignKey)) IN (\(list.placeholders))"
                + (order.isEmpty ? "" : " ORDER BY " + order.joined(separator: ", "))
            try store.decodeGrouped(Element.self, sql: sql, .positional(list.values), groupColumn: relationship.foreignKey) { key, value in
                // The database matched this row to one of the keys, yet it holds none of them exactly: another
                // storage class (text '7' for integer 7), or a collation that folds case. Filed nowhere here, the
                // row would vanish from the graph, or belong to two parents.
                guard known.contains(ExactValue(key)) else {
                    throw error(relationship, "\(child.table).\(relationship.foreignKey) holds \(key) (\(key.storageClass)), which the database matched to a \(typeName) key that is not that value: the column's type or collation compares otherwise than the key's; make them the same (and the collation BINARY)")
                }
                groups[ExactValue(key), default: []].append(value)
            }
        }
        return groups
    }

    /// The rows every row's belongsTo names, by their key.
    private func parents<T: Decodable>(_ type: T.Type, _ relationship: Relationship) throws -> [ExactValue: T] {
        let target = try store.relatedLayout(T.self, relationship, from: typeName)
        guard target.primaryKey.count == 1 else {
            throw error(relationship, "needs \(relationship.model) to have a one-column primary key (table '\(target.table)')")
        }
        let key = target.primaryKey[0]
        let keys = distinctValues(column: try foreignKeyColumn(relationship))
        var found: [ExactValue: T] = [:]
        for list in KeyList.lists(of: keys, dialect: store.database.dialect) {
            let sql = "SELECT * FROM \(quoteIdentifier(target.table)) WHERE \(quoteIdentifier(key)) IN (\(list.placeholders))"
            try store.decodeGrouped(T.self, sql: sql, .positional(list.values), groupColumn: key) { value, decoded in
                found[ExactValue(value)] = decoded
            }
        }
        return found
    }
}

/// An array a hasMany fills: its element type is the child model.
protocol RelatedArray {
    /// The element type's name, which must be the model the manifest names.
    static var elementTypeName: String { get }
    static func loadGroups(_ reading: GraphReading, _ relationship: Relationship) throws -> Any
    static func group(_ groups: Any, _ key: DatabaseValue) -> Any?
}

extension Array: RelatedArray where Element: Decodable {
    static var elementTypeName: String { ModelStore.typeName(Element.self) }

    static func loadGroups(_ reading: GraphReading, _ relationship: Relationship) throws -> Any {
        try reading.children(Element.self, relationship)
    }

    static func group(_ groups: Any, _ key: DatabaseValue) -> Any? {
        (groups as? [ExactValue: [Element]]).map { $0[ExactValue(key)] ?? [] }
    }
}
