/// What a rollback's downs share: the manifest's seeds (those a down takes the rows of read pending with it) and
/// the steps no rollback undoes (repeatable migrations), whose later applications never make a step "not the newest".
struct RollbackScope {
    var seeds: [SeedStep] = []
    /// History identities of repeatable migrations.
    var neverUndone: Set<String> = []
}

/// What a seed's table looked like before a down ran, to tell afterwards what the down did to the seed's rows.
struct SeedTableShape {
    let seed: SeedStep
    /// The table's columns the seed loads (its CSV header names; all of them when the header cannot be read);
    /// nil when the table does not exist (as the seed names it).
    let columns: [ColumnInfo]?
    /// Whether the table holds rows: a down that leaves it empty (a drop and re-create) took the seed's rows.
    let hasRows: Bool

    init(_ seed: SeedStep, in database: any MigrationDatabase) throws {
        self.seed = seed
        // As the seed finds its table (PostgreSQL: `Books` in a manifest finds `books`).
        guard let table = try database.declaredTableName(seed.table) else {
            columns = nil
            hasRows = false
            return
        }
        hasRows = try Self.hasRows(table, in: database)
        let all = try database.columns(in: table)
        guard let header = Self.header(of: seed) else {
            columns = all
            return
        }
        columns = all.filter { column in header.contains { sqliteNamesEqual($0, column.name) } }
    }

    /// Whether the table is gone now, or emptied, or a column the seed loads dropped or changed.
    func isUnchanged(in database: any MigrationDatabase) throws -> Bool {
        guard let columns else { return true }
        guard let table = try database.declaredTableName(seed.table) else { return false }
        if hasRows, try !Self.hasRows(table, in: database) { return false }
        let all = try database.columns(in: table)
        return columns.allSatisfy { before in all.first { sqliteNamesEqual($0.name, before.name) } == before }
    }

    /// Whether the table still exists and holds a row (as the seed finds it).
    func holdsRows(in database: any MigrationDatabase) throws -> Bool {
        guard let table = try database.declaredTableName(seed.table) else { return false }
        return try Self.hasRows(table, in: database)
    }

    /// Whether `table` (a name `declaredTableName` gave) holds a row. A schema-qualified name is not looked into
    /// (taken as holding rows), so an emptied table of another schema is not noticed, but nothing is misread.
    private static func hasRows(_ table: String, in database: any MigrationDatabase) throws -> Bool {
        guard !table.contains(".") else { return true }
        return try database.scalar("SELECT EXISTS (SELECT 1 FROM \(quoteIdentifier(table)))", .none, as: Bool.self) ?? true
    }

    private static func header(of seed: SeedStep) -> [String]? {
        guard let reader = try? CSVReader(path: seed.path, delimiter: seed.delimiter),
              (try? reader.readRecord()) == true else { return nil }
        return reader.strings()
    }
}

extension StepContext {
    /// Inside a down's transaction (the write lock held): the record the down undoes, checked again against the
    /// history as it is now, because the plan was made before the lock was taken. Another run may have rolled the
    /// step back (`AppliedElsewhere`: nothing to do), may be applying or rolling it back now, or may have applied a
    /// later step since, which this down would undo the ground of: both fail the step, nothing run.
    /// `record` is the step's row as it is, a `deleted` one included (a file restored after `repair` is applied, as
    /// `status` says).
    func recordToUndo(_ step: PlanStep, _ record: HistoryRecord?, _ scope: RollbackScope) throws -> HistoryRecord {
        guard let record else { throw AppliedElsewhere() }
        if record.isDirty {
            throw StepFailure(step, message: "\(step.id) is being applied or rolled back by another run right now (history says \(record.state.rawValue)): nothing was rolled back from here; run 'strata status', and roll back again once it has finished")
        }
        let later = try history.all().filter { other in
            other.kind == record.kind && other.identity != record.identity && other.state != .deleted
                && !other.identity.hasPrefix(HistoryRecord.rollbackIdentityPrefix)
                && !scope.neverUndone.contains(other.identity) && HistoryRecord.appliedBefore(record, other)
        }
        if let newest = later.max(by: HistoryRecord.appliedBefore) {
            throw StepFailure(step, message: "\(newest.identity) was applied after \(step.id) (at \(newest.appliedAt), after this rollback was planned or out of order) and stays applied: undoing \(step.id) under it could take what it built on; nothing was rolled back from here; plan the rollback again")
        }
        return record
    }

    /// The seeds' tables as they are, before a down runs (`recordRollback` compares them after).
    func seedTables(_ scope: RollbackScope) throws -> [SeedTableShape] {
        try scope.seeds.compactMap { seed in
            guard let record = try history.record(kind: .seed, identity: seed.id), record.state != .deleted else { return nil }
            return try SeedTableShape(seed, in: database)
        }
    }

    /// After a step's down ran, in the transaction that records it: the step's row goes (it reads pending again, and
    /// the next `migrate` applies it as new), and an audit row says what was rolled back. Seeds are judged by what
    /// the down did to their tables, compared with `before`: a table the down dropped took the seed's rows (the seed
    /// reads pending, and loads again with its table); a table the down emptied (a drop and re-create) took them too, whatever the seed's mode; a table whose columns the seed loads the down dropped or changed holds rows the seed
    /// can only put right by loading again, which `upsert`, `replace` and `sync` do (it reads pending), and `insert`
    /// and `ignore` would not (the down fails, nothing kept). A seed whose table the down did not touch stays applied.
    func recordRollback(of step: PlanStep, _ applied: HistoryRecord, down ran: (checksum: String, text: String?)?,
                        durationMs: Int, seedsBefore before: [SeedTableShape]) throws {
        for shape in before {
            guard try !shape.isUnchanged(in: database) else { continue }
            // An emptied table takes the seed again whatever its mode; rows still there only from upsert, replace, sync.
            if try shape.holdsRows(in: database), shape.seed.mode == .insert || shape.seed.mode == .ignore {
                throw StepFailure(step, message: "its down changes the columns of \(shape.seed.table), which seed \(shape.seed.id) loaded with mode=\"\(shape.seed.mode.rawValue)\": its rows would stay recorded as loaded without what the down took, and loading it again would not put them right; nothing was rolled back; roll back to a step before the table was made, or give the seed mode=\"upsert\"")
            }
            try history.delete(kind: .seed, identity: shape.seed.id)
        }
        try history.delete(kind: applied.kind, identity: applied.identity)
        try history.write(.rolledBack(applied, downSQL: ran?.text, durationMs: durationMs))
    }
}

extension HistoryRecord {
    /// Whether `first` was applied before `second`, by the instants their `applied_at` texts name: the text of a
    /// whole second has no fraction (`…:05Z`), so compared as text it would sort after `…:05.001Z`. A text that does
    /// not parse sorts first.
    static func appliedBefore(_ first: HistoryRecord, _ second: HistoryRecord) -> Bool {
        appliedInstant(first.appliedAt) < appliedInstant(second.appliedAt)
    }

    /// `applied_at` as seconds and nanoseconds since 1970, for ordering.
    static func appliedInstant(_ text: String) -> (Int64, Int32) {
        let instant = Array(text.utf8).withUnsafeBufferPointer { ISO8601.parse(bytes: $0) }
        return instant.map { ($0.seconds, $0.nanoseconds) } ?? (Int64.min, 0)
    }
}
