#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The backup `MigrationOptions.backup` asks `migrate` for: a state between steps, named with the plan applied after it.
extension Migrator {
    /// What `migrate` goes on with after `backUp`.
    enum BackupOutcome {
        /// The backup, and the plan of the state it copied: what the run applies.
        case taken(DatabaseBackup, MigrationPlan)
        /// Other runs applied the whole plan meanwhile: no backup, nothing to run.
        case nothingToApply
        /// Cancelled while waiting for another process's step: nothing was copied or applied.
        case cancelled
    }

    /// Copies the database into the backup directory before any step runs, at a moment when no step is half-applied.
    ///
    /// The check and the copy read one state (`BackupSource.writeBackup(to:checkingFirst:)`): a `transaction="none"`
    /// step commits its `running` row before its first statement and its final row after its last, so a state
    /// with no `running` row holds every step whole or not at all. A state with one (another process applying a
    /// step now, as `rehearse` refuses) is not copied: the run waits for that step as its own claim would, up to
    /// `waitTimeout`, and looks again. The plan is made again in the state copied, so the backup is named with the
    /// plan that follows it and the run applies exactly that plan; a plan that changed meanwhile is refused as any
    /// would be (a changed `expectedPlanID`, a step left dirty). A backup that cannot be taken, checked and synced
    /// stops the run here, with nothing applied.
    func backUp(_ backupOptions: BackupOptions, _ options: MigrationOptions,
                _ progress: ((MigrationEvent) -> Void)?) throws -> BackupOutcome {
        guard let source = database.backupSource else {
            throw MigrationError.refused([Refusal(reason: .backup, id: database.dialect.backend.rawValue,
                                                  message: database.backupUnavailableReason)])
        }
        let directory = BackupDirectory(backupOptions)
        let deadline = ContinuousClock.now + options.waitTimeout
        var announced: Set<String> = []
        while true {
            var planned: MigrationPlan?
            var running: [HistoryRecord] = []
            let backup = try directory.take(from: source) { () -> String? in
                running = try database.history.all().filter { $0.state == .running }
                guard running.isEmpty else { return nil }
                let current = try planner.plan(options, forMigrate: true)
                guard current.refusals.isEmpty else { throw MigrationError.refused(current.refusals) }
                planned = current
                return current.steps.isEmpty ? nil : current.id
            }
            if let backup, let planned {
                progress?(.backedUp(backup))
                for problem in backup.notRemoved { progress?(.notice(problem)) }
                return .taken(backup, planned)
            }
            if running.isEmpty { return .nothingToApply }
            // Judged again outside the copied state: a runner that died left its step dirty, which is refused; one
            // that finished since is simply looked at again.
            let now = try planner.plan(options, forMigrate: true)
            guard now.refusals.isEmpty else { throw MigrationError.refused(now.refusals) }
            let ids = running.map(\.identity)
            guard ContinuousClock.now < deadline else {
                throw MigrationError.lockTimeout("\(ids.joined(separator: ", ")) is being applied by another process and did not finish within \(options.waitTimeout); no backup was taken and nothing was applied (a backup holds no step half-applied); run again once it is done")
            }
            for id in ids where announced.insert(id).inserted {
                progress?(.waiting("\(id) is being applied by another process; waiting for it to finish before the backup (a backup holds no step half-applied)"))
            }
            sleepBlocking(for: .milliseconds(200))
            if options.cancellation?.isCancelled == true { return .cancelled }
        }
    }
}
