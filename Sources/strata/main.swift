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

/// Exit codes shared by every command, documented in the README.
enum ExitCode {
    static let success: Int32 = 0
    static let stepFailed: Int32 = 1
    static let usage: Int32 = 2
    static let refused: Int32 = 3
    /// `diff`: the two schemas differ (the same code as a refusal: a deploy script stops on either).
    static let schemasDiffer: Int32 = 3
    /// `rehearse`: whether `migrate` would succeed or fail is not known (a step not rehearsed before a result, a step
    /// run unlike `migrate`, a backup whose room cannot be judged); the message says why.
    static let notKnown: Int32 = 4
    /// The database could not be connected to (PostgreSQL) or opened (SQLite), after `--wait` if given: nothing was
    /// read or written. Apart from a failed step (1), so a deploy script knows to try again later.
    static let cannotConnect: Int32 = 5
    /// `status --exit-code`: nothing is wrong, and steps are pending (`migrate` would apply them).
    static let pending: Int32 = 6
}

// A closed pipe (`strata migrate | head -1`) must not kill a run between steps: writes fail with EPIPE instead,
// and the failure is reported once the command has finished.
signal(SIGPIPE, SIG_IGN)
let arguments = Array(CommandLine.arguments.dropFirst())
exit(CLI.finishOutput(CLI.run(arguments), command: arguments.first ?? ""))
