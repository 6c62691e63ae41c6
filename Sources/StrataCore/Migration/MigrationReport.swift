/// One step that `migrate` applied.
public struct AppliedStep: Sendable, Equatable {
    /// Whether the step was a migration or a seed.
    public let kind: StepKind
    /// The step's id.
    public let id: String
    /// Why it ran.
    public let reason: PlanReason
    /// How long it took, in milliseconds.
    public let durationMs: Int
    /// Rows loaded, for seeds.
    public let rowCount: Int?
}

/// The outcome of `migrate`: what was applied, what others had already applied, and the failure if any.
public struct MigrationReport: Sendable, Equatable {
    /// The steps this run applied, in order.
    public var applied: [AppliedStep] = []
    /// Steps another process applied while this one waited.
    public var alreadyApplied: [String] = []
    /// The step that failed; steps before it stay applied, it left no trace, and nothing after it ran.
    public var failure: StepFailure?
    /// After a failure: SQLite's error when it could not finish rolling the failed step back (the disk is still
    /// full, say). The journal beside the database then holds the undo, and the next connection to open the
    /// database completes it. Nil when the rollback is complete.
    public var unfinishedRollback: String?
    /// After a failure: how many steps are recorded applied by other runs (earlier or concurrent), to say what
    /// stays applied. Nil without a failure, or when history could not be read.
    public var appliedByOtherRuns: Int?
    /// The run stopped early because `MigrationOptions.cancellation` was cancelled.
    public var cancelled = false
    /// When cancelled: the steps of the plan that did not run, in plan order.
    public var notRun: [String] = []
    /// The backup taken before the first step (`MigrationOptions.backup`); nil when none was asked for or nothing
    /// was pending.
    public var backup: DatabaseBackup?
}

/// What `repair` changed.
public struct RepairReport: Sendable, Equatable {
    /// Drifted steps whose recorded checksum now matches the file.
    public var realigned: [String] = []
    /// Records of files no longer in the manifest, now marked `deleted`.
    public var deleted: [String] = []
    /// Reapply seeds whose file is one the database was loaded from before its current one: the next `migrate`
    /// loads it, putting its rows back.
    public var reapplyAllowed: [String] = []
}

/// How a dirty `transaction="none"` step was settled by a human.
public enum Resolution: String, Sendable {
    /// The file's effects are complete: record it as applied.
    case applied
    /// The file's effects were undone: forget it, so the next `migrate` runs it again.
    case rolledBack = "rolled-back"
}
