/// Something the rehearsal's steps left on its connection (PostgreSQL) that the rollback does not undo, and what
/// the rehearsal did about it: session advisory locks a step took and did not release (`migrate`'s session would
/// hold them until it ends), released; advisory locks the connection held before the rehearsal that a step released,
/// taken again where no other session holds them now; `dblink` connections a step opened, closed.
public struct SessionLeftover: Sendable, Equatable {
    /// What was left; the raw value is the JSON `kind`.
    public enum Kind: String, Sendable, Equatable {
        /// An advisory lock.
        case advisoryLock = "advisory-lock"
        /// A `dblink` connection.
        case dblinkConnection = "dblink-connection"
    }

    /// What was left.
    public let kind: Kind
    /// Which one: `424242 (exclusive)`, `(1, 2) (shared)`, a dblink connection's name, `unnamed`.
    public let name: String
    /// The step that was running when it appeared (or went); nil when that cannot be told.
    public let step: String?
    /// What it was and what the rehearsal did: `taken and not released by the step; released (1 time)`.
    public let outcome: String
    /// Whether the connection is as it was before the rehearsal in this respect.
    public let undone: Bool

    /// Creates the description of a leftover and what was done about it.
    public init(kind: Kind, name: String, step: String?, outcome: String, undone: Bool) {
        self.kind = kind
        self.name = name
        self.step = step
        self.outcome = outcome
        self.undone = undone
    }
}
