#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataCore

extension PostgresSchema {
    /// The schema as a value, read in the same snapshot and with the same exclusions as `text()`: tables with their
    /// columns and constraints, indexes that back no constraint, views (materialized too), triggers, and every other
    /// statement of the text (schemas, extensions, types, domains, sequences, partitions, functions, rules,
    /// policies, …) as `others`. Names are schema-qualified; definitions are the server's own deparsed text.
    func snapshot() throws -> SchemaSnapshot {
        try inCatalogSnapshot {
            let sections = try sections()
            let version = connection.serverVersion
            var snapshot = SchemaSnapshot(backend: .postgresql)
            let columns = try snapshotColumns()
            let constraints = try snapshotConstraints()
            let keys = try snapshotKeys(version: version)
            snapshot.tables = try tables(history: Self.history, historyArguments, version: version).map { table in
                SchemaSnapshot.Table(name: table.name, columns: columns[table.name] ?? [],
                                     constraints: constraints[table.name] ?? [], definition: table.text,
                                     foreignKeys: (keys.foreign[table.name] ?? []).sorted(),
                                     uniqueKeys: (keys.unique[table.name] ?? []).sorted {
                                         $0.joined(separator: "\0").utf8.lexicographicallyPrecedes($1.joined(separator: "\0").utf8)
                                     })
            }
            snapshot.indexes = try snapshotIndexes()
            snapshot.views = try snapshotViews()
            snapshot.triggers = try snapshotTriggers(version: version)
            // What the structured lists above hold (foreign keys and NOT VALID checks are in the tables' constraints).
            let covered: Set<String> = ["table", "view", "index", "constraint", "trigger"]
            snapshot.others = sections.filter { !covered.contains($0.kind) }.flatMap { section in
                section.statements.map { SchemaSnapshot.Other(kind: section.kind, definition: $0) }
            }
            return snapshot
        }
    }

    /// The tables `text()` prints, as a `WHERE` over `c` (pg_class) and `n` (its namespace).
    private var tableFilter: String {
        "c.relkind IN ('r', 'p') AND \(Self.userSchemas) AND c.oid <> \(Self.history) AND \(Self.notInExtension("pg_class", "c.oid"))"
    }

    /// Every table's columns in order, by qualified table name.
    private func snapshotColumns() throws -> [String: [SchemaSnapshot.Column]] {
        let generated = connection.serverVersion >= 120_000 ? "a.attgenerated" : "''::\"char\""
        let rows = try connection.rows("""
            SELECT format('%I.%I', n.nspname, c.relname) AS table_name, a.attname::text AS name,
                   format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS not_null,
                   CASE WHEN a.attidentity IN ('a', 'd')
                        THEN 'GENERATED ' || CASE a.attidentity WHEN 'a' THEN 'ALWAYS' ELSE 'BY DEFAULT' END || ' AS IDENTITY'
                        WHEN \(generated) IN ('s', 'v')
                        THEN 'GENERATED ALWAYS AS (' || pg_get_expr(d.adbin, d.adrelid) || ')'
                             || CASE \(generated) WHEN 's' THEN ' STORED' ELSE ' VIRTUAL' END
                        ELSE pg_get_expr(d.adbin, d.adrelid) END AS default_sql,
                   COALESCE((SELECT pg_catalog.array_position(k.conkey, a.attnum) FROM pg_catalog.pg_constraint k
                             WHERE k.conrelid = c.oid AND k.contype = 'p'), 0)::int8 AS pk,
                   NULLIF(\(Self.collate("a.attcollation", over: "a.atttypid")), '') AS collation
            FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
            JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
            WHERE a.attnum > 0 AND NOT a.attisdropped AND \(tableFilter)
            ORDER BY c.oid, a.attnum
            """, historyArguments)
        var columns: [String: [SchemaSnapshot.Column]] = [:]
        for row in rows {
            // `collate` prints ` COLLATE schema.name`: the name alone is kept.
            let collation = try row.get("collation", as: String?.self).map { String($0.dropFirst(" COLLATE ".count)) }
            columns[try row.get("table_name"), default: []].append(SchemaSnapshot.Column(
                name: try row.get("name"), type: try row.get("type"), notNull: try row.get("not_null"),
                defaultSQL: try row.get("default_sql"), primaryKeyPosition: Int(try row.get("pk", as: Int64.self)),
                collation: collation))
        }
        return columns
    }

    /// Every table's constraints but NOT NULL (a constraint from PostgreSQL 18, which the columns carry), sorted, by
    /// qualified table name.
    private func snapshotConstraints() throws -> [String: [String]] {
        let rows = try connection.rows("""
            SELECT format('%I.%I', n.nspname, c.relname) AS table_name,
                   format('CONSTRAINT %I %s', k.conname, pg_get_constraintdef(k.oid)) AS definition
            FROM pg_catalog.pg_constraint k JOIN pg_catalog.pg_class c ON c.oid = k.conrelid
            JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE k.contype IN ('p', 'u', 'c', 'x', 'f') AND \(tableFilter)
            """, historyArguments)
        var constraints: [String: [String]] = [:]
        for row in rows { constraints[try row.get("table_name"), default: []].append(try row.get("definition")) }
        return constraints.mapValues { $0.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) } }
    }

    /// Every table's foreign keys (with both ends' columns) and UNIQUE constraints' columns, by qualified table name.
    /// A key that references a partitioned table is one constraint; the copies PostgreSQL keeps for each of its
    /// partitions on the same referencing table are left out (a partition's own copy of its parent's key is kept).
    private func snapshotKeys(version: Int) throws
        -> (foreign: [String: [SchemaSnapshot.ForeignKey]], unique: [String: [[String]]]) {
        let copy = version >= 110_000
            ? "EXISTS (SELECT 1 FROM pg_catalog.pg_constraint p WHERE p.oid = k.conparentid AND p.conrelid = k.conrelid)" : "false"
        func names(_ numbers: String, of table: String) -> String {
            """
            (SELECT json_agg(a.attname::text ORDER BY u.position) FROM unnest(\(numbers)) WITH ORDINALITY u(number, position)
             JOIN pg_catalog.pg_attribute a ON a.attrelid = \(table) AND a.attnum = u.number)::text
            """
        }
        let rows = try connection.rows("""
            SELECT format('%I.%I', n.nspname, c.relname) AS table_name, k.contype::text AS kind, k.conname::text AS name,
                   \(names("k.conkey", of: "k.conrelid")) AS columns,
                   CASE WHEN k.contype = 'f' THEN format('%I.%I', fn.nspname, f.relname) END AS referenced_table,
                   CASE WHEN k.contype = 'f' THEN \(names("k.confkey", of: "k.confrelid")) END AS referenced_columns
            FROM pg_catalog.pg_constraint k JOIN pg_catalog.pg_class c ON c.oid = k.conrelid
            JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            LEFT JOIN pg_catalog.pg_class f ON f.oid = k.confrelid LEFT JOIN pg_catalog.pg_namespace fn ON fn.oid = f.relnamespace
            WHERE k.contype IN ('f', 'u') AND NOT \(copy) AND \(tableFilter)
            """, historyArguments)
        let decoder = JSONDecoder()
        func list(_ json: String?) throws -> [String] {
            try json.map { try decoder.decode([String].self, from: Data($0.utf8)) } ?? []
        }
        var foreign: [String: [SchemaSnapshot.ForeignKey]] = [:]
        var unique: [String: [[String]]] = [:]
        for row in rows {
            let table: String = try row.get("table_name")
            let columns = try list(try row.get("columns"))
            if try row.get("kind", as: String.self) == "u" {
                unique[table, default: []].append(columns)
            } else {
                foreign[table, default: []].append(SchemaSnapshot.ForeignKey(
                    name: try row.get("name"), columns: columns, referencedTable: try row.get("referenced_table"),
                    referencedColumns: try list(try row.get("referenced_columns"))))
            }
        }
        return (foreign, unique)
    }

    /// The indexes `text()` prints: those that back no constraint, with their key columns as the server prints them.
    private func snapshotIndexes() throws -> [SchemaSnapshot.Index] {
        let rows = try connection.rows("""
            SELECT format('%I.%I', n.nspname, ic.relname) AS name, format('%I.%I', tn.nspname, t.relname) AS table_name,
                   i.indisunique AS is_unique,
                   pg_get_indexdef(i.indexrelid) || ';'
                   || CASE WHEN NOT i.indisvalid AND ic.relkind = 'i' THEN ' -- INVALID: not used by queries' ELSE '' END AS definition,
                   (SELECT json_agg(pg_get_indexdef(i.indexrelid, k, true)
                                    || CASE WHEN i.indoption[k - 1] & 1 = 1 THEN ' DESC' ELSE '' END ORDER BY k)
                    FROM generate_series(1, i.indnkeyatts) k)::text AS columns
            FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid
            JOIN pg_catalog.pg_namespace n ON n.oid = ic.relnamespace
            JOIN pg_catalog.pg_class t ON t.oid = i.indrelid JOIN pg_catalog.pg_namespace tn ON tn.oid = t.relnamespace
            WHERE \(Self.userSchemas) AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint k WHERE k.conindid = i.indexrelid)
              AND i.indrelid <> \(Self.history) AND \(Self.notInExtension("pg_class", "i.indrelid"))
            """, historyArguments)
        return try rows.map { row in
            let json: String = try row.get("columns")
            let columns = try JSONDecoder().decode([String].self, from: Data(json.utf8))
            return SchemaSnapshot.Index(name: try row.get("name"), table: try row.get("table_name"), columns: columns,
                                        unique: try row.get("is_unique"), definition: try row.get("definition"))
        }.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
    }

    /// Views and materialized views, each as `text()` prints it.
    private func snapshotViews() throws -> [SchemaSnapshot.View] {
        try connection.rows("""
            SELECT format('%I.%I', n.nspname, c.relname) AS name,
                   format('CREATE %sVIEW %I.%I%s AS%s', CASE c.relkind WHEN 'm' THEN 'MATERIALIZED ' ELSE '' END,
                          n.nspname, c.relname, COALESCE(' WITH (' || array_to_string(c.reloptions, ', ') || ')', ''),
                          CASE WHEN c.relkind = 'm' AND NOT c.relispopulated
                               THEN rtrim(pg_get_viewdef(c.oid), ';') || E'\\n  WITH NO DATA;' ELSE pg_get_viewdef(c.oid) END)
                   || COALESCE((SELECT string_agg(format(E'\\nALTER VIEW %I.%I ALTER COLUMN %I SET DEFAULT %s;', n.nspname, c.relname,
                                                         a.attname, pg_get_expr(d.adbin, d.adrelid)), '' ORDER BY a.attnum)
                                FROM pg_catalog.pg_attrdef d JOIN pg_catalog.pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
                                WHERE d.adrelid = c.oid), '') AS definition
            FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relkind IN ('v', 'm') AND \(Self.userSchemas) AND \(Self.notInExtension("pg_class", "c.oid"))
            """, .none).map { row in
            SchemaSnapshot.View(name: try row.get("name"), definition: try row.get("definition"))
        }.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
    }

    /// Triggers as `text()` prints them (a partition's copy of its parent's left out), with how they fire.
    private func snapshotTriggers(version: Int) throws -> [SchemaSnapshot.Trigger] {
        let inheritedTrigger = version >= 130_000 ? "t.tgparentid <> 0" : "false"
        return try connection.rows("""
            SELECT t.tgname::text AS name, format('%I.%I', n.nspname, c.relname) AS table_name,
                   pg_get_triggerdef(t.oid) || ';'
                   || \(Self.enabledState("t.tgenabled", alter: "TABLE %I.%I", "TRIGGER %I", "n.nspname, c.relname, t.tgname")) AS definition
            FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
            JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE NOT t.tgisinternal AND NOT \(inheritedTrigger) AND \(Self.userSchemas) AND c.oid <> \(Self.history)
              AND \(Self.notInExtension("pg_class", "c.oid"))
            """, historyArguments).map { row in
            SchemaSnapshot.Trigger(name: try row.get("name"), table: try row.get("table_name"), definition: try row.get("definition"))
        }.sorted { a, b in
            a.table != b.table ? a.table.utf8.lexicographicallyPrecedes(b.table.utf8) : a.name.utf8.lexicographicallyPrecedes(b.name.utf8)
        }
    }
}

extension PostgresConnection {
    /// The user schema as a value (see `SchemaSnapshot`), read in one read-only snapshot (or the caller's
    /// transaction), without Strata's history table, its guard, system schemas and objects extensions made.
    public func schemaSnapshot() throws -> SchemaSnapshot {
        try PostgresSchema(connection: self).snapshot()
    }
}
