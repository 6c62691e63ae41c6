/// Progress of a running `migrate`, for rendering.
public enum MigrationEvent: Sendable {
    /// A step is about to run, and why it is in the plan.
    case started(PlanStep, PlanReason)
    /// A step finished and was recorded.
    case finished(AppliedStep)
    /// A seed set being loaded: rows loaded so far and bytes of the file read.
    case seedProgress(id: String, rows: Int, bytesRead: Int, totalBytes: Int)
    /// A migration file being read and run; reported per chunk read (1 MiB).
    case scriptProgress(id: String, bytesRead: Int, totalBytes: Int)
    /// A statement of a migration file finished: `finished` so far, of `total` where the file was read ahead and its
    /// statements counted by the dialect's lexer (nil for a larger file), `elapsed` since the file started.
    case statementProgress(id: String, finished: Int, total: Int?, elapsed: Duration)
    /// The run is waiting for something, said in a sentence (a lock another runner holds).
    case waiting(String)
    /// A transactional step failed because a statement gave up waiting for a lock, or the database chose it to break
    /// a deadlock; it was rolled back and runs again after `delay`. `retry` counts from 1 up to `of`
    /// (`MigrationOptions.lockRetries`); `reason` is the failure (`file:line:column: message`, naming the session
    /// that held the lock where the database can tell).
    case retrying(id: String, retry: Int, of: Int, delay: Duration, reason: String)
    /// Something the run found worth saying that stops nothing (foreign key violations that predate it).
    case notice(String)
    /// The backup `MigrationOptions.backup` asked for is in place, checked and synced; no step has run yet.
    case backedUp(DatabaseBackup)
}
