/// Reads the history and compares it with the manifest's files: a step's current checksum under the version its
/// record was written with, whether a record found inside a step's transaction means another run applied it,
/// whether a `running` record's runner may still be at it, whether a reapply seed's file is an older one, and
/// whether another history in the database records this manifest's steps.
struct HistoryBook {
    let database: any MigrationDatabase

    var history: any HistoryStorage { database.history }

    /// The key a step or record is known by across kinds: `kind/identity`.
    static func key(_ kind: StepKind, _ id: String) -> String { kind.rawValue + "/" + id }

    // MARK: Checksums

    /// The step's current checksum under `version`, or the step's failure when its file cannot be read.
    func checksum(of step: PlanStep, version: Int) throws -> String {
        do {
            return try step.currentChecksum(version: version)
        } catch {
            throw StepFailure(step, message: "cannot read the \(step.kind == .seed ? "seed" : "migration") file: \(error)")
        }
    }

    /// Whether the step's file has the checksum `entry` (`version:hex`, as `earlierChecksums` lists them).
    func matches(_ step: PlanStep, _ entry: String) throws -> Bool {
        let parts = entry.split(separator: ":", maxSplits: 1)
        guard parts.count == 2, let version = Int(parts[0]), Checksum.isKnown(version) else { return false }
        return try step.currentChecksum(version: version) == String(parts[1])
    }

    /// Whether a reapply seed's file is one the database held before the file it holds now (another release's
    /// older file, met in a rolling deploy or after the application was rolled back): loading it would put the
    /// older rows back over the newer ones.
    /// A repeatable migration never is: putting back an earlier definition of a view is applying it again.
    func isEarlierVersion(_ step: PlanStep, of record: HistoryRecord) -> Bool {
        guard case .seed = step, step.isReappliedWhenChanged else { return false }
        return record.earlierChecksums.contains { (try? matches(step, $0)) ?? false }
    }

    // MARK: What a record found means

    /// A record found inside the step's write transaction, when the step would be applied: with the same checksum,
    /// another run applied it (`AppliedElsewhere`, which ends the transaction having changed nothing); dirty or with
    /// another checksum, the run is refused. `checksum` is the step's own, already computed under the record's
    /// version.
    func settle(_ record: HistoryRecord, of step: PlanStep, checksum: String? = nil) throws -> Never {
        if record.isDirty {
            throw MigrationError.refused([Refusal(reason: .dirty, id: step.id, message: Self.dirtyMessage(step.id, record))])
        }
        let current = try checksum ?? self.checksum(of: step, version: record.checksumVersion)
        if record.checksum != current {
            throw MigrationError.refused([Refusal(reason: .drift, id: step.id,
                message: "\(step.id) was applied by another run with different content; check it and run 'strata repair'")])
        }
        throw AppliedElsewhere()
    }

    /// Before its down runs: the step's file must be what was applied (the down was written for it), else refused.
    func confirmUnchanged(_ record: HistoryRecord, of step: PlanStep) throws {
        let current = try checksum(of: step, version: record.checksumVersion)
        guard current != record.checksum else { return }
        throw MigrationError.refused([Refusal(reason: .drift, id: step.id,
            message: "\(step.id) has changed since it was applied (recorded \(record.checksum.prefix(12)), now \(current.prefix(12))): its down was written for what the file is now, not for what ran; restore it, or check it and run 'strata repair' first")])
    }

    /// A record found inside the write transaction of a step applied again when it changes (a reapply seed, a
    /// repeatable migration), `checksum` its content's under the record's version: unchanged, or not applied, it is
    /// settled as any step's (`settle`); changed to a file the database held before its current one, refused; changed
    /// to a new file, it runs again, and this returns the earlier checksums its next record keeps.
    func reapplication(of step: PlanStep, _ record: HistoryRecord, checksum: String) throws -> [String] {
        if !(step.isReappliedWhenChanged && record.isApplied && record.checksum != checksum) {
            try settle(record, of: step, checksum: checksum)
        }
        // Another run may have applied a newer file since the plan was made: never apply an older one over it.
        if isEarlierVersion(step, of: record) {
            throw MigrationError.refused([Refusal(reason: .drift, id: step.id, message: Self.earlierVersionMessage(step.id, record))])
        }
        return record.lineage
    }

    /// A `running` step whose runner may still be at it (`StepLocking.liveness(of:)`). `failed` never is,
    /// whatever its pid.
    func isBeingApplied(_ record: HistoryRecord?) -> Bool {
        liveness(of: record)?.mayBeApplying ?? false
    }

    /// What the database tells of a `running` record's runner; nil for any other record.
    func liveness(of record: HistoryRecord?) -> RunnerLiveness? {
        guard let record, record.state == .running else { return nil }
        return database.stepLocks.liveness(of: record)
    }

    /// "X is being applied now by host:pid, which holds its lock" (or why it is taken to be).
    static func beingAppliedMessage(_ id: String, _ record: HistoryRecord?, _ liveness: RunnerLiveness?) -> String {
        "\(id) is being applied now by \(record?.runner ?? "another process"), \((liveness ?? .holdsLock).description)"
    }

    static func dirtyMessage(_ id: String, _ record: HistoryRecord?) -> String {
        let how = record?.state == .failed
            ? "failed part-way outside a transaction (\(record?.error ?? "unknown error"))"
            : record?.error.map { "was being \($0) outside a transaction by \(record?.runner ?? "another process") and never finished" }
                ?? "was started outside a transaction by \(record?.runner ?? "another process") and never finished"
        return "\(id) \(how); check the database by hand, then run 'strata resolve \(id) --applied' or 'strata resolve \(id) --rolled-back'"
    }

    static func earlierVersionMessage(_ id: String, _ record: HistoryRecord) -> String {
        "\(id) is a file this database was loaded from before the one loaded at \(record.appliedAt) (checksum \(record.checksum.prefix(12))): loading it again would put its rows back over those loaded since (an older release deploying?); deploy the file loaded last, or run 'strata repair' to let the next migrate load this one"
    }

    // MARK: Histories elsewhere

    /// Refuses a database whose history is not where this connection looks (a `<database schema>` added or
    /// changed, a `search_path` that no longer reaches it) but which holds another history recording steps of
    /// `plan`: every step would read as pending and run again. A step counts as the plan's when that history
    /// recorded the file as it is now (its checksum), not merely a file of the same name: another application with
    /// its own history schema and its own `001_init.sql` is left alone.
    func refuseHistoryElsewhere(of plan: [PlanStep]) throws {
        var steps: [String: PlanStep] = [:]
        for step in plan { steps[Self.key(step.historyKind, step.id)] = step }
        let refusals = try database.otherHistories().compactMap { other -> Refusal? in
            guard let checksums = other.checksums else {
                return Refusal(reason: .historyElsewhere, id: other.location,
                    message: "\(other.location) exists, and this role may not read it (it lacks SELECT on the table or USAGE on its schema), so whether it records this manifest's steps cannot be told, while this database's history is looked for elsewhere and has none there: if it does, every step would run again. Grant this role SELECT on it, or name that history's schema in <database schema=\"…\">; if it is another application's, run once with --new-history")
            }
            let shared = Set(checksums.compactMap { step, checksum -> String? in
                guard let ours = steps[step], (try? matches(ours, checksum)) == true else { return nil }
                return step
            })
            guard !shared.isEmpty else { return nil }
            let names = shared.sorted().prefix(3).map { String($0.split(separator: "/", maxSplits: 1).last ?? "") }
            return Refusal(reason: .historyElsewhere, id: other.location,
                message: "\(other.location) records \(shared.count) step\(shared.count == 1 ? "" : "s") of this manifest (\(names.joined(separator: ", "))\(shared.count > 3 ? ", …" : "")), each as its file is now, but this database's history is looked for elsewhere and has none there: every step would run again. If that history is this manifest's, name its schema in <database schema=\"…\">, or move the table where it is looked for; if it is another application's whose files match these, run once with --new-history")
        }
        if !refusals.isEmpty { throw MigrationError.refused(refusals) }
    }
}

/// Thrown inside a step's transaction to roll it back without error when another process got there first.
struct AppliedElsewhere: Error {}

extension PlanStep {
    /// A step applied again when its content changes, rather than drifting: a reapply seed, a repeatable migration.
    var isReappliedWhenChanged: Bool {
        switch self {
        case .seed(let seed): seed.onChange == .reapply
        case .migration(let migration): migration.repeatable
        case .code: false
        }
    }

    /// How the step's file is hashed: line endings inside SQL literals or quoted CSV fields are data.
    var checksumContent: Checksum.Content {
        switch self {
        case .migration, .code: .sql
        case .seed: .csv
        }
    }

    /// The checksum version a new record of this step gets on a database of `dialect`: a migration file's SQL is
    /// read by the dialect's rules; a seed's CSV, and a code step's `version`, are the same everywhere.
    func checksumVersion(on dialect: any SQLDialect) -> Int {
        switch self {
        case .migration: dialect.checksumVersion
        case .seed, .code: Checksum.algorithmVersion
        }
    }

    /// What history compares the step's record with: its file's checksum under `version`, or a code step's
    /// `version` as the manifest gives it (a code step has no file).
    func currentChecksum(version: Int) throws -> String {
        switch self {
        case .code(let code): code.version
        case .migration, .seed: try Checksum.ofFile(atPath: filePath, content: checksumContent, version: version)
        }
    }
}
