/// Why a step is in a plan.
public enum PlanReason: String, Sendable, Equatable, Codable {
    /// Never applied.
    case pending
    /// A seed set applied before whose file changed, with `onChange="reapply"`.
    case reapply
    /// A migration that sorts before one already applied.
    case outOfOrder = "out-of-order"
    /// An applied migration whose down runs (`Migrator.rollback`).
    case rollback
}

/// One step `migrate` would run.
public struct PlannedStep: Sendable, Equatable {
    /// The step.
    public let step: PlanStep
    /// Why it is in the plan.
    public let reason: PlanReason
    /// For seeds: data rows in the file.
    public let rowCount: Int?
    /// The checksum of the step's content the plan id covers (a code step's version), nil where no id was made:
    /// with `MigrationOptions.expectedPlanID`, the step is run only if what it reads to run has it.
    public internal(set) var checksum: String? = nil
}

/// What `migrate` would do, and anything that would stop it.
public struct MigrationPlan: Sendable, Equatable {
    /// Identifies these steps, each with its content (every byte of its file) and its manifest options: pass it to
    /// `migrate` (`--plan-id`) to refuse a plan that changed after it was reviewed. Empty where `migrate` needed
    /// none.
    public let id: String
    /// The steps in the order they run.
    public let steps: [PlannedStep]
    /// Problems that make `migrate` refuse (drift, dirty state, strict order, SQL that cannot run in a transaction).
    public let refusals: [Refusal]
}
