extension Migrator {
    /// Runs the pending plan where nothing it does is kept, and reports step by step what `migrate` would do:
    /// each step's duration, the rows it would insert, update and delete per table, the locks it would take
    /// (PostgreSQL), the failure with its file, line and column if one would fail, and the schema difference
    /// between the database as it is and as it would be.
    ///
    /// ```swift
    /// let report = try Migrator(manifest: manifest, database: db).rehearse()
    /// if let failure = report.failure { print("would fail:", failure) }   // "sql/005_x.sql:3:1: no such table: …"
    /// ```
    /// On SQLite the plan runs on a copy made with SQLite's online backup API (consistent while other processes
    /// write) in a temporary directory, removed at the end: the database's file is only read. On PostgreSQL every
    /// transactional step runs inside one transaction that is rolled back at the end, never committed (a process
    /// killed part-way leaves nothing either); `transaction="none"` steps are not rehearsed, and the report says so.
    /// A step that runs after a step not rehearsed runs without what that one does, so its success is not known
    /// (`RehearsalReport.rehearsedAfterNotRehearsed`), as a failure there is no verdict.
    /// Refusals (drift, dirty steps, no room for the copy, a step another process is applying now) throw
    /// `MigrationError.refused` before anything runs, as `migrate` does.
    ///
    /// A rehearsal takes no backup. The one `options.backup` asks `migrate` to take first is judged instead, before
    /// the copy is made, against the free space where it goes (`RehearsalReport.backup`): one that cannot fit makes
    /// `wouldFail` true, as migrate would fail before its first step.
    public func rehearse(_ options: MigrationOptions = MigrationOptions(),
                         progress: ((MigrationEvent) -> Void)? = nil) throws -> RehearsalReport {
        // A rehearsal writes nothing to the database, so it takes no backup; the one asked for is judged below.
        var options = options
        let backup = options.backup
        options.backup = nil
        guard let rehearsable = database as? any RehearsableDatabase else {
            throw MigrationError.refused([Refusal(reason: .notRehearsable, id: database.dialect.backend.rawValue,
                message: "\(type(of: database)) offers no place to rehearse a plan (a copy or a transaction that is rolled back); rehearse runs on Strata's SQLite and PostgreSQL connections")])
        }
        // What would stop migrate stops the rehearsal, found on the database itself before a copy is made.
        let plan = try planner.plan(options, forMigrate: true)
        let refusals = try plan.refusals + status(options).filter { $0.state == .running }.map(Self.beingAppliedNow)
        guard refusals.isEmpty else { throw MigrationError.refused(refusals) }
        // Before the copy, which may take room on the backup's filesystem that migrate leaves free. Nothing pending:
        // migrate takes no backup.
        let judgedBackup = plan.steps.isEmpty ? nil
            : backup.flatMap { backup in database.backupSource.map { BackupRoom.judge(backup, source: $0) } }
        let stage = try rehearsable.rehearsalStage(options)
        var report: RehearsalReport
        do {
            report = try rehearse(on: stage, options, progress)
        } catch {
            _ = try? stage.discard()
            throw error
        }
        report.sequences = try stage.discard()
        report.sessionLeftovers = stage.sessionLeftovers
        report.backup = judgedBackup
        return report
    }

    private func rehearse(on stage: any RehearsalStage, _ options: MigrationOptions,
                          _ progress: ((MigrationEvent) -> Void)?) throws -> RehearsalReport {
        var staged = Migrator(manifest: manifest, database: stage.database)
        staged.codeBodies = codeBodies
        let stageOptions = stage.options(for: options)
        // Planned again where it runs: the stage is the database at one moment, and the plan is what it holds then.
        let plan = try staged.planner.plan(stageOptions, forMigrate: true)
        guard plan.refusals.isEmpty else {
            // A step another process began after the check above and before the copy: the copy holds its `running`
            // row, whose lock nothing holds there, so it reads as dirty. Said as what it is.
            let begun = try staged.status(stageOptions).filter { $0.record?.state == .running }
            throw MigrationError.refused(begun.isEmpty ? plan.refusals : begun.map(Self.beingAppliedNow))
        }
        let before = try stage.database.schemaSnapshot()
        var notRehearsed: [String: String] = [:]
        for planned in plan.steps {
            if let reason = stage.reasonNotRehearsed(planned.step) { notRehearsed[Self.key(planned.step)] = reason }
        }
        let watcher = RehearsalWatcher(stage: stage)
        let run = try staged.run(plan.steps.filter { notRehearsed[Self.key($0.step)] == nil }, stageOptions,
                                 watcher: watcher, progress)

        var report = RehearsalReport(stage: stage.summary)
        report.failure = run.failure.map { failure in
            var rehearsed = failure
            rehearsed.rehearsed = true
            return rehearsed
        }
        report.cancelled = run.cancelled
        let applied = Dictionary(run.applied.map { (Self.key($0.kind, $0.id), $0) }, uniquingKeysWith: { first, _ in first })
        var stopped = false
        var stoppedByStage = false
        // The steps not rehearsed so far: each one after them ran without what they do, which migrate does first.
        var skipped: [String] = []
        for planned in plan.steps {
            let key = Self.key(planned.step)
            guard !stopped else {
                report.notRun.append(planned.step.id)
                continue
            }
            var step = RehearsedStep(kind: planned.step.kind, id: planned.step.id, reason: planned.reason, outcome: .applied)
            if let reason = notRehearsed[key] {
                step.outcome = .notRehearsed
                step.note = reason
                skipped.append(step.id)
            } else if let done = applied[key] {
                step.durationMs = done.durationMs
                step.rowCount = done.rowCount
                (step.tables, step.locks, step.heldLocks) = watcher.observed[key] ?? ([], [], [])
                var notes: [String] = []
                if let reason = watcher.unlike[key] {
                    notes.append("ran here, but not as migrate would run it: \(reason)")
                    report.rehearsedUnlikeMigrate.append(step.id)
                }
                if !skipped.isEmpty {
                    step.notRehearsedBefore = skipped
                    notes.append(Self.ranWithout(skipped))
                    report.rehearsedAfterNotRehearsed.append(step.id)
                }
                step.note = notes.isEmpty ? nil : notes.joined(separator: "; ")
            } else if run.alreadyApplied.contains(planned.step.id) {
                step.outcome = .alreadyApplied
            } else if let failure = run.failure, failure.id == planned.step.id, failure.kind == planned.step.kind {
                step.outcome = .failed
                if let reason = stage.stoppedByStage(failure) {
                    step.note = "whether migrate would fail here is not known: \(reason)"
                    report.failureNotKnownBecause = reason
                    stoppedByStage = true
                }
                stopped = true
            } else {
                // Not run: the run stopped before it (cancelled).
                stopped = true
                report.notRun.append(planned.step.id)
                continue
            }
            report.steps.append(step)
        }
        if stoppedByStage { report.failure?.stoppedByRehearsal = true }
        if let failure = report.failure {
            report.notRehearsedUpToFailure = report.steps.prefix { $0.outcome != .failed }
                .filter { $0.outcome == .notRehearsed || report.rehearsedUnlikeMigrate.contains($0.id) }.map(\.id)
                + (stoppedByStage ? [failure.id] : [])
        }
        report.schemaChanges = try SchemaDifference(from: before, to: try stage.database.schemaSnapshot()).changes
        report.room = stage.room
        return report
    }

    /// The note of a step that ran after steps that were not rehearsed.
    private static func ranWithout(_ skipped: [String]) -> String {
        let one = skipped.count == 1
        return "ran without what \(skipped.joined(separator: ", ")) \(one ? "does" : "do"), which \(one ? "was" : "were") not rehearsed and which migrate runs before it: it may succeed here only because \(one ? "that step" : "those steps") did not run, or fail in migrate for what \(one ? "it does" : "they do"), so whether migrate would succeed at it is not known"
    }

    private static func beingAppliedNow(_ status: StepStatus) -> Refusal {
        Refusal(reason: .notRehearsable, id: status.id,
                message: HistoryBook.beingAppliedMessage(status.id, status.record, status.liveness)
                    + "; rehearse once it is done (the database holds it half-applied until then)")
    }

    private static func key(_ step: PlanStep) -> String { key(step.kind, step.id) }
    private static func key(_ kind: StepKind, _ id: String) -> String { kind.rawValue + "/" + id }

    /// Hands each step to the stage before and after it runs, and keeps what the stage measured.
    private final class RehearsalWatcher: StepWatcher {
        let stage: any RehearsalStage
        var observed: [String: (tables: [TableRowChanges], locks: [TableLock], held: [HeldLock])] = [:]
        /// Why a step that ran may not do in `migrate` what it did here, by step.
        var unlike: [String: String] = [:]

        init(stage: any RehearsalStage) {
            self.stage = stage
        }

        func willRun(_ step: PlanStep) throws {
            try stage.willRun(step)
        }

        func beforeCommit(_ step: PlanStep) throws {
            try stage.beforeCommit(step)
        }

        func didRun(_ step: PlanStep, _ applied: AppliedStep) throws {
            let (tables, locks) = try stage.didRun(step)
            observed[Migrator.key(step)] = (tables, locks, stage.heldLocks)
            unlike[Migrator.key(step)] = stage.unlikeMigrate(step)
        }
    }
}
