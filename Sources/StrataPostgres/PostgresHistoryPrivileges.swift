import StrataCore

/// What the role Strata connected as may do towards creating `strata_history`, read before anything is created, so
/// that a least-privilege deploy role is told which privilege it lacks, on what, and a GRANT that would give it,
/// rather than the server's "permission denied for database appdb". PostgreSQL 15 gives roles other than the
/// database's owner no CREATE on schema `public`: a deploy role is usually granted CREATE on its schema, or owns
/// one. Creating the table needs CREATE and USAGE on its schema (its guard trigger names a function in it); creating
/// a missing schema needs CREATE on the database.
struct PostgresHistoryPrivileges {
    /// Whether the history's schema exists (else it is to be created).
    let schemaExists: Bool
    /// The names as SQL writes them (`quote_ident`): the role, the database, the schema.
    private let role: String
    private let database: String
    private let schema: String
    /// CREATE on the database: a missing schema may be created.
    private let mayCreateSchema: Bool
    /// CREATE and USAGE on the existing schema.
    private let mayCreateInSchema: Bool
    private let mayUseSchema: Bool

    init(connection: PostgresConnection) throws {
        let row = try connection.rows("""
            SELECT n.oid IS NOT NULL AS schema_exists, pg_catalog.quote_ident(current_user) AS role,
                   pg_catalog.quote_ident(pg_catalog.current_database()) AS database, pg_catalog.quote_ident($1) AS schema,
                   pg_catalog.has_database_privilege(pg_catalog.current_database(), 'CREATE') AS create_schema,
                   coalesce(pg_catalog.has_schema_privilege(n.oid, 'CREATE'), false) AS create_in_schema,
                   coalesce(pg_catalog.has_schema_privilege(n.oid, 'USAGE'), false) AS use_schema
            FROM (SELECT 1) AS one LEFT JOIN pg_catalog.pg_namespace n ON n.nspname = $1
            """, [connection.historySchema]).first
        guard let row else {
            throw DatabaseError(kind: .other, code: nil, message: "the server returned no row for the history's privileges")
        }
        schemaExists = try row.get("schema_exists")
        role = try row.get("role")
        database = try row.get("database")
        schema = try row.get("schema")
        mayCreateSchema = try row.get("create_schema")
        mayCreateInSchema = try row.get("create_in_schema")
        mayUseSchema = try row.get("use_schema")
    }

    /// Throws `.authorization`, naming the privilege, when the role may not create the history where it is to be.
    func confirm() throws {
        guard schemaExists else {
            guard mayCreateSchema else {
                throw DatabaseError(kind: .authorization, code: nil, message: "role \(role) may not create schema \(schema) for strata_history: it lacks CREATE on database \(database) (GRANT CREATE ON DATABASE \(database) TO \(role)); or create the schema for it first (CREATE SCHEMA \(schema) AUTHORIZATION \(role))")
            }
            return
        }
        let lacking = (mayUseSchema ? [] : ["USAGE"]) + (mayCreateInSchema ? [] : ["CREATE"])
        guard lacking.isEmpty else {
            let privileges = lacking.joined(separator: " and ")
            throw DatabaseError(kind: .authorization, code: nil, message: "role \(role) may not create strata_history in schema \(schema): it lacks \(privileges) on schema \(schema) (GRANT \(lacking.joined(separator: ", ")) ON SCHEMA \(schema) TO \(role))")
        }
    }
}
