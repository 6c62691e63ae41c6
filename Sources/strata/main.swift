import Foundation
import Strata

/// Exit codes shared by every command, documented in the README.
enum ExitCode {
    static let success: Int32 = 0
    static let stepFailed: Int32 = 1
    static let usage: Int32 = 2
    static let refused: Int32 = 3
}

let arguments = Array(CommandLine.arguments.dropFirst())
exit(CLI.run(arguments))
