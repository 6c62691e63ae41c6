import StrataCore

/// The user schema of a PostgreSQL database as deterministic, sorted text, read from the catalog: so two databases
/// built differently can be compared with `diff`. Covers every schema but the system ones, without Strata's
/// history table (and its guard) and without objects that belong to an extension (the extension is printed).
///
/// Sections, each sorted by byte order, in an order that lets the text apply to an empty database when no object
/// uses one printed in a later section (a function used by a default, a view over a view named after it):
/// schemas, extensions, enum and range types, domains, composite types, sequences, tables (columns with type, collation,
/// NOT NULL, default, generated expression or identity; then PRIMARY KEY, UNIQUE, CHECK and EXCLUDE constraints;
/// row-level security switches), partitions and inheritance, sequence ownership, views, indexes, index partitions,
/// foreign keys and NOT VALID checks, replica identity and clustering, functions and procedures, triggers, event
/// triggers, rules, policies, extended statistics. Names are schema-qualified: the text is read with an empty
/// `search_path`, as `pg_dump` reads it, so it does not depend on the connection's.
struct PostgresSchema {
    let connection: PostgresConnection

    /// Namespaces that hold user objects.
    static let userSchemas = """
        n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp%'
        """

    /// SQL true when the object `oid` of `catalog` belongs to an extension: `CREATE EXTENSION` makes it, so it
    /// is not printed on its own.
    /// SQL text that follows an object's definition with the statement setting how it fires when not the
    /// default (`D` disabled, `R` replica, `A` always; `O` prints nothing), as `pg_dump` writes it:
    /// `ALTER <alter> {DISABLE | ENABLE REPLICA | ENABLE ALWAYS} <object>;`, `arguments` filling the `%I`s.
    static func enabledState(_ column: String, alter: String, _ object: String, _ arguments: String) -> String {
        func statement(_ verb: String) -> String {
            let text = ["ALTER \(alter)", verb, object].filter { !$0.isEmpty }.joined(separator: " ")
            return "format(E'\\n\(text);', \(arguments))"
        }
        return "CASE \(column) WHEN 'D' THEN \(statement("DISABLE")) WHEN 'R' THEN \(statement("ENABLE REPLICA"))"
            + " WHEN 'A' THEN \(statement("ENABLE ALWAYS")) ELSE '' END"
    }

    static func notInExtension(_ catalog: String, _ oid: String) -> String {
        """
        NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend x_dep WHERE x_dep.classid = 'pg_catalog.\(catalog)'::pg_catalog.regclass
                    AND x_dep.objid = \(oid) AND x_dep.deptype = 'e')
        """
    }

    /// SQL for ` COLLATE schema.name` when `collation` is not the default collation of `type`, else ''.
    static func collate(_ collation: String, over type: String) -> String {
        """
        CASE WHEN \(collation) <> 0 AND \(collation) <> (SELECT ty.typcollation FROM pg_catalog.pg_type ty WHERE ty.oid = \(type))
             THEN (SELECT format(' COLLATE %I.%I', cn.nspname, co.collname) FROM pg_catalog.pg_collation co
                   JOIN pg_catalog.pg_namespace cn ON cn.oid = co.collnamespace WHERE co.oid = \(collation))
             ELSE '' END
        """
    }

    /// Reads the text in one read-only snapshot with an empty `search_path`, so every name outside `pg_catalog`
    /// comes out qualified; a caller's transaction is used as it is, and its `search_path` put back.
    func text() throws -> String {
        try inCatalogSnapshot {
            let statements = try sections().flatMap(\.statements)
            return statements.joined(separator: "\n\n") + (statements.isEmpty ? "" : "\n")
        }
    }

    /// Runs `body` in one read-only snapshot with an empty `search_path` (see `text()`).
    func inCatalogSnapshot<T>(_ body: () throws -> T) throws -> T {
        if connection.isInTransaction {
            let saved = try connection.scalar("SELECT pg_catalog.current_setting('search_path')", as: String.self) ?? ""
            try connection.execute("SELECT pg_catalog.set_config('search_path', '', false)")
            defer { _ = try? connection.execute("SELECT pg_catalog.set_config('search_path', $1, false)", [saved]) }
            return try body()
        }
        return try connection.withTransaction {
            try connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            try connection.execute("SELECT pg_catalog.set_config('search_path', '', true)")
            return try body()
        }
    }

    /// SQL for the history table's oid (0 when absent), with `historyArguments` as its `$1` and `$2`: its
    /// constraints, indexes, triggers, rules and policies are Strata's. Where the connection's history schema holds
    /// none, Strata's history elsewhere (a `strata_history` its guard trigger is on, in a schema outside
    /// `search_path`) is Strata's all the same: never part of the user's schema.
    static let history = """
        COALESCE(pg_catalog.to_regclass(pg_catalog.format('%I.%I', $2::text, $1::text)),
                 (SELECT hc.oid FROM pg_catalog.pg_class hc JOIN pg_catalog.pg_trigger ht ON ht.tgrelid = hc.oid
                  WHERE hc.relname = $1::text AND ht.tgname = 'strata_history_guard' ORDER BY hc.oid LIMIT 1), 0)
        """
    var historyArguments: StatementArguments { [PostgresHistory.table, connection.historySchema] }

    /// The statements of the text, by section (`kind`: `schema`, `table`, `view`, `index`, `constraint` for foreign
    /// keys and NOT VALID checks, `function`, `trigger`, …), in the order the text prints them. Inside
    /// `inCatalogSnapshot`.
    func sections() throws -> [(kind: String, statements: [String])] {
        let version = connection.serverVersion
        let history = Self.history
        let historyArguments = self.historyArguments
        var sections: [(kind: String, statements: [String])] = []

        // `public` is in every database. The history's schema is Strata's when it holds nothing else.
        sections.append(("schema", try lines("""
            SELECT format('CREATE SCHEMA %I;', n.nspname) FROM pg_catalog.pg_namespace n
            WHERE \(Self.userSchemas) AND n.nspname <> 'public' AND \(Self.notInExtension("pg_namespace", "n.oid"))
              AND NOT (n.oid = COALESCE((SELECT hc.relnamespace FROM pg_catalog.pg_class hc WHERE hc.oid = \(history)), 0)
                       AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.relnamespace = n.oid
                                       AND c.relname NOT IN ('strata_history', 'strata_history_pkey'))
                       AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_proc p WHERE p.pronamespace = n.oid
                                       AND p.proname <> 'strata_history_guard')
                       AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_type t WHERE t.typnamespace = n.oid AND t.typrelid = 0
                                       AND t.typname <> '_strata_history'))
            """, historyArguments)))
        // Extensions made by initdb (plpgsql) are in every database; pg_dump leaves them out too.
        sections.append(("extension", try lines("""
            SELECT format('CREATE EXTENSION %I WITH SCHEMA %I VERSION %L;', x.extname, n.nspname, x.extversion)
            FROM pg_catalog.pg_extension x JOIN pg_catalog.pg_namespace n ON n.oid = x.extnamespace
            WHERE x.oid >= 16384
            """)))
        let types = """
            FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
            WHERE \(Self.userSchemas) AND \(Self.notInExtension("pg_type", "t.oid"))
            """
        sections.append(("type", try lines("""
            SELECT format('CREATE TYPE %I.%I AS ENUM (%s);', n.nspname, t.typname,
                          (SELECT string_agg(quote_literal(e.enumlabel), ', ' ORDER BY e.enumsortorder)
                           FROM pg_catalog.pg_enum e WHERE e.enumtypid = t.oid))
            \(types) AND t.typtype = 'e'
            """)))
        sections.append(("type", try lines("""
            SELECT format('CREATE TYPE %I.%I AS RANGE (SUBTYPE = %s%s%s%s%s);', n.nspname, t.typname,
                          format_type(r.rngsubtype, NULL),
                          CASE WHEN NOT oc.opcdefault THEN format(', SUBTYPE_OPCLASS = %I.%I', ocn.nspname, oc.opcname) ELSE '' END,
                          replace(\(Self.collate("r.rngcollation", over: "r.rngsubtype")), ' COLLATE ', ', COLLATION = '),
                          CASE WHEN r.rngcanonical::oid <> 0 THEN ', CANONICAL = ' || r.rngcanonical::text ELSE '' END,
                          CASE WHEN r.rngsubdiff::oid <> 0 THEN ', SUBTYPE_DIFF = ' || r.rngsubdiff::text ELSE '' END)
            FROM pg_catalog.pg_range r JOIN pg_catalog.pg_type t ON t.oid = r.rngtypid
            JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
            JOIN pg_catalog.pg_opclass oc ON oc.oid = r.rngsubopc JOIN pg_catalog.pg_namespace ocn ON ocn.oid = oc.opcnamespace
            WHERE \(Self.userSchemas) AND \(Self.notInExtension("pg_type", "t.oid"))
            """)))
        // Valid CHECKs in the statement; a NOT VALID one cannot be declared by CREATE DOMAIN, so it is added after.
        sections.append(("domain", try lines("""
            SELECT format('CREATE DOMAIN %I.%I AS %s%s%s%s%s;%s', n.nspname, t.typname, format_type(t.typbasetype, t.typtypmod),
                          \(Self.collate("t.typcollation", over: "t.typbasetype")),
                          COALESCE(' DEFAULT ' || pg_get_expr(t.typdefaultbin, 0), ''),
                          CASE WHEN t.typnotnull THEN ' NOT NULL' ELSE '' END,
                          (SELECT string_agg(format(' CONSTRAINT %I %s', k.conname, pg_get_constraintdef(k.oid)), '' ORDER BY k.conname COLLATE "C")
                           FROM pg_catalog.pg_constraint k WHERE k.contypid = t.oid AND k.contype = 'c' AND k.convalidated),
                          (SELECT string_agg(format(E'\\nALTER DOMAIN %I.%I ADD CONSTRAINT %I %s;', n.nspname, t.typname, k.conname,
                                                    pg_get_constraintdef(k.oid)), '' ORDER BY k.conname COLLATE "C")
                           FROM pg_catalog.pg_constraint k WHERE k.contypid = t.oid AND k.contype = 'c' AND NOT k.convalidated))
            \(types) AND t.typtype = 'd'
            """)))
        sections.append(("type", try lines("""
            SELECT format('CREATE TYPE %I.%I AS (%s);', n.nspname, t.typname,
                          (SELECT string_agg(format('%I %s%s', a.attname, format_type(a.atttypid, a.atttypmod),
                                                    \(Self.collate("a.attcollation", over: "a.atttypid"))), ', ' ORDER BY a.attnum)
                           FROM pg_catalog.pg_attribute a WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped))
            \(types) AND t.typtype = 'c' AND (SELECT c.relkind FROM pg_catalog.pg_class c WHERE c.oid = t.typrelid) = 'c'
            """)))
        // An identity column's sequence is part of the column.
        sections.append(("sequence", try lines("""
            SELECT format('CREATE %sSEQUENCE %I.%I AS %s INCREMENT %s MINVALUE %s MAXVALUE %s START %s CACHE %s%s;',
                          CASE WHEN c.relpersistence = 'u' THEN 'UNLOGGED ' ELSE '' END,
                          n.nspname, c.relname, format_type(s.seqtypid, NULL), s.seqincrement, s.seqmin, s.seqmax,
                          s.seqstart, s.seqcache, CASE WHEN s.seqcycle THEN ' CYCLE' ELSE '' END)
            FROM pg_catalog.pg_sequence s JOIN pg_catalog.pg_class c ON c.oid = s.seqrelid
            JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE \(Self.userSchemas) AND \(Self.notInExtension("pg_class", "c.oid"))
              AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
                              AND d.objid = c.oid AND d.deptype = 'i')
            """)))
        sections.append(("table", try tables(history: history, historyArguments, version: version).map(\.text)))
        sections.append(("partition", try lines("""
            SELECT CASE WHEN c.relispartition
                        THEN format('ALTER TABLE ONLY %I.%I ATTACH PARTITION %I.%I %s;', pn.nspname, p.relname, n.nspname, c.relname,
                                    pg_get_expr(c.relpartbound, c.oid))
                        ELSE format('ALTER TABLE %I.%I INHERIT %I.%I;', n.nspname, c.relname, pn.nspname, p.relname) END
            FROM pg_catalog.pg_inherits i JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
            JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_catalog.pg_class p ON p.oid = i.inhparent JOIN pg_catalog.pg_namespace pn ON pn.oid = p.relnamespace
            WHERE c.relkind IN ('r', 'p') AND \(Self.userSchemas) AND \(Self.notInExtension("pg_class", "c.oid"))
            """)))
        sections.append(("sequence owner", try lines("""
            SELECT format('ALTER SEQUENCE %I.%I OWNED BY %I.%I.%I;', n.nspname, s.relname, tn.nspname, t.relname, a.attname)
            FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_class s ON s.oid = d.objid AND s.relkind = 'S'
            JOIN pg_catalog.pg_namespace n ON n.oid = s.relnamespace
            JOIN pg_catalog.pg_class t ON t.oid = d.refobjid JOIN pg_catalog.pg_namespace tn ON tn.oid = t.relnamespace
            JOIN pg_catalog.pg_attribute a ON a.attrelid = t.oid AND a.attnum = d.refobjsubid
            WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
              AND d.deptype = 'a' AND \(Self.userSchemas) AND \(Self.notInExtension("pg_class", "s.oid"))
            """)))
        // Views come before indexes: a materialized view can have indexes. pg_get_viewdef's text ends in ';'.
        sections.append(("view", try lines("""
            SELECT format('CREATE %sVIEW %I.%I%s AS%s%s', CASE c.relkind WHEN 'm' THEN 'MATERIALIZED ' ELSE '' END,
                          n.nspname, c.relname, COALESCE(' WITH (' || array_to_string(c.reloptions, ', ') || ')', ''),
                          CASE WHEN c.relkind = 'm' AND NOT c.relispopulated
                               THEN rtrim(pg_get_viewdef(c.oid), ';') || E'\\n  WITH NO DATA;' ELSE pg_get_viewdef(c.oid) END,
                          (SELECT string_agg(format(E'\\nALTER VIEW %I.%I ALTER COLUMN %I SET DEFAULT %s;', n.nspname, c.relname,
                                                    a.attname, pg_get_expr(d.adbin, d.adrelid)), '' ORDER BY a.attnum)
                           FROM pg_catalog.pg_attrdef d JOIN pg_catalog.pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
                           WHERE d.adrelid = c.oid))
            FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relkind IN ('v', 'm') AND \(Self.userSchemas) AND \(Self.notInExtension("pg_class", "c.oid"))
            """)))
        // Indexes that back a constraint are part of the constraint. An index a killed CREATE INDEX CONCURRENTLY left
        // INVALID is kept up to date (a unique one still refuses duplicates) but never used by queries: marked.
        sections.append(("index", try lines("""
            SELECT pg_get_indexdef(i.indexrelid) || ';'
                   || CASE WHEN NOT i.indisvalid AND c.relkind = 'i' THEN ' -- INVALID: not used by queries' ELSE '' END
            FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid
            JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE \(Self.userSchemas) AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint k WHERE k.conindid = i.indexrelid)
              AND i.indrelid <> \(history) AND \(Self.notInExtension("pg_class", "i.indrelid"))
            """, historyArguments)))
        sections.append(("index partition", try lines("""
            SELECT format('ALTER INDEX %I.%I ATTACH PARTITION %I.%I;', pn.nspname, p.relname, n.nspname, c.relname)
            FROM pg_catalog.pg_inherits i JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
            JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_catalog.pg_class p ON p.oid = i.inhparent JOIN pg_catalog.pg_namespace pn ON pn.oid = p.relnamespace
            WHERE c.relkind IN ('i', 'I') AND \(Self.userSchemas)
            """)))
        // After every table and index: a foreign key needs the key it references. A NOT VALID check declared in
        // CREATE TABLE would be made valid, so it is added here (once, where it is declared: children inherit it).
        // A foreign key a partition inherits (or its copies for a referenced partitioned table) comes with its parent.
        let inheritedForeignKey = version >= 110_000 ? "k.conparentid <> 0" : "false"
        sections.append(("constraint", try lines("""
            SELECT format('ALTER TABLE %I.%I ADD CONSTRAINT %I %s;', n.nspname, c.relname, k.conname, pg_get_constraintdef(k.oid))
            FROM pg_catalog.pg_constraint k JOIN pg_catalog.pg_class c ON c.oid = k.conrelid
            JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE ((k.contype = 'f' AND NOT \(inheritedForeignKey)) OR (k.contype = 'c' AND NOT k.convalidated AND k.conislocal))
              AND \(Self.userSchemas) AND c.oid <> \(history) AND \(Self.notInExtension("pg_class", "c.oid"))
            """, historyArguments)))
        sections.append(("table option", try lines("""
            SELECT format('ALTER TABLE ONLY %I.%I REPLICA IDENTITY %s;', n.nspname, c.relname,
                          CASE c.relreplident WHEN 'f' THEN 'FULL' WHEN 'n' THEN 'NOTHING'
                               ELSE COALESCE((SELECT 'USING INDEX ' || quote_ident(ic.relname) FROM pg_catalog.pg_index x
                                              JOIN pg_catalog.pg_class ic ON ic.oid = x.indexrelid
                                              WHERE x.indrelid = c.oid AND x.indisreplident), 'NOTHING') END)
            FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relkind IN ('r', 'p', 'm') AND c.relreplident <> 'd' AND \(Self.userSchemas) AND c.oid <> \(history)
              AND \(Self.notInExtension("pg_class", "c.oid"))
            UNION ALL
            SELECT format('ALTER TABLE ONLY %I.%I CLUSTER ON %I;', n.nspname, c.relname, ic.relname)
            FROM pg_catalog.pg_index x JOIN pg_catalog.pg_class c ON c.oid = x.indrelid
            JOIN pg_catalog.pg_class ic ON ic.oid = x.indexrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE x.indisclustered AND \(Self.userSchemas) AND c.oid <> \(history) AND \(Self.notInExtension("pg_class", "c.oid"))
            """, historyArguments)))
        // A range type's constructors are made with it (an internal dependency).
        sections.append(("function", try lines("""
            SELECT pg_get_functiondef(p.oid) || ';'
            FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
            WHERE \(Self.userSchemas) AND p.prokind IN ('f', 'p') AND \(Self.notInExtension("pg_proc", "p.oid"))
              AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d WHERE d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
                              AND d.objid = p.oid AND d.deptype = 'i')
              AND NOT (p.proname IN ('strata_history_guard', 'strata_history_guard_truncate')
                       AND p.pronamespace = COALESCE((SELECT hc.relnamespace FROM pg_catalog.pg_class hc WHERE hc.oid = \(history)), 0))
            """, historyArguments)))
        // A trigger a partition inherits from its parent's comes with the parent's.
        let inheritedTrigger = version >= 130_000 ? "t.tgparentid <> 0" : "false"
        sections.append(("trigger", try lines("""
            SELECT pg_get_triggerdef(t.oid) || ';'
                   || \(Self.enabledState("t.tgenabled", alter: "TABLE %I.%I", "TRIGGER %I", "n.nspname, c.relname, t.tgname"))
            FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
            JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE NOT t.tgisinternal AND NOT \(inheritedTrigger) AND \(Self.userSchemas) AND c.oid <> \(history)
              AND \(Self.notInExtension("pg_class", "c.oid"))
            """, historyArguments)))
        sections.append(("event trigger", try lines("""
            SELECT format('CREATE EVENT TRIGGER %I ON %s%s EXECUTE FUNCTION %I.%I();', e.evtname, e.evtevent,
                          CASE WHEN e.evttags IS NOT NULL
                               THEN ' WHEN TAG IN (' || (SELECT string_agg(quote_literal(tag), ', ' ORDER BY tag COLLATE "C")
                                                          FROM unnest(e.evttags) tag) || ')' ELSE '' END,
                          n.nspname, p.proname)
                   || \(Self.enabledState("e.evtenabled", alter: "EVENT TRIGGER %I", "", "e.evtname"))
            FROM pg_catalog.pg_event_trigger e JOIN pg_catalog.pg_proc p ON p.oid = e.evtfoid
            JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
            WHERE \(Self.notInExtension("pg_event_trigger", "e.oid"))
            """)))
        // A view's _RETURN rule is the view itself. pg_get_ruledef's text ends in ';'.
        sections.append(("rule", try lines("""
            SELECT pg_get_ruledef(r.oid)
                   || \(Self.enabledState("r.ev_enabled", alter: "TABLE %I.%I", "RULE %I", "n.nspname, c.relname, r.rulename"))
            FROM pg_catalog.pg_rewrite r JOIN pg_catalog.pg_class c ON c.oid = r.ev_class
            JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE r.rulename <> '_RETURN' AND \(Self.userSchemas) AND c.oid <> \(history)
              AND \(Self.notInExtension("pg_class", "c.oid"))
            """, historyArguments)))
        sections.append(("policy", try lines("""
            SELECT format('CREATE POLICY %I ON %I.%I AS %s FOR %s TO %s%s%s;', p.polname, n.nspname, c.relname,
                          CASE WHEN p.polpermissive THEN 'PERMISSIVE' ELSE 'RESTRICTIVE' END,
                          CASE p.polcmd WHEN 'r' THEN 'SELECT' WHEN 'a' THEN 'INSERT' WHEN 'w' THEN 'UPDATE' WHEN 'd' THEN 'DELETE' ELSE 'ALL' END,
                          (SELECT string_agg(role, ', ' ORDER BY role COLLATE "C")
                           FROM (SELECT CASE WHEN r = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(r)) END AS role
                                 FROM unnest(p.polroles) r) roles),
                          COALESCE(' USING (' || pg_get_expr(p.polqual, p.polrelid) || ')', ''),
                          COALESCE(' WITH CHECK (' || pg_get_expr(p.polwithcheck, p.polrelid) || ')', ''))
            FROM pg_catalog.pg_policy p JOIN pg_catalog.pg_class c ON c.oid = p.polrelid
            JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE \(Self.userSchemas) AND c.oid <> \(history) AND \(Self.notInExtension("pg_class", "c.oid"))
            """, historyArguments)))
        sections.append(("statistics", try lines("""
            SELECT pg_get_statisticsobjdef(s.oid) || ';'
            FROM pg_catalog.pg_statistic_ext s JOIN pg_catalog.pg_namespace n ON n.oid = s.stxnamespace
            WHERE \(Self.userSchemas) AND \(Self.notInExtension("pg_statistic_ext", "s.oid"))
            """)))
        return sections
    }

    /// One `CREATE TABLE` per table and partitioned table, sorted by name, each followed by its row-level security
    /// switches. Foreign keys and NOT VALID checks are added in a later section; partitions are attached there too.
    func tables(history: String, _ historyArguments: StatementArguments, version: Int) throws -> [(name: String, text: String)] {
        let accessMethod = version >= 120_000
            ? "(SELECT am.amname FROM pg_catalog.pg_am am WHERE am.oid = c.relam AND am.amname <> 'heap')" : "NULL::name"
        let tables = try connection.rows("""
            SELECT c.oid::int8 AS oid, format('%I.%I', n.nspname, c.relname) AS name, c.relpersistence = 'u' AS unlogged,
                   CASE WHEN c.relkind = 'p' THEN pg_get_partkeydef(c.oid) END AS partition_key, \(accessMethod)::text AS access_method,
                   array_to_string(c.reloptions, ', ') AS options, c.relrowsecurity AS rls, c.relforcerowsecurity AS force_rls
            FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relkind IN ('r', 'p') AND \(Self.userSchemas) AND c.oid <> \(history)
              AND \(Self.notInExtension("pg_class", "c.oid"))
            """, historyArguments)
        // A column generated from an expression keeps it in pg_attrdef, where a default is: told apart by attgenerated.
        let generated = version >= 120_000 ? "a.attgenerated" : "''::\"char\""
        // Identity options PostgreSQL would not choose itself (the sequence's own name included).
        let typeMaximum = "CASE s.seqtypid WHEN 'int2'::regtype THEN 32767 WHEN 'int4'::regtype THEN 2147483647 ELSE 9223372036854775807 END"
        let identityOptions = """
            (SELECT concat_ws(' ',
                        CASE WHEN sc.relname <> c.relname || '_' || a.attname || '_seq' OR sc.relnamespace <> c.relnamespace
                             THEN format('SEQUENCE NAME %I.%I', sn.nspname, sc.relname) END,
                        CASE WHEN s.seqincrement <> 1 THEN 'INCREMENT BY ' || s.seqincrement END,
                        CASE WHEN s.seqmin <> CASE WHEN s.seqincrement > 0 THEN 1 ELSE -\(typeMaximum) - 1 END
                             THEN 'MINVALUE ' || s.seqmin END,
                        CASE WHEN s.seqmax <> CASE WHEN s.seqincrement > 0 THEN \(typeMaximum) ELSE -1 END
                             THEN 'MAXVALUE ' || s.seqmax END,
                        CASE WHEN s.seqstart <> CASE WHEN s.seqincrement > 0 THEN s.seqmin ELSE s.seqmax END
                             THEN 'START WITH ' || s.seqstart END,
                        CASE WHEN s.seqcache <> 1 THEN 'CACHE ' || s.seqcache END,
                        CASE WHEN s.seqcycle THEN 'CYCLE' END)
             FROM pg_catalog.pg_depend dep JOIN pg_catalog.pg_sequence s ON s.seqrelid = dep.objid
             JOIN pg_catalog.pg_class sc ON sc.oid = s.seqrelid JOIN pg_catalog.pg_namespace sn ON sn.oid = sc.relnamespace
             WHERE dep.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND dep.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
               AND dep.refobjid = a.attrelid AND dep.refobjsubid = a.attnum AND dep.deptype = 'i')
            """
        var statements: [(name: String, text: String)] = []
        for table in tables {
            let oid: Int64 = try table.get("oid")
            let name: String = try table.get("name")
            let columns = try lines("""
                SELECT format('    %I %s%s%s%s', a.attname, format_type(a.atttypid, a.atttypmod),
                              \(Self.collate("a.attcollation", over: "a.atttypid")),
                              CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END,
                              CASE WHEN a.attidentity IN ('a', 'd')
                                   THEN ' GENERATED ' || CASE a.attidentity WHEN 'a' THEN 'ALWAYS' ELSE 'BY DEFAULT' END || ' AS IDENTITY'
                                        || COALESCE(' (' || NULLIF(\(identityOptions), '') || ')', '')
                                   WHEN \(generated) IN ('s', 'v')
                                   THEN ' GENERATED ALWAYS AS (' || pg_get_expr(d.adbin, d.adrelid) || ')'
                                        || CASE \(generated) WHEN 's' THEN ' STORED' ELSE ' VIRTUAL' END
                                   ELSE COALESCE(' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid), '') END)
                FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
                LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
                WHERE a.attrelid = $1::int8::oid AND a.attnum > 0 AND NOT a.attisdropped
                ORDER BY a.attnum
                """, [oid], sorted: false)
            // Constraint triggers are printed as triggers; NOT NULL (a constraint from PostgreSQL 18) with the column.
            let constraints = try lines("""
                SELECT format('    CONSTRAINT %I %s', conname, pg_get_constraintdef(oid))
                FROM pg_catalog.pg_constraint WHERE conrelid = $1::int8::oid AND contype IN ('p', 'u', 'c', 'x') AND convalidated
                """, [oid])
            var text = "CREATE \(try table.get("unlogged", as: Bool.self) ? "UNLOGGED " : "")TABLE \(name) (\n"
                + (columns + constraints).joined(separator: ",\n") + "\n)"
            if let key = try table.get("partition_key", as: String?.self) { text += " PARTITION BY \(key)" }
            if let method = try table.get("access_method", as: String?.self) { text += " USING \(method)" }
            if let options = try table.get("options", as: String?.self) { text += " WITH (\(options))" }
            text += ";"
            if try table.get("rls", as: Bool.self) { text += "\nALTER TABLE \(name) ENABLE ROW LEVEL SECURITY;" }
            if try table.get("force_rls", as: Bool.self) { text += "\nALTER TABLE \(name) FORCE ROW LEVEL SECURITY;" }
            statements.append((name, text))
        }
        return statements.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
    }

    /// The first column of every row, sorted (byte order, whatever the server's collation) unless told otherwise.
    func lines(_ sql: String, _ arguments: StatementArguments = .none, sorted: Bool = true) throws -> [String] {
        let values = try connection.rows(sql, arguments).compactMap { row in try row.get(0, as: String?.self) }
        return sorted ? values.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) } : values
    }
}
