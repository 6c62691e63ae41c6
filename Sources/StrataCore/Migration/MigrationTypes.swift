/// Options for `Migrator.plan` and `Migrator.migrate`.
public struct MigrationOptions: Sendable, Equatable {
    /// Contexts whose seeds run (`context="dev"` seeds run only when "dev" is here); untagged seeds always run.
    public var contexts: Set<String>
    /// Refuse instead of applying a new migration that sorts before an applied one.
    public var strictOrder: Bool
    /// Run migrations (`strata seed` turns this off).
    public var includeMigrations: Bool
    /// Run seeds.
    public var includeSeeds: Bool
    /// How long to wait for another process applying a `transaction="none"` file.
    public var waitTimeout: Duration
    /// The `MigrationPlan.id` a human reviewed: `migrate` refuses when the plan is no longer the same.
    public var expectedPlanID: String?
    /// Checked between steps: once cancelled, `migrate` stops after the current step (see `MigrationCancellation`).
    public var cancellation: MigrationCancellation?
    /// How long each statement of a transactional step may wait for a lock (PostgreSQL's `lock_timeout`, set for
    /// the step's transaction only); `.zero`: as long as it takes. A statement waiting for a lock holds its place
    /// in the lock's queue, and every later query on that table queues behind it, so a migration stuck behind one
    /// long transaction would stall the application: it gives up instead, its step is rolled back and tried again
    /// (`lockRetries`). `transaction="none"` steps run without a lock timeout (see the README). SQLite ignores it:
    /// its write lock is taken before a step runs, waiting up to the connection's busy timeout.
    public var lockTimeout: Duration
    /// How many times a transactional step that failed only because a statement gave up waiting for a lock
    /// (`DatabaseError.Kind.lockNotAvailable`) is rolled back and run again from the start; 0: never.
    public var lockRetries: Int
    /// The pause before the first retry; each later one is twice as long, up to `maximumLockRetryDelay`. No lock is
    /// held during the pause, so the queries queued behind the step run.
    public var lockRetryDelay: Duration
    /// How long each statement of every step may run (PostgreSQL's `statement_timeout`; a statement that runs longer
    /// fails its step, which is not retried); nil: the server's own setting, `.zero`: no limit. SQLite ignores it.
    public var statementTimeout: Duration?
    /// A backup of the database taken before the first step runs (none when nothing is pending), into a directory
    /// that keeps the newest `keep`; see `BackupOptions`. A backend without one (`MigrationDatabase.backupSource`,
    /// PostgreSQL) refuses the plan (reason `backup`) before anything runs; a backup that fails stops the run with a
    /// `BackupError` before any step runs. The backup is always a state between steps: while another process applies
    /// a `transaction="none"` step, the run waits for it (up to `waitTimeout`) and backs up the state after it.
    public var backup: BackupOptions?

    /// The longest pause between two attempts of a step, however many retries came before.
    public static let maximumLockRetryDelay: Duration = .seconds(10)

    public init(contexts: Set<String> = [], strictOrder: Bool = false, includeMigrations: Bool = true,
                includeSeeds: Bool = true, waitTimeout: Duration = .seconds(60), expectedPlanID: String? = nil,
                cancellation: MigrationCancellation? = nil, lockTimeout: Duration = .seconds(5), lockRetries: Int = 5,
                lockRetryDelay: Duration = .milliseconds(500), statementTimeout: Duration? = nil,
                backup: BackupOptions? = nil) {
        self.contexts = contexts
        self.strictOrder = strictOrder
        self.includeMigrations = includeMigrations
        self.includeSeeds = includeSeeds
        self.waitTimeout = waitTimeout
        self.expectedPlanID = expectedPlanID
        self.cancellation = cancellation
        self.lockTimeout = lockTimeout
        self.lockRetries = lockRetries
        self.lockRetryDelay = lockRetryDelay
        self.statementTimeout = statementTimeout
        self.backup = backup
    }
}

/// The state of one step as `strata status` shows it.
public struct StepStatus: Sendable, Equatable {
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
        /// A `transaction="none"` file being applied right now: `running` in history, and its runner holds its lock.
        case running
        /// A seed whose context is not active in this run.
        case skipped
    }

    public let kind: StepKind
    public let id: String
    public let state: State
    /// The plan step, nil for `missing` records.
    public let step: PlanStep?
    /// The history record, nil for steps never applied.
    public let record: HistoryRecord?
    /// The file's current checksum, nil when it could not be read or is not in the manifest.
    public let checksum: String?
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

    public init(kind: String, name: String, table: String, fixes: [String]) {
        self.kind = kind
        self.name = name
        self.table = table
        self.fixes = fixes
    }

    public var description: String {
        "\(kind) \(name) on \(table) is INVALID, left by an interrupted build; "
            + (fixes.isEmpty ? "drop it" : fixes.joined(separator: " or "))
    }
}

/// Why a step is in a plan.
public enum PlanReason: String, Sendable, Equatable, Codable {
    case pending
    /// A seed set applied before whose file changed, with `onChange="reapply"`.
    case reapply
    /// A migration that sorts before one already applied.
    case outOfOrder = "out-of-order"
}

/// One step `migrate` would run.
public struct PlannedStep: Sendable, Equatable {
    public let step: PlanStep
    public let reason: PlanReason
    /// For seeds: data rows in the file.
    public let rowCount: Int?
}

/// What `migrate` would do, and anything that would stop it.
public struct MigrationPlan: Sendable, Equatable {
    /// Identifies these steps with these file contents (migrations by checksum, seeds by size and modification
    /// time): pass it to `migrate` (`--plan-id`) to refuse a plan that changed after it was reviewed.
    public let id: String
    public let steps: [PlannedStep]
    /// Problems that make `migrate` refuse (drift, dirty state, strict order, SQL that cannot run in a transaction).
    public let refusals: [Refusal]
}

/// A reason `migrate` refuses to start (exit code 3).
public struct Refusal: Sendable, Equatable, CustomStringConvertible {
    public enum Reason: String, Sendable, Equatable, Codable {
        case drift, missing, dirty, outOfOrder = "out-of-order", invalidSQL = "invalid-sql", seedOrder = "seed-order",
             planChanged = "plan-changed"
        /// The database's backend is not one the manifest has migrations for (every migration is marked for another).
        case backend
        /// The database cannot be written (a read-only file, a hot standby).
        case readOnly = "read-only"
        /// The database cannot load a seed the way its mode says (`SQLDialect.seedRefusal`).
        case seedMode = "seed-mode"
        /// An interrupted build left an object unusable (`UnfinishedObject`), and the plan holds a
        /// `transaction="none"` migration that could build on it (`CREATE INDEX CONCURRENTLY IF NOT EXISTS` would
        /// keep an INVALID index and be recorded as applied).
        case unfinished
        /// The history is not where this connection looks, and another history in the database records steps of
        /// this manifest (`MigrationDatabase.otherHistories`).
        case historyElsewhere = "history-elsewhere"
        /// A Swift code step is due and no body is registered for it (`Migrator.register`); the `strata` command
        /// registers none, so it refuses every plan with a pending code step.
        case codeStep = "code-step"
        /// A registered code step the manifest does not list, or one registered twice.
        case codeRegistration = "code-registration"
        /// A backup was asked for (`MigrationOptions.backup`) of a database whose backend has none Strata takes
        /// (PostgreSQL); the message says what to use instead.
        case backup
        /// `rehearse` cannot run the plan where nothing is kept: no room for a copy, a step being applied by another
        /// process right now, or a database whose backend offers no way to rehearse.
        case notRehearsable = "not-rehearsable"
    }

    public let reason: Reason
    public let id: String
    public let message: String

    public init(reason: Reason, id: String, message: String) {
        self.reason = reason
        self.id = id
        self.message = message
    }

    public var description: String { message }
}

/// One step that `migrate` applied.
public struct AppliedStep: Sendable, Equatable {
    public let kind: StepKind
    public let id: String
    public let reason: PlanReason
    public let durationMs: Int
    /// Rows loaded, for seeds.
    public let rowCount: Int?
}

/// The step that failed, with the place in its file where it failed.
public struct StepFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public let kind: StepKind
    public let id: String
    public let file: String
    public let line: Int?
    public let column: Int?
    public let message: String
    /// What the failed step left in the database.
    public var aftermath = Aftermath.rolledBack
    /// The database's error that failed the step, when it was one: its kind tells what could help (a step that
    /// failed with `.lockNotAvailable` may succeed when run again), its code what the database said. Nil for
    /// failures Strata found itself (a foreign key violation, an unreadable file).
    public var databaseError: DatabaseError?
    /// The failure happened in a rehearsal (`Migrator.rehearse`): what it left is gone with the copy or the
    /// rollback, and nothing was recorded; the text says what `migrate` would leave.
    public internal(set) var rehearsed = false
    /// In a rehearsal, the rehearsal's own rules stopped the step (a statement `migrate` would run).
    public internal(set) var stoppedByRehearsal = false

    /// What a failed step left behind.
    public enum Aftermath: Sendable, Equatable {
        /// Rolled back: the database is exactly as it was before the step.
        case rolledBack
        /// A `transaction="none"` file stopped part-way: what it says stayed applied, and the step is recorded
        /// `failed` until a human settles it with `strata resolve`.
        case partlyApplied(String)
        /// The step itself was applied and recorded; what failed came after it (the run stopped there).
        case kept
        /// A `transaction="none"` file ran (wholly or in part) and its outcome could not be written to history:
        /// what it says stayed applied and what history holds now (its `running` row, or no history at all).
        case unrecorded(String)
    }

    /// `file:line:column: message`, and for a partly applied step what stayed and what to do.
    public var description: String {
        switch aftermath {
        case .rolledBack, .kept, .unrecorded:
            return summary
        case .partlyApplied where stoppedByRehearsal:
            return summary + " (in the rehearsal, where nothing is kept or recorded; the rehearsal stopped the file at a statement migrate would run)"
        case .partlyApplied where rehearsed:
            return summary + " (in the rehearsal, where nothing is kept or recorded; migrate would leave the same applied and record the step failed)"
        case .partlyApplied:
            return summary
                + "; it is recorded failed: check the database, then run 'strata resolve \(id) --applied' or 'strata resolve \(id) --rolled-back'"
        }
    }

    /// `file:line:column: message` and what stayed applied, as history's `error` column keeps it.
    var summary: String {
        switch aftermath {
        case .rolledBack: placeDescription(file, line, column, message)
        case .kept: placeDescription(file, line, column, message) + "; the step itself was applied and recorded"
        case .partlyApplied(let kept), .unrecorded(let kept): placeDescription(file, line, column, message) + "; " + kept
        }
    }

    func partlyApplied(_ kept: String) -> StepFailure {
        var failure = self
        failure.aftermath = .partlyApplied(kept)
        return failure
    }

    /// The same failure with another message (place, aftermath and database error kept).
    func with(message: String) -> StepFailure {
        var failure = StepFailure(kind: kind, id: id, file: file, line: line, column: column, message: message)
        failure.aftermath = aftermath
        failure.databaseError = databaseError
        return failure
    }
}

/// `file:line:column: message`, leaving out what is unknown.
func placeDescription(_ file: String, _ line: Int?, _ column: Int?, _ message: String) -> String {
    var place = file
    if let line { place += ":\(line)" }
    if let column { place += ":\(column)" }
    return "\(place): \(message)"
}

/// The outcome of `migrate`: what was applied, what others had already applied, and the failure if any.
public struct MigrationReport: Sendable, Equatable {
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
}

/// How a dirty `transaction="none"` step was settled by a human.
public enum Resolution: String, Sendable {
    /// The file's effects are complete: record it as applied.
    case applied
    /// The file's effects were undone: forget it, so the next `migrate` runs it again.
    case rolledBack = "rolled-back"
}

/// Errors that stop a command before or between steps.
public enum MigrationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `migrate` will not start; exit code 3.
    case refused([Refusal])
    /// Another process held the write lock past the timeout; exit code 1.
    case lockTimeout(String)
    /// A command named a step that is not in the manifest or not in the needed state.
    case invalidStep(String)
    /// The database to use is not known (no `--database` and no `<database>` in the manifest).
    case noDatabase

    public var description: String {
        switch self {
        case .refused(let refusals): refusals.map(\.message).joined(separator: "\n")
        case .lockTimeout(let message): message
        case .invalidStep(let message): message
        case .noDatabase: "no database: pass --database PATH or add <database path=\"…\"/> to the manifest"
        }
    }
}

/// Progress of a running `migrate`, for rendering.
public enum MigrationEvent: Sendable {
    case started(PlanStep, PlanReason)
    case finished(AppliedStep)
    case seedProgress(id: String, rows: Int, bytesRead: Int, totalBytes: Int)
    /// A migration file being read and run; reported per chunk read (1 MiB).
    case scriptProgress(id: String, bytesRead: Int, totalBytes: Int)
    case waiting(String)
    /// A transactional step failed because a statement gave up waiting for a lock; it was rolled back and runs
    /// again after `delay`. `retry` counts from 1 up to `of` (`MigrationOptions.lockRetries`); `reason` is the
    /// failure (`file:line:column: message`, naming the session that held the lock where the database can tell).
    case retrying(id: String, retry: Int, of: Int, delay: Duration, reason: String)
    /// Something the run found worth saying that stops nothing (foreign key violations that predate it).
    case notice(String)
    /// The backup `MigrationOptions.backup` asked for is in place, checked and synced; no step has run yet.
    case backedUp(DatabaseBackup)
}
