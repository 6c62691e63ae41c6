import CSQLite
import StrataCore

extension Database {
    /// The main database's user schema as a value, read in one transaction (or the caller's): every table, index,
    /// view and trigger of `sqlite_schema` but SQLite's own (`sqlite_%`, the indexes it makes for UNIQUE and PRIMARY
    /// KEY constraints, which show as the table's constraints and keys) and Strata's history table with whatever
    /// belongs to it. Definitions are normalised (`SchemaText`); see `SchemaDifference` for how they compare.
    public func schemaSnapshot() throws -> SchemaSnapshot {
        if isInTransaction { return try readSchemaSnapshot() }
        return try transaction(.deferred) { try $0.readSchemaSnapshot() }
    }

    private func readSchemaSnapshot() throws -> SchemaSnapshot {
        let objects = try query("""
            SELECT type, name, tbl_name, sql FROM main.sqlite_schema
            WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND tbl_name <> ? COLLATE NOCASE
            ORDER BY name
            """, [HistoryStore.table]).all()
        var snapshot = SchemaSnapshot(backend: .sqlite)
        for object in objects {
            let (type, name, table, sql): (String, String, String, String) =
                (try object.get(0), try object.get(1), try object.get(2), try object.get(3))
            let definition = SchemaText.normalized(sql)
            switch type {
            case "table":
                snapshot.tables.append(SchemaSnapshot.Table(name: name, columns: try snapshotColumns(of: name),
                                                            constraints: try snapshotConstraints(of: name, sql: sql),
                                                            definition: definition,
                                                            foreignKeys: try snapshotForeignKeys(of: name),
                                                            uniqueKeys: try snapshotUniqueKeys(of: name)))
            case "index":
                snapshot.indexes.append(try snapshotIndex(name, on: table, definition: definition))
            case "view":
                snapshot.views.append(SchemaSnapshot.View(name: name, definition: definition))
            case "trigger":
                snapshot.triggers.append(SchemaSnapshot.Trigger(name: name, table: table, definition: definition))
            default:
                // sqlite_schema holds these four types only; another would be a database from a future SQLite,
                // which a comparison must not pass over.
                throw DatabaseError(kind: .other, code: nil,
                                    message: "sqlite_schema holds '\(name)' of type '\(type)', which Strata cannot compare")
            }
        }
        return snapshot
    }

    /// Declared and generated columns (not a virtual table's hidden ones), in order.
    private func snapshotColumns(of table: String) throws -> [SchemaSnapshot.Column] {
        try query("""
            SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_xinfo(?, 'main') WHERE hidden IN (0, 2, 3) ORDER BY cid
            """, [table]).all().map { row in
            let name: String = try row.get(0)
            let collation = mainCollation(of: name, in: table)?.uppercased()
            return SchemaSnapshot.Column(name: name, type: SchemaText.type(try row.get(1)), notNull: try row.get(2),
                                         defaultSQL: try row.get(3, as: String?.self).map(SchemaText.normalized),
                                         primaryKeyPosition: try row.get(4),
                                         collation: collation == "BINARY" ? nil : collation)
        }
    }

    /// A column's collating sequence in the main database (`collation(of:in:)` looks in `temp` first), nil when
    /// SQLite cannot say.
    private func mainCollation(of column: String, in table: String) -> String? {
        var collation: UnsafePointer<CChar>?
        guard sqlite3_table_column_metadata(handle, "main", table, column, nil, &collation, nil, nil, nil) == SQLITE_OK else { return nil }
        return collation.map { String(cString: $0) }
    }

    /// UNIQUE constraints (from the indexes SQLite made for them) and foreign keys, as SQLite's catalog reports
    /// them, and CHECK constraints, which it keeps in the table's `sql` only.
    private func snapshotConstraints(of table: String, sql: String) throws -> [String] {
        var constraints = SchemaText.checks(sql)
        for index in try query("SELECT name FROM pragma_index_list(?, 'main') WHERE origin = 'u'", [table]).all() {
            let columns: [String] = try query("SELECT name FROM pragma_index_xinfo(?, 'main') WHERE key = 1 ORDER BY seqno",
                                              [try index.get(0, as: String.self)]).all().map { try $0.get(0, as: String?.self) ?? "<expression>" }
            constraints.append("UNIQUE (\(columns.map(SchemaText.name).joined(separator: ", ")))")
        }
        let keys = try query("""
            SELECT id, "table", "from", "to", on_update, on_delete, "match" FROM pragma_foreign_key_list(?, 'main') ORDER BY id, seq
            """, [table]).all()
        var byID: [(id: Int, rows: [Row])] = []
        for key in keys {
            let id: Int = try key.get(0)
            if byID.last?.id == id { byID[byID.count - 1].rows.append(key) } else { byID.append((id, [key])) }
        }
        for (_, rows) in byID {
            guard let first = rows.first else { continue }
            let from = try rows.map { SchemaText.name(try $0.get(2, as: String.self)) }
            // `to` is NULL for every column when the key names the parent's primary key without listing it.
            let to = try rows.compactMap { try $0.get(3, as: String?.self).map(SchemaText.name) }
            var text = "FOREIGN KEY (\(from.joined(separator: ", "))) REFERENCES \(SchemaText.name(try first.get(1, as: String.self)))"
            if !to.isEmpty { text += " (\(to.joined(separator: ", ")))" }
            text += " ON UPDATE \(try first.get(4, as: String.self)) ON DELETE \(try first.get(5, as: String.self))"
            let match: String = try first.get(6)
            if match != "NONE" { text += " MATCH \(match)" }
            constraints.append(text)
        }
        return constraints.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// The foreign keys of `table` with both ends' columns as the tables spell them: SQLite keeps the parent and its
    /// columns as the key wrote them (any case, or no columns for the parent's primary key), so each is looked up.
    private func snapshotForeignKeys(of table: String) throws -> [SchemaSnapshot.ForeignKey] {
        let rows = try query("""
            SELECT id, "table", "from", "to" FROM pragma_foreign_key_list(?, 'main') ORDER BY id, seq
            """, [table]).all()
        var keys: [(id: Int, parent: String, from: [String], to: [String?])] = []
        for row in rows {
            let id: Int = try row.get(0)
            let (from, to): (String, String?) = (try row.get(2), try row.get(3))
            if keys.last?.id == id {
                keys[keys.count - 1].from.append(from)
                keys[keys.count - 1].to.append(to)
            } else {
                keys.append((id, try row.get(1), [from], [to]))
            }
        }
        return try keys.map { key in
            // A parent that is not there (SQLite lets a key name one) keeps the names the key wrote.
            guard let parent = try scalar("SELECT name FROM main.sqlite_schema WHERE type = 'table' AND name = ? COLLATE NOCASE",
                                          [key.parent], as: String.self) else {
                return SchemaSnapshot.ForeignKey(columns: key.from, referencedTable: key.parent, referencedColumns: key.to.compactMap { $0 })
            }
            let columns = try query("SELECT name, pk FROM pragma_table_info(?, 'main') ORDER BY cid", [parent]).all()
                .map { (name: try $0.get(0, as: String.self), primaryKey: try $0.get(1, as: Int.self)) }
            let referenced: [String]
            if key.to.allSatisfy({ $0 == nil }) {
                referenced = columns.filter { $0.primaryKey > 0 }.sorted { $0.primaryKey < $1.primaryKey }.map(\.name)
            } else {
                referenced = key.to.map { name in
                    let name = name ?? ""
                    return columns.first { $0.name.sqliteFolded == name.sqliteFolded }?.name ?? name
                }
            }
            return SchemaSnapshot.ForeignKey(columns: key.from, referencedTable: parent, referencedColumns: referenced)
        }.sorted()
    }

    /// The columns of each UNIQUE constraint of `table` (the indexes SQLite made for them), sorted.
    private func snapshotUniqueKeys(of table: String) throws -> [[String]] {
        try query("SELECT name FROM pragma_index_list(?, 'main') WHERE origin = 'u'", [table]).all().map { index in
            try query("SELECT name FROM pragma_index_xinfo(?, 'main') WHERE key = 1 ORDER BY seqno",
                      [try index.get(0, as: String.self)]).all().map { try $0.get(0, as: String?.self) ?? "<expression>" }
        }.sorted { $0.joined(separator: "\0").utf8.lexicographicallyPrecedes($1.joined(separator: "\0").utf8) }
    }

    /// An index made by `CREATE INDEX`: its key columns (an expression as `<expression>`, ` DESC` when descending),
    /// uniqueness and definition.
    private func snapshotIndex(_ name: String, on table: String, definition: String) throws -> SchemaSnapshot.Index {
        let columns: [String] = try query("""
            SELECT name, "desc" FROM pragma_index_xinfo(?, 'main') WHERE key = 1 ORDER BY seqno
            """, [name]).all().map { row in
            (try row.get(0, as: String?.self) ?? "<expression>") + (try row.get(1, as: Bool.self) ? " DESC" : "")
        }
        let unique = try scalar("SELECT \"unique\" FROM pragma_index_list(?, 'main') WHERE name = ?", [table, name], as: Bool.self) ?? false
        return SchemaSnapshot.Index(name: name, table: table, columns: columns, unique: unique, definition: definition)
    }
}
