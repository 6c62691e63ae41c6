import CLibPQ
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataCore

/// Strata's advisory locks on PostgreSQL, in the two-key form: the first key is Strata's namespace, so they
/// never collide with an application's one-key locks.
enum PostgresLocks {
    /// "St" in ASCII.
    static let namespace: Int32 = 0x5374
    /// Held by the deployer whose step is running (`withWriteLock`).
    static let deploy: Int32 = 0
    /// Held while `strata_history` is created.
    static let historyCreation: Int32 = 1

    /// The second key of a `transaction="none"` step's claim: a hash of its kind and id (FNV-1a, folded to 31 bits
    /// and kept clear of the fixed keys above).
    static func key(kind: StepKind, id: String) -> Int32 {
        var hash: UInt32 = 2_166_136_261
        for byte in (kind.rawValue + "\u{0}" + id).utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 16_777_619
        }
        return Int32(bitPattern: (hash & 0x7fff_ffff) | 0x100)
    }

    /// The `pg_locks` condition for a granted lock of Strata's taken with keys `$1` (the namespace) and `$2`: the
    /// two-key form shows its keys as `classid` and `objid`, with `objsubid` 2. `alias` qualifies the columns.
    static func grantedCondition(_ alias: String = "") -> String {
        let column = alias.isEmpty ? "" : alias + "."
        return "\(column)locktype = 'advisory' AND \(column)granted AND \(column)classid = $1::int4::oid"
            + " AND \(column)objid = $2::int4::oid AND \(column)objsubid = 2"
    }
}

/// `transaction="none"` steps claimed with session-level advisory locks: held by the running deployer's session,
/// released by the server when that session ends (a killed client's included, once the server notices), so a
/// `running` history row is told from a dead runner's on any host.
struct PostgresStepLocks: StepLocking {
    let connection: PostgresConnection

    /// Takes the claim on a second session of the same connection, one no migration runs on: a file can release
    /// every advisory lock of its own session (`pg_advisory_unlock_all()`, `DISCARD ALL`), and a claim lost that way
    /// would let another deployer take the running step for an abandoned one. Both sessions end with the process.
    /// Through a connection pooler the claim's session is the direct connection the user gave (`directURL`): a
    /// pooled session may be another for each transaction (the lock stranded on one the application then gets), and
    /// a second pooled one would wait for a slot the deployers hold. Without one it is refused (the planner refuses
    /// such a plan before anything runs: `noneStepRefusal`).
    func claim(kind: StepKind, id: String) throws -> (any StepClaim)? {
        let key = PostgresLocks.key(kind: kind, id: id)
        let session: PostgresConnection
        if let open = connection.claimSession, PQstatus(open.handle) == CONNECTION_OK {
            session = open
        } else {
            session = try Self.claimSession(for: connection)
            connection.claimSession = session
        }
        guard try session.scalar("SELECT pg_try_advisory_lock($1::int4, $2::int4)", [PostgresLocks.namespace, key],
                                 as: Bool.self) == true else { return nil }
        // Through a pooler the session running the file is any of the pool's: the claim's own stands for the runner.
        let runner = connection.reachesServerThroughPooler ? session : connection
        return PostgresStepClaim(connection: session, key: key, runnerSession: try RunnerSession.current(runner))
    }

    /// The session claims are taken on: the direct connection when one is given, else a second session of the
    /// connection's own URL, unless that reaches the server through a pooler.
    static func claimSession(for connection: PostgresConnection) throws -> PostgresConnection {
        guard let direct = connection.directURL else {
            if let refusal = connection.noneStepRefusal(id: nil) {
                throw DatabaseError(kind: .misuse, code: nil, message: refusal)
            }
            return try PostgresConnection(url: connection.conninfoForSecondSession(application: "strata step claim"))
        }
        let session = try PostgresConnection(url: direct)
        guard !session.reachesServerThroughPooler else {
            throw DatabaseError(kind: .misuse, code: nil, message: "the direct connection \(session.name) given for transaction=\"none\" steps' claims also reaches the server through a connection pooler; give one that reaches the server itself (its host and port, not the pooler's)")
        }
        let databases = try [connection, session].map { try $0.scalar("SELECT current_database()", as: String.self) ?? "" }
        guard databases[0] == databases[1] else {
            throw DatabaseError(kind: .misuse, code: nil, message: "the direct connection \(session.name) given for transaction=\"none\" steps' claims reaches database \(databases[1]), not \(databases[0]), the one being migrated")
        }
        // The same name on another server is another database: a server is told by when it started, and its
        // database by its oid, which any role may read.
        let servers = try [connection, session].map {
            try $0.scalar("SELECT pg_catalog.pg_postmaster_start_time()::text || ' ' || d.oid::text FROM pg_catalog.pg_database d WHERE d.datname = current_database()",
                          as: String.self) ?? ""
        }
        guard servers[0] == servers[1] else {
            throw DatabaseError(kind: .misuse, code: nil, message: "the direct connection \(session.name) given for transaction=\"none\" steps' claims reaches a database named \(databases[0]) on another server (started \(servers[1].split(separator: " ").first ?? "?"), the migrated one \(servers[0].split(separator: " ").first ?? "?")): its locks would not be the migrated database's; give the URL of the server the pooler connects to")
        }
        return session
    }

    /// True when any session (this one included) holds the step's lock, and whenever that cannot be told: on a
    /// hot standby (advisory locks are not replicated, so a runner alive on the primary holds nothing here) or when
    /// the lock table cannot be read. A runner is never called dead on a guess.
    func isHeld(kind: StepKind, id: String) -> Bool {
        let key = PostgresLocks.key(kind: kind, id: id)
        return (try? connection.scalar("""
            SELECT pg_catalog.pg_is_in_recovery()
                OR EXISTS (SELECT 1 FROM pg_catalog.pg_locks
                               WHERE \(PostgresLocks.grantedCondition())
                                 AND database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database()))
            """, [PostgresLocks.namespace, key], as: Bool.self)) ?? true
    }

    /// The claim's session is idle while the file runs on the main one, and a server may end an idle session
    /// (`idle_session_timeout`, a script terminating idle sessions) with the runner alive: the lock is then gone, but
    /// the session running the file, recorded in the row, is still there. Only when both are gone is the runner.
    /// Where that cannot be told (a hot standby, catalogs this role may not read) the answer says why, and is not
    /// "gone": a runner is never called dead on a guess.
    func liveness(of record: HistoryRecord) -> RunnerLiveness {
        let key = PostgresLocks.key(kind: record.kind, id: record.identity)
        let row: Row?
        do {
            row = try connection.rows("""
                SELECT pg_catalog.pg_is_in_recovery() AS standby,
                       EXISTS (SELECT 1 FROM pg_catalog.pg_locks
                               WHERE \(PostgresLocks.grantedCondition())
                                 AND database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())) AS held
                """, [PostgresLocks.namespace, key]).first
        } catch {
            return .notKnown("the lock table cannot be read here (\((error as? DatabaseError)?.message ?? "\(error)")); look as a role that may read pg_locks")
        }
        if (try? row?.get("standby", as: Bool.self)) ?? false {
            return .notKnown("this is a hot standby, which sees neither the primary's locks nor its sessions; look on the primary")
        }
        if (try? row?.get("held", as: Bool.self)) ?? false { return .holdsLock }
        guard let recorded = record.runnerSession else { return .gone }
        guard let session = RunnerSession(recorded) else {
            return .notKnown("its session is recorded as '\(recorded)', which this version of Strata cannot read")
        }
        return session.liveness(on: connection)
    }
}

/// The server session a `transaction="none"` step runs on, as its `running` row records it:
/// `pid N, user OID, connected T`. A pid alone could be a later session's, so the session's user and start are
/// compared too. A role sees other roles' sessions' pids and users, not their start: a session of another user
/// at that pid is a later one; one of the runner's own user whose start cannot be seen cannot be told from it.
struct RunnerSession: Equatable {
    let pid: Int64
    /// The session user's oid (`usesysid`); nil in a record that does not name it.
    let user: Int64?
    /// `backend_start` as the server prints it (ISO, UTC: every Strata session runs with `TimeZone=UTC`).
    let started: String

    init(pid: Int64, user: Int64?, started: String) {
        self.pid = pid
        self.user = user
        self.started = started
    }

    init?(_ text: String) {
        var pid: Int64?
        var user: Int64?
        var started: String?
        for part in text.components(separatedBy: ", ") {
            if part.hasPrefix("pid ") { pid = Int64(part.dropFirst(4)) }
            else if part.hasPrefix("user ") { user = Int64(part.dropFirst(5)) }
            else if part.hasPrefix("connected ") { started = String(part.dropFirst(10)) }
            else { return nil }
        }
        guard let pid, let started, !started.isEmpty else { return nil }
        self.init(pid: pid, user: user, started: started)
    }

    var description: String {
        "pid \(pid)" + (user.map { ", user \($0)" } ?? "") + ", connected \(started)"
    }

    /// This connection's own session.
    static func current(_ connection: PostgresConnection) throws -> String? {
        let rows = try connection.rows("""
            SELECT pg_catalog.pg_backend_pid()::int8 AS pid, usesysid::int8 AS usesysid, backend_start::text AS started
            FROM pg_catalog.pg_stat_activity WHERE pid = pg_catalog.pg_backend_pid()
            """, .none)
        guard let row = rows.first, let pid: Int64 = try row.get("pid"),
              let started: String = try row.get("started", as: String?.self) else { return nil }
        return RunnerSession(pid: pid, user: try row.get("usesysid", as: Int64?.self), started: started).description
    }

    /// Whether the session is still there on this database.
    func liveness(on connection: PostgresConnection) -> RunnerLiveness {
        let rows: [Row]
        do {
            rows = try connection.rows("""
                SELECT backend_start IS NOT NULL AS visible, backend_start = $2::timestamptz AS same_start,
                       usesysid::int8 AS usesysid
                FROM pg_catalog.pg_stat_activity WHERE pid = $1::int4 AND datname = current_database()
                """, [pid, started])
        } catch {
            return .notKnown("its session (pid \(pid)) cannot be looked up: pg_stat_activity cannot be read here (\((error as? DatabaseError)?.message ?? "\(error)")); look as a role that may read it")
        }
        guard let row = rows.first else { return .gone }
        if (try? row.get("visible", as: Bool.self)) ?? false {
            return (try? row.get("same_start", as: Bool.self)) == true ? .sessionConnected(description) : .gone
        }
        if let user, let other = try? row.get("usesysid", as: Int64?.self), other != user { return .gone }
        return .notKnown("a session of the runner's user is connected with its pid (\(pid)), and this role may not see when it started, so it cannot be told from a later session that took the pid; look as the runner's role or a member of pg_read_all_stats")
    }
}

final class PostgresStepClaim: StepClaim {
    let connection: PostgresConnection
    let key: Int32
    let runnerSession: String?
    private var held = true

    init(connection: PostgresConnection, key: Int32, runnerSession: String?) {
        self.connection = connection
        self.key = key
        self.runnerSession = runnerSession
    }

    func release() {
        guard held else { return }
        held = false
        _ = try? connection.execute("SELECT pg_advisory_unlock($1::int4, $2::int4)", [PostgresLocks.namespace, key])
    }

    deinit { release() }
}
