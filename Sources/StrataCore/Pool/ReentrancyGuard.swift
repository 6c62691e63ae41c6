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

/// Marks the threads on which a pool is running a body, so that calling the pool again from inside one is an error
/// instead of a wait for a connection the caller itself holds (a deadlock once every connection is held so).
package final class ReentrancyGuard: @unchecked Sendable {
    // A thread-specific value, never shared: pthread keys are safe to use from any thread.
    private var key = pthread_key_t()
    private let created: Bool
    private let message: String

    /// `message` is the misuse error's text.
    package init(message: String) {
        created = pthread_key_create(&key, nil) == 0
        self.message = message
    }

    deinit {
        if created { pthread_key_delete(key) }
    }

    /// Runs `body` marked as inside the pool on this thread; throws `DatabaseError.Kind.misuse` when it already is.
    package func run<T>(_ body: () throws -> T) throws -> T {
        guard created else { return try body() }
        guard pthread_getspecific(key) == nil else { throw DatabaseError.misuse(message) }
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: 1))
        defer { pthread_setspecific(key, nil) }
        return try body()
    }
}
