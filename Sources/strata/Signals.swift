import Dispatch
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
import Strata

/// Wiring only: SIGINT and SIGTERM become a `MigrationCancellation`, so `migrate` finishes (or rolls back) the
/// current step and stops between steps instead of dying half-way; the exit code is then 128 + the signal.
final class StopSignals: @unchecked Sendable {
    let cancellation = MigrationCancellation()
    private let lock = Lock()
    private var first: Int32?
    private var sources: [any DispatchSourceSignal] = []

    init(command: String) {
        for number in [SIGINT, SIGTERM] {
            // Ignored as a process signal, delivered to the queue instead.
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [self] in
                let isFirst = lock.withLock { () -> Bool in
                    guard first == nil else { return false }
                    first = number
                    return true
                }
                cancellation.cancel()
                if isFirst { printError("strata \(command): \(Self.name(number)) received: finishing the current step, then stopping") }
            }
            source.resume()
            sources.append(source)
        }
    }

    /// The first stop signal received, if any.
    var received: Int32? { lock.withLock { first } }

    static func name(_ number: Int32) -> String {
        switch number {
        case SIGINT: "SIGINT"
        case SIGTERM: "SIGTERM"
        default: "signal \(number)"
        }
    }
}
