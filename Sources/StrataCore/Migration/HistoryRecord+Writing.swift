/// The records the runner writes, one constructor per moment of a step's life, so each says what it records and
/// the columns every record shares (the time, Strata's version) are filled in one place.
extension HistoryRecord {
    /// A step applied now: its checksum (under `version`), how long it took, the rows a seed loaded, the SQL a
    /// migration ran (files up to `MigrationScript.recordedTextLimit`) and a reapply seed's earlier checksums.
    static func applied(_ step: PlanStep, checksum: String, version: Int, durationMs: Int, rowCount: Int? = nil,
                        appliedSQL: String? = nil, earlierChecksums: [String] = []) -> HistoryRecord {
        HistoryRecord(kind: step.historyKind, identity: step.id, checksum: checksum, checksumVersion: version,
                      appliedAt: now(), durationMs: durationMs, rowCount: rowCount, state: .applied,
                      toolVersion: Strata.version, appliedSQL: appliedSQL, runner: nil, error: nil,
                      earlierChecksums: earlierChecksums)
    }

    /// A `transaction="none"` step claimed by this process and about to run: committed before its first
    /// statement, so the attempt is known whatever happens next.
    static func running(_ migration: MigrationStep, checksum: String, version: Int, appliedSQL: String?,
                        runnerSession: String?) -> HistoryRecord {
        HistoryRecord(kind: .migration, identity: migration.id, checksum: checksum, checksumVersion: version,
                      appliedAt: now(), durationMs: nil, rowCount: nil, state: .running, toolVersion: Strata.version,
                      appliedSQL: appliedSQL, runner: Runner.current, error: nil, runnerSession: runnerSession)
    }

    /// How a `transaction="none"` step ended: applied, or `failed` with the failure and this process as its runner.
    static func finished(_ migration: MigrationStep, checksum: String, version: Int, durationMs: Int,
                         appliedSQL: String?, failure: StepFailure?) -> HistoryRecord {
        HistoryRecord(kind: .migration, identity: migration.id, checksum: checksum, checksumVersion: version,
                      appliedAt: now(), durationMs: durationMs, rowCount: nil, state: failure == nil ? .applied : .failed,
                      toolVersion: Strata.version, appliedSQL: appliedSQL, runner: failure == nil ? nil : Runner.current,
                      error: failure?.summary)
    }

    /// An applied `transaction="none"` step whose down is about to run outside a transaction: `running` again, so
    /// that a crash part-way leaves it dirty rather than applied (`resolve --rolled-back` then says it is undone).
    static func rollingBack(_ applied: HistoryRecord, runnerSession: String?) -> HistoryRecord {
        HistoryRecord(kind: applied.kind, identity: applied.identity, checksum: applied.checksum,
                      checksumVersion: applied.checksumVersion, appliedAt: now(), durationMs: nil, rowCount: nil,
                      state: .running, toolVersion: Strata.version, appliedSQL: applied.appliedSQL, runner: Runner.current,
                      error: rollingBackNote, runnerSession: runnerSession)
    }

    /// What a `running` row whose down is being run says in `error`, read back by `HistoryBook.dirtyMessage`.
    static let rollingBackNote = "rolled back (its down)"

    /// The identity prefix of the audit records a rollback leaves: `rollback:TIME:ID`, state `deleted`, so status
    /// and every older Strata pass over them while they say what was undone, when, by whom, with what SQL.
    static let rollbackIdentityPrefix = "rollback:"

    /// The audit record of a step rolled back now: the checksum of the up that was undone, the down's SQL.
    static func rolledBack(_ applied: HistoryRecord, downSQL: String?, durationMs: Int) -> HistoryRecord {
        let at = now()
        return HistoryRecord(kind: applied.kind, identity: rollbackIdentityPrefix + at + ":" + applied.identity,
                             checksum: applied.checksum, checksumVersion: applied.checksumVersion, appliedAt: at,
                             durationMs: durationMs, rowCount: nil, state: .deleted, toolVersion: Strata.version,
                             appliedSQL: downSQL, runner: Runner.current, error: nil)
    }

    /// A step recorded as applied without running (`baseline`: adopting a database that already has it).
    static func baseline(_ step: PlanStep, checksum: String, version: Int, appliedSQL: String?) -> HistoryRecord {
        HistoryRecord(kind: step.historyKind, identity: step.id, checksum: checksum, checksumVersion: version,
                      appliedAt: now(), durationMs: 0, rowCount: nil, state: .baseline, toolVersion: Strata.version,
                      appliedSQL: appliedSQL, runner: nil, error: nil)
    }

    /// A copy with a new checksum (and the version it was computed with), state, text or earlier checksums. A new
    /// state forgets the runner and its error.
    func with(checksum: String? = nil, version: Int? = nil, state: State? = nil, appliedSQL: String?? = nil,
              earlierChecksums: [String]? = nil) -> HistoryRecord {
        HistoryRecord(kind: kind, identity: identity, checksum: checksum ?? self.checksum,
                      checksumVersion: version ?? checksumVersion, appliedAt: appliedAt, durationMs: durationMs,
                      rowCount: rowCount, state: state ?? self.state, toolVersion: toolVersion,
                      appliedSQL: appliedSQL ?? self.appliedSQL, runner: state == nil ? runner : nil,
                      error: state == nil ? error : nil, earlierChecksums: earlierChecksums ?? self.earlierChecksums,
                      runnerSession: state == nil ? runnerSession : nil)
    }

    /// At most this many earlier checksums are kept for a step (oldest dropped first): a seed reapplied on every
    /// deploy for years keeps a row of a few tens of KiB.
    static let earlierChecksumLimit = 1000

    /// The earlier checksums of the next application after this one: this record's own checksum added.
    var lineage: [String] {
        Array((earlierChecksums.filter { $0 != versionedChecksum } + [versionedChecksum]).suffix(Self.earlierChecksumLimit))
    }
}
