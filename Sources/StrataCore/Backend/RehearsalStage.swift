/// A database whose pending plan can be rehearsed: it makes a stage, a place where the plan runs and from which
/// nothing it does reaches the database (SQLite: a copy; PostgreSQL: one transaction that is never committed).
package protocol RehearsableDatabase: MigrationDatabase {
    /// Sets the stage up (makes the copy, opens the transaction). The caller ends it with `discard()`.
    func rehearsalStage(_ options: MigrationOptions) throws -> any RehearsalStage
}

/// Where a rehearsal runs the plan, and what it measures around each step there. Used from one thread.
package protocol RehearsalStage: AnyObject {
    /// The connection the plan runs on.
    var database: any MigrationDatabase { get }
    /// Where the plan runs, for the report.
    var summary: String { get }
    /// The options the plan runs with on this stage (PostgreSQL: a step that gives up waiting for a lock is not
    /// retried, since the rehearsal's transaction keeps every lock the steps before it took).
    func options(for options: MigrationOptions) -> MigrationOptions
    /// Why `step` cannot run here, or nil: running it would reach outside the stage (a file SQLite would attach)
    /// or could not be undone (PostgreSQL's `transaction="none"` statements).
    func reasonNotRehearsed(_ step: PlanStep) -> String?
    /// Called right before `step` runs.
    func willRun(_ step: PlanStep) throws
    /// Called inside the transaction of a step that runs in one (not a `transaction="none"` file), after it ran
    /// and just before its commit (SQLite: the page count then, before `auto_vacuum` truncates the file).
    func beforeCommit(_ step: PlanStep) throws
    /// Called right after `step` was applied: the rows it changed per table and the locks it took.
    func didRun(_ step: PlanStep) throws -> (tables: [TableRowChanges], locks: [TableLock])
    /// Why the step that failed last, with `failure`, was stopped by the stage itself, which `migrate` would not be
    /// (SQLite: its rules refused an `ATTACH` of a file in a file too large to be read ahead; PostgreSQL: the one
    /// transaction refused what a commit between steps allows), or nil when it failed as it would in `migrate`.
    func stoppedByStage(_ failure: StepFailure) -> String?
    /// Why the step `didRun` last measured, which ran to its end here, may not do in `migrate` what it did here
    /// (PostgreSQL: it may meet a constraint declared `INITIALLY DEFERRED`, checked at once here; SQLite: the copy
    /// is on another filesystem, and what the steps need of the database's does not fit it, or cannot be
    /// measured), or nil.
    func unlikeMigrate(_ step: PlanStep) -> String?
    /// The locks earlier steps took that were still held while the step `didRun` last measured ran.
    var heldLocks: [HeldLock] { get }
    /// Where the steps ran on another filesystem than the database's: what they need of it against what it has
    /// (`RehearsalReport.room`), read after the last step; nil on the database's own.
    var room: String? { get }
    /// Ends the rehearsal so that nothing it did remains (the copy removed, the transaction rolled back), and returns
    /// what even that cannot undo (sequence values drawn). Called once, whatever happened before.
    func discard() throws -> [SequenceAdvance]
    /// What `discard()` found the steps left on the connection that the rollback did not undo, and did about it.
    var sessionLeftovers: [SessionLeftover] { get }
}

extension RehearsalStage {
    /// A stage of its own (a copy) shares no lock and no session with the database.
    package var heldLocks: [HeldLock] { [] }
    package var sessionLeftovers: [SessionLeftover] { [] }
    package var room: String? { nil }
    package func stoppedByStage(_ failure: StepFailure) -> String? { nil }
    package func unlikeMigrate(_ step: PlanStep) -> String? { nil }
    package func beforeCommit(_ step: PlanStep) throws {}
}
