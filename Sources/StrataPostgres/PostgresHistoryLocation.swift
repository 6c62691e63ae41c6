import CLibPQ
import StrataCore

/// Which schema holds `strata_history` when the manifest names none. It is found as an unqualified name would be:
/// in the first schema of `search_path` that holds one. So neither a migration that creates a schema earlier on the
/// path (one named after the login role, which the default `"$user", public` puts first) nor an `ALTER DATABASE …
/// SET search_path` that puts another schema first moves it, and no step runs twice for it. With none on the path
/// the history is created in the first schema of `search_path`, unless one exists in a schema the path does not
/// include: that one is not silently replaced by an empty history; the session is refused, naming it.
struct PostgresHistoryLocation {
    /// The first schema on the path holding the table, the first schema of the path, and every schema holding one.
    static let query = """
        SELECT (SELECT s.name FROM unnest(pg_catalog.current_schemas(false)) WITH ORDINALITY AS s(name, position)
                WHERE pg_catalog.to_regclass(pg_catalog.format('%I.%I', s.name, 'strata_history')) IS NOT NULL
                ORDER BY s.position LIMIT 1),
               pg_catalog.current_schema(),
               (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(n.nspname), ', ' ORDER BY n.nspname)
                FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                WHERE c.relname = 'strata_history' AND c.relkind IN ('r', 'p') AND n.nspname NOT LIKE 'pg\\_temp%')
        """

    /// The schema; nil when `search_path` names no schema that exists and the manifest names none.
    let schema: String?
    /// Why the history cannot be used from this session, when it exists only outside `search_path`.
    let problem: String?

    init(configured: String?, _ result: PostgresResult) {
        let onPath = result.text(row: 0, column: 0), current = result.text(row: 0, column: 1)
        let everywhere = result.text(row: 0, column: 2)
        if let configured {
            (schema, problem) = (configured, nil)
        } else if let onPath {
            (schema, problem) = (onPath, nil)
        } else if let everywhere {
            schema = current
            problem = "strata_history exists in schema \(everywhere), which this session's search_path does not include: Strata will not start a second, empty history in \(current.map(quoteIdentifier) ?? "another schema"). Name the history's schema with <database schema=\"…\">"
        } else {
            (schema, problem) = (current, nil)
        }
    }
}

extension PostgresResult {
    /// A field as text; nil for NULL or a cell that is not there.
    func text(row: Int, column: Int) -> String? {
        guard let handle, row < rowCount, column < columnCount,
              PQgetisnull(handle, Int32(row), Int32(column)) == 0, let value = PQgetvalue(handle, Int32(row), Int32(column))
        else { return nil }
        return String(cString: value)
    }
}
