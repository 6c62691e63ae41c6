import CSQLite
import StrataCore

extension Database {
    /// One statement that ran, as the trace hook sees it.
    public struct TraceEvent: Sendable, Equatable {
        /// The statement's SQL with its bound values written in (`sqlite3_expanded_sql`): `'it''s'` for a text,
        /// `x'00ff'` for a blob. The statement as written when SQLite cannot expand it (longer than its limit).
        public let sql: String
        /// How long the statement ran, from its first step to its end or reset, as SQLite measures it.
        public let duration: Duration
    }

    /// Calls `body` after each statement on this connection finishes (or is reset before its end): the ones the
    /// program runs, the statements of scripts and migrations, and Strata's own `BEGIN`/`COMMIT`. Pass nil to
    /// remove it; a new hook replaces the previous one. Like GRDB's `trace(options: .profile)`.
    ///
    /// ```swift
    /// db.trace { event in print(event.duration, event.sql) }   // 0.000012 s INSERT INTO t VALUES (1,'a')
    /// ```
    /// The hook runs on the thread using the connection, in the middle of SQLite's work: it must not use the
    /// connection itself. It is dropped when the connection closes (a statement still held afterwards runs
    /// untraced), so it never outlives the `Database`. On a closed connection this does nothing.
    public func trace(_ body: ((TraceEvent) -> Void)?) {
        guard !isClosed else { return }
        guard let body else {
            removeTrace()
            return
        }
        let box = TraceBox(body)
        // The connection holds the box unretained; `traceBox` keeps it alive until it is replaced, removed, or the
        // connection closes, each of which unregisters it from SQLite first.
        sqlite3_trace_v2(handle, UInt32(SQLITE_TRACE_PROFILE), { kind, context, statement, nanoseconds in
            guard kind == UInt32(SQLITE_TRACE_PROFILE), let context, let statement else { return 0 }
            let box = Unmanaged<TraceBox>.fromOpaque(context).takeUnretainedValue()
            let handle = OpaquePointer(statement)
            let elapsed = nanoseconds?.assumingMemoryBound(to: Int64.self).pointee ?? 0
            box.body(TraceEvent(sql: expandedSQL(handle), duration: .nanoseconds(elapsed)))
            return 0
        }, Unmanaged.passUnretained(box).toOpaque())
        traceBox = box
    }

    /// Unregisters the hook from SQLite before the box it points to is released.
    func removeTrace() {
        sqlite3_trace_v2(handle, 0, nil, nil)
        traceBox = nil
    }
}

/// The SQL of a statement with its bound values written in, or as written when SQLite cannot expand it.
private func expandedSQL(_ statement: OpaquePointer) -> String {
    if let expanded = sqlite3_expanded_sql(statement) {
        defer { sqlite3_free(expanded) }
        return String(cString: expanded)
    }
    return sqlite3_sql(statement).map { String(cString: $0) } ?? ""
}

/// Keeps the trace closure alive while SQLite holds a pointer to it.
final class TraceBox {
    let body: (Database.TraceEvent) -> Void

    init(_ body: @escaping (Database.TraceEvent) -> Void) {
        self.body = body
    }
}
