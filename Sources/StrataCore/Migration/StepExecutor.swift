/// Runs one kind of step and records it (`RunLoop` calls one per step): a transactional SQL file, a
/// `transaction="none"` file, a seed, a code step. No executor names a backend: what differs is behind
/// `MigrationDatabase`.
protocol StepExecutor {
    /// Whether the loop may roll the step back and run it again when a statement gave up waiting for a lock
    /// (`DatabaseError.Kind.lockNotAvailable`): true where the whole step is one transaction.
    var retriesLockTimeouts: Bool { get }
    /// Applies the step, or finds another run applied it; a failure throws `StepFailure`.
    func apply(in context: StepContext) throws -> StepOutcome
}

/// What a step's run reports to the loop.
enum StepOutcome {
    case applied(rows: Int?, durationMs: Int)
    /// Another process applied it first (found inside the step's transaction, so nothing was done twice).
    case alreadyApplied
}

/// Thrown while waiting for another process's step once the run is cancelled; nothing was claimed.
struct Cancelled: Error {}

/// What every step's run needs: the database and its history, the run's options, where progress goes, the
/// foreign key violations the run started with, the connection's state to put back after the step, and the run's
/// watcher (a rehearsal's), told just before a one-transaction step commits.
struct StepContext {
    let database: any MigrationDatabase
    let options: MigrationOptions
    let foreignKeys: any ForeignKeyBaseline
    /// The connection as the step found it (nil for seeds, which change nothing on it).
    let snapshot: (any SessionSnapshot)?
    let progress: ((MigrationEvent) -> Void)?
    var watcher: (any StepWatcher)? = nil
    /// With `MigrationOptions.expectedPlanID`: the checksum the reviewed plan holds for the step's content.
    var reviewedChecksum: String? = nil

    var book: HistoryBook { HistoryBook(database: database) }
    var history: any HistoryStorage { database.history }

    /// With a reviewed plan (`--plan-id`), fails the step when what it read to run is not what was reviewed: a file
    /// saved between the plan's check and the step (while a deploy waited for the lock, say) never runs unreviewed.
    /// Called inside the step's transaction, so the failure rolls it back.
    func confirmReviewed(_ step: PlanStep, checksum: String) throws {
        guard let reviewed = reviewedChecksum, reviewed != checksum else { return }
        throw StepFailure(step, message: "the file changed after the plan was reviewed (plan id \(options.expectedPlanID ?? "")): its checksum is now \(checksum.prefix(12)), the plan's \(reviewed.prefix(12)); nothing of it was kept; run 'strata plan' again")
    }

    /// Claim, check, record: the one shape of every step that runs in a transaction with its history row. In a
    /// transaction that holds the database's write lock from its start (so the check and the step are one atomic
    /// unit across every process), the step's statement bounds are set (`limited`), the history is created when
    /// absent, and `body` gets the step's record (nil when there is none, or it is `deleted` and not `keepingDeleted`). `body` runs the step
    /// and writes its record, or throws `AppliedElsewhere` (`HistoryBook.settle`), which rolls the transaction back
    /// and returns `alreadyApplied`.
    func inStepTransaction<T>(_ step: PlanStep, limited: Bool = true, keepingDeleted: Bool = false, alreadyApplied: T,
                              _ body: (_ record: HistoryRecord?) throws -> T) throws -> T {
        do {
            return try reportingLockTimeout {
                try database.withWriteLock {
                    if limited { try database.limitStatements(limits(insideTransaction: true), insideTransaction: true) }
                    try history.create()
                    let record = try history.record(kind: step.historyKind, identity: step.id)
                    return try body(record?.state == .deleted && !keepingDeleted ? nil : record)
                }
            }
        } catch is AppliedElsewhere {
            return alreadyApplied
        }
    }

    /// Writes the record of a step that ran; a database error other than busy becomes the step's failure (what
    /// `cannotRecord` says), busy is the lock's (`reportingLockTimeout`).
    func write(_ record: HistoryRecord, orFail cannotRecord: (DatabaseError) -> StepFailure) throws {
        do {
            try history.write(record)
        } catch let error as DatabaseError where error.kind != .busy {
            throw cannotRecord(error)
        }
    }

    /// The bounds a step's statements run with. A `transaction="none"` step gets no lock timeout: its statements
    /// cannot be rolled back, so it is never retried, and giving up part-way would leave it partly applied (and a
    /// `CREATE INDEX CONCURRENTLY`, whose wait for older transactions blocks no one, an invalid index). A none file
    /// whose waits would block others sets its own `lock_timeout`.
    func limits(insideTransaction: Bool) -> StatementLimits {
        StatementLimits(lockTimeout: insideTransaction ? max(options.lockTimeout, .zero) : .zero,
                        statementTimeout: options.statementTimeout.map { max($0, .zero) })
    }

    /// Turns the database's busy error into a message a deploy log can act on.
    func reportingLockTimeout<T>(_ body: () throws -> T) throws -> T {
        try database.reportingLockTimeout(body)
    }
}

extension MigrationDatabase {
    /// Turns the database's busy error (a wait Strata bounded: another process held the lock the step needs, past
    /// the connection's timeout) into a message a deploy log can act on. A statement the server stopped (a statement
    /// timeout, a cancel request, a deadlock) is not `busy`: it fails its step, saying so.
    func reportingLockTimeout<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as DatabaseError where error.kind == .busy {
            throw MigrationError.lockTimeout(
                "another process held the database's write lock for longer than the busy timeout (\(lockTimeout)); it may be migrating too — run again, or raise --timeout")
        }
    }
}

/// Milliseconds since `start`, for durations in history and reports.
func milliseconds(since start: ContinuousClock.Instant) -> Int {
    let elapsed = (ContinuousClock.now - start).components
    return Int(elapsed.seconds * 1000 + elapsed.attoseconds / 1_000_000_000_000_000)
}
