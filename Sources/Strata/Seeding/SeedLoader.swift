import Foundation

/// A seed set that cannot be loaded: the file and line, and what is wrong (with the column and value).
public struct SeedError: Error, Sendable, Equatable, CustomStringConvertible {
    public let file: String
    public let line: Int?
    public let column: Int?
    public let message: String

    public var description: String { placeDescription(file, line, column, message) }
}

/// Loads one CSV seed set into its table inside the caller's transaction, streaming the file.
struct SeedLoader {
    /// How often (in rows) progress is reported.
    static let progressInterval = 50_000
    /// Rows per multi-row INSERT; measured here, 64 beat 32 by a few percent.
    static let maximumBatch = 64

    let step: SeedStep
    let database: Database
    var progress: ((_ rows: Int, _ bytesRead: Int, _ totalBytes: Int) -> Void)?
    /// When set, the file's checksum is computed from the same read and stored here.
    var computeChecksum = false

    init(step: SeedStep, database: Database,
         progress: ((_ rows: Int, _ bytesRead: Int, _ totalBytes: Int) -> Void)? = nil) {
        self.step = step
        self.database = database
        self.progress = progress
    }

    /// Data rows in the file (records after the header), read without converting anything.
    static func countRows(_ step: SeedStep) throws -> Int {
        let reader = try CSVReader(path: step.path, displayName: displayPath(step.path), delimiter: step.delimiter)
        guard try reader.readRecord() else { return 0 }
        let width = reader.fieldCount
        var rows = 0
        while try reader.readRecord() {
            if !(width > 1 && isBlankLine(reader)) { rows += 1 }
        }
        return rows
    }

    /// Loads every row; returns the number of rows loaded, and the file's checksum when `computeChecksum` is set
    /// (hashed from the same read, so a large file is read once).
    func load() throws -> (rows: Int, checksum: String?) {
        let file = displayPath(step.path)
        func failure(_ line: Int?, _ message: String) -> SeedError {
            SeedError(file: file, line: line, column: nil, message: message)
        }
        let reader: CSVReader
        do {
            reader = try CSVReader(path: step.path, displayName: file, delimiter: step.delimiter, hashing: computeChecksum)
        } catch let error as CSVError {
            throw failure(nil, error.message)
        }
        let tableColumns = try database.columns(in: step.table)
        guard !tableColumns.isEmpty else { throw failure(nil, "table '\(step.table)' does not exist") }
        guard try readRecord(reader) else { throw failure(1, "the file is empty; a header row naming the columns is required") }

        // Header: every name must be a column of the table.
        let header = reader.strings()
        var targets: [ColumnInfo] = []
        var unknown: [String] = []
        var seen = Set<String>()
        for name in header {
            guard !name.isEmpty else { throw failure(reader.recordLine, "the header has an empty column name") }
            guard seen.insert(name.sqliteFolded).inserted else { throw failure(reader.recordLine, "the header names '\(name)' twice") }
            if let column = tableColumns.named(name) {
                targets.append(column)
            } else {
                unknown.append(name)
            }
        }
        guard unknown.isEmpty else {
            throw failure(reader.recordLine, "the header names \(unknown.count == 1 ? "a column" : "columns") not in table '\(step.table)': "
                          + unknown.joined(separator: ", ") + " (the table has: " + tableColumns.map(\.name).joined(separator: ", ") + ")")
        }
        for configured in step.columns where !seen.contains(configured.name.sqliteFolded) {
            throw SeedError(file: step.location.path, line: step.location.line, column: nil,
                            message: "<column name=\"\(configured.name)\"> is not in the header of \(file)")
        }
        let keyIndexes = try step.key.map { key -> Int in
            guard let index = targets.firstIndex(where: { sqliteNamesEqual($0.name, key) }) else {
                throw failure(reader.recordLine, "key column '\(key)' is not in the header")
            }
            return index
        }
        // A NULL never equals anything, so a row with a NULL key would never match the row it is meant to
        // update (a duplicate each time) and a sync would keep every stale row; key columns are refused NULL.
        let keyMatches = step.mode == .upsert || step.mode == .sync || ((step.mode == .ignore || step.mode == .replace) && !step.key.isEmpty)
        let plans = targets.enumerated().map { index, target in
            let isKey = keyMatches && keyIndexes.contains(index)
            return FieldPlan(kind: ValueKind(column: step.columns.first { sqliteNamesEqual($0.name, target.name) },
                                             declaredType: target.declaredType),
                             isNotNull: target.isNotNull || isKey, isKey: isKey)
        }
        let startedInTransaction = database.isInTransaction
        /// SQLite may roll the whole transaction back after some errors (disk full, I/O error, out of memory,
        /// interrupt); replaying rows after that would commit each on its own, so the seed stops instead.
        func stopIfTransactionLost(_ error: DatabaseError, line: Int?) throws {
            if database.transactionLost != nil || (startedInTransaction && !database.isInTransaction) {
                throw failure(line, "SQLite rolled the transaction back after: \(error.message); nothing of this seed was kept")
            }
        }

        // Rows go in batches through one multi-row INSERT: a third less time in SQLite than row by row.
        // Sync mode also records keys per row, so it stays row by row.
        let width = header.count
        let batchSize = step.mode == .sync ? 1 : max(1, min(Self.maximumBatch, 32_766 / width))
        let names = targets.map(\.name)
        // A constraint's own conflict clause applies to a statement that states none: REPLACE would delete the
        // conflicting row (cascading into other tables) and IGNORE drop the file's row in silence. On such a table
        // the statement says OR ABORT, which overrides them; the ON CONFLICT target below still decides for the key.
        // (Only there: an OR clause also overrides the conflict handling of statements in the table's triggers.)
        let orAbort = try database.declaresConflictClause(step.table)
        let single: Statement
        let batch: Statement?
        do {
            single = try database.prepare(insertSQL(names, rows: 1, tableColumns: tableColumns, orAbort: orAbort))
            batch = batchSize > 1 ? try database.prepare(insertSQL(names, rows: batchSize, tableColumns: tableColumns, orAbort: orAbort)) : nil
        } catch let error as DatabaseError {
            throw failure(nil, step.key.isEmpty ? error.message
                          : "key (\(step.key.joined(separator: ", "))) must be the primary key or have a UNIQUE index: \(error.message)")
        }
        var keyInsert: Statement?
        if step.mode == .sync {
            // Each key column keeps the table column's affinity and collation, so the delete below compares
            // keys as the table's UNIQUE index does and can search the temporary index.
            let definitions = try keyIndexes.enumerated().map { position, index in
                let column = targets[index]
                let affinity = column.affinity == .blob ? "" : " " + column.affinity.rawValue.uppercased()
                let collation = try database.collation(of: column.name, in: step.table) ?? "BINARY"
                return "k\(position)\(affinity) COLLATE \(quoteIdentifier(collation))"
            }
            try database.execute("DROP TABLE IF EXISTS temp.strata_sync_keys")
            try database.execute("CREATE TEMP TABLE strata_sync_keys (" + definitions.joined(separator: ", ") + ")")
            try database.execute("CREATE INDEX temp.strata_sync_keys_index ON strata_sync_keys ("
                                 + keyIndexes.indices.map { "k\($0)" }.joined(separator: ", ") + ")")
            keyInsert = try database.prepare("INSERT INTO temp.strata_sync_keys VALUES (" + keyIndexes.map { _ in "?" }.joined(separator: ", ") + ")")
        }
        defer { if step.mode == .sync { try? database.execute("DROP TABLE IF EXISTS temp.strata_sync_keys") } }

        var binder = FieldBinder(plans: plans, names: header, nullToken: step.nullToken, file: file)

        // In `ignore` mode a row whose key exists is skipped: what was loaded is what SQLite inserted, counted from
        // each statement's changes (which leave out what triggers do).
        let countsSkips = step.mode == .ignore
        var skipped = 0

        /// Inserts `count` rows one at a time from a file offset, so a failure names its exact line.
        func replay(from offset: Int, line: Int, count: Int) throws {
            let again = try CSVReader(path: step.path, displayName: file, delimiter: step.delimiter, offset: offset, line: line)
            var done = 0
            while done < count, try readRecord(again) {
                if width > 1 && Self.isBlankLine(again) { continue }
                try binder.bindRecord(again, to: single, row: 0)
                do {
                    try single.run()
                } catch let error as DatabaseError {
                    try stopIfTransactionLost(error, line: again.recordLine)
                    throw rejected(again, keyIndexes, header, error)
                }
                if countsSkips { skipped += 1 - database.changes }
                binder.ran()
                done += 1
            }
        }

        var rows = 0
        var inBatch = 0
        var batchOffset = 0
        var batchLine = 0
        while try readRecord(reader) {
            if reader.fieldCount != width {
                if width > 1 && Self.isBlankLine(reader) { continue }
                throw failure(reader.recordLine, "expected \(width) fields as in the header, found \(reader.fieldCount)")
            }
            if let batch {
                if inBatch == 0 {
                    batchOffset = reader.recordOffset
                    batchLine = reader.recordLine
                }
                try binder.bindRecord(reader, to: batch, row: inBatch)
                inBatch += 1
                if inBatch == batchSize {
                    do {
                        try batch.run()
                    } catch let error as DatabaseError {
                        // SQLite undid the whole statement; replaying the batch row by row finds the culprit.
                        binder.ran()
                        try stopIfTransactionLost(error, line: batchLine)
                        try replay(from: batchOffset, line: batchLine, count: batchSize)
                        throw failure(batchLine, "rows rejected: \(error.message)")
                    }
                    if countsSkips { skipped += batchSize - database.changes }
                    binder.ran()
                    inBatch = 0
                }
            } else {
                try binder.bindRecord(reader, to: single, row: 0)
                if let keyInsert { try binder.bindFields(keyIndexes, of: reader, to: keyInsert) }
                do {
                    try single.run()
                    if countsSkips { skipped += 1 - database.changes }
                    try keyInsert?.run()
                } catch let error as DatabaseError {
                    try stopIfTransactionLost(error, line: reader.recordLine)
                    throw rejected(reader, keyIndexes, header, error)
                }
                binder.ran()
            }
            rows += 1
            if rows % Self.progressInterval == 0 { progress?(rows, reader.bytesConsumed, reader.totalBytes) }
        }
        if inBatch > 0 {
            // The last, partial batch: bound values are dropped and the rows inserted one by one.
            binder.ran()
            try replay(from: batchOffset, line: batchLine, count: inBatch)
        }
        if step.mode == .sync {
            let keyNames = keyIndexes.map { targets[$0].name }
            try refuseDeletingReferencedRows(keyNames, tableColumns, failure)
            do {
                // NOT EXISTS rather than NOT IN: correct by construction whatever the keys hold.
                try database.execute("DELETE FROM \(quoteIdentifier(step.table)) WHERE NOT "
                                     + Self.inFile(quoteIdentifier(step.table), keyNames))
            } catch let error as DatabaseError {
                throw failure(nil, "sync could not delete rows missing from the file: \(error.message)")
            }
        }
        progress?(rows, reader.totalBytes, reader.totalBytes)
        return (rows - skipped, try reader.checksum())
    }

    private func readRecord(_ reader: CSVReader) throws -> Bool {
        do {
            return try reader.readRecord()
        } catch let error as CSVError {
            throw SeedError(file: error.file, line: error.line, column: error.column, message: error.message)
        }
    }

    static func isBlankLine(_ reader: CSVReader) -> Bool {
        reader.fieldCount == 1 && reader.field(0).bytes.isEmpty && !reader.field(0).isQuoted
    }

    private func rejected(_ reader: CSVReader, _ keyIndexes: [Int], _ header: [String], _ error: DatabaseError) -> SeedError {
        let key = keyIndexes.isEmpty ? ""
            : " (" + keyIndexes.map { "\(header[$0]) = \(FieldBinder.display(reader, $0))" }.joined(separator: ", ") + ")"
        return SeedError(file: displayPath(step.path), line: reader.recordLine, column: nil,
                         message: "row rejected\(key): \(error.message)")
    }

    /// `EXISTS (…)`: true when the row `alias` refers to has its key among the file's keys.
    private static func inFile(_ alias: String, _ keyNames: [String]) -> String {
        "EXISTS (SELECT 1 FROM temp.strata_sync_keys WHERE "
            + keyNames.enumerated().map { "\(alias).\(quoteIdentifier($1)) = k\($0)" }.joined(separator: " AND ") + ")"
    }

    /// A sync deletes the rows missing from the file; where other rows reference one of them (a foreign key),
    /// deleting would cascade into, null out or orphan rows of another table without a word. Refuse, naming
    /// the rows. Rows that only rows deleted too refer to (a tree in one table) are deleted.
    private func refuseDeletingReferencedRows(_ keyNames: [String], _ tableColumns: [ColumnInfo],
                                              _ failure: (Int?, String) -> SeedError) throws {
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
                """).all()
            for row in rows {
                let key = keyNames.enumerated().map { "\($1) = \(row[$0])" }.joined(separator: ", ")
                let count = row[keyNames.count]
                found.append("\(key) (\(count) row\(count == .integer(1) ? "" : "s") in \(group.child).\(group.from.joined(separator: ", ")))")
            }
        }
        guard found.isEmpty else {
            throw failure(nil, "sync would delete rows of '\(step.table)' that other rows reference: "
                          + found.joined(separator: "; ") + "; keep them in the file, or delete or move the referencing rows first")
        }
    }

    private func insertSQL(_ columns: [String], rows: Int, tableColumns: [ColumnInfo], orAbort: Bool) -> String {
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
