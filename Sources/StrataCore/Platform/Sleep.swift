#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Blocks the calling thread for `duration` (a signal does not cut it short), as `Thread.sleep(forTimeInterval:)`.
package func sleepBlocking(for duration: Duration) {
    let components = duration.components
    guard components.seconds > 0 || components.attoseconds > 0 else { return }
    var request = timespec(tv_sec: Int(components.seconds), tv_nsec: Int(components.attoseconds / 1_000_000_000))
    var remaining = timespec()
    while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
}
