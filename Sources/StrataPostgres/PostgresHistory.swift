import StrataCore

/// Reads and writes `strata_history` on PostgreSQL, always schema-qualified (a bare name would follow whatever
/// `search_path` a migration set). The columns are SQLite's; `applied_at` is a `timestamptz`, read back in the
/// same ISO-8601 text every backend's records carry.
///
/// The table guards itself: a trigger refuses every insert, update, delete and truncate unless Strata's own
/// write set `strata.history_writer` for it. The lint refuses statements that name the table, but a function
/// body is text to it; the trigger also stops a migration's function, or a seeded table's trigger, that writes
/// the history (what SQLite's authorizer stops there).
struct PostgresHistory: HistoryStorage {
    static let table = "strata_history"

    let connection: PostgresConnection

    private var qualified: String { quoteIdentifier(connection.historySchema) + "." + Self.table }
    private var guardFunction: String { quoteIdentifier(connection.historySchema) + ".strata_history_guard" }

    /// The setting Strata's writes set, transaction-locally, for the guard to let them through.
    static let writerSetting = "strata.history_writer"

    /// Columns added after the first release: a table made before them gets them when it is next written
    /// (`create()`), and reads as if they were empty until then. Older Strata versions name their columns, so they
    /// read and write such a table as before.
    static let addedColumns = ["earlier_checksums", "runner_session"]

    /// The columns of `addedColumns` the table (which exists) has.
    private func presentAddedColumns() throws -> [String] {
        let present = Set(try connection.rows("""
            SELECT attname::text FROM pg_catalog.pg_attribute
            WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped
            """, [qualified]).map { try $0.get(0, as: String.self) })
        return Self.addedColumns.filter(present.contains)
    }

    /// `applied_at` as `HistoryRecord` spells it (UTC, milliseconds, `Z`), and the added columns the table has.
    private func columns() throws -> String {
        """
        kind, identity, checksum, checksum_version,
        to_char(applied_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS applied_at,
        duration_ms, row_count, state, tool_version, applied_sql, runner, error
        """ + (try presentAddedColumns()).map { ", " + $0 }.joined()
    }

    /// Read from the catalog, not with `to_regclass`, which fails in a schema the role has no USAGE on: creating
    /// the table then names the privilege.
    func exists() throws -> Bool {
        try connection.scalar("""
            SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                           WHERE n.nspname = $1 AND c.relname = $2)
            """, [connection.historySchema, Self.table], as: Bool.self) ?? false
    }

    /// Creates the table (and its schema) when absent. Two sessions creating it at once would collide in the
    /// catalog even with `IF NOT EXISTS`, so creation runs under a transaction-level advisory lock. The schema is
    /// created only when missing: `CREATE SCHEMA IF NOT EXISTS` needs CREATE on the database even when the schema
    /// exists, which a deploy role granted only CREATE on its schema lacks. A privilege the role lacks is named
    /// before anything is created (`PostgresHistoryPrivileges`).
    func create() throws {
        if try exists() { return try upgrade() }
        let body = {
            try connection.execute("SELECT pg_advisory_xact_lock(\(PostgresLocks.namespace), \(PostgresLocks.historyCreation))", .none)
            // Another session may have created it while this one waited for the lock.
            guard try !exists() else { return try addMissingColumns() }
            let privileges = try PostgresHistoryPrivileges(connection: connection)
            try privileges.confirm()
            if !privileges.schemaExists {
                try connection.execute("CREATE SCHEMA IF NOT EXISTS \(quoteIdentifier(connection.historySchema))", .none)
            }
            try connection.execute("""
                CREATE TABLE IF NOT EXISTS \(qualified) (
                    kind             text        NOT NULL CHECK (kind IN ('migration', 'seed')),
                    identity         text        NOT NULL,
                    checksum         text        NOT NULL,
                    checksum_version integer     NOT NULL,
                    applied_at       timestamptz NOT NULL,
                    duration_ms      bigint,
                    row_count        bigint,
                    state            text        NOT NULL CHECK (state IN ('applied', 'baseline', 'running', 'failed', 'deleted')),
                    tool_version     text        NOT NULL,
                    applied_sql      text,
                    runner           text,
                    error            text,
                    PRIMARY KEY (kind, identity)
                )
                """, .none)
            try connection.execute("""
                CREATE OR REPLACE FUNCTION \(guardFunction)() RETURNS trigger LANGUAGE plpgsql AS $guard$
                BEGIN
                    IF current_setting('\(Self.writerSetting)', true) IS DISTINCT FROM 'on' THEN
                        RAISE EXCEPTION '\(HistoryRecord.refusal(verb: "writes to", table: Self.table).replacingEvery("'", with: "''"))'
                            USING ERRCODE = 'insufficient_privilege';
                    END IF;
                    RETURN COALESCE(NEW, OLD);
                END $guard$
                """, .none)
            try connection.execute("""
                CREATE TRIGGER strata_history_guard BEFORE INSERT OR UPDATE OR DELETE ON \(qualified)
                FOR EACH ROW EXECUTE FUNCTION \(guardFunction)()
                """, .none)
            try connection.execute("""
                CREATE TRIGGER strata_history_guard_truncate BEFORE TRUNCATE ON \(qualified)
                FOR EACH STATEMENT EXECUTE FUNCTION \(guardFunction)()
                """, .none)
            try addMissingColumns()
        }
        if connection.isInTransaction { try connection.withSavepoint(body) } else { try connection.withTransaction(body) }
    }

    /// Adds the columns an earlier version's table lacks, under the creation lock. A role that may write the table
    /// but not alter it (it is not the owner) leaves it as it is: records that need none of the new columns are
    /// written without them, and one that needs one is refused, naming it (`insert`).
    private func upgrade() throws {
        guard try presentAddedColumns().count < Self.addedColumns.count else { return }
        let body = {
            try connection.execute("SELECT pg_advisory_xact_lock(\(PostgresLocks.namespace), \(PostgresLocks.historyCreation))", .none)
            try addMissingColumns()
        }
        do {
            if connection.isInTransaction { try connection.withSavepoint(body) } else { try connection.withTransaction(body) }
        } catch let error as DatabaseError where error.kind == .authorization {
            return
        }
    }

    /// Adds the columns of `addedColumns` the table lacks (run under the creation lock).
    private func addMissingColumns() throws {
        for name in Self.addedColumns {
            try connection.execute("ALTER TABLE \(qualified) ADD COLUMN IF NOT EXISTS \(name) text", .none)
        }
    }

    func all() throws -> [HistoryRecord] {
        guard try exists() else { return [] }
        return try connection.rows("SELECT \(try columns()) FROM \(qualified) ORDER BY strata_history.applied_at, kind, identity", .none)
            .map(HistoryRecord.init(row:))
    }

    func record(kind: StepKind, identity: String) throws -> HistoryRecord? {
        guard try exists() else { return nil }
        return try connection.rows("SELECT \(try columns()) FROM \(qualified) WHERE kind = $1 AND identity = $2",
                                   [kind.rawValue, identity]).first.map(HistoryRecord.init(row:))
    }

    /// Runs one of Strata's own writes with the guard's setting on, for that statement only, as the user Strata
    /// connected as: a migration's `SET ROLE` (as `pg_dump --role` writes) must not decide who writes the history.
    private func asWriter(_ body: () throws -> Void) throws {
        func write() throws {
            try connection.executeSimple("SET SESSION AUTHORIZATION DEFAULT; RESET ROLE")
            try connection.execute("SELECT set_config('\(Self.writerSetting)', 'on', true)", .none)
            try body()
            try connection.execute("SELECT set_config('\(Self.writerSetting)', 'off', true)", .none)
        }
        if connection.isInTransaction { try write() } else { try connection.withTransaction(write) }
    }

    func write(_ record: HistoryRecord) throws {
        // Inside a step's transaction the file's own `SET statement_timeout` / `lock_timeout` (pg_dump writes
        // them) are in force: Strata's bookkeeping runs under the session's defaults instead, for the rest of the
        // step's transaction only, so a file's 1 ms bound cannot fail the recording of the file it bounded.
        if connection.isInTransaction {
            try connection.executeSimple("SET LOCAL statement_timeout TO DEFAULT; SET LOCAL lock_timeout TO DEFAULT")
        }
        if connection.holdsDeployLock { try connection.confirmDeployLockHeld() }
        if try exists() { try upgrade() }
        try asWriter { try insert(record) }
    }

    private func insert(_ record: HistoryRecord) throws {
        var columns = ["kind", "identity", "checksum", "checksum_version", "applied_at", "duration_ms", "row_count",
                       "state", "tool_version", "applied_sql", "runner", "error"]
        var values: [(any DatabaseValueConvertible)?] = [
            record.kind.rawValue, record.identity, record.checksum, record.checksumVersion, record.appliedAt,
            record.durationMs, record.rowCount, record.state.rawValue, record.toolVersion, record.appliedSQL,
            record.runner, record.error]
        let present = Set(try presentAddedColumns())
        for (column, value) in [("earlier_checksums", record.earlierChecksumsText), ("runner_session", record.runnerSession)] {
            if present.contains(column) {
                columns.append(column)
                values.append(value)
            } else if value != nil {
                throw DatabaseError(kind: .authorization, message: "\(qualified) has no column \(column), which the record of \(record.identity) needs (\(column == "runner_session" ? "a transaction=\"none\" step's running row names its session there" : "a reapply seed's earlier files are kept there")), and this role may not add it (it does not own the table): run strata once as the table's owner, or have the owner run ALTER TABLE \(qualified) ADD COLUMN IF NOT EXISTS \(column) text; nothing of the step was kept")
            }
        }
        let placeholders = columns.indices.map { "$\($0 + 1)" }.joined(separator: ", ")
        let updates = columns.dropFirst(2).map { "\($0) = excluded.\($0)" }.joined(separator: ", ")
        try connection.execute("""
            INSERT INTO \(qualified) (\(columns.joined(separator: ", "))) VALUES (\(placeholders))
            ON CONFLICT (kind, identity) DO UPDATE SET \(updates)
            """, StatementArguments(values.map { $0?.databaseValue ?? .null }))
    }

    func delete(kind: StepKind, identity: String) throws {
        try asWriter {
            try connection.execute("DELETE FROM \(qualified) WHERE kind = $1 AND identity = $2", [kind.rawValue, identity])
        }
    }
}
