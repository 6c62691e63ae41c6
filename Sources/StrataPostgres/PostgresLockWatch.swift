import CLibPQ
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import StrataCore

/// Names the session a migration's statement waited for, so a step that gave up waiting for a lock can say who
/// held it.
///
/// Once a statement has given up it no longer waits, and `pg_blocking_pids()` of it is empty; the error itself
/// ("canceling statement due to lock timeout") names neither the lock nor its holder. So the wait is observed while
/// it happens: the statement is sent without blocking, and while it has not answered, every `interval` a second
/// session (opened on first need, kept for the connection's life) asks the server whether it is waiting for a
/// lock, and if so for which and behind whom. The cheap question (`pg_stat_activity.wait_event_type`) comes first:
/// `pg_blocking_pids()` and `pg_locks` briefly take the lock manager's shared state, which a busy server should
/// not pay for every statement, so they are read only while the statement is known to wait. The first look comes
/// after a fraction of the step's shortest timeout, so a wait that lasts until the timeout is seen before it ends;
/// each later one after twice the pause before, up to a second, so a long wait (a `CREATE INDEX CONCURRENTLY`
/// waiting for old transactions) costs the server at most one such read a second.
final class PostgresLockWatch {
    /// How long a statement runs before it is first looked at; nil: statements run with plain `PQexec`, unwatched.
    private(set) var interval: Duration?
    /// The longest pause between two looks.
    static let slowestInterval: Duration = .seconds(1)
    /// The last wait seen during the statement running now (or that ran last).
    private(set) var lastWait: PostgresLockWait?
    /// The session that looks; nil until first needed.
    private var monitor: PostgresConnection?
    /// Set when the second session could not be opened (no free connection slot, say): the error then says so,
    /// and no further attempt is made on every statement.
    private var monitorFailure: String?

    /// Watches the statements of a step bounded by `limits`: a lock timeout or statement timeout can only be
    /// explained if the wait was seen before it ended. Without either (a `transaction="none"` step), the first look
    /// comes after 100 ms, in time for a short `lock_timeout` the file sets itself.
    func arm(for limits: StatementLimits) {
        let bounds = [limits.lockTimeout, limits.statementTimeout ?? .zero].filter { $0 > .zero }
        guard let shortest = bounds.min() else {
            interval = .milliseconds(100)
            return
        }
        interval = min(max(shortest / 5, .milliseconds(10)), .milliseconds(250))
    }

    /// Forgets the previous statement's wait.
    fileprivate func statementStarted() {
        lastWait = nil
    }

    /// Asks the server what the session `pid` (of the connection `watched`) waits for, and keeps the answer when
    /// it is waiting. Failures are kept quiet: the watch explains errors, it must not cause any.
    fileprivate func look(at pid: Int32, of watched: PostgresConnection) {
        guard let monitor = monitor(for: watched) else { return }
        guard let rows = try? monitor.rows(Self.waitQuery, [Int64(pid)]), let first = rows.first else { return }
        func value<T: DatabaseValueConvertible>(_ row: Row, _ column: String, as type: T.Type) -> T? {
            (try? row.get(column, as: T?.self)) ?? nil
        }
        var wait = PostgresLockWait(lock: value(first, "wait", as: String.self) ?? "a lock", blockers: [])
        for row in rows {
            guard let pid = value(row, "pid", as: Int64.self) else { continue }
            wait.blockers.append(PostgresLockWait.Blocker(
                pid: pid, user: value(row, "usename", as: String.self),
                application: value(row, "application_name", as: String.self), state: value(row, "state", as: String.self),
                query: value(row, "query", as: String.self),
                transactionSeconds: value(row, "transaction_seconds", as: Double.self)))
        }
        lastWait = wait
    }

    /// What `lastWait` could not be learnt, for an error that would have named it.
    var unknownWaitReason: String {
        if let monitorFailure { return "a second session to look could not be opened: \(monitorFailure)" }
        return "it was not seen waiting (it gave up before Strata first looked, or at once, as NOWAIT does)"
    }

    private func monitor(for watched: PostgresConnection) -> PostgresConnection? {
        if let monitor { return monitor }
        guard monitorFailure == nil else { return nil }
        guard !watched.reachesServerThroughPooler else {
            // A second session would take a slot of a pool smaller than the deployers, and the process id the pooler
            // gave the connection is not the server's.
            monitorFailure = "the connection reaches the server through a connection pooler, where Strata opens no second session"
            return nil
        }
        do {
            let opened = try PostgresConnection(url: watched.conninfoForSecondSession(application: "strata lock watch"))
            // Its questions must never wait long themselves, on a server busy enough to need them.
            try opened.executeSimple("SET statement_timeout = 2000; SET lock_timeout = 1000")
            monitor = opened
            return opened
        } catch {
            monitorFailure = (error as? DatabaseError)?.message ?? "\(error)"
            return nil
        }
    }

    /// One row per session the watched one waits behind (one row with NULL `pid` when the server names none), none
    /// when it is not waiting for a lock. The lateral parts run only for a waiting session.
    private static let waitQuery = """
        SELECT CASE l.locktype
                   WHEN 'relation' THEN l.mode || ' on ' || coalesce(l.relation::regclass::text, 'a relation')
                   WHEN 'tuple' THEN 'a row lock on ' || coalesce(l.relation::regclass::text, 'a relation')
                   WHEN 'transactionid' THEN 'the end of a transaction that changed a row it needs'
                   WHEN 'virtualxid' THEN 'the end of an older transaction'
                   WHEN 'advisory' THEN 'an advisory lock'
                   ELSE coalesce(l.locktype || ' lock (' || l.mode || ')', 'a lock')
               END AS wait,
               b.pid::int8 AS pid, a.usename::text AS usename, a.application_name, a.state, a.query,
               extract(epoch FROM now() - a.xact_start)::float8 AS transaction_seconds
        FROM pg_catalog.pg_stat_activity w
        LEFT JOIN LATERAL (SELECT locktype, mode, relation FROM pg_catalog.pg_locks
                           WHERE pid = w.pid AND NOT granted LIMIT 1) l ON true
        LEFT JOIN LATERAL (SELECT DISTINCT pid FROM unnest(pg_catalog.pg_blocking_pids(w.pid)) AS p(pid)) b ON true
        LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = b.pid
        WHERE w.pid = $1 AND w.wait_event_type = 'Lock'
        ORDER BY a.xact_start NULLS LAST, b.pid
        """
}

/// What a statement was seen waiting for: the lock, and the sessions holding it (or ahead of it in the queue).
struct PostgresLockWait: Equatable {
    struct Blocker: Equatable {
        let pid: Int64
        let user: String?
        let application: String?
        let state: String?
        let query: String?
        let transactionSeconds: Double?
    }

    /// "AccessExclusiveLock on accounts", "a row lock on accounts", …
    let lock: String
    var blockers: [Blocker]

    /// "it waited for AccessExclusiveLock on t, held by server process 4242 (user app, application 'psql'), idle
    /// in transaction, in a transaction for 3.2 s, last query: SELECT …"; at most three sessions are described.
    var description: String {
        let shown = blockers.prefix(3).map(\.description)
        guard !shown.isEmpty else { return "it waited for \(lock); the server named no session holding it" }
        var text = "it waited for \(lock), held by " + shown.joined(separator: "; and by ")
        if blockers.count > 3 { text += "; and by \(blockers.count - 3) more sessions" }
        return text
    }
}

extension PostgresLockWait.Blocker {
    var description: String {
        // A prepared transaction has no session: pg_blocking_pids reports it as process 0.
        guard pid != 0 else { return "a prepared transaction (see pg_prepared_xacts)" }
        var who = [user.map { "user \($0)" }, application.flatMap { $0.isEmpty ? nil : "application '\($0)'" }]
            .compactMap { $0 }.joined(separator: ", ")
        if !who.isEmpty { who = " (\(who))" }
        var parts = ["server process \(pid)\(who)"]
        if let state { parts.append(state) }
        if let seconds = transactionSeconds {
            parts.append("in a transaction for " + (seconds < 10 ? printfFormat("%.1f", seconds) : String(Int(seconds.rounded()))) + " s")
        }
        if let query {
            let flat = query.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            parts.append((state == "active" ? "running: " : "last query: ") + flat.truncated(to: 200))
        }
        return parts.joined(separator: ", ")
    }
}

extension PostgresConnection {
    /// Runs one statement of a migration (its result, or the error), watching it while it runs when the step's limits
    /// armed the watch (`PostgresLockWatch`). It goes by the extended query protocol, which takes exactly one
    /// statement: where the splitter took several statements for one (psql's rules misread a function body), the
    /// server refuses the piece instead of running all of them, a `COMMIT` among them included.
    func executeWatchingLocks(_ sql: String) -> PostgresResult {
        lockWatch.statementStarted()
        guard let interval = lockWatch.interval else {
            return PostgresResult(PQexecParams(handle, sql, 0, nil, nil, nil, nil, 0))
        }
        guard PQsendQueryParams(handle, sql, 0, nil, nil, nil, nil, 0) == 1 else { return PostgresResult(nil) }
        let pid = PQbackendPID(handle)
        var pause = interval
        var nextLook = ContinuousClock.now + pause
        var last: PostgresResult?
        while true {
            while PQisBusy(handle) == 1 {
                let left = nextLook - ContinuousClock.now
                if left <= .zero {
                    lockWatch.look(at: pid, of: self)
                    pause = min(pause * 2, max(interval, PostgresLockWatch.slowestInterval))
                    nextLook = ContinuousClock.now + pause
                    continue
                }
                waitForInput(upTo: left)
                // Reads what arrived without blocking; 0 when the connection failed, which `PQgetResult` then reports.
                if PQconsumeInput(handle) == 0 { break }
            }
            guard let next = PQgetResult(handle) else { break }
            last = PostgresResult(next)
            // As PQexec: a COPY hands the connection over to its data, and a broken connection has nothing more.
            let status = PQresultStatus(next)
            if status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH
                || PQstatus(handle) == CONNECTION_BAD { break }
        }
        return last ?? PostgresResult(nil)
    }

    /// Waits until the server's answer can be read or `limit` passes.
    private func waitForInput(upTo limit: Duration) {
        let (seconds, attoseconds) = limit.components
        let milliseconds = Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        // An interrupted or failed poll only means looking again sooner.
        _ = poll(&descriptor, 1, milliseconds)
    }

    /// `error` with the wait its statement was seen in, when it gave up waiting for a lock (or was cancelled by
    /// its statement timeout while waiting): whom it waited for, what that session was doing and for how long.
    func explainingWait(_ error: DatabaseError) -> DatabaseError {
        let timedOut = error.code?.backend == "PostgreSQL" && error.code?.value == "57014"
        guard error.kind == .lockNotAvailable || timedOut else { return error }
        if let wait = lockWatch.lastWait {
            return error.with(message: "\(error.message): \(wait.description)")
        }
        guard error.kind == .lockNotAvailable, lockWatch.interval != nil else { return error }
        return error.with(message: "\(error.message) (the session holding the lock could not be named: \(lockWatch.unknownWaitReason))")
    }

    /// A libpq `key=value` string for another session to the same server and database as this one, as the same
    /// user: the options this connection was made with, its actual host and port (of a URI listing several), and
    /// `application` as its name, so a DBA sees what it is.
    func conninfoForSecondSession(application: String) -> String {
        var options: [(String, String)] = []
        if let list = PQconninfo(handle) {
            defer { PQconninfoFree(list) }
            var index = 0
            while let keyword = list[index].keyword {
                if let value = list[index].val { options.append((String(cString: keyword), String(cString: value))) }
                index += 1
            }
        }
        var overrides = ["application_name": application, "connect_timeout": "5"]
        if let host = PQhost(handle).map({ String(cString: $0) }), !host.isEmpty { overrides["host"] = host }
        if let port = PQport(handle).map({ String(cString: $0) }), !port.isEmpty { overrides["port"] = port }
        if options.contains(where: { $0.0 == "hostaddr" }) {
            if let address = PQhostaddr(handle).map({ String(cString: $0) }), !address.isEmpty {
                overrides["hostaddr"] = address
            }
        }
        options = options.filter { overrides[$0.0] == nil } + overrides.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        return options.map { key, value in
            "\(key)='" + value.replacingEvery("\\", with: "\\\\").replacingEvery("'", with: "\\'") + "'"
        }.joined(separator: " ")
    }
}
