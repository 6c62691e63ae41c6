import StrataCore

/// A seed's table on SQLite: its columns, and the sink its rows go through.
final class SQLiteSeedTarget: SeedTarget {
    let database: Database
    let step: SeedStep
    let columns: [ColumnInfo]

    init(database: Database, step: SeedStep) throws {
        self.database = database
        self.step = step
        columns = try database.columns(in: step.table)
    }

    var databaseName: String { "SQLite" }

    func sink(columns: [ColumnInfo], keyIndexes: [Int]) throws -> any SeedSink {
        try SQLiteSeedSink(database: database, step: step, tableColumns: self.columns, columns: columns,
                           keyIndexes: keyIndexes)
    }
}

/// A seed's rows into SQLite: batches of rows through one multi-row `INSERT` (a third less time in SQLite than
/// row by row), with SQLite's `ON CONFLICT` for each mode. In the modes that match rows by key, a temporary table
/// per key records the file's keys as rows arrive, so a key the file repeats is refused naming both lines and sync
/// knows which rows to keep. A refused batch is replayed row by row from the values it holds, to name the row
/// SQLite refuses.
final class SQLiteSeedSink: SeedSink {
    /// Rows per multi-row INSERT; measured here, 64 beat 32 by a few percent.
    static let maximumBatch = 64

    let database: Database
    let step: SeedStep
    /// The table's columns (for replace mode's defaults and sync's references).
    let tableColumns: [ColumnInfo]
    /// The file's columns, in header order.
    private let names: [String]
    private let width: Int
    private let batchSize: Int
    private let single: Statement
    private let batch: Statement?
    private let keyIndexes: [Int]
    /// The keys whose values the file may not repeat, as indexes into the file's columns, with the statements that
    /// record a row's key (`INSERT … ON CONFLICT DO NOTHING`) and find the line that recorded it first.
    private var trackedKeys: [(columns: [Int], record: Statement, find: Statement)] = []
    /// A constraint's own conflict clause applies to a statement that states none: REPLACE would delete the
    /// conflicting row (cascading into other tables) and IGNORE drop the file's row in silence. On such a table
    /// the statement says OR ABORT, which overrides them; the ON CONFLICT target still decides for the key.
    /// (Only there: an OR clause also overrides the conflict handling of statements in the table's triggers.)
    private let orAbort: Bool
    private let startedInTransaction: Bool
    /// In `ignore` mode a row whose key exists is skipped: what was loaded is what SQLite inserted, counted from
    /// each statement's changes (which leave out what triggers do).
    private let countsSkips: Bool
    /// The database has triggers: a trigger's `RAISE(FAIL)` (or a statement in it with `OR FAIL`), fired by the
    /// insert or by what it cascades to, ends a multi-row INSERT but keeps the rows before it, which a replay would
    /// insert again and blame. Each batch then runs inside a savepoint, so a refused batch is undone whole before its
    /// rows are replayed. (Without triggers SQLite undoes a failed statement whole by itself: the seed states
    /// `OR ABORT` where a constraint says FAIL.)
    private let guardsBatches: Bool
    private var keyTables = 0

    /// The statement `append` binds into: the batch statement, or the single-row one when rows go one at a time.
    private let bindTarget: Statement
    /// The values of the rows held (row-major), their lines and offsets, and the copies of their bytes. Behind
    /// pointers, like the counters, so the per-field path pays no dynamic exclusivity checks.
    private let values: UnsafeMutablePointer<ColumnValue>
    private let lines: UnsafeMutablePointer<Int>
    private let offsets: UnsafeMutablePointer<Int>
    /// [rows held, rows appended, rows skipped]
    private let counters = UnsafeMutablePointer<Int>.allocate(capacity: 3)
    private let arena = UnsafeMutablePointer<BindArena>.allocate(capacity: 1)
    private var held: Int {
        get { counters[0] }
        set { counters[0] = newValue }
    }

    init(database: Database, step: SeedStep, tableColumns: [ColumnInfo], columns: [ColumnInfo], keyIndexes: [Int]) throws {
        self.database = database
        self.step = step
        self.tableColumns = tableColumns
        names = columns.map(\.name)
        width = columns.count
        self.keyIndexes = keyIndexes
        orAbort = try database.declaresConflictClause(step.table)
        startedInTransaction = database.isInTransaction
        countsSkips = step.mode == .ignore
        guardsBatches = try database.scalar("""
            SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'trigger')
                OR EXISTS (SELECT 1 FROM sqlite_temp_schema WHERE type = 'trigger')
            """, as: Bool.self) ?? true
        batchSize = max(1, min(Self.maximumBatch, database.dialect.maximumParameters / max(width, 1)))
        values = .allocate(capacity: max(batchSize * width, 1))
        values.initialize(repeating: .null, count: max(batchSize * width, 1))
        lines = .allocate(capacity: batchSize)
        lines.initialize(repeating: 0, count: batchSize)
        offsets = .allocate(capacity: batchSize)
        offsets.initialize(repeating: 0, count: batchSize)
        counters.initialize(repeating: 0, count: 3)
        arena.initialize(to: BindArena())
        let single = try database.prepare(Self.insertSQL(step, names, rows: 1, tableColumns: tableColumns, orAbort: orAbort))
        let batch = batchSize > 1
            ? try database.prepare(Self.insertSQL(step, names, rows: batchSize, tableColumns: tableColumns, orAbort: orAbort)) : nil
        self.single = single
        self.batch = batch
        bindTarget = batch ?? single
        for key in try Self.keysTheFileMayNotRepeat(step, columns: columns, keyIndexes: keyIndexes, database: database) {
            let (record, find) = try keyRecorder(keyColumns: key.map { columns[$0] }, table: "strata_seed_keys_\(keyTables)")
            trackedKeys.append((key, record, find))
        }
    }

    /// In `upsert` and `sync`, and in `replace` with a key, the key: a second row with the same key would update
    /// the row the first one wrote. In `replace` without one, every PRIMARY KEY or UNIQUE column set of the table
    /// that the file has all of, since a row conflicting with an earlier one on any of them overwrites it.
    private static func keysTheFileMayNotRepeat(_ step: SeedStep, columns: [ColumnInfo], keyIndexes: [Int],
                                                database: Database) throws -> [[Int]] {
        switch step.mode {
        case .insert, .ignore:
            return []
        case .upsert, .sync:
            return [keyIndexes]
        case .replace:
            guard keyIndexes.isEmpty else { return [keyIndexes] }
            return try database.uniqueKeys(in: step.table).compactMap { key in
                let indexes = key.compactMap { name in columns.firstIndex { sqliteNamesEqual($0.name, name) } }
                return indexes.count == key.count ? indexes : nil
            }
        }
    }

    deinit {
        values.deinitialize(count: max(batchSize * width, 1))
        values.deallocate()
        lines.deallocate()
        offsets.deallocate()
        counters.deallocate()
        arena.deinitialize(count: 1)
        arena.deallocate()
    }

    func append(_ row: UnsafePointer<ColumnValue>, line: Int, offset: Int) throws {
        for key in trackedKeys { try record(key, of: row, line: line, offset: offset) }
        let base = held &* width
        let statement = bindTarget
        for index in 0..<width {
            hold(row[index], slot: base &+ index, statement: statement)
        }
        try appendRow(line: line, offset: offset)
    }

    /// Keeps a field's value (its bytes copied) as field `slot` of the held rows, and binds it there.
    @inline(__always)
    private func hold(_ value: ColumnValue, slot: Int, statement: Statement) {
        let kept: ColumnValue = switch value {
        case .text(let bytes): .text(arena.pointee.store(bytes))
        case .blob(let bytes): .blob(arena.pointee.store(bytes))
        default: value
        }
        values[slot] = kept
        bind(kept, to: statement, at: Int32(truncatingIfNeeded: slot &+ 1))
    }

    private func appendRow(line: Int, offset: Int) throws {
        lines[held] = line
        offsets[held] = offset
        held += 1
        counters[1] += 1
        if let batch {
            guard held == batchSize else { return }
            do {
                if guardsBatches { try database.savepoint { _ in try batch.run() } } else { try batch.run() }
            } catch let error as DatabaseError {
                try stopIfTransactionLost(error, row: 0)
                // The batch's rows are undone (by SQLite, or by the savepoint where a trigger's RAISE(FAIL) would
                // keep those before it); replaying them row by row finds the culprit.
                try replayHeld()
                throw SeedRejection(cause: .batch, line: lines[0], offset: offsets[0], error: error)
            }
            if countsSkips { counters[2] += batchSize - database.changes }
            release()
        } else {
            try runSingle(row: 0, bound: true)
            release()
        }
    }

    func finish() throws -> Int {
        if held > 0 {
            // The last, partial batch: its bound values are dropped and its rows inserted one by one.
            try replayHeld()
        }
        if step.mode == .sync {
            try deleteRowsNotRecorded(keyColumns: keyIndexes.map { names[$0] })
        }
        return counters[1] - counters[2]
    }

    func close() {
        for index in 0..<keyTables { try? database.execute("DROP TABLE IF EXISTS temp.strata_seed_keys_\(index)", .none) }
    }

    /// Records the row's key; a key recorded before is refused, naming the line that has it first. The values are
    /// the row's as converted, compared with the table column's affinity and collation, as its index would.
    private func record(_ key: (columns: [Int], record: Statement, find: Statement), of row: UnsafePointer<ColumnValue>,
                        line: Int, offset: Int) throws {
        for (position, index) in key.columns.enumerated() {
            bind(row[index], to: key.record, at: Int32(position + 1))
        }
        key.record.bind(int64: Int64(line), at: Int32(key.columns.count + 1))
        try key.record.run()
        guard database.changes == 0 else { return }
        for (position, index) in key.columns.enumerated() {
            bind(row[index], to: key.find, at: Int32(position + 1))
        }
        var first = line
        if try key.find.step(), case .integer(let recorded) = key.find.value(at: 0) { first = Int(recorded) }
        key.find.reset()
        throw SeedRejection(cause: .duplicateKey(firstLine: first, columns: key.columns.map { names[$0] }),
                            line: line, offset: offset,
                            error: DatabaseError(kind: .constraint, code: nil, message: "a key repeated in the file"))
    }

    /// Runs the single-row statement for held row `row` (binding its values first unless `bound`), and in sync mode
    /// records its key.
    private func runSingle(row: Int, bound: Bool) throws {
        let base = row * width
        if !bound {
            for index in 0..<width { bind(values[base + index], to: single, at: Int32(index + 1)) }
        }
        do {
            try single.run()
            if countsSkips { counters[2] += 1 - database.changes }
        } catch let error as DatabaseError {
            try stopIfTransactionLost(error, row: row)
            throw SeedRejection(cause: .row, line: lines[row], offset: offsets[row], error: error)
        }
    }

    /// Inserts the held rows one at a time, so a refusal names its row; then lets their values go.
    private func replayHeld() throws {
        for row in 0..<held { try runSingle(row: row, bound: false) }
        release()
    }

    private func release() {
        held = 0
        arena.pointee.reset()
    }

    /// Binds a held value; its bytes stay in the arena until the statement has run, so SQLite need not copy them.
    @inline(__always)
    private func bind(_ value: ColumnValue, to statement: Statement, at parameter: Int32) {
        switch value {
        case .null: statement.bindNull(at: parameter)
        case .integer(let integer): statement.bind(int64: integer, at: parameter)
        case .real(let real): statement.bind(double: real, at: parameter)
        case .text(let bytes): statement.bind(text: bytes, at: parameter, copying: false)
        case .blob(let bytes): statement.bind(blob: bytes, at: parameter)
        }
    }

    /// SQLite may roll the whole transaction back after some errors (disk full, I/O error, out of memory,
    /// interrupt); replaying rows after that would commit each on its own, so the seed stops instead.
    private func stopIfTransactionLost(_ error: DatabaseError, row: Int) throws {
        if database.transactionLost != nil || (startedInTransaction && !database.isInTransaction) {
            throw SeedRejection(cause: .transactionLost, line: lines[row], offset: offsets[row], error: error)
        }
    }

    /// A temporary table of one key's values and the line each came from. Each key column keeps the table
    /// column's affinity and collation, so keys compare as the table's UNIQUE index compares them (and sync's
    /// delete can search the temporary index). Returns the statements that record a key and find its line.
    private func keyRecorder(keyColumns: [ColumnInfo], table: String) throws -> (record: Statement, find: Statement) {
        let definitions = try keyColumns.enumerated().map { position, column in
            let affinity = column.affinity == .blob ? "" : " " + column.affinity.rawValue.uppercased()
            let collation = try database.collation(of: column.name, in: step.table) ?? "BINARY"
            return "k\(position)\(affinity) COLLATE \(quoteIdentifier(collation))"
        }
        let keys = keyColumns.indices.map { "k\($0)" }
        try database.execute("DROP TABLE IF EXISTS temp.\(table)", .none)
        keyTables += 1
        try database.execute("CREATE TEMP TABLE \(table) (" + definitions.joined(separator: ", ") + ", line INTEGER)", .none)
        try database.execute("CREATE UNIQUE INDEX temp.\(table)_index ON \(table) (" + keys.joined(separator: ", ") + ")", .none)
        let record = try database.prepare("INSERT INTO temp.\(table) VALUES (" + keyColumns.map { _ in "?" }.joined(separator: ", ")
                                          + ", ?) ON CONFLICT DO NOTHING")
        let find = try database.prepare("SELECT line FROM temp.\(table) WHERE "
                                        + keys.enumerated().map { "\($1) = ?\($0 + 1)" }.joined(separator: " AND "))
        return (record, find)
    }

    private func deleteRowsNotRecorded(keyColumns keyNames: [String]) throws {
        try refuseDeletingReferencedRows(keyNames)
        do {
            // NOT EXISTS rather than NOT IN: correct by construction whatever the keys hold.
            try database.execute("DELETE FROM \(quoteIdentifier(step.table)) WHERE NOT "
                                 + Self.inFile(quoteIdentifier(step.table), keyNames), .none)
        } catch let error as DatabaseError {
            throw failure("sync could not delete rows missing from the file: \(error.message)")
        }
    }

    private func failure(_ message: String) -> SeedError {
        SeedError(file: displayPath(step.path), line: nil, column: nil, message: message)
    }

    /// `EXISTS (…)`: true when the row `alias` refers to has its key among the file's keys (sync's key, the first
    /// recorded).
    private static func inFile(_ alias: String, _ keyNames: [String]) -> String {
        "EXISTS (SELECT 1 FROM temp.strata_seed_keys_0 WHERE "
            + keyNames.enumerated().map { "\(alias).\(quoteIdentifier($1)) = k\($0)" }.joined(separator: " AND ") + ")"
    }

    /// A sync deletes the rows missing from the file; where other rows reference one of them (a foreign key),
    /// deleting would cascade into, null out or orphan rows of another table without a word. Refuse, naming
    /// the rows. Rows that only rows deleted too refer to (a tree in one table) are deleted.
    private func refuseDeletingReferencedRows(_ keyNames: [String]) throws {
        let references = try database.query("""
            SELECT m.name, f.id, f."from", f."to" FROM sqlite_schema AS m, pragma_foreign_key_list(m.name) AS f
            WHERE m.type = 'table' AND f."table" = ? COLLATE NOCASE ORDER BY m.name, f.id, f.seq
            """, [step.table]).all()
        var groups: [(child: String, from: [String], to: [String?])] = []
        var lastID: (String, Int)?
        for row in references {
            let child: String = try row.get(0), id: Int = try row.get(1)
            if lastID.map({ $0.0 != child || $0.1 != id }) ?? true { groups.append((child, [], [])) }
            lastID = (child, id)
            groups[groups.count - 1].from.append(try row.get(2))
            groups[groups.count - 1].to.append(try row.get(3))
        }
        let primaryKey = tableColumns.filter { $0.primaryKeyPosition > 0 }.sorted { $0.primaryKeyPosition < $1.primaryKeyPosition }.map(\.name)
        let parent = quoteIdentifier(step.table)
        var found: [String] = []
        for group in groups {
            let parentColumns = group.to.contains(nil) ? primaryKey : group.to.compactMap { $0 }
            guard parentColumns.count == group.from.count else { continue }
            let join = zip(group.from, parentColumns).map { "c.\(quoteIdentifier($0)) = p.\(quoteIdentifier($1))" }
                .joined(separator: " AND ")
            let keys = keyNames.map { "p.\(quoteIdentifier($0))" }.joined(separator: ", ")
            let selfReference = sqliteNamesEqual(group.child, step.table) ? " AND " + Self.inFile("c", keyNames) : ""
            let rows = try database.query("""
                SELECT \(keys), count(*) FROM \(parent) AS p JOIN \(quoteIdentifier(group.child)) AS c ON \(join)
                WHERE NOT \(Self.inFile("p", keyNames))\(selfReference) GROUP BY \(keys) LIMIT 5
                """, .none).all()
            for row in rows {
                let key = keyNames.enumerated().map { "\($1) = \(row[$0])" }.joined(separator: ", ")
                let count = row[keyNames.count]
                found.append("\(key) (\(count) row\(count == .integer(1) ? "" : "s") in \(group.child).\(group.from.joined(separator: ", ")))")
            }
        }
        guard found.isEmpty else {
            throw failure("sync would delete rows of '\(step.table)' that other rows reference: "
                          + found.joined(separator: "; ") + "; keep them in the file, or delete or move the referencing rows first")
        }
    }

    private static func insertSQL(_ step: SeedStep, _ columns: [String], rows: Int, tableColumns: [ColumnInfo],
                                  orAbort: Bool) -> String {
        let table = quoteIdentifier(step.table)
        let names = columns.map(quoteIdentifier).joined(separator: ", ")
        let tuple = "(" + columns.map { _ in "?" }.joined(separator: ", ") + ")"
        let values = Array(repeating: tuple, count: rows).joined(separator: ", ")
        let keys = step.key.map(quoteIdentifier).joined(separator: ", ")
        let base = "INSERT\(orAbort ? " OR ABORT" : "") INTO \(table) (\(names)) VALUES \(values)"
        switch step.mode {
        case .insert:
            return base
        case .replace:
            // Not REPLACE INTO: its DELETE of the old row fires ON DELETE CASCADE / SET NULL in other tables and
            // delete triggers. The conflicting row is overwritten in place instead: the file's columns from the
            // file, the table's other columns their defaults (as a fresh row), its primary key kept.
            let inFile = Set(columns.map(\.sqliteFolded))
            let fromFile = columns.map { "\(quoteIdentifier($0)) = excluded.\(quoteIdentifier($0))" }
            let defaults = tableColumns.filter { !inFile.contains($0.name.sqliteFolded) && $0.primaryKeyPosition == 0 }
                .map { "\(quoteIdentifier($0.name)) = (\($0.defaultSQL ?? "NULL"))" }
            return base + " ON CONFLICT" + (step.key.isEmpty ? "" : " (\(keys))") + " DO UPDATE SET "
                + (fromFile + defaults).joined(separator: ", ")
        case .ignore:
            // ON CONFLICT DO NOTHING skips only uniqueness conflicts; NOT NULL and CHECK still fail loudly,
            // unlike INSERT OR IGNORE.
            return base + (step.key.isEmpty ? " ON CONFLICT DO NOTHING" : " ON CONFLICT (\(keys)) DO NOTHING")
        case .upsert, .sync:
            let keySet = Set(step.key.map(\.sqliteFolded))
            let updates = columns.filter { !keySet.contains($0.sqliteFolded) }
                .map { "\(quoteIdentifier($0)) = excluded.\(quoteIdentifier($0))" }
            return base + " ON CONFLICT (\(keys)) DO " + (updates.isEmpty ? "NOTHING" : "UPDATE SET " + updates.joined(separator: ", "))
        }
    }
}
