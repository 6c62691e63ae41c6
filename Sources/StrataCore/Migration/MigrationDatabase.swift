#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What the runner needs from a database beyond statements: its history table, the lock that makes each step run
/// exactly once, running a file under the backend's rules, and keeping one step's effects on the connection from
/// reaching the next. SQLite's `Database` adopts it; a backend is an addition, not a second runner.
public protocol MigrationDatabase: DatabaseConnection {
    /// Where `strata_history` lives on this database.
    var history: any HistoryStorage { get }
    /// How `transaction="none"` steps are claimed across processes and known to be alive.
    var stepLocks: any StepLocking { get }

    /// Runs `body` in a transaction that holds the database's write lock from its start, so the "already applied?"
    /// check inside it and the step it guards are one atomic unit across every process. A lock not obtained within
    /// the connection's timeout throws a `.busy` error.
    func withWriteLock<T>(_ body: () throws -> T) throws -> T
    /// How long `withWriteLock` waits, for messages.
    var lockTimeout: Duration { get }

    /// Runs a migration file under the backend's rules for migrations (see the README), statement by statement as
    /// the dialect's splitter finds them. `observe` sees every byte read, in order; `afterEach` runs after each
    /// statement. Errors carry the statement's line and column.
    func runScript(contentsOfFile path: String, insideTransaction: Bool,
                   progress: ((_ bytesRead: Int, _ totalBytes: Int) -> Void)?,
                   observe: (UnsafeBufferPointer<UInt8>) -> Void, afterEach: (() -> Void)?) throws
    /// Runs script text already read (the up section of another tool's file), at its own line numbers.
    func runScript(_ bytes: [UInt8], startLine: Int, insideTransaction: Bool, afterEach: (() -> Void)?) throws
    /// Runs `body` (a seed's load) under the rules that keep seeds and their triggers away from Strata's history.
    func withSeedRules<T>(_ body: () throws -> T) throws -> T

    /// Runs `body` with foreign key enforcement as a migration asks for it, then restores the connection's setting.
    func withForeignKeys<T>(enforced: Bool, _ body: () throws -> T) throws -> T
    /// What each step's foreign key check excuses: the violations in the database now when `excusingCurrent`
    /// (so a step is blamed only for those it adds), otherwise none.
    func foreignKeyBaseline(excusingCurrent: Bool) throws -> any ForeignKeyBaseline
    /// The connection's state as it is now, to put back after a step (settings, temporary objects, attachments).
    func sessionSnapshot() throws -> any SessionSnapshot
    /// Rolls back a transaction a `transaction="none"` file left open; true when there was one.
    func rollBackOpenTransaction() -> Bool
    /// After a failed step: lets the database finish undoing it (SQLite rolls a hot journal back on the next read).
    func finishRollback() throws
    /// Where a seed's rows go.
    func seedTarget(_ seed: SeedStep) throws -> any SeedTarget
    /// Bounds the statements of the step about to run (`StatementLimits`). Called first inside a transactional
    /// step's `withWriteLock`, where the bounds end with its transaction, and before a `transaction="none"` file
    /// runs, where they last until the session snapshot taken before the step is restored. A statement that gives up
    /// waiting for a lock throws `.lockNotAvailable`. Backends without such settings leave it at the default,
    /// which does nothing.
    func limitStatements(_ limits: StatementLimits, insideTransaction: Bool) throws
    /// Objects an interrupted statement outside a transaction left unusable (`UnfinishedObject`), not counting
    /// those another session is building now. None on a backend where every statement is all or nothing.
    func unfinishedObjects() throws -> [UnfinishedObject]
    /// Strata histories in the database other than `history`, where a database can hold several (PostgreSQL: one
    /// per schema): where each is, and the steps it records (`kind/identity`), so that a history looked for in a
    /// new place is not mistaken for a database where nothing ran.
    func otherHistories() throws -> [(location: String, steps: Set<String>)]
    /// Why `MigrationOptions.backup` cannot be honoured on this database, and what to use instead: the refusal's
    /// message on a backend that is no `BackupSource`.
    var backupUnavailableReason: String { get }
}

extension MigrationDatabase {
    /// A backend without per-statement bounds runs steps as they are (SQLite: its write lock is taken before a step
    /// runs, so no statement waits for a lock part-way, and the busy timeout bounds that one wait).
    public func limitStatements(_ limits: StatementLimits, insideTransaction: Bool) throws {}

    /// SQLite's statements, `VACUUM` included, either complete or leave nothing behind.
    public func unfinishedObjects() throws -> [UnfinishedObject] { [] }

    /// A SQLite database holds one history.
    public func otherHistories() throws -> [(location: String, steps: Set<String>)] { [] }

    /// What `MigrationOptions.backup` copies: the connection itself where its backend can copy its database.
    public var backupSource: (any BackupSource)? { self as? any BackupSource }

    public var backupUnavailableReason: String {
        "a backup (--backup, <database backup>) copies a SQLite database file; this \(dialect.backend.displayName) database has no backup Strata takes: back it up with the database's own tools before migrating, and migrate without --backup"
    }
}

/// How long the statements of one step may wait for locks and run, as `MigrationOptions` sets them for it.
public struct StatementLimits: Sendable, Equatable {
    /// How long a statement may wait for a lock before it gives up (`.lockNotAvailable`); `.zero`: no limit.
    public var lockTimeout: Duration
    /// How long a statement may run; `.zero`: no limit; nil: the database's own setting.
    public var statementTimeout: Duration?

    public init(lockTimeout: Duration, statementTimeout: Duration?) {
        self.lockTimeout = lockTimeout
        self.statementTimeout = statementTimeout
    }
}

/// Reads and writes `strata_history`: one row per step, the same columns on every backend (see the README).
public protocol HistoryStorage {
    /// Whether the table exists (reading never creates it).
    func exists() throws -> Bool
    /// Creates the table when absent; safe to race with other processes.
    func create() throws
    /// Every record in the order they were written; none when the table does not exist.
    func all() throws -> [HistoryRecord]
    func record(kind: StepKind, identity: String) throws -> HistoryRecord?
    /// Inserts or replaces the record of one step.
    func write(_ record: HistoryRecord) throws
    func delete(kind: StepKind, identity: String) throws
}

/// How a `transaction="none"` step is claimed: a lock held by the running process for as long as its `running`
/// history row stands, released by the system when the process dies, so a row left by a dead runner is told
/// from one still being applied.
public protocol StepLocking {
    /// Takes the step's lock without waiting: nil when another process holds it.
    func claim(kind: StepKind, id: String) throws -> (any StepClaim)?
    /// Whether a live process holds the step's lock.
    func isHeld(kind: StepKind, id: String) -> Bool
}

/// A step's lock, held until released (or the process ends).
public protocol StepClaim: AnyObject {
    func release()
}

/// Foreign key violations that were in the database before a run, which a step is not blamed for.
public protocol ForeignKeyBaseline: AnyObject {
    /// How many violations it excuses.
    var count: Int { get }
    /// The violations now that it does not excuse; it narrows to those still there, for the next step.
    func newViolations() throws -> [ForeignKeyViolation]
}

/// A connection's state, put back after a step.
public protocol SessionSnapshot {
    func restore() throws
}

/// One foreign key violation: the row (where the database can name it) and the parent it should refer to.
public struct ForeignKeyViolation: Sendable, Hashable, CustomStringConvertible {
    public let table: String
    /// The row's id, or nil where the table has none (SQLite's WITHOUT ROWID tables).
    public let rowid: Int64?
    public let parent: String
    /// Which of the table's foreign keys.
    public let constraint: Int

    public init(table: String, rowid: Int64?, parent: String, constraint: Int) {
        self.table = table
        self.rowid = rowid
        self.parent = parent
        self.constraint = constraint
    }

    public var description: String {
        "\(table) row \(rowid.map(String.init) ?? "(without rowid)") references a missing row in \(parent)"
    }
}
