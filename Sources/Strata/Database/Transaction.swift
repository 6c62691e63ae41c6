import CSQLite

/// How a transaction takes its locks; see SQLite's `BEGIN` documentation.
public enum TransactionKind: String, Sendable {
    /// Locks on first read or write.
    case deferred = "DEFERRED"
    /// Takes the write lock at once, so no other writer can interleave; other connections wait (busy timeout).
    case immediate = "IMMEDIATE"
    /// Like immediate; in rollback-journal mode it also keeps readers out.
    case exclusive = "EXCLUSIVE"
}

extension Database {
    /// Runs `body` in a transaction: commits when it returns, rolls back when it throws.
    ///
    /// ```swift
    /// try db.transaction(.immediate) { db in
    ///     try db.execute("INSERT INTO members (name) VALUES (?)", ["Ada"])
    /// }
    /// ```
    /// Calling it inside another transaction is an error; use `savepoint(_:)` to nest.
    @discardableResult
    public func transaction<T>(_ kind: TransactionKind = .deferred, _ body: (Database) throws -> T) throws -> T {
        guard !isInTransaction else {
            throw DatabaseError.misuse("already in a transaction; use savepoint(_:) to nest one")
        }
        try execute("BEGIN \(kind.rawValue) TRANSACTION")
        let result: T
        do {
            result = try body(self)
        } catch {
            rollbackIgnoringErrors()
            throw error
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
        try execute("SAVEPOINT \(name)")
        let result: T
        do {
            result = try body(self)
        } catch {
            if isInTransaction {
                try? execute("ROLLBACK TRANSACTION TO SAVEPOINT \(name)")
                try? execute("RELEASE SAVEPOINT \(name)")
            }
            throw error
        }
        try execute("RELEASE SAVEPOINT \(name)")
        return result
    }

    private func rollbackIgnoringErrors() {
        // SQLite may already have rolled back (e.g. after SQLITE_FULL); then there is nothing to undo.
        if isInTransaction { _ = sqlite3_exec(handle, "ROLLBACK TRANSACTION", nil, nil, nil) }
    }
}
