import CSQLite
import StrataCore

extension Database {
    /// Stops the statement running on this connection (`sqlite3_interrupt`, FMDB's `interrupt`): it fails with a
    /// `DatabaseError` of kind `.interrupted`, and what it had changed is undone. A write interrupted inside a
    /// `transaction { }` or `savepoint { }` makes SQLite roll the whole transaction back; the scope then fails
    /// ("SQLite rolled the transaction back after: interrupted") and nothing the body runs afterwards is committed.
    /// An interrupted read leaves the transaction as it was. With no statement running this does nothing, and
    /// statements started later run normally.
    ///
    /// A `Database` is used by one thread at a time; from another thread, call `interruptHandle.interrupt()` (the
    /// handle is `Sendable`) or `DatabaseQueue.interrupt()`.
    public func interrupt() {
        interruptHandle.interrupt()
    }
}

/// Interrupts one connection's running statement from any thread. It holds the connection only while it is open:
/// after `Database.close()` (or the `Database` is released) `interrupt()` does nothing, so a handle kept longer
/// than its connection is harmless.
public final class InterruptHandle: Sendable {
    private let lock = Lock()
    // Read and cleared only under `lock`, so `close()` cannot free the connection while an interrupt uses it.
    private nonisolated(unsafe) var connection: OpaquePointer?

    init(connection: OpaquePointer) {
        self.connection = connection
    }

    /// Stops the statement the connection is running, if any.
    public func interrupt() {
        lock.withLock {
            if let connection { sqlite3_interrupt(connection) }
        }
    }

    /// False once the connection has closed.
    var isOpen: Bool { lock.withLock { connection != nil } }

    /// Called as the connection closes: later interrupts do nothing.
    func invalidate() {
        lock.withLock { connection = nil }
    }
}
