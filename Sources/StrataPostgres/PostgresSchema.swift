import StrataCore

/// The user schema of a PostgreSQL database as deterministic, sorted text, read from the catalog: so two databases
/// built differently can be compared with `diff`. Covers every schema but the system ones, without Strata's
/// history table (and its guard): enum types, sequences, tables (columns with types, defaults and NOT NULL, then constraints),
/// indexes, views, functions and procedures, triggers. Names are schema-qualified and quoted as PostgreSQL
/// quotes them.
struct PostgresSchema {
    let connection: PostgresConnection

    /// Namespaces that hold user objects.
    private static let userSchemas = """
        n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp%'
        """

    func text() throws -> String {
        var sections: [String] = []
        sections += try lines("""
            SELECT format('CREATE TYPE %I.%I AS ENUM (%s);', n.nspname, t.typname,
                          (SELECT string_agg(quote_literal(e.enumlabel), ', ' ORDER BY e.enumsortorder)
                           FROM pg_catalog.pg_enum e WHERE e.enumtypid = t.oid))
            FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
            WHERE t.typtype = 'e' AND \(Self.userSchemas)
            """)
        sections += try lines("""
            SELECT format('CREATE SEQUENCE %I.%I AS %s INCREMENT %s MINVALUE %s MAXVALUE %s START %s%s;',
                          n.nspname, c.relname, format_type(s.seqtypid, NULL), s.seqincrement, s.seqmin, s.seqmax,
                          s.seqstart, CASE WHEN s.seqcycle THEN ' CYCLE' ELSE '' END)
            FROM pg_catalog.pg_sequence s JOIN pg_catalog.pg_class c ON c.oid = s.seqrelid
            JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE \(Self.userSchemas)
            """)
        for table in try connection.rows("""
            SELECT c.oid::int8 AS oid, format('%I.%I', n.nspname, c.relname) AS name
            FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relkind IN ('r', 'p') AND \(Self.userSchemas)
              AND NOT (c.relname = $1 AND n.nspname = $2)
            ORDER BY 2
            """, [PostgresHistory.table, connection.historySchema]) {
            let oid: Int64 = try table.get("oid")
            let name: String = try table.get("name")
            let columns = try lines("""
                SELECT format('    %I %s%s%s', a.attname, format_type(a.atttypid, a.atttypmod),
                              CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END,
                              COALESCE(' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid), ''))
                FROM pg_catalog.pg_attribute a
                LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
                WHERE a.attrelid = $1::int8::oid AND a.attnum > 0 AND NOT a.attisdropped
                ORDER BY a.attnum
                """, [oid], sorted: false)
            let constraints = try lines("""
                SELECT format('    CONSTRAINT %I %s', conname, pg_get_constraintdef(oid))
                FROM pg_catalog.pg_constraint WHERE conrelid = $1::int8::oid
                """, [oid])
            sections.append("CREATE TABLE \(name) (\n" + (columns + constraints).joined(separator: ",\n") + "\n);")
        }
        // Indexes that back a constraint are part of the constraint above.
        sections += try lines("""
            SELECT pg_get_indexdef(i.indexrelid) || ';'
            FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid
            JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE \(Self.userSchemas) AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint k WHERE k.conindid = i.indexrelid)
              AND i.indrelid <> COALESCE(to_regclass(format('%I.%I', $2::text, $1::text)), 0)
            """, [PostgresHistory.table, connection.historySchema])
        sections += try lines("""
            SELECT format('CREATE %sVIEW %I.%I AS%s', CASE c.relkind WHEN 'm' THEN 'MATERIALIZED ' ELSE '' END,
                          n.nspname, c.relname, pg_get_viewdef(c.oid))
            FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relkind IN ('v', 'm') AND \(Self.userSchemas)
            """)
        sections += try lines("""
            SELECT pg_get_functiondef(p.oid) || ';'
            FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
            WHERE \(Self.userSchemas) AND p.prokind IN ('f', 'p')
              AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')
              AND NOT (p.proname = 'strata_history_guard' AND n.nspname = $1)
            """, [connection.historySchema])
        sections += try lines("""
            SELECT pg_get_triggerdef(t.oid) || ';'
            FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
            JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE NOT t.tgisinternal AND \(Self.userSchemas) AND NOT (c.relname = $1 AND n.nspname = $2)
            """, [PostgresHistory.table, connection.historySchema])
        return sections.joined(separator: "\n\n") + (sections.isEmpty ? "" : "\n")
    }

    /// The first column of every row, sorted (byte order, whatever the server's collation) unless told otherwise.
    private func lines(_ sql: String, _ arguments: StatementArguments = .none, sorted: Bool = true) throws -> [String] {
        let values = try connection.rows(sql, arguments).compactMap { row in try row.get(0, as: String?.self) }
        return sorted ? values.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) } : values
    }
}
