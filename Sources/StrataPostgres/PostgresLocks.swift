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
    func claim(kind: StepKind, id: String) throws -> (any StepClaim)? {
        let key = PostgresLocks.key(kind: kind, id: id)
        let session: PostgresConnection
        if let open = connection.claimSession, PQstatus(open.handle) == CONNECTION_OK {
            session = open
        } else {
            session = try PostgresConnection(url: connection.conninfoForSecondSession(application: "strata step claim"))
            connection.claimSession = session
        }
        guard try session.scalar("SELECT pg_try_advisory_lock($1::int4, $2::int4)", [PostgresLocks.namespace, key],
                                 as: Bool.self) == true else { return nil }
        return PostgresStepClaim(connection: session, key: key)
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
}

final class PostgresStepClaim: StepClaim {
    let connection: PostgresConnection
    let key: Int32
    private var held = true

    init(connection: PostgresConnection, key: Int32) {
        self.connection = connection
        self.key = key
    }

    func release() {
        guard held else { return }
        held = false
        _ = try? connection.execute("SELECT pg_advisory_unlock($1::int4, $2::int4)", [PostgresLocks.namespace, key])
    }

    deinit { release() }
}
