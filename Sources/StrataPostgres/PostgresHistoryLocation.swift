import CLibPQ
import StrataCore

/// Which schema holds `strata_history` when the manifest names none. It is found as an unqualified name would be:
/// in the first schema of `search_path` that holds one. So neither a migration that creates a schema earlier on the
/// path (one named after the login role, which the default `"$user", public` puts first) nor an `ALTER DATABASE …
/// SET search_path` that puts another schema first moves it, and no step runs twice for it. With none on the path
/// it is created in the first schema of `search_path`. (A history elsewhere that records this manifest's steps is
/// found before anything runs: `MigrationDatabase.otherHistories`.)
struct PostgresHistoryLocation {
    /// The first schema on the path holding the table, and the first schema of the path.
    static let query = """
        SELECT (SELECT s.name FROM unnest(pg_catalog.current_schemas(false)) WITH ORDINALITY AS s(name, position)
                WHERE pg_catalog.to_regclass(pg_catalog.format('%I.%I', s.name, 'strata_history')) IS NOT NULL
                ORDER BY s.position LIMIT 1),
               pg_catalog.current_schema()
        """

    /// The schema; nil when `search_path` names no schema that exists and the manifest names none.
    let schema: String?

    init(configured: String?, _ result: PostgresResult) {
        schema = configured ?? result.text(row: 0, column: 0) ?? result.text(row: 0, column: 1)
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
