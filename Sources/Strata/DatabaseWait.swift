#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A database that could not be connected to (PostgreSQL: no server answering, a login or database refused) or
/// opened (SQLite: a file or directory that cannot be opened), before anything was read or written. Kept apart from
/// a step that failed, so a deploy script can tell "try again later" from "fix the migration".
public struct DatabaseUnreachable: Error, Sendable, CustomStringConvertible {
    /// How output names the database (never with a password).
    public let database: String
    /// The last failure's message.
    public let message: String
    /// How long the command waited for it (`--wait`), nil when it did not wait.
    public let waited: Duration?
    /// True when a stop request (SIGINT, SIGTERM) ended the wait before its limit.
    public let stopped: Bool

    /// The message, with how long the command waited when it did.
    public var description: String {
        guard let waited else { return message }
        return stopped ? "stopped waiting for \(database): \(message)"
            : "\(database) did not answer within \(DatabaseWait.seconds(waited)) of waiting: \(message)"
    }
}

/// Opening a database that may not be up yet: a server still starting, a volume not mounted yet. Retries only the
/// failures waiting can cure: a database error of kind `cannotOpen` where no server answers (a PostgreSQL server that
/// answers but refuses the login, or has no such database, is reported at once: waiting would not change it).
public enum DatabaseWait {
    /// The pause before the first retry; each one after doubles it, up to `longestPause`.
    static let firstPause: Duration = .milliseconds(100)
    static let longestPause: Duration = .seconds(2)

    /// Runs `open` for `target`. A failure of kind `cannotOpen` becomes `DatabaseUnreachable`: at once without
    /// `limit`, else after retrying (0.1 s, 0.2 s, … at most 2 s apart) until `limit` has passed. `waiting` is told
    /// once, at the first failure, what is being waited for; `cancellation` ends the wait early.
    public static func opening<T>(_ target: any DatabaseTarget, waitingUpTo limit: Duration?,
                                  cancellation: MigrationCancellation? = nil,
                                  waiting: (String) -> Void = { _ in }, _ open: () throws -> T) throws -> T {
        let clock = ContinuousClock()
        let start = clock.now
        var pause = firstPause
        var told = false
        while true {
            let failure: DatabaseError
            do {
                return try open()
            } catch let error as DatabaseError where error.kind == .cannotOpen {
                failure = error
            }
            let message = failure.message
            guard let limit else {
                throw DatabaseUnreachable(database: target.name, message: message, waited: nil, stopped: false)
            }
            if let postgres = target as? PostgresTarget, postgres.serverAnswers {
                // Up now, but it may have come up after the attempt above failed (a server still starting): one more
                // attempt, made while it answers, decides. If the server says no to that one too (authentication, a
                // missing database), that is not a wait's to cure.
                do {
                    return try open()
                } catch let error as DatabaseError where error.kind == .cannotOpen {
                    throw DatabaseUnreachable(database: target.name, message: error.message, waited: nil, stopped: false)
                }
            }
            let remaining = limit - (clock.now - start)
            guard remaining > .zero else {
                throw DatabaseUnreachable(database: target.name, message: message, waited: limit, stopped: false)
            }
            if !told {
                told = true
                waiting("waiting up to \(seconds(limit)) for \(target.name) to answer: \(message)")
            }
            // Short slices, so a stop request is seen within a tenth of a second.
            let deadline = clock.now + min(pause, remaining)
            while clock.now < deadline {
                if cancellation?.isCancelled == true {
                    throw DatabaseUnreachable(database: target.name, message: message, waited: clock.now - start, stopped: true)
                }
                sleepBlocking(for: min(.milliseconds(50), deadline - clock.now))
            }
            pause = min(pause * 2, longestPause)
        }
    }

    /// "0.3 s", "60 s": tenths shown only when there are some.
    static func seconds(_ duration: Duration) -> String {
        let (whole, fraction) = duration.components
        let tenths = fraction / 100_000_000_000_000_000
        return tenths == 0 ? "\(whole) s" : "\(whole).\(tenths) s"
    }
}
