/// A schema's tables drawn as an entity-relationship diagram, for a reader rather than for a comparison: one entity
/// per table of a `SchemaSnapshot` (in its order) listing its columns (in position order) with their type, primary
/// key, foreign key, UNIQUE and NOT NULL, and one relationship per foreign key, from the referencing table to the
/// referenced one, named by the columns on both ends (`author_id → id`). The same snapshot always gives the same
/// bytes. Strata's history table is not in it, as it is not in the snapshot. A table a key references that is not in
/// the snapshot (SQLite lets a key name a table that does not exist) is drawn as an entity with no columns.
///
/// Every name is written so that it cannot end the token it is in or add anything to the diagram (see `mermaid(_:)`
/// and `dot(_:)` for how); each table is identified by an id of ASCII letters, digits and `_`: its name when that is
/// such a word and no keyword of either language, else the name with every other character made `_` (prefixed
/// with `t_` when it would start with a digit or be a keyword), followed by `_2`, `_3`, … when another table has it
/// (ids are compared ASCII case-insensitively). The real name is then the entity's label (in Mermaid; DOT always
/// labels a node with its table's name), as it is for a name with a `_` that does not stand inside a word.
public enum SchemaDiagram {
    /// Words no bare id may be, compared lowercased: Mermaid's erDiagram keywords and cardinality words, and DOT's
    /// keywords (the DOT output quotes every id, but the ids are the same in both languages).
    static let reservedWords: Set<String> = [
        "erdiagram", "end", "class", "classdef", "style", "subgraph", "direction", "title", "acctitle", "accdescr",
        "one", "only", "many", "zero", "or", "more", "to", "optionally", "u", "o", "pk", "fk", "uk",
        "graph", "digraph", "node", "edge", "strict",
    ]

    /// One table of the diagram (or a table a key references that the snapshot does not hold: `table` nil).
    struct Entity {
        let id: String
        let name: String
        let table: SchemaSnapshot.Table?
    }

    /// One foreign key: from `child` (an index into the entities) to `parent`, with what can be told of it.
    struct Relationship {
        let child: Int
        let parent: Int
        let key: SchemaSnapshot.ForeignKey
        /// Every referencing column is NOT NULL: each child row has exactly one parent (else zero or one).
        let parentRequired: Bool
        /// The referencing columns hold the child's primary key or a UNIQUE constraint's columns: a parent has at
        /// most one child (else any number).
        let childUnique: Bool
        /// The referencing columns are all part of the child's primary key: the child is identified through it.
        let identifying: Bool
        /// The positions of the first column on each end in its entity's columns, nil when not there.
        let childColumn: Int?
        let parentColumn: Int?

        /// `author_id → id`; a key whose parent columns are not known shows the child's alone.
        var label: String {
            let from = key.columns.joined(separator: ", ")
            return key.referencedColumns.isEmpty ? from : from + " → " + key.referencedColumns.joined(separator: ", ")
        }
    }

    /// What both languages draw, with the ids and the facts they share.
    struct Model {
        let entities: [Entity]
        let relationships: [Relationship]
        let key: (String) -> String

        init(_ snapshot: SchemaSnapshot) throws {
            let key = snapshot.key
            self.key = key
            if let table = snapshot.tables.first(where: { $0.foreignKeys == nil }) {
                throw SchemaDiagramError(
                    "the foreign keys of table \(table.name) are not known (a snapshot from a file an earlier version of Strata wrote, or built without them); read the schema from the database again")
            }
            var entities = snapshot.tables.map { Entity(id: "", name: $0.name, table: $0) }
            var index = [String: Int]()
            for (position, table) in snapshot.tables.enumerated() where index[key(table.name)] == nil {
                index[key(table.name)] = position
            }
            var missing = Set<String>()
            for table in snapshot.tables {
                for foreignKey in table.foreignKeys ?? [] where index[key(foreignKey.referencedTable)] == nil {
                    missing.insert(foreignKey.referencedTable)
                }
            }
            for name in missing.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) where index[key(name)] == nil {
                index[key(name)] = entities.count
                entities.append(Entity(id: "", name: name, table: nil))
            }
            let ids = Self.ids(for: entities.map(\.name))
            self.entities = zip(entities, ids).map { Entity(id: $1, name: $0.name, table: $0.table) }

            var relationships: [Relationship] = []
            for (child, table) in snapshot.tables.enumerated() {
                let columns = table.columns.map { key($0.name) }
                let primaryKey = Set(table.columns.filter { $0.primaryKeyPosition > 0 }.map { key($0.name) })
                let uniqueKeys = (table.uniqueKeys ?? []).map { Set($0.map(key)) } + (primaryKey.isEmpty ? [] : [primaryKey])
                for foreignKey in table.foreignKeys ?? [] {
                    guard let parent = index[key(foreignKey.referencedTable)] else { continue }
                    let referencing = foreignKey.columns.map(key)
                    let set = Set(referencing)
                    let parentColumns = self.entities[parent].table?.columns.map { key($0.name) } ?? []
                    relationships.append(Relationship(
                        child: child, parent: parent, key: foreignKey,
                        parentRequired: !referencing.isEmpty && referencing.allSatisfy { name in
                            table.columns.contains { key($0.name) == name && $0.notNull }
                        },
                        childUnique: uniqueKeys.contains { !$0.isEmpty && $0.isSubset(of: set) },
                        identifying: !set.isEmpty && set.isSubset(of: primaryKey),
                        childColumn: referencing.first.flatMap { columns.firstIndex(of: $0) },
                        parentColumn: foreignKey.referencedColumns.first.flatMap { parentColumns.firstIndex(of: key($0)) }))
                }
            }
            self.relationships = relationships
        }

        /// The columns of `table` that some foreign key of it holds, and those that are a UNIQUE constraint alone.
        func keyColumns(of table: SchemaSnapshot.Table) -> (foreign: Set<String>, unique: Set<String>) {
            let foreign = Set((table.foreignKeys ?? []).flatMap { $0.columns.map(key) })
            let unique = Set((table.uniqueKeys ?? []).compactMap { $0.count == 1 ? $0.first.map(key) : nil })
            return (foreign, unique)
        }

        /// One id per name, in order (see `SchemaDiagram`): names that are ids themselves keep them first, so a
        /// table named `a_b` is `a_b` whatever other table `a b` would have become.
        static func ids(for names: [String]) -> [String] {
            var taken = Set<String>()
            var ids = [String?](repeating: nil, count: names.count)
            for (position, name) in names.enumerated() where isBareID(name) && !taken.contains(name.lowercased()) {
                ids[position] = name
                taken.insert(name.lowercased())
            }
            for (position, name) in names.enumerated() where ids[position] == nil {
                var base = String(String.UnicodeScalarView(name.unicodeScalars.map { isIDCharacter($0) ? $0 : "_" }))
                if base.unicodeScalars.first.map({ ("0"..."9").contains($0) }) ?? true || reservedWords.contains(base.lowercased()) {
                    base = "t_" + base
                }
                var id = base
                var suffix = 2
                while taken.contains(id.lowercased()) {
                    id = base + "_\(suffix)"
                    suffix += 1
                }
                ids[position] = id
                taken.insert(id.lowercased())
            }
            return ids.map { $0 ?? "" }
        }

        static func isIDCharacter(_ scalar: Unicode.Scalar) -> Bool {
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "_")
        }

        /// A name that is an id as it is and shows as itself: ASCII letters, digits and `_`, not starting with a
        /// digit, no keyword, and every `_` inside a word (Mermaid renders a name as Markdown, where `_x_` is
        /// emphasis).
        static func isBareID(_ name: String) -> Bool {
            let scalars = Array(name.unicodeScalars)
            guard let first = scalars.first, !("0"..."9").contains(first), scalars.allSatisfy(isIDCharacter),
                  !reservedWords.contains(name.lowercased()) else { return false }
            return scalars.indices.allSatisfy { position in
                scalars[position] != "_" || position > 0 && position + 1 < scalars.count
                    && scalars[position - 1] != "_" && scalars[position + 1] != "_"
            }
        }
    }
}

/// A snapshot that cannot be drawn faithfully: what is missing, naming the table.
public struct SchemaDiagramError: Error, Sendable, CustomStringConvertible {
    /// What is missing, naming the table.
    public let message: String

    /// Creates the error from its message.
    public init(_ message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
