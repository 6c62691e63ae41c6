/// A reason `migrate` refuses to start (exit code 3).
public struct Refusal: Sendable, Equatable, CustomStringConvertible {
    /// Why `migrate` refused; the raw value is the JSON `reason`.
    public enum Reason: String, Sendable, Equatable, Codable {
        /// The reasons for refusing, named as the JSON output names them.
        case drift, missing, dirty, outOfOrder = "out-of-order", invalidSQL = "invalid-sql", seedOrder = "seed-order",
             planChanged = "plan-changed"
        /// A step in the way of a `rollback` is being applied or rolled back by another run right now.
        case inProgress = "in-progress"
        /// The database's backend is not one the manifest has migrations for (every migration is marked for another).
        case backend
        /// The database cannot be written (a read-only file, a hot standby).
        case readOnly = "read-only"
        /// The database cannot load a seed the way its mode says (`SQLDialect.seedRefusal`).
        case seedMode = "seed-mode"
        /// An interrupted build left an object unusable (`UnfinishedObject`), and the plan holds a
        /// `transaction="none"` migration that could build on it (`CREATE INDEX CONCURRENTLY IF NOT EXISTS` would
        /// keep an INVALID index and be recorded as applied).
        case unfinished
        /// The history is not where this connection looks, and another history in the database records steps of
        /// this manifest (`MigrationDatabase.otherHistories`).
        case historyElsewhere = "history-elsewhere"
        /// A Swift code step is due and no body is registered for it (`Migrator.register`); the `strata` command
        /// registers none, so it refuses every plan with a pending code step.
        case codeStep = "code-step"
        /// A registered code step the manifest does not list, or one registered twice.
        case codeRegistration = "code-registration"
        /// A step `rollback` would undo has nothing that undoes it: a migration without a down, a code step without a
        /// registered down body.
        case noDown = "no-down"
        /// `baseline --from TOOL` cannot adopt that tool's history as it stands: its table is missing or not the
        /// tool's, marks a step dirty or failed, or names a version no migration file has.
        case foreignHistory = "foreign-history"
        /// A backup was asked for (`MigrationOptions.backup`) of a database whose backend has none Strata takes
        /// (PostgreSQL); the message says what to use instead.
        case backup
        /// `rehearse` cannot run the plan where nothing is kept: no room for a copy, a step being applied by another
        /// process right now, or a database whose backend offers no way to rehearse.
        case notRehearsable = "not-rehearsable"
        /// A `transaction="none"` migration is due and the connection reaches the server through a connection pooler,
        /// with no direct connection given for the step's claim (`MigrationDatabase.noneStepRefusal`).
        case pooler
    }

    /// Why `migrate` refused.
    public let reason: Reason
    /// The step the refusal is about.
    public let id: String
    /// What is wrong and what to do about it.
    public let message: String

    /// Creates a refusal about one step.
    public init(reason: Reason, id: String, message: String) {
        self.reason = reason
        self.id = id
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
