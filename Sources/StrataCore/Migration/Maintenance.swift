/// What a human does to the history after checking the database: record steps as applied without running them
/// (`baseline`), re-record drifted files and mark removed ones deleted (`repair`), and settle a dirty
/// `transaction="none"` step (`resolve`). Each runs in one transaction holding the write lock.
struct Maintenance {
    let planner: Planner

    private var database: any MigrationDatabase { planner.database }
    private var history: any HistoryStorage { database.history }
    private var book: HistoryBook { HistoryBook(database: database) }

    /// Records every step up to and including `id` as applied without running it. Steps already recorded are left
    /// alone. Returns the ids recorded.
    func baseline(through id: String, _ options: MigrationOptions) throws -> [String] {
        let plan = planner.steps
        guard let end = plan.firstIndex(where: { $0.id == id }) else {
            throw MigrationError.invalidStep("\(id) is not a step of \(planner.manifest.path)")
        }
        return try database.reportingLockTimeout {
            try database.withWriteLock {
                try history.create()
                var recorded: [String] = []
                for step in plan[...end] {
                    if case .seed(let seed) = step, !Planner.isActive(seed, options) { continue }
                    if let existing = try history.record(kind: step.historyKind, identity: step.id), existing.state != .deleted {
                        continue
                    }
                    let version = step.checksumVersion(on: database.dialect)
                    var text: String?
                    if case .migration = step { text = MigrationScript.recordedText(of: step.filePath, version: version) }
                    let checksum: String
                    do { checksum = try step.currentChecksum(version: version) } catch {
                        throw MigrationError.invalidStep("cannot read \(displayPath(step.filePath))")
                    }
                    try history.write(.baseline(step, checksum: checksum, version: version, appliedSQL: text))
                    recorded.append(step.id)
                }
                return recorded
            }
        }
    }

    /// Re-records the checksums of drifted steps and marks records of files no longer in the manifest as deleted.
    /// A reapply seed's earlier file is not recorded as loaded (its newer rows are there): it is taken out of the
    /// earlier versions, so the next migrate loads it.
    func repair() throws -> RepairReport {
        try database.reportingLockTimeout {
            try database.withWriteLock {
                var report = RepairReport()
                for status in try planner.status(MigrationOptions()) {
                    guard let record = status.record else { continue }
                    switch status.state {
                    case .drifted where status.step.map { book.isEarlierVersion($0, of: record) } ?? false:
                        guard let step = status.step else { continue }
                        let kept = record.earlierChecksums.filter { !((try? book.matches(step, $0)) ?? false) }
                        try history.write(record.with(earlierChecksums: kept))
                        report.reapplyAllowed.append(status.id)
                    case .drifted:
                        // Re-recorded under the version new records of the step get here.
                        guard let step = status.step else { continue }
                        let version = step.checksumVersion(on: database.dialect)
                        guard let checksum = try? step.currentChecksum(version: version) else { continue }
                        var text = record.appliedSQL
                        if case .migration = step { text = MigrationScript.recordedText(of: step.filePath, version: version) }
                        try history.write(record.with(checksum: checksum, version: version, appliedSQL: text))
                        report.realigned.append(status.id)
                    case .missing:
                        try history.write(record.with(state: .deleted))
                        report.deleted.append(status.id)
                    default:
                        break
                    }
                }
                return report
            }
        }
    }

    /// Settles a dirty step after a human has checked the database.
    func resolve(_ id: String, as resolution: Resolution) throws {
        try database.reportingLockTimeout {
            try database.withWriteLock {
                let records = try history.all().filter { $0.identity == id && $0.isDirty }
                guard let record = records.first else {
                    throw MigrationError.invalidStep("\(id) is not dirty; 'strata status' lists dirty steps")
                }
                if let liveness = book.liveness(of: record), liveness.mayBeApplying {
                    throw MigrationError.refused([Refusal(reason: .dirty, id: id,
                        message: HistoryBook.beingAppliedMessage(id, record, liveness) + "; wait for it to finish, then check 'strata status'")])
                }
                // Whichever way the step is settled, what it left half-built must go first: recorded as applied, an
                // INVALID index would pass for the finished one; rolled back, a rerun with IF NOT EXISTS keeps it.
                let unfinished = try database.unfinishedObjects()
                if !unfinished.isEmpty {
                    throw MigrationError.refused(unfinished.map {
                        Refusal(reason: .unfinished, id: $0.name, message: "cannot resolve \(id): \($0), then resolve it again")
                    })
                }
                switch resolution {
                case .applied:
                    let step = planner.steps.first { $0.id == id && $0.historyKind == record.kind }
                    if let step, case let version = step.checksumVersion(on: database.dialect),
                       let checksum = try? step.currentChecksum(version: version) {
                        try history.write(record.with(checksum: checksum, version: version, state: .applied))
                    } else {
                        try history.write(record.with(state: .applied))
                    }
                case .rolledBack:
                    try history.delete(kind: record.kind, identity: id)
                }
            }
        }
    }
}
