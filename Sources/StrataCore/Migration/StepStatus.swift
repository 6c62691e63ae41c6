/// The state of one step as `strata status` shows it.
public struct StepStatus: Sendable, Equatable {
    /// How the step stands against the database's history.
    public enum State: String, Sendable, Equatable, Codable {
        /// Recorded, and the file still has the recorded checksum.
        case applied
        /// Not yet applied.
        case pending
        /// A seed with `onChange="reapply"` whose file changed: it will be applied again.
        case changed
        /// Recorded, but the file has changed since.
        case drifted
        /// Recorded, but no longer in the manifest.
        case missing
        /// A `transaction="none"` file that started and did not finish (`running` or `failed` in history), whose
        /// runner is gone.
        case dirty
        /// A `transaction="none"` file being applied right now: `running` in history, and its runner holds its lock,
        /// or is otherwise seen to be at it, or cannot be told to be gone (`liveness` says which).
        case running
        /// A seed whose context is not active in this run.
        case skipped
    }

    /// Whether the step is a migration or a seed.
    public let kind: StepKind
    /// The step's id.
    public let id: String
    /// How it stands.
    public let state: State
    /// The plan step, nil for `missing` records.
    public let step: PlanStep?
    /// The history record, nil for steps never applied.
    public let record: HistoryRecord?
    /// The file's current checksum, nil when it could not be read or is not in the manifest.
    public let checksum: String?
    /// For a `running` step: what the database tells of its runner.
    public var liveness: RunnerLiveness? = nil
}

/// Something an interrupted statement outside a transaction left in the database, unusable and in the way of
/// running that step again (PostgreSQL: an index a killed or failed `CREATE INDEX CONCURRENTLY` or
/// `REINDEX … CONCURRENTLY` left INVALID). `status` lists them; `resolve` and a plan with a pending
/// `transaction="none"` migration refuse while any is there.
public struct UnfinishedObject: Sendable, Equatable, CustomStringConvertible {
    /// What kind of object ("index").
    public let kind: String
    /// Its schema-qualified name.
    public let name: String
    /// The table it belongs to, schema-qualified.
    public let table: String
    /// The statements that settle it, either of which a human picks.
    public let fixes: [String]

    /// Creates the description of an object a failed step left behind.
    public init(kind: String, name: String, table: String, fixes: [String]) {
        self.kind = kind
        self.name = name
        self.table = table
        self.fixes = fixes
    }

    /// The object, its table, and the statements that settle it.
    public var description: String {
        "\(kind) \(name) on \(table) is INVALID, left by an interrupted build; "
            + (fixes.isEmpty ? "drop it" : fixes.joined(separator: " or "))
    }
}
