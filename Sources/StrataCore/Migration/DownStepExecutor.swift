/// A migration's down, run by `Migrator.rollback` in one transaction with its history change: the step's row goes
/// and an audit row is written (`StepContext.recordRollback`), or, when the down fails, nothing changes. A down that
/// asks to run outside a transaction runs as a `transaction="none"` file does (`NoneStepExecutor`).
struct DownStepExecutor: StepExecutor {
    let migration: MigrationStep
    /// Nil only where the plan was not checked: the step then fails, and nothing runs.
    let down: MigrationDown?
    /// The manifest's seeds and the steps no rollback undoes.
    let scope: RollbackScope

    var retriesLockTimeouts: Bool { down?.runsInTransaction ?? false }

    func apply(in context: StepContext) throws -> StepOutcome {
        guard let down else {
            throw StepFailure(.migration(migration), message: "\(migration.id) has no down: nothing undoes it")
        }
        guard down.runsInTransaction else {
            return try NoneStepExecutor(migration: migration, down: down, scope: scope).apply(in: context)
        }
        let step = PlanStep.migration(migration)
        let started = ContinuousClock.now
        let script = MigrationScript(migration: migration, database: context.database, part: .down(down))
        return try context.reportingLockTimeout {
            try context.database.withForeignKeys(enforced: migration.enforcesForeignKeys) {
                try context.inStepTransaction(step, keepingDeleted: true, alreadyApplied: .alreadyApplied) { found in
                    let record = try context.recordToUndo(step, found, scope)
                    try context.book.confirmUnchanged(record, of: step)
                    let seedsBefore = try context.seedTables(scope)
                    let ran = try script.run(context.progress)
                    try context.confirmReviewed(step, checksum: ran.checksum)
                    try script.checkForeignKeys(context.foreignKeys)
                    let durationMs = milliseconds(since: started)
                    try context.recordRollback(of: step, record, down: ran, durationMs: durationMs, seedsBefore: seedsBefore)
                    try context.watcher?.beforeCommit(step)
                    return .applied(rows: nil, durationMs: durationMs)
                }
            }
        }
    }
}
