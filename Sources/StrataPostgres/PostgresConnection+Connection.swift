import CLibPQ
import StrataCore

/// The backend-neutral connection on PostgreSQL: statements, transactions, and the catalog read from
/// `pg_catalog` for tables `search_path` finds.
extension PostgresConnection: DatabaseConnection {
    /// PostgreSQL's dialect.
    public var dialect: any SQLDialect { PostgresDialect() }

    /// A statement on this connection, prepared when it first runs.
    public func compile(_ sql: String) throws -> any PreparedStatement {
        PostgresStatement(connection: self, sql: sql)
    }

    /// A statement on this connection for reading.
    public func compileForReading(_ sql: String) throws -> any PreparedStatement {
        PostgresStatement(connection: self, sql: sql)
    }

    /// Runs one statement with its arguments.
    public func execute(_ sql: String, _ arguments: StatementArguments) throws {
        let statement = PostgresStatement(connection: self, sql: sql)
        try statement.bind(arguments)
        try statement.run()
    }

    /// Every row one statement returns.
    public func rows(_ sql: String, _ arguments: StatementArguments) throws -> [Row] {
        let statement = PostgresStatement(connection: self, sql: sql)
        try statement.bind(arguments)
        return try statement.remainingRows()
    }

    /// A lost connection is in none: the server rolled back whatever was open when it went.
    public var isInTransaction: Bool { transactionStatus == PQTRANS_INTRANS || transactionStatus == PQTRANS_INERROR }

    /// PostgreSQL has no rowid: keys a table generates are read with `RETURNING`.
    public var lastInsertRowID: Int64 { 0 }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws. A statement in the body
    /// that ends the transaction itself (`COMMIT`, `ROLLBACK`) stops the body there: it fails saying what became of
    /// what ran before, no statement runs after it, and the call fails.
    public func withTransaction<T>(_ body: () throws -> T) throws -> T {
        try withTransaction(beginning: "BEGIN", owner: "withTransaction", body)
    }

    /// `withTransaction` opened by `begin`: `BEGIN` with its modes, and any `SET LOCAL` after it, sent as one
    /// round trip. `owner` names the call in the error when the body ends the transaction.
    func withTransaction<T>(beginning begin: String, owner: String, _ body: () throws -> T) throws -> T {
        guard !isInTransaction else {
            throw DatabaseError(kind: .misuse, code: nil, message: "a transaction is already open; use withSavepoint to nest")
        }
        try self.begin(begin)
        // A step's `SET LOCAL statement_timeout` ends with its transaction, committed or not.
        defer { forgetStatementTimeout(transactionEnded: true) }
        let value: T
        do {
            value = try owningTransaction(owner, body)
        } catch {
            rollBack()
            throw error
        }
        try commit()
        return value
    }

    /// Sends `begin` (`BEGIN` with its modes and any `SET LOCAL`); through a connection pooler followed by Strata's
    /// settings as `SET LOCAL`, in the same round trip, so the transaction sees them and they end with it (a direct
    /// connection has them for its session: `sessionSettings`).
    func begin(_ begin: String) throws {
        guard reachesServerThroughPooler else { return try executeSimple(begin) }
        try executeSimple(begin + "; " + localSettings)
        prepared.forgetAll()
        floatTextIsExact = true
    }

    /// Rolls back the open transaction, deallocating the statements prepared in it in the same round trip (a prepared
    /// statement outlives a rollback, and a pooler may hand the server session to another client next).
    func rollBack() {
        guard reachesServerThroughPooler else {
            _ = try? executeSimple("ROLLBACK")
            return
        }
        let deallocation = prepared.deallocationOfTransaction()
        prepared.forgetAll()
        _ = try? executeSimple(deallocation.isEmpty ? "ROLLBACK" : "ROLLBACK; " + deallocation)
    }

    /// Through a connection pooler, runs one statement Strata sends outside any transaction in a transaction of its
    /// own that starts with Strata's settings (`begin`): outside one they would have to be set for the session, where
    /// the pooler's next client would find them.
    func inSettingsTransaction<T>(_ body: () throws -> T) throws -> T {
        try begin("BEGIN")
        let value: T
        do {
            value = try body()
        } catch {
            rollBack()
            throw error
        }
        try commit()
        return value
    }

    /// Commits, refusing to report success for a transaction PostgreSQL has already failed: `COMMIT` of a failed
    /// transaction block rolls it back and succeeds, which would turn an error a caller swallowed into lost work.
    func commit() throws {
        if transactionStatus == PQTRANS_IDLE {
            // `COMMIT` outside a transaction only warns: the call would report work the body's own ROLLBACK undid.
            throw DatabaseError(kind: .misuse, code: nil,
                                message: "the body ended the transaction itself (its own COMMIT or ROLLBACK) and returned: nothing was committed when it returned, and no statement of it ran after that one",
                                sql: "COMMIT TRANSACTION")
        }
        if transactionStatus == PQTRANS_INERROR {
            rollBack()
            throw DatabaseError(kind: .misuse, code: nil,
                                message: "a statement failed inside the transaction, so PostgreSQL rolled all of it back; nothing was committed",
                                sql: "COMMIT TRANSACTION")
        }
        // The statements prepared in the transaction go with it, in the same round trip as the COMMIT: a pooler may
        // hand the server session to another client next, and this one's next transaction another session.
        let deallocation = reachesServerThroughPooler ? prepared.deallocationOfTransaction() : ""
        if reachesServerThroughPooler { prepared.forgetAll() }
        let result = PostgresResult(PQexec(handle, deallocation.isEmpty ? "COMMIT" : deallocation + "; COMMIT"))
        // A failed DEALLOCATE stops the text before its COMMIT: the transaction is then failed, and is rolled back.
        if PQstatus(handle) == CONNECTION_OK && transactionStatus != PQTRANS_IDLE { _ = PostgresResult(PQexec(handle, "ROLLBACK")) }
        do {
            try check(result, sql: "COMMIT TRANSACTION")
        } catch let error as DatabaseError where PQstatus(handle) == CONNECTION_BAD {
            throw DatabaseError(kind: .cannotOpen, code: error.code,
                                message: "the connection was lost while COMMIT was on its way (\(error.message)); whether the server committed the transaction is unknown",
                                sql: "COMMIT TRANSACTION")
        }
        if let tag = PQcmdStatus(result.handle), String(cString: tag) != "COMMIT" {
            throw DatabaseError(kind: .other, code: nil,
                                message: "PostgreSQL answered \(String(cString: tag)) to COMMIT: the transaction was not committed",
                                sql: "COMMIT TRANSACTION")
        }
    }

    /// Runs `body` inside a savepoint (a transaction when none is open): released when it returns, rolled back to
    /// when it throws. A statement in the body that ends the transaction around it is stopped as in
    /// `withTransaction`.
    public func withSavepoint<T>(_ body: () throws -> T) throws -> T {
        guard isInTransaction else { return try withTransaction(body) }
        savepointDepth += 1
        defer { savepointDepth -= 1 }
        // Named apart from any savepoint a body opens itself, which `ROLLBACK TO` would otherwise find first.
        let name = "strata_savepoint_\(savepointPrefix)_\(savepointDepth)"
        try executeSimple("SAVEPOINT \(name)")
        do {
            let value = try owningTransaction("withSavepoint", body)
            try executeSimple("RELEASE SAVEPOINT \(name)")
            return value
        } catch {
            try? executeSimple("ROLLBACK TO SAVEPOINT \(name); RELEASE SAVEPOINT \(name)")
            throw error
        }
    }

    // MARK: Catalog

    /// The table or view `name` (exactly as written, not folded) that `search_path` finds, as a `regclass` argument.
    private func relation(_ name: String) -> StatementArguments {
        [quoteIdentifier(name)]
    }

    /// Whether `search_path` finds a table named `name`.
    public func tableExists(_ name: String) throws -> Bool {
        try scalar("SELECT to_regclass($1) IS NOT NULL", relation(name), as: Bool.self) ?? false
    }

    /// The visible table or view whose name matches `name` exactly, else case-insensitively (unquoted names fold
    /// to lower case in SQL, so `Books` in a manifest finds `books`). A name that matches several only by letter
    /// case (`ITEMS` with `items` and `"Items"`) is refused rather than guessed.
    public func declaredTableName(_ name: String) throws -> String? {
        let matches = try rows("""
            SELECT c.relname FROM pg_catalog.pg_class c
            WHERE c.relkind IN ('r', 'v', 'm', 'p', 'f') AND pg_catalog.pg_table_is_visible(c.oid)
              AND lower(c.relname) = lower($1)
            ORDER BY c.relname
            """, [name]).map { try $0.get(0, as: String.self) }
        if matches.contains(name) { return name }
        guard matches.count > 1 else { return matches.first }
        throw DatabaseError(kind: .misuse, code: nil,
                            message: "table name \(name.debugDescription) matches the tables \(matches.map(\.debugDescription).joined(separator: " and ")) only by letter case; write the name exactly as the table's")
    }

    /// The columns of `table`, from `pg_catalog`, in declaration order.
    public func columns(in table: String) throws -> [ColumnInfo] {
        let dialect = PostgresDialect()
        return try rows("""
            SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod) AS type,
                   CASE WHEN t.typtype = 'd' THEN pg_catalog.format_type(t.typbasetype, t.typtypmod) END AS base_type,
                   a.attnotnull OR (t.typtype = 'd' AND t.typnotnull) AS attnotnull,
                   pg_catalog.pg_get_expr(d.adbin, d.adrelid) AS default_sql,
                   (a.attidentity <> '' OR COALESCE(pg_catalog.pg_get_expr(d.adbin, d.adrelid) LIKE 'nextval(%', false)) AS generated,
                   COALESCE((SELECT k.position FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, position)
                             WHERE k.attnum = a.attnum), 0)::int8 AS key_position
            FROM pg_catalog.pg_attribute a
            JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
            LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
            LEFT JOIN pg_catalog.pg_index i ON i.indrelid = a.attrelid AND i.indisprimary
            WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped
            ORDER BY a.attnum
            """, relation(table)).map { row in
                let type: String = try row.get("type")
                return ColumnInfo(name: try row.get("attname"), declaredType: type,
                                  affinity: dialect.affinity(ofDeclaredType: type),
                                  isNotNull: try row.get("attnotnull"), defaultSQL: try row.get("default_sql"),
                                  primaryKeyPosition: try row.get("key_position"), isGenerated: try row.get("generated"),
                                  storageType: try row.get("base_type"))
            }
    }

    /// The primary key first, then each unique index over plain columns without a predicate, in creation order.
    public func uniqueKeys(in table: String) throws -> [[String]] {
        var keys: [(index: Int64, columns: [String])] = []
        for row in try rows("""
            SELECT i.indexrelid::int8 AS index, a.attname
            FROM pg_catalog.pg_index i
            CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, position)
            JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
            WHERE i.indrelid = to_regclass($1) AND i.indisunique AND i.indpred IS NULL AND i.indexprs IS NULL
              AND k.position <= i.indnkeyatts
            ORDER BY i.indisprimary DESC, i.indexrelid, k.position
            """, relation(table)) {
            let index: Int64 = try row.get("index")
            let column: String = try row.get("attname")
            if keys.last?.index == index {
                keys[keys.count - 1].columns.append(column)
            } else {
                keys.append((index, [column]))
            }
        }
        return keys.map(\.columns)
    }

    /// Whether `column` of `table` is part of a foreign key or an index, from `pg_catalog`.
    public func links(of column: String, in table: String) throws -> ColumnLinks {
        let foreignKey = try scalar("""
            SELECT count(*) FROM pg_catalog.pg_constraint c
            JOIN pg_catalog.pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
            WHERE c.conrelid = to_regclass($1) AND c.contype = 'f' AND a.attname = $2
            """, [quoteIdentifier(table), column], as: Int.self) ?? 0
        let indexed = try scalar("""
            SELECT count(*) FROM pg_catalog.pg_index i
            JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
            WHERE i.indrelid = to_regclass($1) AND a.attname = $2
            """, [quoteIdentifier(table), column], as: Int.self) ?? 0
        // A nondeterministic collation (an ICU one that ignores case) or citext makes `=` hold for other bytes.
        let exact = try scalar("""
            WITH RECURSIVE base(oid, typname, typbasetype) AS (
                SELECT t.oid, t.typname, t.typbasetype FROM pg_catalog.pg_type t
                JOIN pg_catalog.pg_attribute a ON a.atttypid = t.oid
                WHERE a.attrelid = to_regclass($1) AND a.attname = $2
                UNION ALL
                SELECT t.oid, t.typname, t.typbasetype FROM pg_catalog.pg_type t JOIN base b ON t.oid = b.typbasetype
            )
            SELECT coalesce(c.collisdeterministic, true) AND NOT EXISTS (SELECT 1 FROM base WHERE typname = 'citext')
            FROM pg_catalog.pg_attribute a
            LEFT JOIN pg_catalog.pg_collation c ON c.oid = a.attcollation
            WHERE a.attrelid = to_regclass($1) AND a.attname = $2
            """, [quoteIdentifier(table), column], as: Bool.self) ?? true
        return ColumnLinks(hasForeignKey: foreignKey > 0, isIndexed: indexed > 0, comparesExactly: exact)
    }

    /// PostgreSQL constraints name no conflict resolution of their own.
    public func declaresConflictClause(_ table: String) throws -> Bool { false }
}
