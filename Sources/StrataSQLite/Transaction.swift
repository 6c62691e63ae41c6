import CSQLite
import StrataCore

/// How a transaction takes its locks; see SQLite's `BEGIN` documentation.
public enum TransactionKind: String, Sendable {
    /// Locks on first read or write.
    case deferred = "DEFERRED"
    /// Takes the write lock at once, so no other writer can interleave; other connections wait (busy timeout).
    case immediate = "IMMEDIATE"
    /// Like immediate; in rollback-journal mode it also keeps readers out.
    case exclusive = "EXCLUSIVE"
}

/// The `transaction`/`savepoint` scopes open on one connection, and whether SQLite ended their transaction.
///
/// After `SQLITE_FULL`, `SQLITE_IOERR`, `SQLITE_NOMEM`, an interrupt or some `SQLITE_BUSY` errors SQLite may roll
/// the whole transaction back by itself. A body that goes on (catching the error, or replaying rows) would then
/// run each later statement in autocommit mode, committing it at once. So the failing statement opens a
/// stand-in transaction that is never committed, and the scope fails when it ends.
final class TransactionState {
    /// Open `transaction`/`savepoint` calls.
    var depth = 0
    /// The error after which SQLite rolled the scopes' transaction back.
    var lostTo: DatabaseError?

    /// Called after a statement failed: notes whether SQLite ended the transaction with it.
    func check(_ failure: DatabaseError, connection: OpaquePointer) {
        guard depth > 0, lostTo == nil, sqlite3_get_autocommit(connection) != 0 else { return }
        lostTo = failure
        sqlite3_exec(connection, "BEGIN DEFERRED TRANSACTION", nil, nil, nil)
    }

    /// The error a scope throws once its transaction was lost.
    var lostError: DatabaseError? {
        lostTo.map { DatabaseError(code: $0.extendedResultCode, message: "SQLite rolled the transaction back after: "
                                   + $0.message + "; nothing done in it was kept", sql: $0.sql) }
    }
}

extension Database {
    /// Runs `body` in a transaction: commits when it returns, rolls back when it throws.
    ///
    /// ```swift
    /// try db.transaction(.immediate) { db in
    ///     try db.execute("INSERT INTO members (name) VALUES (?)", ["Ada"])
    /// }
    /// ```
    /// Calling it inside another transaction is an error; use `savepoint(_:)` to nest. If SQLite rolls the
    /// transaction back by itself (disk full, I/O error, out of memory, interrupt) and the body goes on, nothing
    /// after that point is committed either: the call throws, naming the error that ended the transaction.
    @discardableResult
    public func transaction<T>(_ kind: TransactionKind = .deferred, _ body: (Database) throws -> T) throws -> T {
        guard !isInTransaction else {
            throw DatabaseError.misuse("already in a transaction; use savepoint(_:) to nest one")
        }
        try execute("BEGIN \(kind.rawValue) TRANSACTION", .none)
        transactionState.depth += 1
        defer { leaveScope() }
        let result: T
        do {
            result = try body(self)
        } catch {
            rollbackIgnoringErrors()
            throw error
        }
        if let lost = transactionState.lostError {
            rollbackIgnoringErrors()
            throw lost
        }
        do {
            try execute("COMMIT TRANSACTION")
        } catch {
            rollbackIgnoringErrors()
            throw error
        }
        return result
    }

    /// Runs `body` inside a savepoint: released when it returns, rolled back to (and released) when it throws.
    /// Savepoints nest, inside or outside a transaction.
    @discardableResult
    public func savepoint<T>(_ body: (Database) throws -> T) throws -> T {
        savepointDepth += 1
        defer { savepointDepth -= 1 }
        let name = "strata_savepoint_\(savepointDepth)"
        try execute("SAVEPOINT \(name)", .none)
        transactionState.depth += 1
        defer { leaveScope() }
        let result: T
        do {
            result = try body(self)
        } catch {
            if transactionState.lostTo != nil {
                // The savepoint went with the transaction; the outermost scope undoes the stand-in one.
                if transactionState.depth == 1 { rollbackIgnoringErrors() }
            } else if isInTransaction {
                try? execute("ROLLBACK TRANSACTION TO SAVEPOINT \(name)", .none)
                try? execute("RELEASE SAVEPOINT \(name)", .none)
            }
            throw error
        }
        if let lost = transactionState.lostError {
            if transactionState.depth == 1 { rollbackIgnoringErrors() }
            throw lost
        }
        try execute("RELEASE SAVEPOINT \(name)", .none)
        return result
    }

    /// The error after which SQLite rolled back the transaction of the open `transaction`/`savepoint` scope.
    var transactionLost: DatabaseError? { transactionState.lostTo }

    private func leaveScope() {
        transactionState.depth -= 1
        if transactionState.depth == 0 { transactionState.lostTo = nil }
    }

    private func rollbackIgnoringErrors() {
        // SQLite may already have rolled back (e.g. after SQLITE_FULL); then there is nothing to undo.
        if isInTransaction { _ = sqlite3_exec(handle, "ROLLBACK TRANSACTION", nil, nil, nil) }
    }
}
