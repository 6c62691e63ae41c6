/// Errors that stop a command before or between steps.
public enum MigrationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `migrate` will not start; exit code 3.
    case refused([Refusal])
    /// Another process held the write lock past the timeout; exit code 1.
    case lockTimeout(String)
    /// A command named a step that is not in the manifest or not in the needed state.
    case invalidStep(String)
    /// A target (`--to`) names no step of the manifest; the message names the nearest ones. A usage error: exit 2.
    case unknownStep(String)
    /// The database to use is not known (no `--database` and no `<database>` in the manifest).
    case noDatabase

    /// What went wrong and what to do about it.
    public var description: String {
        switch self {
        case .refused(let refusals): refusals.map(\.message).joined(separator: "\n")
        case .lockTimeout(let message): message
        case .invalidStep(let message): message
        case .unknownStep(let message): message
        case .noDatabase: "no database: pass --database PATH, add <database path=\"…\"/> or <database url=\"…\"/> to the manifest, or set STRATA_DATABASE or DATABASE_URL"
        }
    }
}
