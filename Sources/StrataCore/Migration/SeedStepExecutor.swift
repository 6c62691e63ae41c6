/// A seed: its rows loaded in one transaction with its history row, the checksum recorded that of the bytes
/// loaded (hashed from the same read). A seed applied before is skipped, a changed one is drift, unless it is a
/// reapply seed whose file is new to the database: then it loads again, and the checksum it replaces joins the
/// earlier ones, so an older file is never loaded over a newer one (`HistoryBook.isEarlierVersion`).
struct SeedStepExecutor: StepExecutor {
    let seed: SeedStep

    var retriesLockTimeouts: Bool { true }

    func apply(in context: StepContext) throws -> StepOutcome {
        let step = PlanStep.seed(seed)
        let started = ContinuousClock.now
        let book = context.book
        return try context.inStepTransaction(step, alreadyApplied: .alreadyApplied) { record in
            var earlier: [String] = []
            if let record {
                earlier = try book.reapplication(of: step, record, checksum: try book.checksum(of: step, version: record.checksumVersion))
            }
            let loaded = try load(context)
            let checksum = try loaded.checksum ?? book.checksum(of: step, version: Checksum.algorithmVersion)
            try context.confirmReviewed(step, checksum: checksum)
            let durationMs = milliseconds(since: started)
            try context.history.write(.applied(step, checksum: checksum, version: Checksum.algorithmVersion,
                                               durationMs: durationMs, rowCount: loaded.rows,
                                               earlierChecksums: earlier.filter { $0 != "\(Checksum.algorithmVersion):\(checksum)" }))
            try context.watcher?.beforeCommit(step)
            return .applied(rows: loaded.rows, durationMs: durationMs)
        }
    }

    /// Loads the rows under the rules that keep seeds, and triggers on seeded tables, away from Strata's history.
    private func load(_ context: StepContext) throws -> (rows: Int, checksum: String?) {
        let step = PlanStep.seed(seed)
        let target: any SeedTarget
        do {
            target = try context.database.seedTarget(seed)
        } catch let error as DatabaseError where error.kind != .busy {
            throw StepFailure(step, message: error.message, databaseError: error)
        }
        var loader = SeedLoader(step: seed, target: target) { rows, read, total in
            context.progress?(.seedProgress(id: seed.id, rows: rows, bytesRead: read, totalBytes: total))
        }
        loader.computeChecksum = true
        do {
            return try context.database.withSeedRules { try loader.load() }
        } catch let error as SeedError {
            throw StepFailure(kind: .seed, id: seed.id, file: error.file, line: error.line, column: error.column,
                              message: error.message)
        } catch let error as DatabaseError where error.kind != .busy {
            throw StepFailure(step, message: error.message, databaseError: error)
        }
    }
}
