/// A Swift code step: its registered body and its history row in one transaction holding the write lock, as a
/// transactional file runs. A body that throws leaves neither its writes nor a row, and a crash part-way leaves
/// nothing (the transaction never committed). Its statements run under the rules seeds run under (history may not
/// be written), with foreign keys as the connection has them.
struct CodeStepExecutor: StepExecutor {
    let code: CodeStep
    /// The registered body; nil when none is (the plan refuses that first; checked again so a step never counts as
    /// run without its body).
    let body: Migrator.CodeBody?
    /// Run the registered down body instead (`Migrator.rollback`): the step's row goes, an audit row says so.
    var isDown = false
    var scope = RollbackScope()

    var retriesLockTimeouts: Bool { true }

    func apply(in context: StepContext) throws -> StepOutcome {
        guard let body else {
            throw StepFailure(code: code, message: "no code is registered for code step '\(code.name)'\(isDown ? "'s down" : ""); the program must register it (Migrator.register)")
        }
        let step = PlanStep.code(code)
        let started = ContinuousClock.now
        return try context.inStepTransaction(step, keepingDeleted: isDown, alreadyApplied: .alreadyApplied) { record in
            if isDown {
                let record = try context.recordToUndo(step, record, scope)
                let seedsBefore = try context.seedTables(scope)
                try run(body, context)
                let durationMs = milliseconds(since: started)
                try context.recordRollback(of: step, record, down: nil, durationMs: durationMs, seedsBefore: seedsBefore)
                try context.watcher?.beforeCommit(step)
                return .applied(rows: nil, durationMs: durationMs)
            }
            if let record { try context.book.settle(record, of: step, checksum: code.version) }
            try run(body, context)
            let durationMs = milliseconds(since: started)
            try context.write(.applied(step, checksum: code.version, version: Checksum.algorithmVersion, durationMs: durationMs)) { error in
                StepFailure(code: code, message: "could not record the step (did the code swallow a database error?): \(error.message)",
                            databaseError: error)
            }
            try context.watcher?.beforeCommit(step)
            return .applied(rows: nil, durationMs: durationMs)
        }
    }

    /// Runs the body under the rules seeds run under; a throw is the step's failure, naming it.
    private func run(_ body: Migrator.CodeBody, _ context: StepContext) throws {
        do {
            try context.database.withSeedRules { try body(context.database) }
        } catch let error as DatabaseError {
            throw StepFailure(code: code, message: "code step '\(code.name)' failed: \(error.description)", databaseError: error)
        } catch {
            throw StepFailure(code: code, message: "code step '\(code.name)' failed: \(error)")
        }
    }
}
