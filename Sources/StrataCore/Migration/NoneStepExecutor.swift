/// A `transaction="none"` migration file: its statements run one by one and are not undone when one fails, so the
/// attempt is made durable first. The step is claimed with a `running` row, committed before the file runs, under
/// a lock (`StepLocking`) held from before that row is committed until after the final row is: while the row says
/// `running`, the lock (or the session the backend records) tells whether this process is still at it. The final
/// row says `applied`, or `failed` with what stayed applied.
///
/// A down that runs outside a transaction (`down`, for `Migrator.rollback`) is claimed the same way, its applied
/// row turned `running`: once it has run, the row goes (`StepContext.recordRollback`); if it fails part-way, the row
/// says `failed`, and `strata resolve` settles it (`--rolled-back`: the migration is undone; `--applied`: it stays).
struct NoneStepExecutor: StepExecutor {
    let migration: MigrationStep
    /// The down to run instead of the migration; nil to apply it.
    var down: MigrationDown? = nil
    /// For a down: the manifest's seeds and the steps no rollback undoes.
    var scope = RollbackScope()

    var retriesLockTimeouts: Bool { false }

    private var step: PlanStep { .migration(migration) }

    func apply(in context: StepContext) throws -> StepOutcome {
        // Where the file runs: this connection, or (through a pooler) a direct one of its own, closed after it.
        let runner: (any MigrationDatabase)
        do {
            runner = try context.database.noneStepRunner() ?? context.database
        } catch let error as DatabaseError {
            throw StepFailure(step, message: "could not open a connection of its own to run the file on: \(error.message); nothing ran", databaseError: error)
        }
        let script = MigrationScript(migration: migration, database: runner, part: down.map { .down($0) } ?? .up)
        let (text, checksum) = try script.read()
        try context.confirmReviewed(step, checksum: checksum)
        do {
            // Set for the session before the claim; the session snapshot taken before the step undoes it after.
            try context.database.limitStatements(context.limits(insideTransaction: false), insideTransaction: false)
        } catch let error as DatabaseError {
            throw StepFailure(step, message: "could not set the step's timeouts: \(error.message)", databaseError: error)
        }
        var lock: (any StepClaim)?
        defer { lock?.release() }
        let applied: HistoryRecord?
        var seedsBefore: [SeedTableShape] = []
        switch try claim(context, text: text, checksum: checksum, version: script.checksumVersion, lock: &lock,
                         seedsBefore: &seedsBefore) {
        case .alreadyApplied: return .alreadyApplied
        case .claimed(let record): applied = record
        }

        let started = ContinuousClock.now
        var failure: StepFailure?
        var ran: (checksum: String, text: String?)?
        do {
            ran = try run(script, context, on: runner)
            // Saved while it ran: what ran is neither what was claimed nor what was reviewed.
            if let ran, context.reviewedChecksum != nil, ran.checksum != checksum {
                failure = StepFailure(step, message: "the file changed while it ran, after the plan was reviewed (plan id \(context.options.expectedPlanID ?? "")): what ran is not what was reviewed")
                    .partlyApplied("every statement of the file as it was read ran and stayed applied")
            }
        } catch let error as StepFailure {
            failure = error
        } catch {
            failure = StepFailure(step, message: "\(error)").partlyApplied("what the file did before the error stayed applied")
        }
        let durationMs = milliseconds(since: started)
        // The file's session state (`SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY`, a role) must not decide
        // whether its outcome can be recorded; a restore that fails here fails again, reported, after the step.
        try? context.snapshot?.restore()
        let deadline = ContinuousClock.now + context.options.waitTimeout
        if let applied {
            if let failure {
                let record = HistoryRecord.finished(migration, checksum: applied.checksum, version: applied.checksumVersion,
                                                    durationMs: durationMs, appliedSQL: applied.appliedSQL,
                                                    failure: failure.with(message: "its down failed: \(failure.message)"))
                try recordOutcome(record, failure: failure, context, waitingUntil: deadline)
                throw failure
            }
            try waitingOutBusy(context, until: deadline) {
                try context.database.withWriteLock {
                    try context.recordRollback(of: step, applied, down: ran, durationMs: durationMs, seedsBefore: seedsBefore)
                }
            }
            return .applied(rows: nil, durationMs: durationMs)
        }
        let record = HistoryRecord.finished(migration, checksum: ran?.checksum ?? checksum, version: script.checksumVersion,
                                            durationMs: durationMs, appliedSQL: ran == nil ? text : ran?.text, failure: failure)
        try recordOutcome(record, failure: failure, context, waitingUntil: deadline)
        if let failure { throw failure }
        return .applied(rows: nil, durationMs: durationMs)
    }

    /// The run's writes after a file that cannot be undone: a busy database is waited for, up to `deadline`.
    private func waitingOutBusy(_ context: StepContext, until deadline: ContinuousClock.Instant, _ body: () throws -> Void) throws {
        while true {
            do {
                return try body()
            } catch let error as DatabaseError where (error.kind == .busy || error.isRetriedByTheRunner) && ContinuousClock.now < deadline {
                context.progress?(.waiting("\(migration.id) ran; waiting for the write lock to record it"))
            }
        }
    }

    /// `claimed` carries, for a down, the applied record it turned `running`.
    private enum Claim { case claimed(HistoryRecord?), alreadyApplied }

    /// Claims the step: in a write transaction, a `running` row and the step's lock; waits (up to the run's
    /// `waitTimeout`) while another process is applying it.
    private func claim(_ context: StepContext, text: String?, checksum: String, version: Int,
                       lock: inout (any StepClaim)?, seedsBefore: inout [SeedTableShape]) throws -> Claim {
        let deadline = ContinuousClock.now + context.options.waitTimeout
        let book = context.book
        while true {
            let claimed = try context.inStepTransaction(step, limited: false, keepingDeleted: down != nil,
                                                        alreadyApplied: Claim?.some(.alreadyApplied)) { found -> Claim? in
                var record = found
                if down != nil {
                    // Another run rolled it back already, is at it, or applied a later step since the plan was made;
                    // or it changed since it was applied (the plan refused that).
                    record = try context.recordToUndo(step, found, scope)
                    try record.map { try book.confirmUnchanged($0, of: step) }
                    seedsBefore = try context.seedTables(scope)
                } else if let record {
                    if book.isBeingApplied(record) { return nil }
                    try book.settle(record, of: step, checksum: record.checksumVersion == version ? checksum : nil)
                }
                do {
                    lock = try context.database.stepLocks.claim(kind: .migration, id: migration.id)
                } catch let error as DatabaseError {
                    throw error
                } catch {
                    throw StepFailure(step, message: "\(error)")
                }
                // Held by another process whose `running` row is not committed yet, or was just replaced.
                guard lock != nil else { return nil }
                if let record, down != nil {
                    try context.history.write(.rollingBack(record, runnerSession: lock?.runnerSession))
                    return .claimed(record)
                }
                try context.history.write(.running(migration, checksum: checksum, version: version,
                                                   appliedSQL: text, runnerSession: lock?.runnerSession))
                return .claimed(nil)
            }
            if let claimed { return claimed }
            guard ContinuousClock.now < deadline else {
                throw MigrationError.lockTimeout("\(migration.id) is being applied by another process and did not finish within \(context.options.waitTimeout); run again once it is done")
            }
            context.progress?(.waiting("\(migration.id) is being applied by another process; waiting"))
            sleepBlocking(for: .milliseconds(200))
            if context.options.cancellation?.isCancelled == true { throw Cancelled() }
        }
    }

    /// Runs the file. Afterwards the connection must be back in autocommit mode: a `BEGIN` without `COMMIT` would
    /// otherwise hold everything, history included, until the connection closes, and then vanish.
    private func run(_ script: MigrationScript, _ context: StepContext,
                     on database: any MigrationDatabase) throws -> (checksum: String, text: String?) {
        var statements = 0
        // Whether the file had its own transaction open after its last completed statement: SQLite may roll that
        // back by itself when a statement fails (`INSERT OR ROLLBACK`, `RAISE(ROLLBACK)`), Strata does otherwise.
        var transactionOpen = false
        return try database.withForeignKeys(enforced: migration.enforcesForeignKeys) {
            let ran: (checksum: String, text: String?)
            do {
                ran = try script.run(context.progress) {
                    statements += 1
                    transactionOpen = database.isInTransaction
                }
            } catch let error as StepFailure {
                let wasOpen = database.rollBackOpenTransaction() || transactionOpen
                let kept = statements
                let before = error.line.map { "the \(kept) statement\(kept == 1 ? "" : "s") before line \($0)" }
                    ?? "the statements that ran before the failure"
                throw error.partlyApplied(before + " stayed applied"
                    + (wasOpen ? ", except those inside the transaction the file had open, which were rolled back" : "")
                    + "; nothing after the failing statement ran")
            }
            if database.rollBackOpenTransaction() {
                throw StepFailure(step, message: "the file ended with a transaction still open (BEGIN without COMMIT)")
                    .partlyApplied("Strata rolled that transaction back: the statements before its BEGIN stayed applied, those after it did not")
            }
            do {
                try script.checkForeignKeys(context.foreignKeys)
            } catch let error as StepFailure {
                throw error.partlyApplied("every statement of the file ran and stayed applied")
            }
            return ran
        }
    }

    /// Writes the final record. The file's work is done (or partly done) and cannot be undone, so a busy database
    /// is waited for past the busy timeout, up to `--timeout` more; if the record still cannot be written, the
    /// failure says what history holds now and what to do.
    private func recordOutcome(_ record: HistoryRecord, failure: StepFailure?, _ context: StepContext,
                               waitingUntil deadline: ContinuousClock.Instant) throws {
        let history = context.history
        while true {
            do {
                try history.write(record)
                return
            } catch let error as DatabaseError {
                // A lock timeout the file set for its session, or a deadlock, is waited out the same way.
                if (error.kind == .busy || error.isRetriedByTheRunner) && ContinuousClock.now < deadline {
                    context.progress?(.waiting("\(migration.id) ran; waiting for the write lock to record it"))
                    continue
                }
                // The file's own failure, where it had one, keeps its place; what could not be recorded is added.
                var unrecorded = failure.map {
                    $0.with(message: "\($0.message); then its outcome could not be recorded (\(error.message))")
                } ?? StepFailure(step, message: "every statement ran, and its outcome could not be recorded (\(error.message))")
                let ran = failure.flatMap { if case .partlyApplied(let kept) = $0.aftermath { kept } else { nil } }
                    ?? "what the file did stayed applied"
                // Say what history holds now, read again: the file may have dropped it (a schema dropped with CASCADE).
                switch Result(catching: { try history.record(kind: .migration, identity: migration.id) }) {
                case .success(let row?) where row.state == .running:
                    unrecorded.aftermath = .unrecorded("\(ran), and its history row still says running: check the database, then run 'strata resolve \(migration.id) --applied' or 'strata resolve \(migration.id) --rolled-back'")
                case .success(nil) where (try? history.exists()) == false:
                    unrecorded.aftermath = .unrecorded("\(ran), and strata_history no longer exists (the file dropped it?): nothing records any step now, so every step reads as pending; restore the history from a backup before running again")
                default:
                    unrecorded.aftermath = .unrecorded("\(ran), and what history holds for it could not be read; check 'strata status' and the database, then settle it with 'strata resolve \(migration.id)'")
                }
                throw unrecorded
            }
        }
    }
}
