import StrataCore

/// Each step's bounds on PostgreSQL: `lock_timeout` and `statement_timeout` (`StatementLimits`).
extension PostgresConnection {
    /// `SET LOCAL` inside a transactional step, so the bounds end with its transaction whether it commits or rolls
    /// back; `SET` for a `transaction="none"` step, whose statements run in transactions of their own, undone by the
    /// session reset after it (`PostgresSessionReset`). A file may still set either for itself: its own `SET` comes
    /// later and wins. Also arms the lock watch, which names the session a statement waited for when it gives up.
    /// Through a connection pooler a `transaction="none"` step gets neither: set for the session, they would stay on
    /// a server session the application gets next.
    public func limitStatements(_ limits: StatementLimits, insideTransaction: Bool) throws {
        if !insideTransaction && reachesServerThroughPooler {
            lockWatch.arm(for: limits)
            return
        }
        let set = insideTransaction ? "SET LOCAL" : "SET"
        var settings = ["\(set) lock_timeout = \(Self.milliseconds(limits.lockTimeout))"]
        if let statementTimeout = limits.statementTimeout {
            settings.append("\(set) statement_timeout = \(Self.milliseconds(statementTimeout))")
        }
        try executeSimple(settings.joined(separator: "; "))
        try noteStatementTimeout(limits, insideTransaction: insideTransaction)
        lockWatch.arm(for: limits)
    }

    /// A duration as the whole milliseconds PostgreSQL's timeout settings take: rounded up, so a positive bound
    /// never becomes 0 (no limit), and at most the largest the server accepts (`INT_MAX` ms, about 24 days).
    static func milliseconds(_ duration: Duration) -> Int64 {
        guard duration > .zero else { return 0 }
        let (seconds, attoseconds) = duration.components
        let (milliseconds, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return Int64(Int32.max) }
        let rest = attoseconds / 1_000_000_000_000_000 + (attoseconds % 1_000_000_000_000_000 == 0 ? 0 : 1)
        return min(milliseconds + rest, Int64(Int32.max))
    }
}
