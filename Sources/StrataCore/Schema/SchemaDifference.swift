/// What kind of object a `SchemaChange` is about: the four kinds every backend has, columns and constraints of
/// tables, and whatever else a backend's snapshot holds (`SchemaSnapshot.Other.kind`: `function`, `sequence`, …).
public struct SchemaObjectKind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The kind's name, as the JSON output and the text form print it.
    public let rawValue: String

    /// Creates a kind from its name.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// A table.
    public static let table = SchemaObjectKind(rawValue: "table")
    /// A column of a table.
    public static let column = SchemaObjectKind(rawValue: "column")
    /// A constraint of a table (a foreign key, a check, a unique key).
    public static let constraint = SchemaObjectKind(rawValue: "constraint")
    /// An index no constraint made.
    public static let index = SchemaObjectKind(rawValue: "index")
    /// A view.
    public static let view = SchemaObjectKind(rawValue: "view")
    /// A trigger.
    public static let trigger = SchemaObjectKind(rawValue: "trigger")

    /// The kind's name.
    public var description: String { rawValue }

    /// Where changes of this kind are listed: tables and what they hold first, then indexes, views, triggers, others.
    var rank: Int {
        [Self.table, .column, .constraint, .index, .view, .trigger].firstIndex(of: self) ?? 6
    }
}

/// One object added, dropped or changed between two snapshots.
public struct SchemaChange: Sendable, Equatable {
    /// What happened to the object; the raw value is the JSON `action`.
    public enum Action: String, Sendable {
        /// The object is only in the second schema, only in the first, or in both and different.
        case added, dropped, changed
    }

    /// One way a changed object differs: `aspect` (`type`, `not null`, `default`, `primary key`, `collation`,
    /// `columns`, `unique`, `definition`) and its value before and after (nil: none).
    public struct Aspect: Sendable, Equatable {
        /// What differs.
        public let aspect: String
        /// Its value in the first schema; nil: none.
        public let old: String?
        /// Its value in the second schema; nil: none.
        public let new: String?

        /// Creates an aspect from its name and its values before and after.
        public init(_ aspect: String, old: String?, new: String?) {
            self.aspect = aspect
            self.old = old
            self.new = new
        }
    }

    /// What kind of object changed.
    public let kind: SchemaObjectKind
    /// Whether it was added, dropped or changed.
    public let action: Action
    /// The object's name (a constraint's is its text; another object's the first line of its definition).
    public let name: String
    /// The table a column, constraint, index or trigger belongs to; nil for the others.
    public let table: String?
    /// What was added (its definition in the second snapshot) or dropped (in the first); nil for a change.
    public let definition: String?
    /// How a changed object differs; empty for one added or dropped.
    public let aspects: [Aspect]

    /// Creates a change to one object.
    public init(kind: SchemaObjectKind, action: Action, name: String, table: String? = nil, definition: String? = nil,
                aspects: [Aspect] = []) {
        self.kind = kind
        self.action = action
        self.name = name
        self.table = table
        self.definition = definition
        self.aspects = aspects
    }
}

/// Two snapshots of the same backend that cannot be compared: one SQLite, one PostgreSQL.
public struct SchemaComparisonError: Error, Sendable, CustomStringConvertible {
    /// The first schema's backend.
    public let old: DatabaseBackend
    /// The second schema's backend.
    public let new: DatabaseBackend

    /// Which backend each schema is of, and that they cannot be compared.
    public var description: String {
        "cannot compare a \(old.displayName) schema with a \(new.displayName) schema: their types, defaults and definitions are spelled differently; compare databases of one backend"
    }
}

/// What turns one schema into another: every table, column, constraint, index, view and trigger (and on PostgreSQL
/// every other object) added, dropped or changed, from `old` to `new`. Added means in `new` only.
///
/// Objects are matched by name (SQLite: ASCII case-insensitively, as SQLite compares names; a trigger or index
/// also by its table), columns by name within their table. A changed object lists each structured aspect that
/// differs (a column's type, NOT NULL, default, primary key position, collation; an index's columns and
/// uniqueness). `definition` is listed when nothing finer explains the change: a view's or trigger's text, a
/// partial index's `WHERE`, a table's CHECK constraint on SQLite, or anything else its definition holds. Definitions
/// are compared as normalised text: on SQLite its tokens, so whitespace, comments, the case of keywords and bare
/// names, and quotes around a plain name do not count; on PostgreSQL the server's own deparsed text, which does
/// not keep the formatting of the statement that made the object. Constraints are compared by their text, so a
/// changed one is one dropped and one added.
public struct SchemaDifference: Sendable, Equatable {
    /// Sorted by kind (tables, columns, constraints, indexes, views, triggers, others), table, name, action.
    public let changes: [SchemaChange]

    /// True when the two schemas are the same.
    public var isEmpty: Bool { changes.isEmpty }

    /// The difference from `old` to `new`; throws `SchemaComparisonError` when they are of different backends.
    public init(from old: SchemaSnapshot, to new: SchemaSnapshot) throws {
        guard old.backend == new.backend else { throw SchemaComparisonError(old: old.backend, new: new.backend) }
        let key = old.key
        var changes: [SchemaChange] = []

        let tables = Self.match(old.tables, new.tables) { key($0.name) }
        for table in tables.added {
            changes.append(SchemaChange(kind: .table, action: .added, name: table.name, definition: table.definition))
        }
        for table in tables.dropped {
            changes.append(SchemaChange(kind: .table, action: .dropped, name: table.name, definition: table.definition))
        }
        for (before, after) in tables.both {
            let inside = Self.tableChanges(before, after, key: key)
            changes += inside
            // The definition holds what columns and constraints do not (a CHECK on SQLite, a generated column,
            // options): named only when nothing finer explains the change (a known limit: a table with both lists
            // only the finer changes; the verdict, equal or not, is right either way).
            if inside.isEmpty && before.definition != after.definition {
                changes.append(SchemaChange(kind: .table, action: .changed, name: after.name,
                                            aspects: [.init("definition", old: before.definition, new: after.definition)]))
            }
        }

        let indexes = Self.match(old.indexes, new.indexes) { key($0.table) + "\0" + key($0.name) }
        changes += indexes.added.map { SchemaChange(kind: .index, action: .added, name: $0.name, table: $0.table, definition: $0.definition) }
        changes += indexes.dropped.map { SchemaChange(kind: .index, action: .dropped, name: $0.name, table: $0.table, definition: $0.definition) }
        for (before, after) in indexes.both {
            var aspects: [SchemaChange.Aspect] = []
            if before.columns.map(key) != after.columns.map(key) {
                aspects.append(.init("columns", old: before.columns.joined(separator: ", "), new: after.columns.joined(separator: ", ")))
            }
            if before.unique != after.unique {
                aspects.append(.init("unique", old: before.unique ? "yes" : "no", new: after.unique ? "yes" : "no"))
            }
            if aspects.isEmpty && before.definition != after.definition {
                aspects.append(.init("definition", old: before.definition, new: after.definition))
            }
            if !aspects.isEmpty {
                changes.append(SchemaChange(kind: .index, action: .changed, name: after.name, table: after.table, aspects: aspects))
            }
        }

        changes += Self.definitionChanges(old.views, new.views, kind: { _ in .view }, key: { key($0.name) }, name: \.name,
                                          table: { _ in nil }, definition: \.definition)
        changes += Self.definitionChanges(old.triggers, new.triggers, kind: { _ in .trigger },
                                          key: { key($0.table) + "\0" + key($0.name) }, name: \.name, table: { $0.table },
                                          definition: \.definition)
        // Others are told apart by their whole text; among those left, one of the same kind and first line in
        // both is a changed object (a function's body), the rest added or dropped.
        let others = Self.match(old.others, new.others) { $0.kind + "\0" + $0.definition }
        changes += Self.definitionChanges(others.dropped, others.added, kind: { SchemaObjectKind(rawValue: $0.kind) },
                                          key: { $0.kind + "\0" + $0.name }, name: \.name, table: { _ in nil },
                                          definition: \.definition)

        self.changes = changes.sorted { a, b in
            if a.kind.rank != b.kind.rank { return a.kind.rank < b.kind.rank }
            if a.kind != b.kind { return a.kind.rawValue < b.kind.rawValue }
            let (tableA, tableB) = (key(a.table ?? ""), key(b.table ?? ""))
            if tableA != tableB { return tableA.utf8.lexicographicallyPrecedes(tableB.utf8) }
            let (nameA, nameB) = (key(a.name), key(b.name))
            if nameA != nameB { return nameA.utf8.lexicographicallyPrecedes(nameB.utf8) }
            return a.action.rawValue < b.action.rawValue
        }
    }

    /// Columns added, dropped or changed and constraints added or dropped, of a table in both snapshots.
    private static func tableChanges(_ before: SchemaSnapshot.Table, _ after: SchemaSnapshot.Table,
                                     key: (String) -> String) -> [SchemaChange] {
        var changes: [SchemaChange] = []
        let columns = match(before.columns, after.columns) { key($0.name) }
        changes += columns.added.map { SchemaChange(kind: .column, action: .added, name: $0.name, table: after.name, definition: $0.declaration) }
        changes += columns.dropped.map { SchemaChange(kind: .column, action: .dropped, name: $0.name, table: after.name, definition: $0.declaration) }
        for (old, new) in columns.both {
            var aspects: [SchemaChange.Aspect] = []
            if old.type != new.type { aspects.append(.init("type", old: old.type, new: new.type)) }
            if old.notNull != new.notNull {
                aspects.append(.init("not null", old: old.notNull ? "yes" : "no", new: new.notNull ? "yes" : "no"))
            }
            if old.defaultSQL != new.defaultSQL { aspects.append(.init("default", old: old.defaultSQL, new: new.defaultSQL)) }
            if old.primaryKeyPosition != new.primaryKeyPosition {
                func position(_ value: Int) -> String? { value == 0 ? nil : "column \(value)" }
                aspects.append(.init("primary key", old: position(old.primaryKeyPosition), new: position(new.primaryKeyPosition)))
            }
            if old.collation != new.collation { aspects.append(.init("collation", old: old.collation, new: new.collation)) }
            if !aspects.isEmpty {
                changes.append(SchemaChange(kind: .column, action: .changed, name: new.name, table: after.name, aspects: aspects))
            }
        }
        let constraints = match(before.constraints, after.constraints, key: key)
        changes += constraints.added.map { SchemaChange(kind: .constraint, action: .added, name: $0, table: after.name, definition: $0) }
        changes += constraints.dropped.map { SchemaChange(kind: .constraint, action: .dropped, name: $0, table: after.name, definition: $0) }
        return changes
    }

    /// Objects compared by their definition alone: added, dropped, or changed (`definition`).
    private static func definitionChanges<Object>(_ old: [Object], _ new: [Object], kind: (Object) -> SchemaObjectKind,
                                                  key: (Object) -> String, name: KeyPath<Object, String>,
                                                  table: (Object) -> String?,
                                                  definition: KeyPath<Object, String>) -> [SchemaChange] {
        let matched = match(old, new, key: key)
        var changes: [SchemaChange] = []
        for object in matched.added {
            changes.append(SchemaChange(kind: kind(object), action: .added, name: object[keyPath: name], table: table(object),
                                        definition: object[keyPath: definition]))
        }
        for object in matched.dropped {
            changes.append(SchemaChange(kind: kind(object), action: .dropped, name: object[keyPath: name], table: table(object),
                                        definition: object[keyPath: definition]))
        }
        for (before, after) in matched.both where before[keyPath: definition] != after[keyPath: definition] {
            changes.append(SchemaChange(kind: kind(after), action: .changed, name: after[keyPath: name], table: table(after),
                                        aspects: [.init("definition", old: before[keyPath: definition], new: after[keyPath: definition])]))
        }
        return changes
    }

    /// Pairs the objects of two lists by key: those only in `new`, only in `old`, and in both (in `new`'s order).
    /// A key twice in one list (which a catalog does not produce) pairs its first occurrence; the rest count as
    /// added or dropped, so nothing is silently left out.
    private static func match<Object>(_ old: [Object], _ new: [Object], key: (Object) -> String)
        -> (added: [Object], dropped: [Object], both: [(Object, Object)]) {
        var unmatched: [String: ArraySlice<Int>] = [:]
        for (index, object) in old.enumerated() { unmatched[key(object), default: []].append(index) }
        var matched = Set<Int>()
        var added: [Object] = []
        var both: [(Object, Object)] = []
        for object in new {
            if let index = unmatched[key(object)]?.popFirst() {
                matched.insert(index)
                both.append((old[index], object))
            } else {
                added.append(object)
            }
        }
        let dropped = old.indices.filter { !matched.contains($0) }.map { old[$0] }
        return (added, dropped, both)
    }
}
