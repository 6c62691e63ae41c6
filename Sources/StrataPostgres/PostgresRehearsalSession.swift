import StrataCore

/// What a rehearsal's steps may leave on its session that the rollback does not undo, found by comparing the session
/// before the rehearsal with the session after its rollback, and undone: session advisory locks
/// (`pg_advisory_lock`, `pg_advisory_lock_shared`, in the one- and two-key forms: the transaction-level ones go with
/// the rollback) and `dblink` connections. The rest of a session is transactional (`SET`, `set_config(…, false)`,
/// `LISTEN`, temporary tables, cursors `WITH HOLD`) or reset after every step (`PostgresSessionReset`: prepared
/// statements), and a statement that would end the transaction (`PREPARE TRANSACTION`) is refused before it runs.
struct PostgresRehearsalSession {
    private let connection: PostgresConnection
    /// The advisory locks the session held before the rehearsal: never released by it.
    private let before: Set<AdvisoryLock>
    /// The dblink connections open before the rehearsal (nil: no dblink in the database then).
    private let dblinkBefore: Set<String>?
    /// Each advisory lock, by the step that was running when it first showed.
    private var firstSeen: [AdvisoryLock: String] = [:]
    private var seenSoFar: Set<AdvisoryLock>
    private var running: String?

    /// The most times one lock is released: session advisory locks nest, one release for each time it was taken.
    static let maximumReleases = 100_000

    struct AdvisoryLock: Hashable {
        /// `classid` and `objid` of `pg_locks`: the two keys, or a bigint key's high and low 32 bits.
        let high: UInt32
        let low: UInt32
        let twoKeys: Bool
        let shared: Bool

        var name: String {
            let key = twoKeys ? "(\(Int32(bitPattern: high)), \(Int32(bitPattern: low)))"
                : String(Int64(bitPattern: UInt64(high) << 32 | UInt64(low)))
            return key + (shared ? " (shared)" : " (exclusive)")
        }

        /// The call with its arguments, bound.
        func call(_ function: String) -> (sql: String, arguments: StatementArguments) {
            let name = function + (shared ? "_shared" : "")
            return twoKeys ? ("SELECT pg_catalog.\(name)($1::int4, $2::int4)", [Int32(bitPattern: high), Int32(bitPattern: low)])
                : ("SELECT pg_catalog.\(name)($1::int8)", [Int64(bitPattern: UInt64(high) << 32 | UInt64(low))])
        }
    }

    /// Reads the session as it is before the rehearsal begins (outside a transaction, before the deployers' lock).
    /// Through a connection pooler there is no session to read outside the rehearsal's transaction (each read may
    /// reach another server session, another client's): nothing is taken as held before, and what the steps left is
    /// undone inside the transaction, before its rollback (`undoInTransaction`).
    init(connection: PostgresConnection) throws {
        self.connection = connection
        guard !connection.reachesServerThroughPooler else {
            before = []
            seenSoFar = []
            dblinkBefore = nil
            return
        }
        before = try Self.advisoryLocks(connection)
        seenSoFar = before
        dblinkBefore = try Self.dblinkConnections(connection)?.names
    }

    /// Through a connection pooler, inside the rehearsal's transaction before its rollback, on the server session
    /// that ran the steps: releases every session advisory lock a step took and left (a transaction-level one, which
    /// `pg_advisory_unlock` does not release, goes with the rollback). dblink connections are not looked for: finding
    /// the unnamed one fails the transaction when there is none.
    mutating func undoInTransaction() throws -> [SessionLeftover] {
        var leftovers: [SessionLeftover] = []
        for lock in try Self.advisoryLocks(connection).sorted(by: { $0.name < $1.name }) {
            var times = 0
            while times < Self.maximumReleases {
                let (sql, arguments) = lock.call("pg_advisory_unlock")
                guard try connection.scalar(sql, arguments, as: Bool.self) == true else { break }
                times += 1
            }
            guard times > 0 else { continue }
            let released = try !Self.advisoryLocks(connection).contains(lock)
            leftovers.append(SessionLeftover(kind: .advisoryLock, name: lock.name, step: firstSeen[lock],
                outcome: "taken and not released by the step, so migrate's session would hold it until it ends; "
                    + (released ? "released by the rehearsal (\(times) time\(times == 1 ? "" : "s"))"
                                : "still held after \(times) releases: close the connection, which releases it"),
                undone: released))
        }
        return leftovers
    }

    /// Called before each step, inside the transaction: the locks that showed since the last call were taken by the
    /// step that ran then (the transaction-level ones too; only those still held after the rollback are reported).
    mutating func willRun(_ id: String) throws {
        try noteNewLocks()
        running = id
    }

    mutating func noteNewLocks() throws {
        let now = try Self.advisoryLocks(connection)
        if let running {
            for lock in now.subtracting(seenSoFar) where firstSeen[lock] == nil { firstSeen[lock] = running }
        }
        seenSoFar.formUnion(now)
    }

    /// After the rollback and the deployers' lock released: releases every advisory lock held now that was not held
    /// before (as many times as it was taken), takes again where it can each one held before that a step released,
    /// and closes the dblink connections opened since. Throws when the session cannot be read.
    mutating func undo() throws -> [SessionLeftover] {
        var leftovers: [SessionLeftover] = []
        let after = try Self.advisoryLocks(connection)
        for lock in after.subtracting(before).sorted(by: { $0.name < $1.name }) {
            var times = 0
            while times < Self.maximumReleases {
                let (sql, arguments) = lock.call("pg_advisory_unlock")
                guard try connection.scalar(sql, arguments, as: Bool.self) == true else { break }
                times += 1
                guard try Self.advisoryLocks(connection).contains(lock) else { break }
            }
            let released = try !Self.advisoryLocks(connection).contains(lock)
            leftovers.append(SessionLeftover(kind: .advisoryLock, name: lock.name, step: firstSeen[lock],
                outcome: "taken and not released by the step, so migrate's session would hold it until it ends; "
                    + (released ? "released by the rehearsal (\(times) time\(times == 1 ? "" : "s"))"
                                : "still held after \(times) releases: close the connection, which releases it"),
                undone: released))
        }
        for lock in before.subtracting(after).sorted(by: { $0.name < $1.name }) {
            // The step that released it is not known: releases leave no trace, and a lock taken again nests.
            let (sql, arguments) = lock.call("pg_try_advisory_lock")
            let retaken = try connection.scalar(sql, arguments, as: Bool.self) == true
            leftovers.append(SessionLeftover(kind: .advisoryLock, name: lock.name, step: nil,
                outcome: "held by this connection before the rehearsal and released by a step (the rollback does not take it back): "
                    + (retaken ? "taken again, once, by the rehearsal; other sessions could take it meanwhile"
                               : "another session holds it now, so it is not held any more"),
                undone: retaken))
        }
        if let (schema, open) = try Self.dblinkConnections(connection) {
            for name in open.subtracting(dblinkBefore ?? []).sorted() {
                let arguments: StatementArguments = name.isEmpty ? .none : [name]
                let closed = (try? connection.execute("SELECT \(schema).dblink_disconnect(\(name.isEmpty ? "" : "$1"))",
                                                      arguments)) != nil
                leftovers.append(SessionLeftover(kind: .dblinkConnection, name: name.isEmpty ? "unnamed" : name, step: nil,
                    outcome: "opened by a step and left open (what ran through it on the other side is committed there, not rolled back); "
                        + (closed ? "closed by the rehearsal" : "could not be closed: close the connection, which closes it"),
                    undone: closed))
            }
        }
        return leftovers
    }

    /// The advisory locks this session holds (granted): session-level ones and, inside a transaction, its own.
    private static func advisoryLocks(_ connection: PostgresConnection) throws -> Set<AdvisoryLock> {
        Set(try connection.rows("""
            SELECT classid::int8, objid::int8, objsubid = 2, mode = 'ShareLock' FROM pg_catalog.pg_locks
            WHERE pid = pg_catalog.pg_backend_pid() AND locktype = 'advisory' AND granted
            """, .none).map { row in
            AdvisoryLock(high: UInt32(truncatingIfNeeded: try row.get(0, as: Int64.self)),
                         low: UInt32(truncatingIfNeeded: try row.get(1, as: Int64.self)),
                         twoKeys: try row.get(2), shared: try row.get(3))
        })
    }

    /// The dblink connections open on this session, by name ("" for the unnamed one), with the extension's schema
    /// (quoted); nil without dblink. Outside a transaction only: the unnamed connection is found by using it, which
    /// fails when there is none.
    private static func dblinkConnections(_ connection: PostgresConnection) throws -> (schema: String, names: Set<String>)? {
        guard let schema = try connection.scalar("""
            SELECT pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_extension e
            JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'dblink'
            """, .none, as: String.self) else { return nil }
        var names = Set(try connection.rows("SELECT pg_catalog.unnest(\(schema).dblink_get_connections())", .none)
            .map { try $0.get(0, as: String.self) })
        if (try? connection.execute("SELECT 1 FROM \(schema).dblink('SELECT 1') AS t(x int)", .none)) != nil {
            names.insert("")
        }
        return (schema, names)
    }
}
