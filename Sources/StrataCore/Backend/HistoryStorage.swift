/// Reads and writes `strata_history`: one row per step, the same columns on every backend (see the README).
public protocol HistoryStorage {
    /// Whether the table exists (reading never creates it).
    func exists() throws -> Bool
    /// Creates the table when absent; safe to race with other processes.
    func create() throws
    /// Every record in the order they were written; none when the table does not exist.
    func all() throws -> [HistoryRecord]
    /// The record of one step, or nil when the step has none.
    func record(kind: StepKind, identity: String) throws -> HistoryRecord?
    /// Inserts or replaces the record of one step.
    func write(_ record: HistoryRecord) throws
    /// Removes the record of one step.
    func delete(kind: StepKind, identity: String) throws
}
