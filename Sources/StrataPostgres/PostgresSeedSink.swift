import CLibPQ
import StrataCore

/// A seed's rows into PostgreSQL with `COPY … FROM STDIN`, inside the step's transaction.
///
/// `insert` into a plain table without INSERT triggers copies straight into the table. Every other case copies
/// into a temporary table (the file's columns with the table's types, plus each row's number and place in the
/// file) and applies it with one `INSERT … SELECT … [ON CONFLICT …]`, and for `sync` one `DELETE` of the rows
/// whose key the file does not have. A value the server refuses during a COPY is named by the COPY's row number,
/// mapped back to the file through the place of every 1,024th row; a refusal while the temporary table is applied
/// is traced to its row by applying ranges of rows under savepoints, halving the range each time.
final class PostgresSeedSink: SeedSink {
    /// Rows between two kept places in the file: the memory for them is 16 bytes a 1,024 rows.
    static let checkpointInterval = 1024

    private let connection: PostgresConnection
    private let target: PostgresSeedTarget
    private let step: SeedStep
    private let names: [String]
    private let width: Int
    private let keyIndexes: [Int]
    private let staged: Bool
    private var copy: PostgresCopyIn?
    /// The temporary table's name and the columns it adds, when staged.
    private let stage = "pg_temp.strata_seed_rows"
    private let numberColumn: String
    private let lineColumn: String
    private let offsetColumn: String
    /// Rows appended so far; row N of the COPY is the Nth.
    private var appended = 0
    /// The line and byte offset of rows 1, 1025, 2049, …
    private var checkpointLines: [Int] = []
    private var checkpointOffsets: [Int] = []

    init(target: PostgresSeedTarget, columns: [ColumnInfo], keyIndexes: [Int]) throws {
        self.target = target
        connection = target.connection
        step = target.step
        names = columns.map(\.name)
        width = columns.count
        self.keyIndexes = keyIndexes
        guard connection.isInTransaction else {
            throw DatabaseError(kind: .misuse, code: nil, message: "a seed loads inside the step's transaction; none is open")
        }
        staged = step.mode != .insert || !target.copiesDirectly
        // The temporary table's own columns take names no column of the file has.
        func unused(_ base: String) -> String {
            var name = base
            while columns.contains(where: { $0.name == name }) { name += "_" }
            return name
        }
        numberColumn = unused("strata_row")
        lineColumn = unused("strata_line")
        offsetColumn = unused("strata_offset")
        let list = names.map(quoteIdentifier).joined(separator: ", ")
        if staged {
            // The file's columns as the table types them (domains, lengths and collations included), so a value
            // is parsed by the same rules as when it reaches the table. Dropped when the transaction ends.
            try connection.executeSimple("DROP TABLE IF EXISTS \(stage)")
            try connection.executeSimple("""
                CREATE TEMPORARY TABLE strata_seed_rows ON COMMIT DROP AS
                SELECT 0::int8 AS \(quoteIdentifier(numberColumn)), 0::int8 AS \(quoteIdentifier(lineColumn)),
                       0::int8 AS \(quoteIdentifier(offsetColumn)), \(list)
                FROM \(target.qualifiedName) WITH NO DATA
                """)
            // Planned once now, not run (the server matches ON CONFLICT's key to a unique index when it plans): a
            // key the table has no unique index for, or a column the INSERT may not write, is refused before any
            // row is read.
            _ = try connection.run("EXPLAIN " + applySQL, try PostgresParameters([.integer(1), .integer(0)], sql: applySQL))
            copy = try PostgresCopyIn(
                connection: connection,
                sql: "COPY \(stage) (\(quoteIdentifier(numberColumn)), \(quoteIdentifier(lineColumn)), \(quoteIdentifier(offsetColumn)), \(list)) FROM STDIN",
                relationName: "strata_seed_rows", columnNames: names)
        } else {
            copy = try PostgresCopyIn(connection: connection, sql: "COPY \(target.qualifiedName) (\(list)) FROM STDIN",
                                      relationName: target.relationName, columnNames: names)
        }
    }

    // MARK: Rows

    func append(_ row: UnsafePointer<ColumnValue>, line: Int, offset: Int) throws {
        guard let copy else { throw DatabaseError(kind: .misuse, code: nil, message: "the seed's COPY has ended") }
        if appended % Self.checkpointInterval == 0 {
            checkpointLines.append(line)
            checkpointOffsets.append(offset)
        }
        appended += 1
        if staged {
            copy.putInteger(Int64(appended))
            copy.endField()
            copy.putInteger(Int64(line))
            copy.endField()
            copy.putInteger(Int64(offset))
            copy.endField()
        }
        for index in 0..<width {
            if index > 0 { copy.endField() }
            switch row[index] {
            case .null:
                copy.putNull()
            case .text(let bytes):
                guard copy.putText(bytes) else {
                    throw SeedError(file: displayPath(step.path), line: line, column: nil,
                                    message: "column '\(names[index])': the value holds a NUL byte, which PostgreSQL text cannot store")
                }
            case .integer(let value):
                copy.putInteger(value)
            case .real(let value):
                copy.putReal(value)
            case .blob(let bytes):
                copy.putBytea(bytes)
            }
        }
        try copy.endRow()
    }

    func finish() throws -> Int {
        guard let copy else { throw DatabaseError(kind: .misuse, code: nil, message: "the seed's COPY has ended") }
        self.copy = nil
        do {
            _ = try copy.finish()
        } catch let refusal as PostgresCopyRefusal {
            throw rejection(refusal)
        }
        guard staged else { return appended }
        if step.mode == .upsert || step.mode == .sync, updatedColumns.isEmpty {
            // With nothing to update, ON CONFLICT does nothing for a repeated key rather than fail; found here.
            try refuseRepeatedKeys(nil)
        }
        let written = try apply()
        if step.mode == .sync {
            try refuseDeletingReferencedRows()
            try deleteRowsNotInFile()
        }
        return step.mode == .ignore ? written : appended
    }

    func close() {
        copy?.abort(reason: "the seed stopped: Strata found an error in the file")
        copy = nil
        // The temporary table goes with the transaction; dropped now when the transaction is still usable.
        if staged && connection.transactionStatus == PQTRANS_INTRANS {
            _ = try? connection.executeSimple("DROP TABLE IF EXISTS \(stage)")
        }
    }

    /// The refusal of row N of the COPY, placed in the file by the checkpoint before it. Errors that are not a
    /// row's (a lock timeout, a lost connection, a cancelled statement) are passed on as they are, even when
    /// the server's context names the row it was reading.
    private func rejection(_ refusal: PostgresCopyRefusal) -> Error {
        guard Self.isRowRefusal(refusal.error), let row = refusal.row, row >= 1, row <= appended else { return refusal.error }
        let index = row - 1
        let checkpoint = index / Self.checkpointInterval
        return SeedRejection(cause: .row, line: checkpointLines[checkpoint], offset: checkpointOffsets[checkpoint],
                             rowsAfter: index % Self.checkpointInterval, column: refusal.column, error: refusal.error)
    }

    /// Errors passed on as they are, not as the sync's: they say what stopped the statement (a lock, a timeout, a
    /// cancel, a deadlock, a lost connection), and the runner decides on their kind (a deadlock's step is retried).
    static let passedOn: Set<DatabaseError.Kind> = [.busy, .lockNotAvailable, .deadlock, .statementTimeout, .interrupted, .cannotOpen]

    /// Errors about the rows themselves: data exceptions, constraint violations, cardinality (a key twice in one
    /// command), a trigger's RAISE, a view's check option.
    static func isRowRefusal(_ error: DatabaseError) -> Bool {
        guard let state = error.code?.value else { return false }
        return ["21", "22", "23", "27", "44", "P0"].contains(String(state.prefix(2)))
    }

    // MARK: Applying the temporary table

    private var keyNames: [String] { keyIndexes.map { names[$0] } }

    /// The file's columns an upsert or sync updates: every column but the key's.
    private var updatedColumns: [String] {
        names.filter { !keyNames.contains($0) }
    }

    /// One INSERT of rows `$1…$2` of the temporary table, in the file's order (so generated keys number them
    /// as the file does). `OVERRIDING SYSTEM VALUE` writes the file's value into an identity column, as COPY does.
    private var applySQL: String {
        let list = names.map(quoteIdentifier).joined(separator: ", ")
        let keys = keyNames.map(quoteIdentifier).joined(separator: ", ")
        var sql = """
            INSERT INTO \(target.qualifiedName) (\(list)) OVERRIDING SYSTEM VALUE
            SELECT \(list) FROM \(stage) WHERE \(quoteIdentifier(numberColumn)) BETWEEN $1::int8 AND $2::int8
            ORDER BY \(quoteIdentifier(numberColumn))
            """
        switch step.mode {
        case .insert, .replace:
            break
        case .ignore:
            sql += keys.isEmpty ? " ON CONFLICT DO NOTHING" : " ON CONFLICT (\(keys)) DO NOTHING"
        case .upsert, .sync:
            let updates = updatedColumns.map { "\(quoteIdentifier($0)) = EXCLUDED.\(quoteIdentifier($0))" }
            sql += " ON CONFLICT (\(keys)) DO " + (updates.isEmpty ? "NOTHING" : "UPDATE SET " + updates.joined(separator: ", "))
        }
        return sql
    }

    private func runApply(_ first: Int, _ last: Int) throws -> Int {
        try connection.run(applySQL, try PostgresParameters([.integer(Int64(first)), .integer(Int64(last))], sql: applySQL)).changes
    }

    /// Applies every row; when the server refuses, finds the row: the first one whose range fails.
    private func apply() throws -> Int {
        guard appended > 0 else { return 0 }
        try connection.executeSimple("SAVEPOINT strata_seed_apply")
        do {
            let written = try runApply(1, appended)
            try connection.executeSimple("RELEASE SAVEPOINT strata_seed_apply")
            return written
        } catch let error as DatabaseError where Self.isRowRefusal(error) {
            try connection.executeSimple("ROLLBACK TO SAVEPOINT strata_seed_apply")
            if error.code?.value == "21000" {
                // "ON CONFLICT DO UPDATE command cannot affect row a second time": a key the file repeats.
                try refuseRepeatedKeys(error)
            }
            throw try locate(error)
        }
    }

    /// Rows 1…good applied (each range kept once it succeeds), rows good+1…bad known to hold a refused row: the
    /// range is halved until it is one row, then that row is applied alone for its own error. Each row is
    /// applied about twice in all, whatever the file's size.
    private func locate(_ original: DatabaseError) throws -> Error {
        var good = 0
        var bad = appended
        var lastError = original
        while bad - good > 1 {
            let middle = good + (bad - good) / 2
            if let error = try probe(good + 1, middle) {
                bad = middle
                lastError = error
            } else {
                good = middle
            }
        }
        let error = try probe(bad, bad) ?? lastError
        let place = try connection.rows("""
            SELECT \(quoteIdentifier(lineColumn)), \(quoteIdentifier(offsetColumn)) FROM \(stage)
            WHERE \(quoteIdentifier(numberColumn)) = $1
            """, [Int64(bad)])
        guard let row = place.first else { return error }
        return SeedRejection(cause: .row, line: try row.get(0), offset: try row.get(1), error: error)
    }

    /// Applies rows first…last in a savepoint: kept when they go in, undone and the error returned when refused.
    private func probe(_ first: Int, _ last: Int) throws -> DatabaseError? {
        try connection.executeSimple("SAVEPOINT strata_seed_probe")
        do {
            _ = try runApply(first, last)
            try connection.executeSimple("RELEASE SAVEPOINT strata_seed_probe")
            return nil
        } catch let error as DatabaseError where Self.isRowRefusal(error) {
            try connection.executeSimple("ROLLBACK TO SAVEPOINT strata_seed_probe; RELEASE SAVEPOINT strata_seed_probe")
            return error
        }
    }

    /// A key twice in the file would have the later row overwrite the earlier without a word: refused, naming
    /// both lines. Keys compare as the key columns' types and collations do (the temporary table's are the
    /// table's). `cause` is the server's error that revealed it, passed on when no repeated key is found.
    private func refuseRepeatedKeys(_ cause: DatabaseError?) throws {
        let keys = keyNames.map(quoteIdentifier).joined(separator: ", ")
        let number = quoteIdentifier(numberColumn), line = quoteIdentifier(lineColumn), offset = quoteIdentifier(offsetColumn)
        let rows = try connection.rows("""
            SELECT later.\(line), later.\(offset), first.\(line) FROM (
                SELECT \(number), \(line), \(offset), min(\(number)) OVER (PARTITION BY \(keys)) AS first_number FROM \(stage)
            ) AS later JOIN \(stage) AS first ON first.\(number) = later.first_number
            WHERE later.\(number) <> later.first_number ORDER BY later.\(number) LIMIT 1
            """, .none)
        guard let row = rows.first else {
            if let cause { throw cause }
            return
        }
        throw SeedRejection(cause: .duplicateKey(firstLine: try row.get(2), columns: keyNames), line: try row.get(0), offset: try row.get(1),
                            error: DatabaseError(kind: .constraint, code: nil, message: "a key repeated in the file"))
    }

    // MARK: sync

    /// `NOT EXISTS (…)` with `=`: the file's keys are never NULL (the seeder refuses a NULL key), so a table row
    /// whose key holds NULL matches no file row and is deleted as not in the file, which `NOT IN` would get wrong
    /// (one NULL makes it unknown for every row); and `=` lets the server hash the file's keys, which
    /// `IS NOT DISTINCT FROM` would not.
    private func inFile(_ alias: String) -> String {
        "EXISTS (SELECT 1 FROM \(stage) AS s WHERE "
            + keyNames.map { "\(alias).\(quoteIdentifier($0)) = s.\(quoteIdentifier($0))" }.joined(separator: " AND ") + ")"
    }

    private func deleteRowsNotInFile() throws {
        do {
            try connection.executeSimple("DELETE FROM \(target.qualifiedName) AS t WHERE NOT \(inFile("t"))")
        } catch let error as DatabaseError where !Self.passedOn.contains(error.kind) {
            throw SeedError(file: displayPath(step.path), line: nil, column: nil,
                            message: "sync could not delete rows missing from the file: \(error.message)")
        }
    }

    /// A sync deletes the rows missing from the file; where rows of another table reference one of them through a
    /// foreign key, the delete would cascade into, null out or fail on those rows. Refused, naming the rows, as on
    /// SQLite. Rows referenced only by rows this sync deletes too (a tree in one table) are deleted.
    private func refuseDeletingReferencedRows() throws {
        let references = try connection.rows("""
            SELECT con.oid::int8 AS id, cl.relname::text AS child, format('%I.%I', ns.nspname, cl.relname) AS child_sql,
                   con.conrelid = con.confrelid AS self, ca.attname::text AS from_column, pa.attname::text AS to_column
            FROM pg_catalog.pg_constraint con
            JOIN pg_catalog.pg_class cl ON cl.oid = con.conrelid
            JOIN pg_catalog.pg_namespace ns ON ns.oid = cl.relnamespace
            CROSS JOIN LATERAL unnest(con.conkey, con.confkey) WITH ORDINALITY AS k(child_attnum, parent_attnum, position)
            JOIN pg_catalog.pg_attribute ca ON ca.attrelid = con.conrelid AND ca.attnum = k.child_attnum
            JOIN pg_catalog.pg_attribute pa ON pa.attrelid = con.confrelid AND pa.attnum = k.parent_attnum
            WHERE con.contype = 'f' AND con.confrelid = $1::int8::oid AND con.conparentid = 0
            ORDER BY cl.relname, con.oid, k.position
            """, [target.oid])
        var groups: [(id: Int64, child: String, sql: String, isSelf: Bool, from: [String], to: [String])] = []
        for row in references {
            let id: Int64 = try row.get("id")
            if groups.last?.id != id {
                groups.append((id, try row.get("child"), try row.get("child_sql"), try row.get("self"), [], []))
            }
            groups[groups.count - 1].from.append(try row.get("from_column"))
            groups[groups.count - 1].to.append(try row.get("to_column"))
        }
        let keys = keyNames.map { "p.\(quoteIdentifier($0))" }.joined(separator: ", ")
        var found: [String] = []
        for group in groups {
            let join = zip(group.from, group.to).map { "c.\(quoteIdentifier($0)) = p.\(quoteIdentifier($1))" }
                .joined(separator: " AND ")
            let kept = group.isSelf ? " AND " + inFile("c") : ""
            let rows = try connection.rows("""
                SELECT \(keys), count(*) FROM \(target.qualifiedName) AS p JOIN \(group.sql) AS c ON \(join)
                WHERE NOT \(inFile("p"))\(kept) GROUP BY \(keys) ORDER BY \(keys) LIMIT 5
                """, .none)
            for row in rows {
                let key = keyNames.enumerated().map { "\($1) = \(row[$0])" }.joined(separator: ", ")
                let count = row[keyNames.count]
                found.append("\(key) (\(count) row\(count == .integer(1) ? "" : "s") in \(group.child).\(group.from.joined(separator: ", ")))")
            }
        }
        guard found.isEmpty else {
            throw SeedError(file: displayPath(step.path), line: nil, column: nil,
                            message: "sync would delete rows of '\(step.table)' that other rows reference: "
                                + found.joined(separator: "; ") + "; keep them in the file, or delete or move the referencing rows first")
        }
    }
}
