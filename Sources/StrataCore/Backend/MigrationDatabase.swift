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
    /// per schema): where each is, and what it records, so that a history looked for in a new place is not mistaken
    /// for a database where nothing ran.
    func otherHistories() throws -> [OtherHistory]
    /// Why `MigrationOptions.backup` cannot be honoured on this database, and what to use instead: the refusal's
    /// message on a backend that is no `BackupSource`.
    var backupUnavailableReason: String { get }
    /// Why the `transaction="none"` migration `id` (nil: any) cannot run on this connection, nil when it can: the
    /// planner refuses a plan holding one before anything runs (reason `pooler`). PostgreSQL through a connection
    /// pooler with no direct connection given: the step's claim needs a server session of its own while it runs.
    func noneStepRefusal(id: String?) -> String?
    /// Why a rollback could not record what it undoes, nil when it can: read before any down runs, so a role that
    /// may apply steps but not remove their history rows (PostgreSQL: no DELETE on `strata_history`) is refused with
    /// the GRANT it needs rather than failing after a `transaction="none"` down has run.
    func rollbackRefusal() throws -> String?
    /// A connection of its own to run one `transaction="none"` file on, closed after it, where this one cannot keep
    /// the file's session state to itself (PostgreSQL through a connection pooler: each statement outside a
    /// transaction may reach another server session, and what the file sets would stay on the pooler's sessions for
    /// the application); nil to run it on this connection.
    func noneStepRunner() throws -> (any MigrationDatabase)?
}

extension MigrationDatabase {
    /// A backend without per-statement bounds runs steps as they are (SQLite: its write lock is taken before a step
    /// runs, so no statement waits for a lock part-way, and the busy timeout bounds that one wait).
    public func limitStatements(_ limits: StatementLimits, insideTransaction: Bool) throws {}

    /// SQLite's statements, `VACUUM` included, either complete or leave nothing behind.
    public func unfinishedObjects() throws -> [UnfinishedObject] { [] }

    /// A backend whose connection is its own session runs `transaction="none"` migrations on it.
    public func noneStepRefusal(id: String?) -> String? { nil }

    /// A backend whose history rows the connection may always remove (SQLite: a file it may write).
    public func rollbackRefusal() throws -> String? { nil }

    /// A backend whose connection is its own session runs `transaction="none"` files on it.
    public func noneStepRunner() throws -> (any MigrationDatabase)? { nil }

    /// A SQLite database holds one history.
    public func otherHistories() throws -> [OtherHistory] { [] }

    /// What `MigrationOptions.backup` copies: the connection itself where its backend can copy its database.
    public var backupSource: (any BackupSource)? { self as? any BackupSource }

    /// Why this connection cannot be backed up, for the refusal of `--backup`.
    public var backupUnavailableReason: String {
        "a backup (--backup, <database backup>) copies a SQLite database file; this \(dialect.backend.displayName) database has no backup Strata takes: back it up with the database's own tools before migrating, and migrate without --backup"
    }
}

/// A Strata history other than the one a connection uses (`MigrationDatabase.otherHistories`).
public struct OtherHistory: Sendable, Equatable {
    /// Where it is, for messages: `strata_history in schema app_a`.
    public let location: String
    /// The checksum of each step it records (deleted ones left out), as `version:hex` by `kind/identity`; nil when
    /// this connection's role may not read it.
    public let checksums: [String: String]?

    /// Creates the description of another history table.
    public init(location: String, checksums: [String: String]?) {
        self.location = location
        self.checksums = checksums
    }
}

/// How long the statements of one step may wait for locks and run, as `MigrationOptions` sets them for it.
public struct StatementLimits: Sendable, Equatable {
    /// How long a statement may wait for a lock before it gives up (`.lockNotAvailable`); `.zero`: no limit.
    public var lockTimeout: Duration
    /// How long a statement may run; `.zero`: no limit; nil: the database's own setting.
    public var statementTimeout: Duration?

    /// Creates limits from a lock timeout and a statement timeout.
    public init(lockTimeout: Duration, statementTimeout: Duration?) {
        self.lockTimeout = lockTimeout
        self.statementTimeout = statementTimeout
    }
}

/// A connection's state, put back after a step.
public protocol SessionSnapshot {
    /// Puts the connection's state back as it was when the snapshot was taken.
    func restore() throws
}
