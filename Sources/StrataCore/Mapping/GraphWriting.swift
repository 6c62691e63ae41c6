#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Writing a value with relationships (`<hasMany>`, `<belongsTo>`) as a whole: its row, the foreign keys its
/// belongsTo values name, and its hasMany children with its key, in one savepoint.
///
/// A hasMany property the value does not have, or holds as nil, is not touched: saving a value loaded without its
/// children never deletes them. Children in the database but not in the array are kept unless the manifest says
/// `onRemove="delete"` (deleted with what they own) or `"detach"` (their key set to NULL).
extension ModelStore {
    enum GraphWrite {
        case insert, update, save
    }

    /// Whether values of this layout are written as graphs.
    func writesGraph(_ layout: ModelLayout) -> Bool {
        layout.mapping?.relationships.isEmpty == false
    }

    /// Writes a value and what it holds, all or nothing; returns its key.
    @discardableResult
    func writeGraph(_ value: Any, layout: ModelLayout, _ mode: GraphWrite) throws -> DatabaseValue? {
        try requireAcyclicRelationships()
        return try database.withSavepoint {
            try writeNode(value, layout: layout, mode, path: GraphPath(root: layout.typeName), foreignKey: nil)
        }
    }

    /// Writes many values' graphs in one savepoint: all or none; an error names the value's 1-based position.
    func writeGraphs<S: Sequence>(_ values: S, layout: ModelLayout, _ mode: GraphWrite) throws {
        try requireAcyclicRelationships()
        try database.withSavepoint {
            var position = 0
            // One record for the whole batch: the same child in two values is a conflict, and a link checked once
            // is not looked up again for each value.
            let written = WrittenGraph()
            for value in values {
                position += 1
                try writing(position, of: layout) {
                    _ = try writeNode(value, layout: layout, mode, path: GraphPath(root: layout.typeName, written: written),
                                      foreignKey: nil)
                }
            }
        }
    }

    /// What `insert` returns for a graph's root: its integer key, 0 for another.
    func insertedKey(_ key: DatabaseValue?) -> Int64 {
        if case .integer(let value) = key { return value }
        return 0
    }

    /// One value of the graph: `path` is where it sits from the root (`["messages[3]"]`), for errors; `foreignKey`
    /// is the column and value its parent's hasMany sets.
    private func writeNode(_ value: Any, layout: ModelLayout, _ mode: GraphWrite, path: GraphPath,
                           foreignKey: (column: String, value: DatabaseValue, parent: String)?) throws -> DatabaseValue? {
        var (row, related) = try encodeNode(value, layout: layout, path: path)
        if let foreignKey {
            try set(foreignKey.column, to: foreignKey.value, in: &row, layout: layout, path: path,
                    because: "it is in \(foreignKey.parent)'s \(path.steps.last.map { String($0.prefix { $0 != "[" }) } ?? "")")
        }
        let relationships = layout.mapping?.relationships ?? []
        for (property, held) in related {
            guard let relationship = relationships.first(where: { $0.property == property }), relationship.kind == .belongsTo
            else { continue }
            let key = try held.map { try referencedKey($0, relationship, owner: layout, path: path) } ?? .null
            try set(relationship.foreignKey, to: key, in: &row, layout: layout, path: path,
                    because: "\(property) is \(key == .null ? "nil" : "the \(relationship.model) with that key")")
        }
        let key = try within(layout, path) { () -> DatabaseValue? in
            let generated: Int64?
            switch mode {
            case .insert: generated = try insert(row: row, layout: layout)
            case .update:
                try update(row: row, layout: layout)
                generated = nil
            case .save: generated = try save(row: row, layout: layout)
            }
            return try self.key(of: row, layout: layout, generated: generated)
        }
        for (property, held) in related {
            guard let relationship = relationships.first(where: { $0.property == property }), relationship.kind == .hasMany,
                  let held else { continue }
            try writeChildren(held, relationship, parent: layout, parentKey: key, path: path)
        }
        return key
    }

    /// The row and relationship values of a value, through its `Encodable` conformance or else `Mirror`.
    private func encodeNode(_ value: Any, layout: ModelLayout, path: GraphPath) throws -> (EncodedRow, [(property: String, value: Any?)]) {
        let relationships = Set(layout.mapping?.relationships.map(\.property) ?? [])
        return try within(layout, path) {
            if let encodable = value as? any Encodable {
                return try encodeCapturing(encodable, layout: layout, relationships: relationships)
            }
            var related: [(property: String, value: Any?)] = []
            let row = try MirrorEncoding.encode(value, typeName: layout.typeName, datePrecision: database.dialect.datePrecision,
                                                dateStorage: database.dialect.dateStorage,
                                                dateStorageByProperty: layout.mapping?.dateStorage ?? [:], relationships: relationships,
                                                related: &related)
            return (row, related)
        }
    }

    private func encodeCapturing<E: Encodable>(_ value: E, layout: ModelLayout, relationships: Set<String>) throws
        -> (EncodedRow, [(property: String, value: Any?)]) {
        let encoding = rowEncoding(layout.typeName)
        encoding.relationships = relationships
        let row = try encoding.encode(value)
        // A custom `encode(to:)` may hand over an optional itself.
        return (row, encoding.related.map { ($0.property, $0.value.flatMap(MirrorEncoding.unwrapped)) })
    }

    /// Puts a foreign key into a row: into the property mapped to its column, which must then be NULL or hold the
    /// same value, or as a column of its own when the type has no such property.
    private func set(_ column: String, to value: DatabaseValue, in row: inout EncodedRow, layout: ModelLayout,
                     path: GraphPath, because reason: String) throws {
        guard let index = row.properties.firstIndex(where: { sqliteNamesEqual(layout.column(for: $0), column) }) else {
            row.properties.append(column)
            row.values.append(value)
            return
        }
        let own = row.values[index]
        guard own == .null || own == value else {
            throw MappingError(typeName: path.root, property: path.described(row.properties[index]), column: column,
                               value: "\(own)", message: "disagrees with \(value), which \(reason) gives; set both to the same value")
        }
        row.values[index] = value
    }

    /// The key of the row a belongsTo value names, which must already have one.
    private func referencedKey(_ value: Any, _ relationship: Relationship, owner: ModelLayout, path: GraphPath) throws -> DatabaseValue {
        let name = String(describing: type(of: value))
        guard name == relationship.model else {
            throw MappingError(typeName: path.root, property: path.described(relationship.property),
                               message: "holds a \(name) but the manifest's belongsTo names model \(relationship.model)")
        }
        let target = try layout(named: relationship.model)
        let (row, _) = try encodeNode(value, layout: target, path: path.appending(relationship.property))
        let key = target.primaryKey.count == 1
            ? row.properties.firstIndex { sqliteNamesEqual(target.column(for: $0), target.primaryKey[0]) }.map { row.values[$0] }
            : nil
        guard let key, key != .null else {
            throw MappingError(typeName: path.root, property: path.described(relationship.property),
                               message: target.primaryKey.count == 1
                                   ? "has no key: save the \(relationship.model) first (a belongsTo names a row, it does not write one)"
                                   : "needs \(relationship.model) to have a one-column primary key")
        }
        return key
    }

    /// The single-column key a written row has: its own value, or the one the database generated.
    private func key(of row: EncodedRow, layout: ModelLayout, generated: Int64?) throws -> DatabaseValue? {
        guard layout.primaryKey.count == 1 else { return nil }
        let column = layout.primaryKey[0]
        if let index = row.properties.firstIndex(where: { sqliteNamesEqual(layout.column(for: $0), column) }),
           row.values[index] != .null {
            return row.values[index]
        }
        guard let generated, let info = layout.columns.named(column), info.affinity == .integer else { return nil }
        return try rowWriter(layout).generatedKey(generated, column: column, layout: layout, database: database)
    }

    /// Saves a hasMany's children under the parent's key, then deletes or detaches the ones no longer in the array
    /// when the manifest says so.
    private func writeChildren(_ held: Any, _ relationship: Relationship, parent: ModelLayout, parentKey: DatabaseValue?,
                               path: GraphPath) throws {
        let here = path.described(relationship.property)
        guard let elements = held as? any ElementsAsAny else {
            throw MappingError(typeName: path.root, property: here,
                               message: "is a hasMany of \(relationship.model): declare it as [\(relationship.model)]")
        }
        guard let parentKey else {
            throw MappingError(typeName: path.root, property: here,
                               message: parent.primaryKey.count == 1
                                   ? "needs \(parent.typeName)'s key, which is NULL after writing it; give \(parent.typeName) a key or make '\(parent.primaryKey[0])' an integer key the database generates"
                                   : "needs \(parent.typeName) to have a one-column primary key")
        }
        let child = try layout(named: relationship.model)
        // Children are filed by the foreign key, found again by their key and told apart in Swift by their bytes:
        // each of these must compare exactly, or a child lands under (or is taken for) a row it only resembles.
        try requireExactLink(relationship, parent: parent, child: child, path: path)
        var kept: [DatabaseValue] = []
        for (index, element) in elements.elementsAsAny.enumerated() {
            let elementPath = path.appending("\(relationship.property)[\(index)]")
            let name = String(describing: type(of: element))
            guard name == relationship.model else {
                throw MappingError(typeName: path.root, property: elementPath.described(nil),
                                   message: "is a \(name) but the manifest's hasMany names model \(relationship.model)")
            }
            let key = try writeNode(element, layout: child, .save, path: elementPath,
                                    foreignKey: (relationship.foreignKey, parentKey, parent.typeName))
            if let key {
                // Written twice, a child would end under whichever parent came last, and the other value, saved
                // holding it, would read back without it.
                if let first = path.written.record(model: relationship.model, key: key, at: elementPath.described(nil)) {
                    throw MappingError(typeName: path.root, property: elementPath.described(nil), value: "\(key)",
                                       message: "is the \(relationship.model) already written at \(path.root).\(first); a row can be in one place of the graph")
                }
                kept.append(key)
            } else if relationship.onRemove != .keep {
                // Without its key, the child just written could not be told from the ones to remove.
                throw MappingError(typeName: path.root, property: elementPath.described(nil),
                                   message: "has no key after saving, which onRemove=\"\(relationship.onRemove.rawValue)\" needs to keep it; give \(relationship.model) a one-column key (an integer one the database generates, or set it)")
            }
        }
        guard relationship.onRemove != .keep else { return }
        guard child.primaryKey.count == 1 else {
            throw MappingError(typeName: path.root, property: here,
                               message: "onRemove=\"\(relationship.onRemove.rawValue)\" needs \(relationship.model) to have a one-column primary key")
        }
        let childKey = quoteIdentifier(child.primaryKey[0])
        let table = quoteIdentifier(child.table)
        let foreignKey = quoteIdentifier(relationship.foreignKey)
        let placeholder = database.dialect.placeholder(1)
        let present = try database.rows("SELECT \(childKey) FROM \(table) WHERE \(foreignKey) = \(placeholder)", .positional([parentKey]))
            .map { $0[0] }
        // The children just written, as the database spells their keys (a timestamptz key reads back in the
        // server's text, not as written): the database compares the keys, and the two lists compare exactly.
        var keptAsStored: Set<ExactValue> = []
        for list in KeyList.lists(of: kept, dialect: database.dialect, firstPlaceholder: 2) {
            for row in try database.rows("SELECT \(childKey) FROM \(table) WHERE \(foreignKey) = \(placeholder) AND \(childKey) IN (\(list.placeholders))",
                                         .positional([parentKey] + list.values)) {
                keptAsStored.insert(ExactValue(row[0]))
            }
        }
        // Every child just written is under this parent; if one is not found so, which rows are gone cannot be told.
        guard keptAsStored.count == kept.count else {
            throw MappingError(typeName: path.root, property: here,
                               message: "\(kept.count - keptAsStored.count) of the children just written could not be found again under the parent's key in '\(child.table)', so the rows no longer in the array cannot be told apart; nothing of the graph was saved")
        }
        for key in present {
            guard !keptAsStored.contains(ExactValue(key)) else { continue }
            try within(parent, path.appending(relationship.property)) {
                switch relationship.onRemove {
                case .delete:
                    try deleteOwned(child, keys: placeholder, .positional([key]))
                    try database.execute("DELETE FROM \(table) WHERE \(childKey) = \(placeholder)", .positional([key]))
                case .detach:
                    try database.execute("UPDATE \(table) SET \(foreignKey) = NULL WHERE \(childKey) = \(placeholder)",
                                         .positional([key]))
                case .keep:
                    break
                }
            }
        }
    }

    /// Deletes or detaches what rows of `layout` own (`onRemove`), for the rows whose keys `keys` gives: a list of
    /// placeholders, or a query of keys, with its arguments. Their owned children's children go first.
    func deleteOwned(_ layout: ModelLayout, keys: String, _ arguments: StatementArguments) throws {
        for relationship in layout.mapping?.relationships ?? [] where relationship.kind == .hasMany && relationship.onRemove != .keep {
            let child = try self.layout(named: relationship.model)
            try requireExactLink(relationship, parent: layout, child: child, path: GraphPath(root: layout.typeName))
            let table = quoteIdentifier(child.table)
            let filter = "\(quoteIdentifier(relationship.foreignKey)) IN (\(keys))"
            switch relationship.onRemove {
            case .delete:
                if child.mapping?.relationships.contains(where: { $0.kind == .hasMany && $0.onRemove != .keep }) == true {
                    guard child.primaryKey.count == 1 else {
                        throw MappingError(typeName: layout.typeName, property: relationship.property,
                                           message: "deleting \(relationship.model) rows with what they own needs \(relationship.model) to have a one-column primary key")
                    }
                    try deleteOwned(child, keys: "SELECT \(quoteIdentifier(child.primaryKey[0])) FROM \(table) WHERE \(filter)", arguments)
                }
                try database.execute("DELETE FROM \(table) WHERE \(filter)", arguments)
            case .detach:
                try database.execute("UPDATE \(table) SET \(quoteIdentifier(relationship.foreignKey)) = NULL WHERE \(filter)", arguments)
            case .keep:
                break
            }
        }
    }

    /// Refuses to delete or detach children by a foreign key that compares loosely with the parent's key (a
    /// NOCASE collation, another type or affinity): `fk = 'A'` would also reach parent 'a''s children.
    private func requireExactLink(_ relationship: Relationship, parent: ModelLayout, child: ModelLayout, path: GraphPath) throws {
        let link = "\(parent.typeName).\(relationship.property)"
        guard !path.written.exactLinks.contains(link) else { return }
        let column = child.columns.named(relationship.foreignKey)
        let key = parent.primaryKey.count == 1 ? parent.columns.named(parent.primaryKey[0]) : nil
        let childKey = child.primaryKey.count == 1 ? child.columns.named(child.primaryKey[0]) : nil
        var why: String?
        if column == nil {
            why = "table '\(child.table)' has no column '\(relationship.foreignKey)'"
        } else if key == nil {
            why = "\(parent.typeName) has no one-column primary key"
        } else if let column, let key, column.affinity != key.affinity {
            why = "'\(child.table).\(column.name)' (\(column.declaredType)) and '\(parent.table).\(key.name)' (\(key.declaredType)) store different kinds of value"
        } else {
            for (table, name) in [(child.table, column?.name), (parent.table, key?.name), (child.table, childKey?.name)] {
                guard let name, !(try database.links(of: name, in: table).comparesExactly) else { continue }
                why = "'\(table).\(name)' compares with a collation that folds case or accents"
                break
            }
        }
        if let why {
            throw MappingError(typeName: path.root, property: path.described(relationship.property),
                               message: "children are filed and removed by the foreign key and told apart by their keys, which must compare exactly, and \(why): a child could land under, or be taken for, a row it only resembles; nothing was changed")
        }
        path.written.exactLinks.insert(link)
    }

    /// Whether deleting rows of this layout deletes or detaches rows of others.
    func ownsRows(_ layout: ModelLayout) -> Bool {
        layout.mapping?.relationships.contains { $0.kind == .hasMany && $0.onRemove != .keep } == true
    }

    /// Deletes the rows with these keys and what they own, in one savepoint.
    func deleteGraph(_ layout: ModelLayout, key: [String: any DatabaseValueConvertible]) throws -> Bool {
        try requireAcyclicRelationships()
        return try database.withSavepoint {
            guard layout.primaryKey.count == 1, let value = key.first(where: { sqliteNamesEqual(layout.column(for: $0.key), layout.primaryKey[0]) })?.value,
                  key.count == 1 else {
                throw MappingError(typeName: layout.typeName,
                                   message: "deleting what a \(layout.typeName) owns needs a one-column primary key, given alone")
            }
            let checked: DatabaseValue
            switch database.dialect.checkedParameter(value) {
            case .success(let parameter): checked = parameter
            case .failure(let error): throw MappingError(typeName: layout.typeName, column: layout.primaryKey[0], value: "\(value)", message: error.message)
            }
            try deleteOwned(layout, keys: database.dialect.placeholder(1), .positional([checked]))
            return try deleteRow(layout: layout, key: key)
        }
    }

    /// Runs one step of writing a graph; below the root, a database error or the node's own mapping error is
    /// reported at its path (`Dialog.messages[3].text`).
    private func within<R>(_ layout: ModelLayout, _ path: GraphPath, _ body: () throws -> R) throws -> R {
        guard !path.steps.isEmpty else { return try body() }
        do {
            return try body()
        } catch let error as DatabaseError {
            throw MappingError(typeName: path.root, property: path.described(nil), message: "rejected: \(error.message)")
        } catch let error as MappingError where error.typeName == layout.typeName {
            throw MappingError(typeName: path.root, property: path.described(error.property), column: error.column,
                               value: error.value, message: error.message)
        }
    }
}

/// Where a value sits in the graph being written, from the root type: `Dialog` and `messages[3]`.
struct GraphPath {
    let root: String
    var steps: [String] = []
    /// What this graph (or batch of graphs) has written and checked so far.
    var written = WrittenGraph()

    init(root: String, written: WrittenGraph = WrittenGraph()) {
        self.root = root
        self.written = written
    }

    func appending(_ step: String) -> GraphPath {
        var next = self
        next.steps.append(step)
        return next
    }

    /// The steps and then a property, as an error's property: `messages[3].text`.
    func described(_ property: String?) -> String {
        (steps + (property.map { [$0] } ?? [])).joined(separator: ".")
    }
}

/// A hasMany's array, read element by element whatever its element type.
protocol ElementsAsAny {
    var elementsAsAny: [Any] { get }
}

extension Array: ElementsAsAny {
    var elementsAsAny: [Any] { map { $0 } }
}

/// What one graph write (or batch of them) has done so far: where each child row was written, by model and key (a
/// child met twice is a conflict), and which links were checked.
final class WrittenGraph {
    private var places: [String: [ExactValue: String]] = [:]
    /// The relationships (`Type.property`) whose columns were found to compare exactly, during this write: the
    /// schema cannot change under the write's savepoint except by the write itself, which changes no schema.
    var exactLinks: Set<String> = []

    /// Records a child's place; returns the place it was already written at, if any.
    func record(model: String, key: DatabaseValue, at place: String) -> String? {
        if let first = places[model]?[ExactValue(key)] { return first }
        places[model, default: [:]][ExactValue(key)] = place
        return nil
    }
}
