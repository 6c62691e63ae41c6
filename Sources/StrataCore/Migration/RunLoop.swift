/// Applies a plan's steps in order, one executor per step (`StepExecutor`): progress before and after each, the
/// run stopped between steps when cancelled (a step is finished or rolled back, never abandoned half-way), a
/// transactional step that only gave up waiting for a lock rolled back and run again, each migration started from
/// the connection as the run opened it, and after a failure the report says what is left rather than assuming it.
struct RunLoop {
    let database: any MigrationDatabase
    let options: MigrationOptions
    let codeBodies: [String: Migrator.CodeBody]
    /// The code steps' down bodies, for a rollback.
    var codeDowns: [String: Migrator.CodeBody] = [:]
    /// What a rollback's downs share: the seeds they may take the rows of, the steps none undoes.
    var rollbackScope = RollbackScope()
    /// Sees each step before and after it runs (a rehearsal measures there).
    let watcher: (any StepWatcher)?
    let progress: ((MigrationEvent) -> Void)?

    /// The executor of a step's kind, or of its down in a rollback.
    func executor(for planned: PlannedStep) -> any StepExecutor {
        if planned.reason == .rollback {
            switch planned.step {
            // Never the up: a step without a down fails (the plan refuses it first).
            case .migration(let migration): return DownStepExecutor(migration: migration, down: migration.down, scope: rollbackScope)
            case .code(let code): return CodeStepExecutor(code: code, body: codeDowns[code.name], isDown: true, scope: rollbackScope)
            case .seed: break
            }
        }
        return switch planned.step {
        case .migration(let migration) where migration.runsInTransaction: SQLStepExecutor(migration: migration)
        case .migration(let migration): NoneStepExecutor(migration: migration)
        case .seed(let seed): SeedStepExecutor(seed: seed)
        case .code(let code): CodeStepExecutor(code: code, body: codeBodies[code.name])
        }
    }

    /// Applies `steps` (a plan without refusals) in order.
    func run(_ steps: [PlannedStep]) throws -> MigrationReport {
        var report = MigrationReport()
        let foreignKeys = try foreignKeyBaseline(steps)
        for (index, planned) in steps.enumerated() {
            if options.cancellation?.isCancelled == true {
                report.cancelled = true
                report.notRun = steps[index...].map(\.step.id)
                return report
            }
            // Each migration starts from the connection as the run opened it (see `SessionSnapshot`).
            let snapshot = planned.step.kind == .seed ? nil : try database.sessionSnapshot()
            let context = StepContext(database: database, options: options, foreignKeys: foreignKeys,
                                      snapshot: snapshot, progress: progress, watcher: watcher,
                                      reviewedChecksum: options.expectedPlanID == nil ? nil : planned.checksum)
            try watcher?.willRun(planned.step)
            progress?(.started(planned.step, planned.reason))
            do {
                let executor = executor(for: planned)
                let outcome = executor.retriesLockTimeouts
                    ? try retryingLockTimeouts(planned.step, context) { try executor.apply(in: context) }
                    : try executor.apply(in: context)
                switch outcome {
                case .applied(let rows, let durationMs):
                    let step = AppliedStep(kind: planned.step.kind, id: planned.step.id, reason: planned.reason,
                                           durationMs: durationMs, rowCount: rows)
                    report.applied.append(step)
                    try watcher?.didRun(planned.step, step)
                    progress?(.finished(step))
                case .alreadyApplied:
                    report.alreadyApplied.append(planned.step.id)
                }
            } catch let failure as StepFailure {
                report.failure = failure
            } catch is Cancelled {
                report.cancelled = true
                report.notRun = steps[index...].map(\.step.id)
                return report
            } catch let error as DatabaseError where error.sql == "COMMIT TRANSACTION" {
                report.failure = Self.commitFailure(planned.step, error)
            }
            do {
                try snapshot?.restore()
            } catch {
                // After a failed step its own failure is the news (a lost connection fails both); the run stops anyway.
                if report.failure == nil {
                    var failure = StepFailure(planned.step, message: "the connection could not be put back as it was before this step (\(error)); the run stopped so that later steps do not run on a changed connection")
                    failure.aftermath = .kept
                    report.failure = failure
                }
            }
            if report.failure != nil {
                settleAfterFailure(&report)
                return report
            }
        }
        return report
    }

    /// Violations already in the database are not blamed on a step: each is checked for those it makes.
    private func foreignKeyBaseline(_ steps: [PlannedStep]) throws -> any ForeignKeyBaseline {
        var foreignKeys = try database.foreignKeyBaseline(excusingCurrent: false)
        guard steps.contains(where: { $0.step.kind == .migration }) else { return foreignKeys }
        do {
            foreignKeys = try database.foreignKeyBaseline(excusingCurrent: true)
            if foreignKeys.count > 0 {
                progress?(.notice("\(foreignKeys.count) foreign key violation\(foreignKeys.count == 1 ? "" : "s") already in the database; each migration is checked only for violations it adds"))
            }
        } catch let error as DatabaseError where error.kind != .busy {
            // A schema the database cannot check (a foreign key to a column that is not unique): a step may fix it,
            // and each step is checked after it runs, so the run starts and says why nothing is excused.
            progress?(.notice("foreign keys cannot be checked before the run (\(error.message)); each migration is checked after it runs"))
        }
        return foreignKeys
    }

    /// Statements ran, then COMMIT failed (disk full in WAL mode, I/O error): the step's failure all the same.
    private static func commitFailure(_ step: PlanStep, _ error: DatabaseError) -> StepFailure {
        var failure = StepFailure(step, message: "COMMIT failed, the step was rolled back: \(error.message)", databaseError: error)
        if error.kind == .cannotOpen {
            // The connection went while COMMIT was on its way: only the server knows whether it committed.
            failure = failure.with(message: "COMMIT failed: \(error.message)")
            failure.aftermath = .unrecorded("whether the server committed the step is unknown; the step and its history row commit together, so 'strata status' tells which")
        }
        return failure
    }

    /// After a failed step: lets the database finish its rollback and says whether it did, and counts the steps
    /// other runs applied, so the report states what is left rather than assuming it.
    private func settleAfterFailure(_ report: inout MigrationReport) {
        do {
            try database.finishRollback()
        } catch {
            report.unfinishedRollback = (error as? DatabaseError)?.message ?? "\(error)"
            return
        }
        if let records = try? database.history.all() {
            report.appliedByOtherRuns = max(0, records.filter(\.isApplied).count - report.applied.count)
        }
    }

    /// Runs a transactional step (`attempt`) and, when it failed only because a statement lost a wait for a lock
    /// (`DatabaseError.Kind.lockNotAvailable`: it gave up at the lock timeout; `.deadlock`: the database chose it to
    /// break a deadlock; either way the step was rolled back), runs it again from the start, history checked again,
    /// up to `options.lockRetries` times. Each pause is twice the one before (from
    /// `options.lockRetryDelay`, up to `MigrationOptions.maximumLockRetryDelay`) and holds no lock, so what queued
    /// behind the step's lock request runs meanwhile and the session holding the lock may finish. The decision is
    /// made on the error's kind, which the backend sets from its own codes.
    private func retryingLockTimeouts(_ step: PlanStep, _ context: StepContext,
                                      _ attempt: () throws -> StepOutcome) throws -> StepOutcome {
        let started = ContinuousClock.now
        var retries = 0
        var delay = options.lockRetryDelay
        while true {
            let failure: StepFailure
            do {
                return try attempt()
            } catch let error as StepFailure where error.databaseError?.isRetriedByTheRunner == true {
                failure = error
            } catch let error as DatabaseError where error.isRetriedByTheRunner {
                // A statement of Strata's own (the history check, say) gave up: the step's failure all the same.
                failure = StepFailure(step, message: error.message, databaseError: error)
            }
            guard retries < max(options.lockRetries, 0) else {
                guard retries > 0 else { throw failure }
                let seconds = Double(milliseconds(since: started)) / 1000
                let advice = failure.databaseError?.kind == .deadlock
                    ? "run again once the session it deadlocked with is done, or raise --lock-retries"
                    : "run again once the session holding the lock is done, or raise --lock-timeout or --lock-retries"
                throw failure.with(message: failure.message
                    + "; gave up after \(retries + 1) attempts in \(printfFormat("%.1f", seconds)) s (\(retries) retr\(retries == 1 ? "y" : "ies")); \(advice)")
            }
            retries += 1
            progress?(.retrying(id: step.id, retry: retries, of: options.lockRetries, delay: delay, reason: failure.description))
            // What the rolled-back attempt changed on the connection outside its transaction does not reach the next.
            do { try context.snapshot?.restore() } catch { throw failure }
            try pause(delay)
            delay = min(delay * 2, max(MigrationOptions.maximumLockRetryDelay, options.lockRetryDelay))
        }
    }

    /// Sleeps for `delay`, throwing `Cancelled` as soon as the run is cancelled (the step is not applied and holds
    /// nothing, so it is simply not run).
    private func pause(_ delay: Duration) throws {
        let end = ContinuousClock.now + delay
        while ContinuousClock.now < end {
            if options.cancellation?.isCancelled == true { throw Cancelled() }
            let left = end - ContinuousClock.now
            let slice = min(left, .milliseconds(50))
            sleepBlocking(for: slice)
        }
        if options.cancellation?.isCancelled == true { throw Cancelled() }
    }
}
