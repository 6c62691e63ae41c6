import Strata

/// What a command that stops with an error prints and exits with: one JSON shape for every command,
/// `{"command":…,"error":REASON,"message":…}` and what the reason adds (`refusals`; `problems` and `warnings`;
/// `database`), the reason one of `Failure.reasons`.
struct Failure {
    let code: Int32
    let reason: String
    let message: String
    /// What the reason adds to the object, after `message`.
    var extra: [(String, JSON)] = []

    /// Every `error` a command's JSON can carry, with its exit code (the README's JSON output lists them).
    static let reasons: [(reason: String, code: Int32)] = [
        ("usage", ExitCode.usage), ("refused", ExitCode.refused), ("invalid-manifest", ExitCode.refused),
        ("cannot-connect", ExitCode.cannotConnect), ("lock-timeout", ExitCode.stepFailed),
        ("step-failed", ExitCode.stepFailed), ("failed", ExitCode.stepFailed),
    ]

    func json(command: String) -> JSON {
        .object([("command", .string(command)), ("error", .string(reason)), ("message", .string(message))] + extra)
    }

    /// The failure `error` is, for `command`.
    static func of(_ error: any Error, command: String) -> Failure {
        switch error {
        case let error as UsageError:
            return Failure(code: ExitCode.usage, reason: "usage", message: error.description)
        case let error as DatabaseLocationError:
            return Failure(code: ExitCode.usage, reason: "usage", message: error.description)
        case let found as ValidateProblems:
            var failure = of(found.error, command: command)
            failure.extra.append(("checks", found.checks))
            return failure
        case let error as ManifestError:
            // An invalid manifest stops every command, validate included, with the same code: nothing is touched.
            return Failure(code: ExitCode.refused, reason: "invalid-manifest", message: error.description,
                           extra: [("problems", .array(error.problems.map(Commands.json))),
                                   ("warnings", .array(error.warnings.map(Commands.json)))])
        case let error as DatabaseUnreachable:
            return Failure(code: ExitCode.cannotConnect, reason: "cannot-connect", message: error.description,
                           extra: [("database", .string(error.database))])
        case let error as BackupError:
            // Refused before anything was read or written: exit 3, as every refusal; a failed copy or a busy
            // database: exit 1. Nothing was applied or replaced either way.
            switch error.kind {
            case .unavailable, .refused:
                return refused([Refusal(reason: .backup, id: "", message: error.message)])
            case .busy:
                return Failure(code: ExitCode.stepFailed, reason: "lock-timeout", message: error.message)
            case .failed:
                return Failure(code: ExitCode.stepFailed, reason: "failed", message: error.message)
            }
        case let error as MigrationError:
            switch error {
            case .refused(let refusals): return refused(refusals)
            case .noDatabase, .unknownStep: return Failure(code: ExitCode.usage, reason: "usage", message: error.description)
            case .lockTimeout: return Failure(code: ExitCode.stepFailed, reason: "lock-timeout", message: error.description)
            case .invalidStep: return Failure(code: ExitCode.stepFailed, reason: "failed", message: error.description)
            }
        default:
            return Failure(code: ExitCode.stepFailed, reason: "failed", message: "\(error)")
        }
    }

    static func refused(_ refusals: [Refusal]) -> Failure {
        Failure(code: ExitCode.refused, reason: "refused", message: refusals.map(\.message).joined(separator: "\n"),
                extra: [("refusals", .array(refusals.map(Commands.json)))])
    }
}

/// What `validate` found in the files a manifest names: an invalid manifest's outcome (its warnings were printed
/// as found, so only the problems go to stderr).
struct ValidateProblems: Error, CustomStringConvertible {
    let error: ManifestError
    /// How each backend's SQL was checked (`validate`'s "checks").
    let checks: JSON
    init(_ error: ManifestError, checks: JSON) {
        self.error = error
        self.checks = checks
    }
    var description: String { error.description }
}
