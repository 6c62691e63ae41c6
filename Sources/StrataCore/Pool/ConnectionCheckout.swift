import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// At most `capacity` connections of one pool, lent one holder at a time: an idle one when there is one, else the
/// right to open another while fewer than `capacity` exist, else a wait in line (threads and tasks alike, first
/// come first served) bounded by `timeout`, after which the checkout fails with `DatabaseError.Kind.busy`.
///
/// Connections are opened and checked by the pool, outside the lock: connecting to a server takes a round trip.
package final class ConnectionCheckout<Connection>: @unchecked Sendable {
    /// What a checkout gets: a connection, or a place for one the holder opens. A connection has one holder at a
    /// time, handed over under the lock, which is what makes passing it between threads safe.
    package enum Grant: @unchecked Sendable {
        case idle(Connection)
        case open
    }

    /// How many connections may exist at once.
    package let capacity: Int
    /// How long a checkout waits for a free connection.
    package let timeout: Duration
    /// How the timeout error names the pool ("the SQLite pool's readers").
    private let name: String
    private let lock = Lock()
    // Guarded by `lock`:
    private var idle: [Connection] = []
    /// Connections that exist or are being opened: idle, lent, and granted places.
    private var existing = 0
    private var waiters: [Waiter] = []

    package init(capacity: Int, timeout: Duration, name: String) {
        self.capacity = max(1, capacity)
        self.timeout = timeout
        self.name = name
    }

    /// Waits, blocking the thread, for a free connection or a place for one.
    package func acquire() throws -> Grant {
        lock.lock()
        if let grant = grantAtOnce() {
            lock.unlock()
            return grant
        }
        let semaphore = DispatchSemaphore(value: 0)
        let waiter = Waiter(.thread(semaphore))
        waiters.append(waiter)
        lock.unlock()
        _ = semaphore.wait(timeout: .now() + Self.interval(timeout))
        lock.lock()
        defer { lock.unlock() }
        // Served between the timeout and taking the lock: the grant is this caller's.
        if let grant = waiter.grant { return grant }
        waiters.removeAll { $0 === waiter }
        throw timeoutError()
    }

    /// Waits, suspending the task, for a free connection or a place for one; a cancelled task stops waiting with
    /// `CancellationError`.
    package func acquire() async throws -> Grant {
        let waiter = Waiter(nil)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Grant, any Error>) in
                lock.lock()
                if waiter.cancelled {
                    lock.unlock()
                    continuation.resume(throwing: CancellationError())
                } else if let grant = grantAtOnce() {
                    lock.unlock()
                    continuation.resume(returning: grant)
                } else {
                    waiter.resumer = .task(continuation)
                    waiters.append(waiter)
                    lock.unlock()
                    DispatchQueue.global().asyncAfter(deadline: .now() + Self.interval(timeout)) { [weak self] in
                        self?.stopWaiting(waiter, with: self?.timeoutError() ?? CancellationError())
                    }
                }
            }
        } onCancel: {
            stopWaiting(waiter, with: CancellationError())
        }
    }

    /// Returns a lent connection: to the next in line, else to the idle ones. One that is not `reusable` (broken,
    /// or in a state the next holder must not inherit) is dropped, and its place goes to the next in line.
    package func release(_ connection: Connection, reusable: Bool) {
        lock.lock()
        defer { lock.unlock() }
        if reusable {
            if waiters.isEmpty { idle.append(connection) } else { serve(waiters.removeFirst(), .idle(connection)) }
        } else {
            releasePlaceLocked()
        }
    }

    /// Gives back a place granted by `.open` (or held by a dropped connection) that holds no connection.
    package func releasePlace() {
        lock.lock()
        defer { lock.unlock() }
        releasePlaceLocked()
    }

    /// The connections that exist now (idle, lent, or being opened).
    package var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return existing
    }

    // MARK: Waiting

    /// One thread or task in line; its fields are read and written under the checkout's lock.
    private final class Waiter: @unchecked Sendable {
        enum Resumer {
            case thread(DispatchSemaphore)
            case task(CheckedContinuation<Grant, any Error>)
        }
        var resumer: Resumer?
        /// What a thread waiter was served; read after its semaphore.
        var grant: Grant?
        /// A task cancelled before its continuation was in line.
        var cancelled = false

        init(_ resumer: Resumer?) { self.resumer = resumer }
    }

    /// An idle connection or a new place, when either is free; call with the lock held.
    private func grantAtOnce() -> Grant? {
        if let connection = idle.popLast() { return .idle(connection) }
        guard existing < capacity else { return nil }
        existing += 1
        return .open
    }

    private func releasePlaceLocked() {
        if waiters.isEmpty { existing -= 1 } else { serve(waiters.removeFirst(), .open) }
    }

    private func serve(_ waiter: Waiter, _ grant: Grant) {
        switch waiter.resumer {
        case .thread(let semaphore):
            waiter.grant = grant
            semaphore.signal()
        case .task(let continuation):
            continuation.resume(returning: grant)
        case nil:
            break
        }
    }

    /// Takes a task out of line with `error`, if it is still waiting.
    private func stopWaiting(_ waiter: Waiter, with error: any Error) {
        lock.lock()
        defer { lock.unlock() }
        guard let index = waiters.firstIndex(where: { $0 === waiter }) else {
            waiter.cancelled = true
            return
        }
        waiters.remove(at: index)
        if case .task(let continuation) = waiter.resumer { continuation.resume(throwing: error) }
    }

    private func timeoutError() -> DatabaseError {
        DatabaseError(kind: .busy, message: "no connection of \(name) was free after waiting \(Self.describe(timeout)): all \(capacity) were in use; give the pool more connections or a longer checkout timeout, or hold them for less time")
    }

    private static func interval(_ duration: Duration) -> DispatchTimeInterval {
        .milliseconds(Int(clamping: milliseconds(duration)))
    }

    /// The duration in whole milliseconds, between 0 and a year (longer waits are not waits a pool is for, and
    /// Dispatch's arithmetic must not overflow).
    private static func milliseconds(_ duration: Duration) -> Int64 {
        let components = duration.components
        let year: Int64 = 365 * 86_400
        guard components.seconds >= 0 else { return 0 }
        guard components.seconds < year else { return year * 1000 }
        return components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }

    /// "2.5 s", "250 ms".
    package static func describe(_ duration: Duration) -> String {
        let milliseconds = milliseconds(duration)
        if milliseconds < 1000 { return "\(milliseconds) ms" }
        return printfFormat("%.1f s", Double(milliseconds) / 1000)
    }
}
