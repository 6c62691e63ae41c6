import Foundation
import Strata

/// The command table and dispatch. Commands only parse, call the library, and render.
enum CLI {
    static let commands: [CommandSpec] = []

    static var usage: String {
        var text = """
            strata \(Strata.version) — describe a SQLite database in plain files and bring any database up to date.

            Usage: strata <command> [options]

            Commands:

            """
        let width = commands.map(\.name.count).max() ?? 0
        for command in commands {
            text += "  " + command.name.padding(toLength: width + 2, withPad: " ", startingAt: 0) + command.summary + "\n"
        }
        text += """

            Options for every command:
              --format text|json   output format (default text); JSON goes to stdout, logs to stderr
              --quiet              print nothing but errors
              --help               help for the command

            Exit codes: 0 success or nothing to do, 1 a step failed, 2 usage error,
                        3 drift, dirty state or validation failure.
            Run 'strata <command> --help' for a command's options.
            """
        return text
    }

    static func run(_ arguments: [String]) -> Int32 {
        guard let first = arguments.first else {
            printError("strata: missing command\n\n" + usage)
            return ExitCode.usage
        }
        switch first {
        case "--help", "-h", "help":
            print(usage)
            return ExitCode.success
        case "--version", "version":
            print("strata \(Strata.version)")
            return ExitCode.success
        default:
            break
        }
        guard let spec = commands.first(where: { $0.name == first }) else {
            printError("strata: unknown command '\(first)'\nRun 'strata --help' for the list of commands.")
            return ExitCode.usage
        }
        do {
            let invocation = try Invocation.parse(Array(arguments.dropFirst()), spec: spec)
            if invocation.has("help") {
                print("Usage: \(spec.usage)\n\n\(spec.summary)\(spec.details.isEmpty ? "" : "\n\n" + spec.details)")
                return ExitCode.success
            }
            return try execute(invocation)
        } catch let error as UsageError {
            printError("strata \(spec.name): \(error)\nUsage: \(spec.usage)")
            return ExitCode.usage
        } catch {
            printError("strata \(spec.name): \(error)")
            return ExitCode.stepFailed
        }
    }

    static func execute(_ invocation: Invocation) throws -> Int32 {
        throw UsageError("'\(invocation.spec.name)' is not available")
    }
}

func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}
