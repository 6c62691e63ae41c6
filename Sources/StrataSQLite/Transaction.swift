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

/// What a statement does to transactions, as SQLite's authorizer reports it when the statement is compiled
/// (`ConnectionAuthorizer`): `END` arrives as `COMMIT`, and savepoint names come unquoted.
enum TransactionControl: Equatable {
    case begin, commit, rollback
    case savepoint(String), release(String), rollbackTo(String)
    /// An operation this SQLite names that Strata does not know: treated as one that ends the transaction.
    case other(String)

    init?(action: Int32, operation: String?, name: String?) {
        let operation = operation ?? ""
        switch action {
        case SQLITE_TRANSACTION:
            switch operation {
            case "BEGIN": self = .begin
            case "COMMIT": self = .commit
            case "ROLLBACK": self = .rollback
            default: self = .other(operation)
            }
        case SQLITE_SAVEPOINT:
            let name = name ?? ""
            switch operation {
            case "BEGIN": self = .savepoint(name)
            case "RELEASE": self = .release(name)
            case "ROLLBACK": self = .rollbackTo(name)
            default: self = .other("\(operation) \(name)")
            }
        default:
            return nil
        }
    }
}

/// The `transaction`/`savepoint` scopes open on one connection, what their bodies may do to them, and whether
/// SQLite ended their transaction.
///
/// A body that ended the transaction Strata opened for it (its own `COMMIT` or `ROLLBACK`, or `RELEASE` of
/// Strata's savepoint) would run each later statement in autocommit mode, committed at once, and a throw would
/// then undo nothing. So while a scope is open, a statement that would end it is refused before it runs
/// (`refusal(_:)`); savepoints the body opens itself inside the scope stay its own to release or roll back to.
///
/// After `SQLITE_FULL`, `SQLITE_IOERR`, `SQLITE_NOMEM`, an interrupt or some `SQLITE_BUSY` errors SQLite may roll
/// the whole transaction back by itself, with the same effect. So the failing statement opens a stand-in
/// transaction that is never committed, and the scope fails when it ends.
final class TransactionState {
    /// One open `transaction` or `savepoint` call.
    struct Scope {
        /// The savepoint Strata opened for a `savepoint` call; nil for `transaction`.
        let savepoint: String?
        /// Savepoints the body opened itself inside this scope and has not ended yet, oldest first.
        var bodySavepoints: [String] = []
    }

    /// Open `transaction`/`savepoint` calls, outermost first.
    private(set) var scopes: [Scope] = []
    /// The error after which SQLite rolled the scopes' transaction back.
    var lostTo: DatabaseError?
    /// True while Strata runs a scope's own BEGIN, COMMIT, ROLLBACK, SAVEPOINT or RELEASE.
    private var runningOwn = false

    var depth: Int { scopes.count }

    func enter(savepoint: String?) { scopes.append(Scope(savepoint: savepoint)) }

    func leave() {
        scopes.removeLast()
        if scopes.isEmpty { lostTo = nil }
    }

    /// Runs one of Strata's own transaction statements for a scope, which the checks below let through.
    func own<T>(_ body: () throws -> T) rethrows -> T {
        runningOwn = true
        defer { runningOwn = false }
        return try body()
    }

    /// Why `control` may not run now, or nil. Inside a scope the body may begin and end savepoints of its own, but
    /// not end the transaction, Strata's savepoint, or a savepoint opened outside the scope (which would end
    /// Strata's with it); nor take the name of a savepoint Strata has open, as Strata's `RELEASE` would then find
    /// the body's. `BEGIN` is left to SQLite, which refuses it inside a transaction.
    func refusal(_ control: TransactionControl) -> String? {
        guard let scope = scopes.last, !runningOwn else { return nil }
        let returnOrThrow = "Strata commits it when the body returns and rolls it back when the body throws, so return or throw instead; the statement did not run and the transaction is as it was"
        switch control {
        case .begin:
            return nil
        case .commit, .rollback, .other:
            let verb = control == .rollback ? "ROLLBACK" : control == .commit ? "COMMIT" : "this statement"
            return "\(verb) may not end the transaction Strata opened around this body (transaction { }, savepoint { }, a pool's read or write): \(returnOrThrow)"
        case .savepoint(let name):
            guard scopes.contains(where: { $0.savepoint.map { sqliteNamesEqual($0, name) } ?? false }) else { return nil }
            return "SAVEPOINT \(name) takes the name of the savepoint Strata has open around this body, so Strata's own RELEASE or ROLLBACK TO would end the body's savepoint instead of its own; use another name (the statement did not run)"
        case .release(let name), .rollbackTo(let name):
            guard !scope.bodySavepoints.contains(where: { sqliteNamesEqual($0, name) }) else { return nil }
            let statement = control == .release(name) ? "RELEASE \(name)" : "ROLLBACK TO \(name)"
            return "\(statement) names a savepoint this body did not open (Strata's own around it, or one opened outside it), so it would end or undo the savepoint or transaction Strata opened around the body: release or roll back to only savepoints the body opened itself; \(returnOrThrow)"
        }
    }

    /// Notes a transaction statement of the body's that ran, to know which savepoints are its own.
    func ran(_ control: TransactionControl) {
        guard !scopes.isEmpty, !runningOwn else { return }
        let last = scopes.count - 1
        switch control {
        case .savepoint(let name):
            scopes[last].bodySavepoints.append(name)
        case .release(let name), .rollbackTo(let name):
            // SQLite ends the most recent savepoint of that name and every one opened after it; ROLLBACK TO keeps
            // the named one open.
            guard let index = scopes[last].bodySavepoints.lastIndex(where: { sqliteNamesEqual($0, name) }) else { return }
            let keep = control == .release(name) ? index : index + 1
            scopes[last].bodySavepoints.removeSubrange(keep...)
        case .begin, .commit, .rollback, .other:
            return
        }
    }

    /// Called after a statement failed: notes whether SQLite ended the transaction with it.
    func check(_ failure: DatabaseError, connection: OpaquePointer) {
        guard depth > 0, lostTo == nil, sqlite3_get_autocommit(connection) != 0 else { return }
        lostTo = failure
        // Strata's own statement: the rules a body runs under (a migration's, which refuse transaction control) must
        // let it through. Should it fail anyway, every later statement of the scope is refused (`checkControl`).
        authorizer?.suspended = true
        sqlite3_exec(connection, "BEGIN DEFERRED TRANSACTION", nil, nil, nil)
        authorizer?.suspended = false
    }

    /// The connection's authorizer, suspended for the stand-in transaction above.
    weak var authorizer: ConnectionAuthorizer?

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
    /// Calling it inside another transaction is an error; use `savepoint(_:)` to nest. The body may not end the
    /// transaction itself: a `COMMIT`, `END` or `ROLLBACK` it runs is refused before it runs (`.misuse`), so return
    /// or throw instead. If SQLite rolls the transaction back by itself (disk full, I/O error, out of memory,
    /// interrupt) and the body goes on, nothing after that point is committed either: the call throws, naming the
    /// error that ended the transaction.
    @discardableResult
    public func transaction<T>(_ kind: TransactionKind = .deferred, _ body: (Database) throws -> T) throws -> T {
        guard !isInTransaction else {
            throw DatabaseError.misuse("already in a transaction; use savepoint(_:) to nest one")
        }
        try transactionState.own { try execute("BEGIN \(kind.rawValue) TRANSACTION", .none) }
        transactionState.enter(savepoint: nil)
        defer { transactionState.leave() }
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
            try transactionState.own { try execute("COMMIT TRANSACTION") }
        } catch {
            rollbackIgnoringErrors()
            throw error
        }
        return result
    }

    /// Runs `body` inside a savepoint: released when it returns, rolled back to (and released) when it throws.
    /// Savepoints nest, inside or outside a transaction. The body may open, release and roll back to savepoints of
    /// its own; a statement that would end Strata's savepoint or the transaction around it (`RELEASE` or
    /// `ROLLBACK TO` of a savepoint the body did not open, `COMMIT`, `ROLLBACK`) is refused before it runs.
    @discardableResult
    public func savepoint<T>(_ body: (Database) throws -> T) throws -> T {
        savepointDepth += 1
        defer { savepointDepth -= 1 }
        let name = "strata_savepoint_\(savepointDepth)"
        try transactionState.own { try execute("SAVEPOINT \(name)", .none) }
        transactionState.enter(savepoint: name)
        defer { transactionState.leave() }
        let result: T
        do {
            result = try body(self)
        } catch {
            if transactionState.lostTo != nil {
                // The savepoint went with the transaction; the outermost scope undoes the stand-in one.
                if transactionState.depth == 1 { rollbackIgnoringErrors() }
            } else if isInTransaction {
                transactionState.own {
                    try? execute("ROLLBACK TRANSACTION TO SAVEPOINT \(name)", .none)
                    try? execute("RELEASE SAVEPOINT \(name)", .none)
                }
            }
            throw error
        }
        if let lost = transactionState.lostError {
            if transactionState.depth == 1 { rollbackIgnoringErrors() }
            throw lost
        }
        try transactionState.own { try execute("RELEASE SAVEPOINT \(name)", .none) }
        return result
    }

    /// The error after which SQLite rolled back the transaction of the open `transaction`/`savepoint` scope.
    var transactionLost: DatabaseError? { transactionState.lostTo }

    private func rollbackIgnoringErrors() {
        // SQLite may already have rolled back (e.g. after SQLITE_FULL); then there is nothing to undo.
        if isInTransaction { _ = sqlite3_exec(handle, "ROLLBACK TRANSACTION", nil, nil, nil) }
    }
}
