import StrataCore

/// The runner on SQLite: `BEGIN IMMEDIATE` takes the write lock before the "already applied?" check; files run
/// under SQLite's authorizer (`ScriptRules`); each migration's changes to the connection are undone
/// (`ConnectionSnapshot`); foreign keys are off while a migration runs and checked before its commit
/// (`SQLiteForeignKeyBaseline`); `transaction="none"` steps are claimed with lock files (`FileStepLocks`).
extension Database: MigrationDatabase {
    /// The history table, `strata_history`.
    public var history: any HistoryStorage { HistoryStore(database: self) }

    /// Step locks taken with lock files beside the database.
    public var stepLocks: any StepLocking { FileStepLocks(databasePath: path) }

    /// Runs `body` in an immediate transaction, so one runner writes at a time.
    public func withWriteLock<T>(_ body: () throws -> T) throws -> T {
        try transaction(.immediate) { _ in try body() }
    }

    /// The busy timeout.
    public var lockTimeout: Duration { configuration.busyTimeout }

    /// Runs a migration file's statements, read a chunk at a time, inside the step's transaction or without one.
    public func runScript(contentsOfFile path: String, insideTransaction: Bool,
                          progress: ((_ bytesRead: Int, _ totalBytes: Int) -> Void)?,
                          observe: (UnsafeBufferPointer<UInt8>) -> Void, afterEach: (() -> Void)?) throws {
        try withAuthorizer(ScriptRules(insideTransaction: insideTransaction)) {
            try withoutActuallyEscaping(observe) { observe in
                try executeScript(contentsOfFile: path, progress: progress, observe: observe, beforeEach: nil,
                                  afterEach: afterEach)
            }
        }
    }

    /// Runs SQL text whose first line is the file's `startLine`, for a section of a file.
    public func runScript(_ bytes: [UInt8], startLine: Int, insideTransaction: Bool, afterEach: (() -> Void)?) throws {
        try withAuthorizer(ScriptRules(insideTransaction: insideTransaction)) {
            try executeScript(bytes, startLine: startLine, afterEach: afterEach)
        }
    }

    /// Runs `body` under the rules a seed loads by.
    public func withSeedRules<T>(_ body: () throws -> T) throws -> T {
        try withAuthorizer(ScriptRules(insideTransaction: true), body)
    }

    /// Off by default, as SQLite's documented procedure for schema changes prescribes: with it on, a table
    /// rebuild (`DROP TABLE` of a parent) deletes or orphans its children; the baseline's check runs before commit
    /// instead. The PRAGMA is a no-op inside a transaction, so it is set before `BEGIN`.
    public func withForeignKeys<T>(enforced: Bool, _ body: () throws -> T) throws -> T {
        let previous = try scalar("PRAGMA foreign_keys", as: Bool.self) ?? false
        if previous != enforced { try execute("PRAGMA foreign_keys = \(enforced ? "ON" : "OFF")", .none) }
        // Whatever the file set (a transaction="none" file may switch it): `ConnectionSnapshot` checks this too.
        defer { try? execute("PRAGMA foreign_keys = \(previous ? "ON" : "OFF")", .none) }
        return try body()
    }

    /// The foreign key violations now, to tell those a step makes from those already there.
    public func foreignKeyBaseline(excusingCurrent: Bool) throws -> any ForeignKeyBaseline {
        excusingCurrent ? try SQLiteForeignKeyBaseline(self) : SQLiteForeignKeyBaseline(excusingNothingOn: self)
    }

    /// The connection's settings, to put back after a migration.
    public func sessionSnapshot() throws -> any SessionSnapshot {
        try ConnectionSnapshot(self)
    }

    /// Rolls back a transaction a failed step left open; returns whether there was one.
    public func rollBackOpenTransaction() -> Bool {
        guard isInTransaction else { return false }
        try? execute("ROLLBACK")
        return true
    }

    /// After an I/O error (a full disk) SQLite leaves the undo in the journal and rolls it back on the next read;
    /// done now, the failed run leaves no hot journal behind.
    public func finishRollback() throws {
        _ = try scalar("SELECT count(*) FROM sqlite_schema", as: Int.self)
    }

    /// The target a seed's rows are written to.
    public func seedTarget(_ seed: SeedStep) throws -> any SeedTarget {
        try SQLiteSeedTarget(database: self, step: seed)
    }
}
