/// A transactional migration file: it runs inside one transaction with its history row, read, run, hashed and
/// recorded from the same bytes, read only once the write lock is held (a file saved while a deploy waits is
/// recorded as it ran). Foreign keys are enforced while it runs only when the manifest asks (`foreignKeys="on"`);
/// either way the violations it adds fail it before it commits.
struct SQLStepExecutor: StepExecutor {
    let migration: MigrationStep

    var retriesLockTimeouts: Bool { true }

    func apply(in context: StepContext) throws -> StepOutcome {
        let step = PlanStep.migration(migration)
        let started = ContinuousClock.now
        let script = MigrationScript(migration: migration, database: context.database)
        return try context.reportingLockTimeout {
            try context.database.withForeignKeys(enforced: migration.enforcesForeignKeys) {
                try context.inStepTransaction(step, alreadyApplied: .alreadyApplied) { record in
                    // A repeatable migration whose file changed runs again; any other recorded step was applied.
                    var earlier: [String] = []
                    if let record {
                        let book = context.book
                        earlier = try book.reapplication(of: step, record, checksum: try book.checksum(of: step, version: record.checksumVersion))
                    }
                    let ran = try script.run(context.progress)
                    try context.confirmReviewed(step, checksum: ran.checksum)
                    try script.checkForeignKeys(context.foreignKeys)
                    let durationMs = milliseconds(since: started)
                    let version = script.checksumVersion
                    try context.write(.applied(step, checksum: ran.checksum, version: version, durationMs: durationMs,
                                               appliedSQL: ran.text, earlierChecksums: earlier.filter { $0 != "\(version):\(ran.checksum)" })) { error in
                        StepFailure(step, message: "could not record the step: \(error.message)", databaseError: error)
                    }
                    try context.watcher?.beforeCommit(step)
                    return .applied(rows: nil, durationMs: durationMs)
                }
            }
        }
    }
}
