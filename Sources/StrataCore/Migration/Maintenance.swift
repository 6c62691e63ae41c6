/// What a human does to the history after checking the database: record steps as applied without running them
/// (`baseline`), re-record drifted files and mark removed ones deleted (`repair`), and settle a dirty
/// `transaction="none"` step (`resolve`). Each runs in one transaction holding the write lock.
struct Maintenance {
    let planner: Planner

    private var database: any MigrationDatabase { planner.database }
    private var history: any HistoryStorage { database.history }
    private var book: HistoryBook { HistoryBook(database: database) }

    /// Records every step up to and including `id` as applied without running it. Steps already recorded are left
    /// alone. `id` is a step's identity, or a version (`3`, `20240101120000`, Flyway's `1.1`) exactly one
    /// migration's file name starts with. Returns the ids recorded.
    func baseline(through id: String, _ options: MigrationOptions) throws -> [String] {
        let plan = planner.steps
        let end = try plan.firstIndex(where: { $0.id == id }) ?? index(ofVersion: id)
        return try database.reportingLockTimeout {
            try database.withWriteLock {
                try record(plan[...end].filter { step in
                    if case .seed(let seed) = step { return Planner.isActive(seed, options) }
                    return true
                })
            }
        }
    }

    /// The plan position of the one migration whose file name gives version `text` (its leading number, or
    /// Flyway's `V…__`); refused when none or several do.
    private func index(ofVersion text: String) throws -> Int {
        let plan = planner.steps
        let wanted = ForeignVersion(number: text) ?? ForeignVersion(dotted: text)
        let matches = plan.indices.filter { index in
            guard let wanted, case .migration(let migration) = plan[index], !migration.repeatable else { return false }
            return ForeignTool.dbmate.version(of: migration) == wanted || ForeignTool.flyway.version(of: migration) == wanted
        }
        guard let first = matches.first else {
            throw MigrationError.invalidStep("\(text) is not a step of \(planner.manifest.path), nor the version of one of its migrations")
        }
        guard matches.count == 1 else {
            throw MigrationError.invalidStep("version \(text) is the version of several migrations (\(matches.map { plan[$0].id }.joined(separator: ", "))); name the file")
        }
        return first
    }

    /// Records as applied, without running them, exactly the migrations `tool`'s own history table says it applied,
    /// each matched to its file by that tool's version rules (`ForeignTool.version(of:)`). Refused, recording
    /// nothing, when the table is missing or not the tool's, marks a step dirty or failed, or names a version no
    /// file has (or several files have). Steps Strata already records are left alone.
    func baseline(from tool: ForeignTool) throws -> ForeignBaseline {
        // The tool's files are those of its format where the manifest declares it (a directory of Strata's own
        // beside them is not the tool's, whatever its names' numbers); with none declared, every file.
        let migrations = planner.steps.compactMap { step -> MigrationStep? in
            if case .migration(let migration) = step, !migration.repeatable { migration } else { nil }
        }
        let declared = migrations.filter { $0.format.rawValue == tool.rawValue }
        let candidates = declared.isEmpty ? migrations : declared
        let versioned: [(step: PlanStep, version: ForeignVersion)] = candidates.compactMap { migration in
            tool.version(of: migration).map { (PlanStep.migration(migration), $0) }
        }
        return try database.reportingLockTimeout {
            try database.withWriteLock {
                // Adopting is for a database Strata has not run on: once its history holds runs of its own (an
                // applied step, a rollback), the other tool's table no longer says what this database holds (a step
                // Strata rolled back is still there), so nothing is taken from it, and the result says why.
                let own = try history.all().filter { $0.state != .baseline && $0.state != .deleted
                    || $0.identity.hasPrefix(HistoryRecord.rollbackIdentityPrefix) }
                if !own.isEmpty {
                    return ForeignBaseline(tool: tool, recorded: [], repeatablesNotRecorded: [],
                        notRead: "Strata's history already records \(own.count) run\(own.count == 1 ? "" : "s") of its own on this database; \(tool.table) no longer says what it holds")
                }
                let foreign = try ForeignHistory.read(tool, from: database)
                var refusals = foreign.refusals
                var keys: Set<String> = []
                for version in foreign.applied.sorted() {
                    let files = versioned.filter { $0.version == version }.map(\.step)
                    if files.count == 1, let file = files.first {
                        keys.insert(HistoryBook.key(file.historyKind, file.id))
                    } else {
                        refusals.append(Refusal(reason: .foreignHistory, id: version.description, message: files.isEmpty
                            ? "\(tool.table) records version \(version) as applied, and no migration of \(planner.manifest.path) has that version: what ran is not known here; restore its file, or adopt by hand with 'strata baseline --through'"
                            : "\(tool.table) records version \(version), which several migrations have (\(files.map(\.id).joined(separator: ", "))): which one ran is not known"))
                    }
                }
                if let through = foreign.through {
                    for file in versioned where file.version <= through { keys.insert(HistoryBook.key(file.step.historyKind, file.step.id)) }
                }
                guard refusals.isEmpty else { throw MigrationError.refused(refusals) }
                let recorded = try record(planner.steps.filter { keys.contains(HistoryBook.key($0.historyKind, $0.id)) })
                return ForeignBaseline(tool: tool, recorded: recorded, repeatablesNotRecorded: foreign.notes, notRead: nil)
            }
        }
    }

    /// Writes a `baseline` record of each step that has none (or only a `deleted` one), creating the history when
    /// absent; inside the caller's write lock. Returns the ids recorded.
    private func record(_ steps: [PlanStep]) throws -> [String] {
        try history.create()
        var recorded: [String] = []
        for step in steps {
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

/// What `Migrator.baseline(from:)` recorded.
public struct ForeignBaseline: Sendable, Equatable {
    /// The tool whose history was read.
    public let tool: ForeignTool
    /// The steps recorded as applied, in plan order (those Strata already recorded are not listed).
    public let recorded: [String]
    /// Flyway's repeatable scripts its history lists: not recorded, so Strata's next `migrate` applies their files
    /// as they are now (a repeatable is written to be applied again).
    public let repeatablesNotRecorded: [String]
    /// Why the tool's history was not read at all (Strata has run on the database since), nil when it was.
    public let notRead: String?
}
