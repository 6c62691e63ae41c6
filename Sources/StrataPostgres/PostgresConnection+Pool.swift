import CLibPQ
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import StrataCore

/// What `PostgresPool` asks of a connection before lending it again.
extension PostgresConnection {
    /// Whether the session can be lent to the next caller: connected, and outside any transaction. One a body
    /// left inside a transaction (`writeWithoutTransaction`) is rolled back first.
    func settleForReuse() -> Bool {
        guard PQstatus(handle) == CONNECTION_OK else { return false }
        if transactionStatus == PQTRANS_INTRANS || transactionStatus == PQTRANS_INERROR {
            try? executeSimple("ROLLBACK")
        }
        return PQstatus(handle) == CONNECTION_OK && transactionStatus == PQTRANS_IDLE
    }

    /// Whether an idle session is still worth lending. libpq learns that the server went away (a restart, a
    /// terminated backend) only when it next reads, so the socket is asked: an idle session has nothing to say
    /// unless the server ended it (its last message and end of file) or sent something no caller asked for, and
    /// either way a fresh connection is the safe choice.
    var isIdleAndConnected: Bool {
        guard PQstatus(handle) == CONNECTION_OK, transactionStatus == PQTRANS_IDLE else { return false }
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, 0) == 0
    }

    /// Runs the body of a call that opened a transaction with the transaction guarded: the statement that ends it
    /// stops the body (`confirmTransactionKept`), and none runs after it (`confirmTransactionOpen`). A body inside
    /// another's (a savepoint's in a pool's write) keeps the outer owner, whose transaction it is.
    func owningTransaction<T>(_ owner: String, _ body: () throws -> T) throws -> T {
        let previous = transactionOwner
        transactionOwner = previous ?? owner
        defer { transactionOwner = previous }
        return try body()
    }

    /// `statement_timeout` as a SQL literal ("250ms"), between 1 ms and the server's limit (`INT_MAX` ms).
    static func timeoutLiteral(_ duration: Duration) -> String {
        let components = duration.components
        let limit: Int64 = 2_147_483_647
        let milliseconds = components.seconds < 0 ? 1 : components.seconds >= limit / 1000 ? limit
            : components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
        return "'\(min(max(milliseconds, 1), limit))ms'"
    }
}
