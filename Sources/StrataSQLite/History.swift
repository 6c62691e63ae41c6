#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataCore

/// Reads and writes `strata_history`. All SQL about the history table lives here, and names it `main.strata_history`:
/// a bare name would resolve to a `temp` table of that name first.
struct HistoryStore: HistoryStorage {
    static let table = "strata_history"

    let database: Database

    /// The schema; documented in the README.
    static let createSQL = """
        CREATE TABLE IF NOT EXISTS main.strata_history (
            kind             TEXT    NOT NULL CHECK (kind IN ('migration', 'seed')),
            identity         TEXT    NOT NULL,
            checksum         TEXT    NOT NULL,
            checksum_version INTEGER NOT NULL,
            applied_at       TEXT    NOT NULL,
            duration_ms      INTEGER,
            row_count        INTEGER,
            state            TEXT    NOT NULL CHECK (state IN ('applied', 'baseline', 'running', 'failed', 'deleted')),
            tool_version     TEXT    NOT NULL,
            applied_sql      TEXT,
            runner           TEXT,
            error            TEXT,
            earlier_checksums TEXT,
            runner_session   TEXT,
            PRIMARY KEY (kind, identity)
        )
        """

    /// Columns added after the first release, with their types: a table made before them gets them when it is next
    /// written (`create()`), and reads as if they were empty until then. Older Strata versions name their columns,
    /// so they read and write such a table as before.
    static let addedColumns = [("earlier_checksums", "TEXT"), ("runner_session", "TEXT")]

    func exists() throws -> Bool {
        try database.tableExists(Self.table)
    }

    /// Creates the table when absent, and adds the columns a table made by an earlier version lacks; safe to race
    /// with other processes (the runner calls it holding the write lock).
    func create() throws {
        try database.execute(Self.createSQL, .none)
        try addMissingColumns()
    }

    /// Adds the columns of `addedColumns` a table made by an earlier version lacks; nothing when there is no table
    /// (a write then fails, as it must: a history dropped part-way is never quietly made anew).
    private func addMissingColumns() throws {
        let present = Set(try database.query("SELECT name FROM pragma_table_info('strata_history', 'main')").all()
            .map { try $0.get(0, as: String.self).lowercased() })
        guard !present.isEmpty else { return }
        for (name, type) in Self.addedColumns where !present.contains(name) {
            try database.execute("ALTER TABLE main.strata_history ADD COLUMN \(name) \(type)", .none)
        }
    }

    /// Every record, or none when the table does not exist yet (reading never creates it).
    func all() throws -> [HistoryRecord] {
        guard try exists() else { return [] }
        return try database.query("SELECT * FROM main.strata_history ORDER BY applied_at, rowid").all().map(HistoryRecord.init(row:))
    }

    func record(kind: StepKind, identity: String) throws -> HistoryRecord? {
        guard try exists() else { return nil }
        return try database.query("SELECT * FROM main.strata_history WHERE kind = ? AND identity = ?", [kind.rawValue, identity])
            .next().map(HistoryRecord.init(row:))
    }

    /// Inserts or replaces the record of one step, first adding the columns an earlier version's table lacks.
    func write(_ record: HistoryRecord) throws {
        try addMissingColumns()
        try database.execute("""
            INSERT INTO main.strata_history (kind, identity, checksum, checksum_version, applied_at, duration_ms, row_count,
                                        state, tool_version, applied_sql, runner, error, earlier_checksums, runner_session)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (kind, identity) DO UPDATE SET
                checksum = excluded.checksum, checksum_version = excluded.checksum_version,
                applied_at = excluded.applied_at, duration_ms = excluded.duration_ms, row_count = excluded.row_count,
                state = excluded.state, tool_version = excluded.tool_version, applied_sql = excluded.applied_sql,
                runner = excluded.runner, error = excluded.error, earlier_checksums = excluded.earlier_checksums,
                runner_session = excluded.runner_session
            """, [record.kind.rawValue, record.identity, record.checksum, record.checksumVersion, record.appliedAt,
                  record.durationMs, record.rowCount, record.state.rawValue, record.toolVersion, record.appliedSQL,
                  record.runner, record.error, record.earlierChecksumsText, record.runnerSession])
    }

    func delete(kind: StepKind, identity: String) throws {
        try database.execute("DELETE FROM main.strata_history WHERE kind = ? AND identity = ?", [kind.rawValue, identity])
    }
}
