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

    /// `applied_at` as `HistoryRecord` spells it (UTC, milliseconds, `Z`).
    private var columns: String {
        """
        kind, identity, checksum, checksum_version,
        to_char(applied_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS applied_at,
        duration_ms, row_count, state, tool_version, applied_sql, runner, error
        """
    }

    func exists() throws -> Bool {
        try connection.scalar("SELECT to_regclass($1) IS NOT NULL", [qualified], as: Bool.self) ?? false
    }

    /// Creates the table (and its schema) when absent. Two sessions creating it at once would collide in the
    /// catalog even with `IF NOT EXISTS`, so creation runs under a transaction-level advisory lock.
    func create() throws {
        guard try !exists() else { return }
        let body = {
            try connection.execute("SELECT pg_advisory_xact_lock(\(PostgresLocks.namespace), \(PostgresLocks.historyCreation))", .none)
            try connection.execute("CREATE SCHEMA IF NOT EXISTS \(quoteIdentifier(connection.historySchema))", .none)
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
        }
        if connection.isInTransaction { try connection.withSavepoint(body) } else { try connection.withTransaction(body) }
    }

    func all() throws -> [HistoryRecord] {
        guard try exists() else { return [] }
        return try connection.rows("SELECT \(columns) FROM \(qualified) ORDER BY strata_history.applied_at, kind, identity", .none)
            .map(HistoryRecord.init(row:))
    }

    func record(kind: StepKind, identity: String) throws -> HistoryRecord? {
        guard try exists() else { return nil }
        return try connection.rows("SELECT \(columns) FROM \(qualified) WHERE kind = $1 AND identity = $2",
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
        if connection.holdsDeployLock { try connection.confirmDeployLockHeld() }
        try asWriter { try insert(record) }
    }

    private func insert(_ record: HistoryRecord) throws {
        try connection.execute("""
            INSERT INTO \(qualified) (kind, identity, checksum, checksum_version, applied_at, duration_ms, row_count,
                                      state, tool_version, applied_sql, runner, error)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
            ON CONFLICT (kind, identity) DO UPDATE SET
                checksum = excluded.checksum, checksum_version = excluded.checksum_version,
                applied_at = excluded.applied_at, duration_ms = excluded.duration_ms, row_count = excluded.row_count,
                state = excluded.state, tool_version = excluded.tool_version, applied_sql = excluded.applied_sql,
                runner = excluded.runner, error = excluded.error
            """, [record.kind.rawValue, record.identity, record.checksum, record.checksumVersion, record.appliedAt,
                  record.durationMs, record.rowCount, record.state.rawValue, record.toolVersion, record.appliedSQL,
                  record.runner, record.error])
    }

    func delete(kind: StepKind, identity: String) throws {
        try asWriter {
            try connection.execute("DELETE FROM \(qualified) WHERE kind = $1 AND identity = $2", [kind.rawValue, identity])
        }
    }
}
