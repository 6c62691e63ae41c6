import CLibPQ
import StrataCore

/// Rehearsals on PostgreSQL run every transactional step inside one transaction on the database itself, each step
/// in a savepoint of it, and roll the transaction back at the end: it is never committed, so a process killed
/// part-way leaves nothing either (the server rolls back a transaction whose session ends). The deployers' advisory
/// lock is held throughout, so a `migrate` waits for the rehearsal and the other way round.
extension PostgresConnection: RehearsableDatabase {
    package func rehearsalStage(_ options: MigrationOptions) throws -> any RehearsalStage {
        try PostgresRehearsalStage(connection: self, options: options)
    }
}

/// What each step did inside the rehearsal's transaction, read from the catalog: rows per table from
/// `pg_stat_xact_user_tables` (the current transaction's counts), locks from `pg_locks` of this session (those it
/// took, and those earlier steps took that it ran under), and at the end the sequences a rollback cannot put back
/// and the session state it leaves (`PostgresRehearsalSession`).
final class PostgresRehearsalStage: RehearsalStage {
    private let connection: PostgresConnection
    let summary: String
    /// Each sequence's last value handed out when the rehearsal began (nil: none yet), by oid.
    private var sequences: [Int64: (name: String, value: Int64?)] = [:]
    /// Per table, at the start of the step now running: the transaction's counts and the table's storage.
    private var counters: [Int64: Counters] = [:]
    /// The user relations that existed when the step now running began.
    private var relations: Set<Int64> = []
    /// The relation locks this session held when the step now running began.
    private var locks: Set<LockKey> = []
    /// Each relation lock a step took, by the step that took it: held until the rollback.
    private var takenBy: [LockKey: String] = [:]
    /// Of `locks`, those a step took, named as the step now running began.
    private var earlier: [(key: LockKey, name: String, step: String)] = []
    /// The catalog rows of each relation in `earlier` when the step now running began (`readDefinitions`).
    private var definitions: [Int64: String] = [:]
    private(set) var heldLocks: [HeldLock] = []
    private var session: PostgresRehearsalSession
    private(set) var sessionLeftovers: [SessionLeftover] = []
    private var open = true
    /// The enum values there were when the rehearsal began, by oid: another later means an earlier step added one.
    private var enumValuesAtStart: Set<Int64> = []
    /// How many steps have ended (`didRun`): from the first, every constraint is checked at once.
    private var stepsEnded = 0
    /// The retries `migrate` would give a step that waited too long for a lock.
    private let lockRetries: Int
    /// Whether the step now running may meet a constraint declared `INITIALLY DEFERRED` (`unlikeMigrate`).
    private let deferred = PostgresDeferredWatch()
    /// Whether a constraint the step now running failed on may be met otherwise in `migrate` (`stoppedByStage`).
    private let constraints = PostgresConstraintWatch()

    private struct Counters {
        let name: String
        let inserted: Int64
        let updated: Int64
        let deleted: Int64
        let storage: Int64
        /// Sequential and index scans of it.
        let scans: Int64
    }

    private struct LockKey: Hashable {
        let relation: Int64
        let mode: String
    }

    init(connection: PostgresConnection, options: MigrationOptions) throws {
        guard !connection.isInTransaction else {
            throw DatabaseError(kind: .misuse, code: nil, message: "rehearse opens its own transaction; this connection has one open")
        }
        self.connection = connection
        lockRetries = options.lockRetries
        let lockTimeout = PostgresConnection.milliseconds(max(options.lockTimeout, .zero))
        summary = "in one transaction on \(connection.name), rolled back at the end, never committed (lock_timeout \(lockTimeout == 0 ? "none" : "\(lockTimeout) ms") for each step); each step's locks are held until then"
        // Read before the deployers' lock and the transaction: what the session holds of its own.
        session = try PostgresRehearsalSession(connection: connection)
        let kept = try PostgresSessionObjects(connection)
        do {
            try connection.begin("BEGIN; SET LOCAL lock_timeout = \(lockTimeout)")
            // Transaction-level, as migrate takes it: it ends with the rehearsal's rollback, and waiting for it in
            // READ COMMITTED holds no snapshot between tries.
            try connection.acquireDeployLockInTransaction()
            // A statement that would end the transaction is refused before it runs (`confirmTransactionOpen`).
            connection.transactionOwner = "the rehearsal"
            connection.isRehearsing = true
            connection.rehearsalKeeps = kept
            connection.rehearsalStatementWatch = { [deferred, constraints] statement in
                deferred.saw(statement)
                constraints.saw(statement)
            }
            sequences = try readSequences()
            enumValuesAtStart = try enumValues()
        } catch {
            end()
            throw error
        }
    }

    var database: any MigrationDatabase { connection }

    /// A step that gives up waiting for a lock is not retried: a retry inside the rehearsal's transaction would keep
    /// every lock the steps before it took while it waits. The failure says that `migrate` retries.
    func options(for options: MigrationOptions) -> MigrationOptions {
        var options = options
        options.lockRetries = 0
        return options
    }

    /// What fails only because the steps share one transaction, where `migrate` commits each before the next:
    /// - a new enum value used in the transaction that added it (SQLSTATE 55P04), when an earlier step added one
    ///   (within one step it is `migrate`'s failure too);
    /// - a lock not granted in time, or a deadlock the step lost, when `migrate` would retry the step (the rehearsal
    ///   does not, `options(for:)`);
    /// - anything in a step that ran with deferred constraints checked at once (`unlikeMigrate`);
    /// - a constraint refusing a row where `migrate` may not: one the failing step made, or one declared
    ///   `INITIALLY DEFERRED`, checked at once after an earlier step; a unique key on a date/time column two steps
    ///   may fill with their one `now()` (`PostgresConstraintWatch`).
    func stoppedByStage(_ failure: StepFailure) -> String? {
        if failure.databaseError?.code?.value == "55P04" {
            if let now = try? enumValues(), !now.subtracting(enumValuesAtStart).isEmpty {
                return "PostgreSQL refuses an enum value in the transaction that added it, and an earlier step added one: the rehearsal runs every step in one transaction where migrate commits each"
            }
        }
        if failure.databaseError?.kind == .lockNotAvailable, lockRetries > 0 {
            return "a lock was not granted within the lock timeout, and migrate would retry the step (\(lockRetries) time\(lockRetries == 1 ? "" : "s")) where the rehearsal does not"
        }
        if failure.databaseError?.kind == .deadlock, lockRetries > 0 {
            return "the server broke a deadlock by failing the step, and migrate would retry the step (\(lockRetries) time\(lockRetries == 1 ? "" : "s")) where the rehearsal does not"
        }
        if let reason = deferred.reason { return reason }
        guard let error = failure.databaseError else { return nil }
        let before = counters
        do {
            return try constraints.reason(error, checkedAtOnce: stepsEnded > 0, writtenBefore: { oid in
                before[oid].map { $0.inserted + $0.updated > 0 } ?? false
            }, on: connection)
        } catch {
            // The catalog could not be read (the connection went): no verdict is better than a wrong one.
            return "the constraint it failed on could not be looked up after the step was rolled back (\(error)), so whether migrate would meet it the same way is not known"
        }
    }

    /// Every enum value of the database, by oid.
    private func enumValues() throws -> Set<Int64> {
        Set(try connection.rows("SELECT oid::int8 FROM pg_catalog.pg_enum", .none).map { try $0.get(0, as: Int64.self) })
    }

    /// After the first step every constraint is checked at once (`checkDeferredAsCommitWould`): a step that may
    /// meet one declared `INITIALLY DEFERRED` (`PostgresDeferredWatch` says when) runs unlike `migrate`, which checks
    /// such a constraint, and fires such a trigger, at the step's commit.
    func unlikeMigrate(_ step: PlanStep) -> String? { deferred.reason }

    func reasonNotRehearsed(_ step: PlanStep) -> String? {
        guard case .migration(let migration) = step, !migration.runsInTransaction else { return nil }
        return "transaction=\"none\": its statements cannot run inside the rehearsal's transaction, and outside one they could not be undone; the steps after it run without what it does"
    }

    func willRun(_ step: PlanStep) throws {
        try deferred.begin(step, checkedAtOnce: stepsEnded > 0, on: connection)
        constraints.begin()
        try session.willRun(step.id)
        counters = try readCounters()
        relations = Set(try connection.rows("""
            SELECT c.oid::int8 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE \(Self.userSchema("n.nspname"))
            """, .none).map { try $0.get(0, as: Int64.self) })
        let held = try readLocks()
        locks = Set(held.map { LockKey(relation: $0.oid, mode: $0.mode) })
        earlier = held.compactMap { lock in
            let key = LockKey(relation: lock.oid, mode: lock.mode)
            return takenBy[key].map { (key, lock.name, $0) }
        }
        definitions = try readDefinitions(Set(earlier.map(\.key.relation)))
    }

    func didRun(_ step: PlanStep) throws -> (tables: [TableRowChanges], locks: [TableLock]) {
        try deferred.ended(on: connection)
        stepsEnded += 1
        // Read before the rows of a table are counted below, which takes a lock of the rehearsal's own.
        let held = try readLocks().filter { lock in
            // An index's weak locks come with its table's (every write takes RowExclusiveLock on each index).
            !locks.contains(LockKey(relation: lock.oid, mode: lock.mode))
                && !(lock.isIndex && Self.strength(lock.mode) <= Self.strength("RowExclusiveLock"))
        }
        // Locks on relations the step created are its own too: a later step that uses them runs under them.
        for lock in held { takenBy[LockKey(relation: lock.oid, mode: lock.mode)] = step.id }
        let after = try readCounters()
        var tables: [TableRowChanges] = []
        for (oid, now) in after {
            guard let before = counters[oid] else {
                let rows = [now.inserted, now.updated, now.deleted]
                guard rows.contains(where: { $0 != 0 }) else { continue }
                tables.append(TableRowChanges(table: now.name, inserted: Int(now.inserted), updated: Int(now.updated),
                                              deleted: Int(now.deleted), note: "created by this step"))
                continue
            }
            let (inserted, updated, deleted) = (now.inserted - before.inserted, now.updated - before.updated,
                                                now.deleted - before.deleted)
            // TRUNCATE gives the table new storage and resets the transaction's counts of it; so does a rewrite
            // (ALTER COLUMN … TYPE). PostgreSQL counts no row either removes, so no number is given.
            if now.storage != before.storage || inserted < 0 || updated < 0 || deleted < 0 {
                let rows = try connection.scalar("SELECT count(*) FROM \(now.name)", .none, as: Int.self)
                tables.append(TableRowChanges(table: now.name, rowsAfter: rows,
                    note: "its storage was replaced by this step (TRUNCATE, or a rewrite such as ALTER COLUMN … TYPE): PostgreSQL counts no row that removed, so the rows changed are not known; the rows after it are counted"))
            } else if inserted != 0 || updated != 0 || deleted != 0 {
                tables.append(TableRowChanges(table: now.name, inserted: Int(inserted), updated: Int(updated), deleted: Int(deleted)))
            }
        }
        for (oid, before) in counters where after[oid] == nil {
            tables.append(TableRowChanges(table: before.name, note: "dropped by this step, with its rows (not counted on PostgreSQL)"))
        }
        let taken = held.filter { relations.contains($0.oid) }
        heldLocks = try heldFromEarlierSteps(after)
        return (tables.sorted { $0.table < $1.table },
                taken.map { TableLock(relation: $0.name, mode: $0.mode, blocks: Self.blocks($0.mode)) }
                    .sorted { ($0.relation, Self.strength($0.mode)) < ($1.relation, Self.strength($1.mode)) })
    }

    /// Rolls the transaction back and releases the deployers' lock; then reads again the sequences the rehearsal
    /// drew from, which the rollback did not put back. `nextval` and `setval` take `RowExclusiveLock` on a sequence
    /// for the whole transaction (PostgreSQL gives a sequence's lock to the top transaction), so the locks held at
    /// the end name every one, a failed step's included.
    func discard() throws -> [SequenceAdvance] {
        guard open else { return [] }
        let drawn = (try? readLocks().filter { $0.mode == "RowExclusiveLock" && sequences[$0.oid] != nil }.map(\.oid)) ?? []
        // The advisory locks the last step took, by name (those still held after the rollback are undone below).
        try? session.noteNewLocks()
        if connection.reachesServerThroughPooler && connection.transactionStatus == PQTRANS_INTRANS {
            do {
                sessionLeftovers = try session.undoInTransaction()
            } catch {
                end()
                throw DatabaseError(kind: .other, code: nil, message: "the rehearsal could not read or release the advisory locks its steps may have left on the server session (\(error)); the pooler keeps that session for its next client: end it (pg_terminate_backend) or restart the pool")
            }
        }
        end()
        guard !connection.isInTransaction else {
            throw DatabaseError(kind: .other, code: nil, message: "the rehearsal's transaction could not be rolled back; close the connection, which ends it without committing")
        }
        do {
            if !connection.reachesServerThroughPooler { sessionLeftovers = try session.undo() }
        } catch {
            throw DatabaseError(kind: .other, code: nil, message: "the rehearsal could not read or release the advisory locks and dblink connections its steps may have left on the connection (\(error)); close the connection, which ends them")
        }
        return try Set(drawn).sorted().compactMap { oid -> SequenceAdvance? in
            guard let before = sequences[oid] else { return nil }
            let now = try readSequence(before.name)
            return now == before.value ? nil : SequenceAdvance(sequence: before.name, before: before.value, after: now)
        }
    }

    private func end() {
        open = false
        connection.transactionOwner = nil
        connection.isRehearsing = false
        connection.rehearsalKeeps = nil
        connection.rehearsalStatementWatch = nil
        if connection.isInTransaction { connection.rollBack() }
        connection.releaseDeployLock()
    }

    // MARK: Reading the catalog

    /// A schema condition leaving out PostgreSQL's own (and other sessions' temporary schemas).
    private static func userSchema(_ column: String) -> String {
        "\(column) NOT IN ('pg_catalog', 'information_schema') AND \(column) NOT LIKE 'pg\\_%'"
    }

    /// Every user table's counts in this transaction, and its storage (`relfilenode`), without Strata's history and
    /// temporary tables (a seed's staging table).
    private func readCounters() throws -> [Int64: Counters] {
        var result: [Int64: Counters] = [:]
        for row in try connection.rows("""
            SELECT s.relid::int8, format('%I.%I', s.schemaname, s.relname), s.n_tup_ins, s.n_tup_upd, s.n_tup_del,
                   c.relfilenode::int8, s.seq_scan + coalesce(s.idx_scan, 0)
            FROM pg_catalog.pg_stat_xact_user_tables s JOIN pg_catalog.pg_class c ON c.oid = s.relid
            WHERE NOT (s.schemaname = $1 AND s.relname = $2) AND \(Self.userSchema("s.schemaname"))
            """, [connection.historySchema, PostgresHistory.table]) {
            result[try row.get(0, as: Int64.self)] = Counters(
                name: try row.get(1), inserted: try row.get(2), updated: try row.get(3), deleted: try row.get(4),
                storage: try row.get(5), scans: try row.get(6))
        }
        return result
    }

    /// The relation locks this session holds, on user relations other than Strata's history and its indexes.
    private func readLocks() throws -> [(oid: Int64, name: String, mode: String, isIndex: Bool)] {
        try connection.rows("""
            SELECT l.relation::int8, format('%I.%I', n.nspname, c.relname), l.mode, c.relkind IN ('i', 'I')
            FROM pg_catalog.pg_locks l
            JOIN pg_catalog.pg_class c ON c.oid = l.relation JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE l.pid = pg_catalog.pg_backend_pid() AND l.granted AND l.locktype = 'relation'
              AND \(Self.userSchema("n.nspname"))
              AND NOT (n.nspname = $1 AND c.relname LIKE 'strata\\_history%')
            """, [connection.historySchema]).map { (try $0.get(0), try $0.get(1), try $0.get(2), try $0.get(3)) }
    }

    /// The last value each sequence this user may read has handed out (nil: none yet). Read from the sequences
    /// themselves (`pg_sequences` would take `RowExclusiveLock` on every one, hiding which the steps drew from).
    private func readSequences() throws -> [Int64: (name: String, value: Int64?)] {
        var result: [Int64: (name: String, value: Int64?)] = [:]
        for row in try connection.rows("""
            SELECT c.oid::int8, format('%I.%I', n.nspname, c.relname)
            FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relkind = 'S' AND \(Self.userSchema("n.nspname")) AND pg_catalog.has_table_privilege(c.oid, 'SELECT')
            """, .none) {
            let name: String = try row.get(1)
            result[try row.get(0, as: Int64.self)] = (name, try readSequence(name))
        }
        return result
    }

    /// `name` is as the server quoted it (`format('%I.%I')`).
    private func readSequence(_ name: String) throws -> Int64? {
        try connection.scalar("SELECT CASE WHEN is_called THEN last_value END FROM \(name)", .none, as: Int64.self)
    }

    /// The locks earlier steps took that the step just run ran under, each with what the step was seen doing to its
    /// relation that asks for a lock of that strength: a change of its catalog rows for a schema-change mode (from
    /// `ShareUpdateExclusiveLock` up), a scan or row change counted for a weaker one.
    private func heldFromEarlierSteps(_ after: [Int64: Counters]) throws -> [HeldLock] {
        let changed = try readDefinitions(Set(earlier.map(\.key.relation)))
        return earlier.map { lock in
            let oid = lock.key.relation
            let seen: String?
            if Self.strength(lock.key.mode) >= Self.strength("ShareUpdateExclusiveLock") {
                seen = changed[oid] != definitions[oid] ? "changed its definition" : nil
            } else if let before = counters[oid], let now = after[oid],
                      now.scans != before.scans || now.inserted != before.inserted || now.updated != before.updated
                        || now.deleted != before.deleted || now.storage != before.storage {
                seen = "read or wrote its rows"
            } else {
                seen = nil
            }
            return HeldLock(relation: lock.name, mode: lock.key.mode, blocks: Self.blocks(lock.key.mode),
                            takenBy: lock.step, seen: seen)
        }.sorted { ($0.relation, Self.strength($0.mode)) < ($1.relation, Self.strength($1.mode)) }
    }

    /// Each relation's catalog rows (its `pg_class` row and the rows of its columns, defaults, constraints either
    /// side of a foreign key, indexes, triggers, rules and policies), as their row versions: a statement that
    /// changes any writes a new version. A relation dropped has none.
    private func readDefinitions(_ oids: Set<Int64>) throws -> [Int64: String] {
        guard !oids.isEmpty else { return [:] }
        var result: [Int64: String] = [:]
        for row in try connection.rows("""
            SELECT c.oid::int8, concat_ws('/', c.ctid, c.xmin,
              (SELECT string_agg(concat(a.ctid, ':', a.xmin), ',' ORDER BY a.ctid) FROM pg_catalog.pg_attribute a WHERE a.attrelid = c.oid),
              (SELECT string_agg(concat(d.ctid, ':', d.xmin), ',' ORDER BY d.ctid) FROM pg_catalog.pg_attrdef d WHERE d.adrelid = c.oid),
              (SELECT string_agg(concat(k.ctid, ':', k.xmin), ',' ORDER BY k.ctid) FROM pg_catalog.pg_constraint k
                 WHERE k.conrelid = c.oid OR k.confrelid = c.oid),
              (SELECT string_agg(concat(i.ctid, ':', i.xmin), ',' ORDER BY i.ctid) FROM pg_catalog.pg_index i
                 WHERE i.indrelid = c.oid OR i.indexrelid = c.oid),
              (SELECT string_agg(concat(t.ctid, ':', t.xmin), ',' ORDER BY t.ctid) FROM pg_catalog.pg_trigger t WHERE t.tgrelid = c.oid),
              (SELECT string_agg(concat(r.ctid, ':', r.xmin), ',' ORDER BY r.ctid) FROM pg_catalog.pg_rewrite r WHERE r.ev_class = c.oid),
              (SELECT string_agg(concat(p.ctid, ':', p.xmin), ',' ORDER BY p.ctid) FROM pg_catalog.pg_policy p WHERE p.polrelid = c.oid))
            FROM pg_catalog.pg_class c WHERE c.oid::int8 = ANY ($1::int8[])
            """, ["{" + oids.sorted().map(String.init).joined(separator: ",") + "}"]) {
            result[try row.get(0, as: Int64.self)] = try row.get(1)
        }
        return result
    }

    /// What a lock mode keeps other sessions from doing while it is held (PostgreSQL's table-level lock modes).
    static func blocks(_ mode: String) -> String {
        switch mode {
        case "AccessShareLock": "only ACCESS EXCLUSIVE (DROP, TRUNCATE, most ALTER TABLE)"
        case "RowShareLock": "EXCLUSIVE and ACCESS EXCLUSIVE locks"
        case "RowExclusiveLock": "schema changes and CREATE INDEX; not reads or row writes"
        case "ShareUpdateExclusiveLock": "schema changes, VACUUM and CREATE INDEX; not reads or row writes"
        case "ShareLock": "row writes and schema changes; reads go on"
        case "ShareRowExclusiveLock": "row writes and schema changes; reads go on"
        case "ExclusiveLock": "row writes and schema changes; plain reads go on"
        case "AccessExclusiveLock": "every query on it, reads included"
        default: "other sessions' conflicting locks"
        }
    }

    /// Weakest first, for a stable order.
    private static func strength(_ mode: String) -> Int {
        ["AccessShareLock", "RowShareLock", "RowExclusiveLock", "ShareUpdateExclusiveLock", "ShareLock",
         "ShareRowExclusiveLock", "ExclusiveLock", "AccessExclusiveLock"].firstIndex(of: mode) ?? 8
    }
}
