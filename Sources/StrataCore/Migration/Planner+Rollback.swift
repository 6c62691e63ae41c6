/// The plan of a rollback (`Migrator.rollback`): the downs of the applied steps it names, newest first in plan
/// order, refused before anything runs when one of them cannot be undone as it was applied; and finding a step by
/// name for `--to`.
extension Planner {
    /// The position in the plan of the step named `id`; a name no step has is refused, naming the nearest ones.
    func index(of id: String) throws -> Int {
        if let index = steps.firstIndex(where: { $0.id == id }) { return index }
        throw MigrationError.unknownStep("\(id) is not a step of \(manifest.path)\(nearest(to: id))")
    }

    /// "; the nearest are A, B": the steps whose names sort on either side of `id`.
    private func nearest(to id: String) -> String {
        let names = steps.map(\.id).sorted(by: NaturalOrder.areInIncreasingOrder)
        guard !names.isEmpty else { return " (it has none)" }
        let after = names.firstIndex { NaturalOrder.areInIncreasingOrder(id, $0) } ?? names.count
        let near = names[max(after - 2, 0)..<min(after + 2, names.count)]
        return "; the nearest are " + near.joined(separator: ", ")
    }

    /// Applied migrations and code steps in the order they were applied (history's `applied_at`; steps recorded
    /// at the same moment, as a baseline records them, in plan order; a record whose file left the manifest placed
    /// where its name sorts), repeatable migrations left out: they are never rolled back. Undoing steps newest
    /// first in this order runs each down on the database its up left, whatever order the plan lists them in (a
    /// hotfix applied out of order is undone before the step it was applied after).
    private func undoable(_ statuses: [StepStatus]) -> [StepStatus] {
        var position: [String: Double] = [:]
        for (index, step) in steps.enumerated() { position[HistoryBook.key(step.kind, step.id)] = Double(index) }
        func place(_ status: StepStatus) -> Double {
            if let known = position[HistoryBook.key(status.kind, status.id)] { return known }
            let before = steps.lastIndex { NaturalOrder.areInIncreasingOrder($0.id, status.id) } ?? -1
            return Double(before) + 0.5
        }
        return statuses.filter { status in
            guard status.kind == .migration || status.kind == .code else { return false }
            guard status.state == .applied || status.state == .drifted || status.state == .missing else { return false }
            if case .migration(let migration)? = status.step, migration.repeatable { return false }
            return true
        }.sorted { first, second in
            let (a, b) = (HistoryRecord.appliedInstant(first.record?.appliedAt ?? ""), HistoryRecord.appliedInstant(second.record?.appliedAt ?? ""))
            return a != b ? a < b : place(first) < place(second)
        }
    }

    /// The downs `target` names, newest first, and what would stop them.
    func rollbackPlan(_ target: RollbackTarget, _ statuses: [StepStatus], _ options: MigrationOptions,
                      forMigrate: Bool) throws -> MigrationPlan {
        let applied = undoable(statuses)
        let range: [StepStatus]
        var refusals: [Refusal] = []
        switch target {
        case .steps(let count):
            guard count > 0 else { throw MigrationError.unknownStep("--steps must be at least 1, not \(count)") }
            range = Array(applied.suffix(count))
        case .to(let id):
            let index = try index(of: id)
            let after = Set(steps[(index + 1)...].map { HistoryBook.key($0.kind, $0.id) })
            let named = steps[index]
            let sortsAfter = { (status: StepStatus) in
                status.step == nil && NaturalOrder.areInIncreasingOrder(named.id, status.id)
            }
            range = applied.filter { after.contains(HistoryBook.key($0.kind, $0.id)) || sortsAfter($0) }
            // What stays must all have been applied before what goes: a step that stays but was applied after one
            // that goes (out of order) may build on it.
            let going = Set(range.map { HistoryBook.key($0.kind, $0.id) })
            if let firstGoing = applied.firstIndex(where: { going.contains(HistoryBook.key($0.kind, $0.id)) }) {
                for staying in applied[firstGoing...] where !going.contains(HistoryBook.key(staying.kind, staying.id)) {
                    let undone = applied[firstGoing].id
                    refusals.append(Refusal(reason: .outOfOrder, id: staying.id,
                        message: "\(staying.id) stays applied but was applied after \(undone) (at \(staying.record?.appliedAt ?? "?")), which this rollback undoes: it may build on it; roll back to a step before \(staying.id), or roll back the steps applied after it with --steps"))
                }
            }
        }
        if !range.isEmpty, let reason = try database.rollbackRefusal() {
            refusals.append(Refusal(reason: .readOnly, id: "", message: reason))
        }
        // A step being applied or rolled back by another run now: what the range is depends on how that ends.
        refusals += statuses.filter { $0.state == .running && ($0.kind == .migration || $0.kind == .code) }.map { status in
            Refusal(reason: .inProgress, id: status.id,
                    message: "\(status.id) is being applied or rolled back by another run right now: wait for it to finish, then plan the rollback again")
        }
        refusals = registrationRefusals + refusals
        // A dirty step anywhere: what the database holds is not known, and no down was written for it.
        refusals += statuses.filter { $0.state == .dirty }.compactMap { status in
            let fresh = try? database.history.record(kind: status.step?.historyKind ?? status.kind, identity: status.id)
            guard let fresh, fresh.isDirty else { return nil }
            return Refusal(reason: .dirty, id: status.id, message: HistoryBook.dirtyMessage(status.id, fresh))
        }
        for status in range {
            if let refusal = rollbackRefusal(status) { refusals.append(refusal) }
        }
        let downs = range.compactMap { status -> MigrationStep? in
            if case .migration(let migration)? = status.step { migration } else { nil }
        }
        refusals += MigrationLint.downFindings(downs, dialect: database.dialect)
            .map { Refusal(reason: .invalidSQL, id: $0.id, message: $0.problem.description) }
        var planned = range.reversed().compactMap { status in
            status.step.map { PlannedStep(step: $0, reason: .rollback, rowCount: nil) }
        }
        var id = ""
        if !forMigrate || options.expectedPlanID != nil || options.backup != nil {
            for index in planned.indices { planned[index].checksum = downChecksum(planned[index].step) }
            id = try planID(planned)
        }
        if let expected = options.expectedPlanID, expected != id {
            refusals.append(Refusal(reason: .planChanged, id: expected,
                message: "the plan changed since it was reviewed (plan id \(expected), now \(id)): a file or the database changed; run 'strata rollback --dry-run' again"))
        }
        return MigrationPlan(id: id, steps: planned, refusals: refusals)
    }

    /// Why a step in the range cannot be undone as it was applied; nil when its down can run.
    private func rollbackRefusal(_ status: StepStatus) -> Refusal? {
        switch (status.state, status.step) {
        case (.missing, _), (_, nil):
            return Refusal(reason: .missing, id: status.id,
                message: "\(status.id) was applied but is no longer in the manifest: its down is not known; restore it to roll it back, or roll back only the steps after it")
        case (.drifted, let step?):
            return Refusal(reason: .drift, id: status.id,
                message: "\(status.id) has changed since it was applied (recorded \(status.record?.checksum.prefix(12) ?? ""), now \(status.checksum?.prefix(12) ?? (step.kind == .code ? "another version" : "unreadable"))): its down was written for what the file is now, not for what ran; restore it, or check it and run 'strata repair' first")
        case (_, .migration(let migration)?) where migration.down == nil:
            return Refusal(reason: .noDown, id: status.id,
                message: "\(status.id) has no down: nothing undoes it (\(migration.location)); write one (for Strata's own layout, \(PathComponents.last(migration.path).dropLast(4)).down.sql beside it, or <migration down=\"…\">), or roll back only the steps after it")
        case (_, .migration(let migration)?) where migration.down.map({
                MigrationScript(migration: migration, database: database, part: .down($0)).holdsNoStatement() }) == true:
            return Refusal(reason: .noDown, id: status.id,
                message: "\(status.id)'s down holds no statement (\(migration.location)): it would undo nothing and the step would read pending with its changes still there; write what undoes it, or roll back only the steps after it")
        case (_, .code(let code)?) where !registeredDowns.contains(code.name):
            return Refusal(reason: .noDown, id: status.id,
                message: "\(status.id) is a Swift code step (\(code.location)) with no down registered: the program must register one, with migrator.registerDown(\"\(code.name)\") { db in … }; the strata command cannot run Swift code")
        default:
            return nil
        }
    }

    /// What the plan id covers of a down: the down file's checksum, or the whole file's for a down section (its
    /// bytes hold the down); a code step's version.
    func downChecksum(_ step: PlanStep) -> String? {
        switch step {
        case .migration(let migration):
            guard let down = migration.down else { return nil }
            let path: String
            switch down.source {
            case .section: path = migration.path
            case .file(let file): path = file
            }
            return try? Checksum.ofFile(atPath: path, content: .sql, version: database.dialect.checksumVersion)
        case .code(let code):
            return code.version
        case .seed:
            return nil
        }
    }
}
