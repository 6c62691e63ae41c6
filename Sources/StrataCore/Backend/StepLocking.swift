/// How a `transaction="none"` step is claimed: a lock held by the running process for as long as its `running`
/// history row stands, released by the system when the process dies, so a row left by a dead runner is told
/// from one still being applied.
public protocol StepLocking {
    /// Takes the step's lock without waiting: nil when another process holds it.
    func claim(kind: StepKind, id: String) throws -> (any StepClaim)?
    /// Whether a live process holds the step's lock.
    func isHeld(kind: StepKind, id: String) -> Bool
    /// Whether the process that wrote this `running` record is still applying its step, as far as the database
    /// can tell: its lock is held, or the backend sees the process still at it although its lock is gone
    /// (`HistoryRecord.runnerSession`), or it cannot tell. Only `.gone` makes a step dirty.
    func liveness(of record: HistoryRecord) -> RunnerLiveness
}

extension StepLocking {
    /// Where the lock is all there is (SQLite's lock files, released only when the process ends), it decides.
    public func liveness(of record: HistoryRecord) -> RunnerLiveness {
        isHeld(kind: record.kind, id: record.identity) ? .holdsLock : .gone
    }
}

/// What the database can tell of the process that wrote a `running` record (`StepLocking.liveness(of:)`).
public enum RunnerLiveness: Sendable, Equatable {
    /// It holds the step's lock: it is applying the step.
    case holdsLock
    /// Its lock is gone (a server may end an idle session), but the session running the file is still there.
    case sessionConnected(String)
    /// Whether it is still at it cannot be told here, for the reason given (a hot standby; catalogs this role may
    /// not read). Treated as running: a runner is never called dead on a guess.
    case notKnown(String)
    /// Neither its lock nor its session is there: the step is dirty.
    case gone

    /// True unless the runner is known to be gone.
    public var mayBeApplying: Bool { self != .gone }

    /// How a message says it: "which holds its lock", "whose session … is still connected", ….
    public var description: String {
        switch self {
        case .holdsLock: "which holds its lock"
        case .sessionConnected(let session): "whose session running the file (\(session)) is still connected, although its lock was released (a server ending idle sessions does that)"
        case .notKnown(let why): "which may still be running: \(why)"
        case .gone: "which is gone"
        }
    }
}

/// A step's lock, held until released (or the process ends).
public protocol StepClaim: AnyObject {
    /// Releases the lock; releasing it twice does nothing.
    func release()
    /// What the `running` record stores so that its runner can be told alive without this lock
    /// (`HistoryRecord.runnerSession`): nil where the lock cannot be lost while the process lives.
    var runnerSession: String? { get }
}

extension StepClaim {
    /// Nil by default: the claim alone tells whether its runner is alive.
    public var runnerSession: String? { nil }
}
