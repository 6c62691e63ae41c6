/// What `Migrator.rehearse` found: the pending plan run where nothing it does is kept (a copy of a SQLite database;
/// on PostgreSQL one transaction, rolled back), step by step, with the schema difference it makes.
public struct RehearsalReport: Sendable, Equatable {
    /// Where the plan ran, for people: `on a copy of library.sqlite (48 KiB) in /tmp/.strata-rehearsal-Ab12Cd, …`,
    /// `in one transaction on postgresql://…, rolled back at the end, …`.
    public var stage: String
    /// The plan's steps in order up to the one that failed (included), or all of them: each applied, failed,
    /// or not rehearsed (with the reason).
    public var steps: [RehearsedStep] = []
    /// The step that would fail, at its file, line and column; nil when every rehearsed step succeeded.
    public var failure: StepFailure?
    /// How the schema would change: the database as it is turned into the database as `migrate` would leave it
    /// (after a failure, with the steps before it applied, as `migrate` keeps them).
    public var schemaChanges: [SchemaChange] = []
    /// Sequences the rehearsal drew values from (PostgreSQL): a rollback does not put them back.
    public var sequences: [SequenceAdvance] = []
    /// Session state the steps left on the connection that the rollback does not undo (PostgreSQL: advisory locks,
    /// `dblink` connections), with what the rehearsal did about each.
    public var sessionLeftovers: [SessionLeftover] = []
    /// The run was stopped between steps (`MigrationOptions.cancellation`).
    public var cancelled = false
    /// Steps of the plan that did not run: those after the failure, or after the stop.
    public var notRun: [String] = []

    /// Creates an empty report of a rehearsal that got as far as `stage`.
    public init(stage: String) {
        self.stage = stage
    }

    /// The steps up to the failed one that were not rehearsed, so that the failure says nothing sure about
    /// `migrate`: those before it, whose work may be what it lacked (an index built `CONCURRENTLY` that a constraint
    /// then uses), and the failed step itself when the rehearsal's own rules stopped it (an `ATTACH` of a file in a
    /// file too large to be read ahead; its `note` says so). Empty when no step failed, or the failure is a verdict.
    public var notRehearsedUpToFailure: [String] = []
    /// When the failed step is in `notRehearsedUpToFailure`: what about the rehearsal, and not `migrate`, may have
    /// failed it (its own rules stopped a statement; the steps share one transaction).
    public var failureNotKnownBecause: String?

    /// Steps that ran to their end but not as `migrate` runs them (each one's `note` says how): whether they would
    /// succeed there is not known.
    public var rehearsedUnlikeMigrate: [String] = []

    /// Steps that ran to their end after one or more steps that were not rehearsed (`RehearsedStep.notRehearsedBefore`
    /// names them): they ran without what those do, which `migrate` runs first, so a success may come only from
    /// their absence (an insert a unique index built `CONCURRENTLY` would refuse): whether they would succeed in
    /// `migrate` is not known.
    public var rehearsedAfterNotRehearsed: [String] = []

    /// Where the steps ran on another filesystem than the database's (SQLite's copy goes where it fits): what they
    /// need of the database's filesystem (their growth, and the journal or WAL at a commit) against what it had free,
    /// and whether that fits. Nil where the steps ran on the database's own filesystem or in its transaction. A step
    /// that would not fit, or where it cannot be judged, is in `rehearsedUnlikeMigrate`, its note saying so.
    public var room: String?

    /// The backup `migrate` would take before its first step (`MigrationOptions.backup`), judged against the room
    /// where it goes; nil when none is asked for, nothing is pending, or the database has no backup Strata takes
    /// (PostgreSQL, where `migrate` refuses the option before anything runs).
    public var backup: RehearsedBackup?

    /// True when no step failed, none ran unlike `migrate` or after a step that was not rehearsed, the run was
    /// not stopped, and the backup asked for fits. Steps that were not rehearsed (`RehearsedStep.note` says why) are
    /// not known to succeed.
    public var wouldSucceed: Bool {
        failure == nil && !cancelled && rehearsedUnlikeMigrate.isEmpty && rehearsedAfterNotRehearsed.isEmpty
            && (backup.map { $0.outcome == .fits } ?? true)
    }

    /// The steps whose success is not known though they ran to their end: those in `rehearsedUnlikeMigrate` or in
    /// `rehearsedAfterNotRehearsed`, in plan order.
    public var successNotKnown: [String] {
        steps.map(\.id).filter { rehearsedUnlikeMigrate.contains($0) || rehearsedAfterNotRehearsed.contains($0) }
    }

    /// True when a step failed with every step up to it rehearsed (`migrate` would fail there), or the backup
    /// `migrate` takes first would fail (it would apply nothing). Otherwise (`notRehearsedUpToFailure`, a backup
    /// whose room is not known) both this and `wouldSucceed` may be false: not known.
    public var wouldFail: Bool {
        (failure != nil && notRehearsedUpToFailure.isEmpty) || backup?.outcome == .wouldFail
    }

    /// The steps that could not be rehearsed.
    public var notRehearsed: [RehearsedStep] { steps.filter { $0.outcome == .notRehearsed } }
}

/// One step of a rehearsal.
public struct RehearsedStep: Sendable, Equatable {
    /// How the step went in the rehearsal; the raw value is the JSON `outcome`.
    public enum Outcome: String, Sendable, Equatable {
        /// It ran and would be applied.
        case applied
        /// It would fail (`RehearsalReport.failure`).
        case failed
        /// It did not run, for the reason in `note`: running it would reach outside the rehearsal, or could not be
        /// undone.
        case notRehearsed = "not-rehearsed"
        /// Another process applied it while the rehearsal waited.
        case alreadyApplied = "already-applied"
    }

    /// Whether the step is a migration or a seed.
    public let kind: StepKind
    /// The step's id.
    public let id: String
    /// Why it is in the plan.
    public let reason: PlanReason
    /// How it went.
    public var outcome: Outcome
    /// How long it took on the rehearsal's database; nil when it did not run to its end.
    public var durationMs: Int?
    /// Rows a seed loaded.
    public var rowCount: Int?
    /// The tables whose rows it changed, by name.
    public var tables: [TableRowChanges] = []
    /// Locks it took on relations that existed before it (PostgreSQL), sorted by relation. `migrate` holds each
    /// until the step commits, so at most `durationMs`.
    public var locks: [TableLock] = []
    /// Locks earlier steps took that were still held while it ran (PostgreSQL), sorted by relation: the rehearsal
    /// cannot tell whether it asked for them again, and `migrate` takes again those it needs (`HeldLock`).
    public var heldLocks: [HeldLock] = []
    /// The steps before it that were not rehearsed, when it ran: it ran without what they do
    /// (`RehearsalReport.rehearsedAfterNotRehearsed`).
    public var notRehearsedBefore: [String] = []
    /// Why it was not rehearsed, or why its success is not known (it ran unlike `migrate`, or after steps that were
    /// not rehearsed).
    public var note: String?

    /// Creates the record of one rehearsed step.
    public init(kind: StepKind, id: String, reason: PlanReason, outcome: Outcome) {
        self.kind = kind
        self.id = id
        self.reason = reason
        self.outcome = outcome
    }
}

/// The rows one step changed in one table. Each number is nil where it cannot be known exactly, and `note` says
/// why; a number is never a guess.
public struct TableRowChanges: Sendable, Equatable {
    /// The table, as the database names it (PostgreSQL: schema-qualified).
    public let table: String
    /// Rows the step inserted, where counted.
    public var inserted: Int?
    /// Rows the step updated, where counted.
    public var updated: Int?
    /// Rows the step deleted, where counted.
    public var deleted: Int?
    /// The table's rows before and after the step, where they were counted (SQLite; on PostgreSQL only after a step
    /// that replaced the table's storage); nil also for a table the step created (before) or dropped (after).
    public var rowsBefore: Int?
    /// The table's rows after the step, where counted.
    public var rowsAfter: Int?
    /// What to know about these numbers: the table was created, dropped or rebuilt by the step, the database
    /// cannot split its changes, or rows went that the database did not report one by one.
    public var note: String?

    /// Creates the changes of one table; what was not counted stays nil.
    public init(table: String, inserted: Int? = nil, updated: Int? = nil, deleted: Int? = nil,
                rowsBefore: Int? = nil, rowsAfter: Int? = nil, note: String? = nil) {
        self.table = table
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
        self.rowsBefore = rowsBefore
        self.rowsAfter = rowsAfter
        self.note = note
    }
}

/// A lock a step took (PostgreSQL's `pg_locks`): which relation, in which mode, and what it keeps other sessions
/// from doing while it is held.
public struct TableLock: Sendable, Equatable {
    /// The relation, schema-qualified.
    public let relation: String
    /// The lock mode, as PostgreSQL names it (`AccessExclusiveLock`).
    public let mode: String
    /// What waits behind it: `reads and writes`, `writes`, …
    public let blocks: String

    /// Creates the description of a table lock a step took.
    public init(relation: String, mode: String, blocks: String) {
        self.relation = relation
        self.mode = mode
        self.blocks = blocks
    }
}

/// A sequence the rehearsal drew values from: a rollback does not undo that, so the next value `migrate` or the
/// application gets is later than it would have been. Other sessions may have drawn values meanwhile too.
public struct SequenceAdvance: Sendable, Equatable {
    /// The sequence, schema-qualified.
    public let sequence: String
    /// The last value handed out before the rehearsal, nil when none ever was.
    public let before: Int64?
    /// The last value handed out after it.
    public let after: Int64?

    /// Creates the description of a sequence a step advanced.
    public init(sequence: String, before: Int64?, after: Int64?) {
        self.sequence = sequence
        self.before = before
        self.after = after
    }
}
