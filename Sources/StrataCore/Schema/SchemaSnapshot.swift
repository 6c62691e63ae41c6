#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A database's user schema as a value: its tables (columns and constraints), indexes, views and triggers, each with
/// its definition, read from the catalog by `DatabaseConnection.schemaSnapshot()` or from a file `strata schema
/// --format json` wrote (`SchemaSnapshot.load(path:)`). Two snapshots compare with `SchemaDifference`.
///
/// Strata's history table (with its indexes, triggers and PostgreSQL's guard function) and the database's own
/// objects (SQLite's `sqlite_%` tables and the indexes it makes for `UNIQUE` and `PRIMARY KEY` constraints;
/// PostgreSQL's system schemas, objects an extension made, indexes that back a constraint) are left out: they are
/// not what migrations make. Every list is sorted by name (byte order), columns by position.
public struct SchemaSnapshot: Sendable, Equatable {
    /// The version of the JSON form `jsonData()` writes; a file of another version is refused when loaded.
    public static let formatVersion = 1

    /// The backend the schema was read from.
    public var backend: DatabaseBackend
    /// The tables, sorted by name.
    public var tables: [Table]
    /// The indexes no constraint made, sorted by name.
    public var indexes: [Index]
    /// The views, sorted by name.
    public var views: [View]
    /// The triggers, sorted by name.
    public var triggers: [Trigger]
    /// What a backend has beyond the four kinds above (PostgreSQL: schemas, extensions, types, domains, sequences,
    /// functions, rules, policies, …), compared by their definition text. Always empty on SQLite.
    public var others: [Other]

    /// Creates a snapshot from its parts.
    public init(backend: DatabaseBackend, tables: [Table] = [], indexes: [Index] = [], views: [View] = [],
                triggers: [Trigger] = [], others: [Other] = []) {
        self.backend = backend
        self.tables = tables
        self.indexes = indexes
        self.views = views
        self.triggers = triggers
        self.others = others
    }

    /// A table and what it is made of.
    public struct Table: Sendable, Equatable, Codable {
        /// The table's name.
        public var name: String
        /// Its columns, in declaration order.
        public var columns: [Column]
        /// Its constraints other than the primary key and NOT NULL (which its columns carry), each as one text,
        /// sorted: SQLite's `UNIQUE (…)` and `FOREIGN KEY (…) REFERENCES …` as its catalog reports them; PostgreSQL's
        /// `CONSTRAINT name …` as `pg_get_constraintdef` prints it (primary key included).
        public var constraints: [String]
        /// The whole table as the database describes it (SQLite: its `CREATE TABLE` normalised; PostgreSQL: the
        /// statement `strata schema` prints), which also holds what the columns and constraints do not (CHECKs on
        /// SQLite, generated columns, table options).
        public var definition: String
        /// Its foreign keys with the columns on both ends, sorted (by columns, then parent); what `constraints`
        /// holds as text, for a reader that needs the parts (`SchemaDiagram`). Nil when not known: a snapshot read
        /// from a file an earlier version of Strata wrote, or built without them. Not compared by
        /// `SchemaDifference`, which compares the constraints' text.
        public var foreignKeys: [ForeignKey]?
        /// The column lists of its UNIQUE constraints (not the primary key, not unique indexes: see `indexes`), each
        /// in key order, sorted. Nil when not known, as `foreignKeys`.
        public var uniqueKeys: [[String]]?

        /// Creates a table from its parts.
        public init(name: String, columns: [Column], constraints: [String], definition: String,
                    foreignKeys: [ForeignKey]? = nil, uniqueKeys: [[String]]? = nil) {
            self.name = name
            self.columns = columns
            self.constraints = constraints
            self.definition = definition
            self.foreignKeys = foreignKeys
            self.uniqueKeys = uniqueKeys
        }
    }

    /// A foreign key: `columns` of the table that holds it reference `referencedColumns` of `referencedTable`.
    public struct ForeignKey: Sendable, Comparable, Codable {
        /// The constraint's name (PostgreSQL); nil on SQLite, whose catalog does not keep it.
        public var name: String?
        /// The referencing columns, in key order.
        public var columns: [String]
        /// The referenced table's name as `Table.name` spells it (PostgreSQL: schema-qualified; SQLite: as the table
        /// was created when it exists, else as the key wrote it).
        public var referencedTable: String
        /// The referenced columns, in key order, the parent's primary key when the key named none (SQLite); empty
        /// when that cannot be told (a SQLite key naming no columns of a table that does not exist).
        public var referencedColumns: [String]

        /// Creates a foreign key from its columns and the columns it refers to.
        public init(name: String? = nil, columns: [String], referencedTable: String, referencedColumns: [String]) {
            self.name = name
            self.columns = columns
            self.referencedTable = referencedTable
            self.referencedColumns = referencedColumns
        }

        /// The order snapshots list foreign keys in: by columns, then parent, parent columns and name (byte order).
        public static func < (a: ForeignKey, b: ForeignKey) -> Bool {
            let keys = { (key: ForeignKey) in
                [key.columns.joined(separator: "\0"), key.referencedTable, key.referencedColumns.joined(separator: "\0"), key.name ?? ""]
            }
            return keys(a).lexicographicallyPrecedes(keys(b)) { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        }
    }

    /// A column of a table.
    public struct Column: Sendable, Equatable, Codable {
        /// The column's name.
        public var name: String
        /// The declared type (SQLite: in upper case with spaces normalised; PostgreSQL: as `format_type` prints it).
        public var type: String
        /// Whether the column is declared NOT NULL.
        public var notNull: Bool
        /// The default as SQL text, normalised; PostgreSQL's identity and generated columns say so here
        /// (`GENERATED ALWAYS AS IDENTITY`, `GENERATED ALWAYS AS (…) STORED`). Nil when there is none.
        public var defaultSQL: String?
        /// 1-based position in the primary key, 0 when not part of it.
        public var primaryKeyPosition: Int
        /// The collation when it is not the type's default (SQLite: anything but `BINARY`), else nil.
        public var collation: String?

        /// Creates a column from its parts.
        public init(name: String, type: String, notNull: Bool, defaultSQL: String?, primaryKeyPosition: Int,
                    collation: String? = nil) {
            self.name = name
            self.type = type
            self.notNull = notNull
            self.defaultSQL = defaultSQL
            self.primaryKeyPosition = primaryKeyPosition
            self.collation = collation
        }

        enum CodingKeys: String, CodingKey {
            case name, type, notNull, defaultSQL = "default", primaryKeyPosition, collation
        }

        /// The column as it would be declared: `isbn TEXT NOT NULL DEFAULT ''`.
        public var declaration: String {
            var text = name + (type.isEmpty ? "" : " " + type)
            if let collation { text += " COLLATE " + collation }
            if notNull { text += " NOT NULL" }
            if let defaultSQL {
                text += defaultSQL.hasPrefix("GENERATED ") ? " " + defaultSQL : " DEFAULT " + defaultSQL
            }
            if primaryKeyPosition > 0 { text += " (primary key column \(primaryKeyPosition))" }
            return text
        }
    }

    /// An index that no constraint made.
    public struct Index: Sendable, Equatable, Codable {
        /// The index's name.
        public var name: String
        /// The table it indexes.
        public var table: String
        /// Its key columns in order; an expression is its text (PostgreSQL) or `<expression>` (SQLite, whose
        /// catalog does not keep it apart), a descending column ends in ` DESC`.
        public var columns: [String]
        /// Whether the index is unique.
        public var unique: Bool
        /// The whole `CREATE INDEX` (normalised on SQLite), which also holds a partial index's `WHERE`.
        public var definition: String

        /// Creates an index from its parts.
        public init(name: String, table: String, columns: [String], unique: Bool, definition: String) {
            self.name = name
            self.table = table
            self.columns = columns
            self.unique = unique
            self.definition = definition
        }
    }

    /// A view (PostgreSQL: materialized views too, whose definition says so).
    public struct View: Sendable, Equatable, Codable {
        /// The view's name.
        public var name: String
        /// Its definition, as the database keeps it.
        public var definition: String

        /// Creates a view from its name and definition.
        public init(name: String, definition: String) {
            self.name = name
            self.definition = definition
        }
    }

    /// A trigger on a table or view.
    public struct Trigger: Sendable, Equatable, Codable {
        /// The trigger's name.
        public var name: String
        /// The table or view it is on.
        public var table: String
        /// Its definition, as the database keeps it.
        public var definition: String

        /// Creates a trigger from its parts.
        public init(name: String, table: String, definition: String) {
            self.name = name
            self.table = table
            self.definition = definition
        }
    }

    /// Another object: `kind` says what it is (`function`, `sequence`, …), `name` is the first line of its
    /// definition (a function's signature), which pairs an object with its changed self.
    public struct Other: Sendable, Equatable, Codable {
        /// What the object is (`function`, `sequence`, …).
        public var kind: String
        /// The first line of its definition, which pairs it with its changed self.
        public var name: String
        /// Its whole definition.
        public var definition: String

        /// Creates an object of `kind`; its name is its definition's first line.
        public init(kind: String, definition: String) {
            self.kind = kind
            self.definition = definition
            name = String(definition.prefix { $0 != "\n" })
        }
    }
}

extension SchemaSnapshot {
    /// The key two snapshots match names by: SQLite compares names ASCII case-insensitively, PostgreSQL exactly.
    func key(_ name: String) -> String {
        backend == .sqlite ? name.sqliteFolded : name
    }
}
