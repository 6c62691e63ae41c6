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
    /// How many times a transactional step that failed only because a statement lost a wait for a lock (it gave
    /// up at the lock timeout, `DatabaseError.Kind.lockNotAvailable`, or the database chose it to break a deadlock,
    /// `.deadlock`) is rolled back and run again from the start; 0: never.
    public var lockRetries: Int
    /// The pause before the first retry; each later one is twice as long, up to `maximumLockRetryDelay`. No lock is
    /// held during the pause, so the queries queued behind the step run.
    public var lockRetryDelay: Duration
    /// How long each statement of every step may run (PostgreSQL's `statement_timeout`; a statement that runs longer
    /// fails its step with `DatabaseError.Kind.statementTimeout`, naming the setting and its value, and is not
    /// retried); nil: the server's own setting, `.zero`: no limit. SQLite ignores it.
    public var statementTimeout: Duration?
    /// A backup of the database taken before the first step runs (none when nothing is pending), into a directory
    /// that keeps the newest `keep`; see `BackupOptions`. A backend without one (`MigrationDatabase.backupSource`,
    /// PostgreSQL) refuses the plan (reason `backup`) before anything runs; a backup that fails stops the run with a
    /// `BackupError` before any step runs. The backup is always a state between steps: while another process applies
    /// a `transaction="none"` step, the run waits for it (up to `waitTimeout`) and backs up the state after it.
    public var backup: BackupOptions?

    /// This database's history starts here: a Strata history found in another schema (PostgreSQL) is another
    /// application's, even where it records files like this manifest's. Without it, a run whose history is empty
    /// refuses when another history records its steps as they are now, or cannot be read (reason
    /// `history-elsewhere`): the history may have been left behind by a changed `<database schema>` or role, and
    /// every step would run again. Only a run whose history is empty looks.
    public var newHistory = false
    /// Stop at this step: apply the pending steps up to and including it (in plan order); later ones stay pending.
    /// A name that is no step of the manifest is refused (`MigrationError.invalidStep`), naming the nearest ones.
    public var target: String?
    /// Undo instead of apply: the plan is the downs of the applied steps `rollback` names, newest first
    /// (`Migrator.rollback`); `rehearse` rehearses them as it rehearses ups.
    public var rollback: RollbackTarget?

    /// The longest pause between two attempts of a step, however many retries came before.
    public static let maximumLockRetryDelay: Duration = .seconds(10)

    /// Creates options; the defaults apply every pending migration and seed of no context, in plan order.
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
