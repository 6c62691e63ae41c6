#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Asks a running `Migrator.migrate` to stop at the next step boundary.
///
/// A step is never cut short: the one running finishes (or fails and rolls back) and is recorded, then `migrate`
/// returns with `MigrationReport.cancelled` set and the steps it did not run in `notRun`. A wait for another
/// process's `transaction="none"` step is given up at once, without claiming the step. Safe to call from any thread,
/// e.g. a signal handler's queue.
public final class MigrationCancellation: @unchecked Sendable, Equatable {
    private let lock = Lock()
    private var cancelled = false

    /// Creates a cancellation that has not been cancelled.
    public init() {}

    /// Requests the stop; later calls do nothing more.
    public func cancel() {
        lock.withLock { cancelled = true }
    }

    /// True once `cancel()` was called.
    public var isCancelled: Bool {
        lock.withLock { cancelled }
    }

    /// Identity: two tokens are equal only when they are the same token.
    public static func == (lhs: MigrationCancellation, rhs: MigrationCancellation) -> Bool { lhs === rhs }
}
