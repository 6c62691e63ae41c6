import StrataCore

/// A seed's table on SQLite: multi-row `INSERT` statements with SQLite's `ON CONFLICT` for each mode, and for sync
/// mode a temporary table of the file's keys.
final class SQLiteSeedTarget: SeedTarget {
    let database: Database
    let step: SeedStep
    let columns: [ColumnInfo]
    /// A constraint's own conflict clause applies to a statement that states none: REPLACE would delete the
    /// conflicting row (cascading into other tables) and IGNORE drop the file's row in silence. On such a table
    /// the statement says OR ABORT, which overrides them; the ON CONFLICT target still decides for the key.
    /// (Only there: an OR clause also overrides the conflict handling of statements in the table's triggers.)
    private let orAbort: Bool
    private let startedInTransaction: Bool
    private var createdKeyTable = false

    init(database: Database, step: SeedStep) throws {
        self.database = database
        self.step = step
        columns = try database.columns(in: step.table)
        orAbort = try database.declaresConflictClause(step.table)
        startedInTransaction = database.isInTransaction
    }

    var databaseName: String { "SQLite" }
    var maximumParameters: Int { Int(database.dialect.maximumParameters) }
    var changes: Int { database.changes }
    var transactionLost: Bool {
        database.transactionLost != nil || (startedInTransaction && !database.isInTransaction)
    }

    func insertStatement(columns: [String], rows: Int) throws -> any PreparedStatement {
        try database.prepare(insertSQL(columns, rows: rows))
    }

    /// Each key column keeps the table column's affinity and collation, so the delete compares keys as the
    /// table's UNIQUE index does and can search the temporary index.
    func keyRecorder(keyColumns: [ColumnInfo]) throws -> any PreparedStatement {
        let definitions = try keyColumns.enumerated().map { position, column in
            let affinity = column.affinity == .blob ? "" : " " + column.affinity.rawValue.uppercased()
            let collation = try database.collation(of: column.name, in: step.table) ?? "BINARY"
            return "k\(position)\(affinity) COLLATE \(quoteIdentifier(collation))"
        }
        try database.execute("DROP TABLE IF EXISTS temp.strata_sync_keys")
        createdKeyTable = true
        try database.execute("CREATE TEMP TABLE strata_sync_keys (" + definitions.joined(separator: ", ") + ")")
        try database.execute("CREATE INDEX temp.strata_sync_keys_index ON strata_sync_keys ("
                             + keyColumns.indices.map { "k\($0)" }.joined(separator: ", ") + ")")
        return try database.prepare("INSERT INTO temp.strata_sync_keys VALUES (" + keyColumns.map { _ in "?" }.joined(separator: ", ") + ")")
    }

    func deleteRowsNotRecorded(keyColumns keyNames: [String]) throws {
        try refuseDeletingReferencedRows(keyNames)
        do {
            // NOT EXISTS rather than NOT IN: correct by construction whatever the keys hold.
            try database.execute("DELETE FROM \(quoteIdentifier(step.table)) WHERE NOT "
                                 + Self.inFile(quoteIdentifier(step.table), keyNames))
        } catch let error as DatabaseError {
            throw failure("sync could not delete rows missing from the file: \(error.message)")
        }
    }

    func finish() {
        if createdKeyTable { try? database.execute("DROP TABLE IF EXISTS temp.strata_sync_keys") }
    }

    private func failure(_ message: String) -> SeedError {
        SeedError(file: displayPath(step.path), line: nil, column: nil, message: message)
    }

    /// `EXISTS (…)`: true when the row `alias` refers to has its key among the file's keys.
    private static func inFile(_ alias: String, _ keyNames: [String]) -> String {
        "EXISTS (SELECT 1 FROM temp.strata_sync_keys WHERE "
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
        let primaryKey = columns.filter { $0.primaryKeyPosition > 0 }.sorted { $0.primaryKeyPosition < $1.primaryKeyPosition }.map(\.name)
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
            throw failure("sync would delete rows of '\(step.table)' that other rows reference: "
                          + found.joined(separator: "; ") + "; keep them in the file, or delete or move the referencing rows first")
        }
    }

    private func insertSQL(_ columns: [String], rows: Int) -> String {
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
            let defaults = self.columns.filter { !inFile.contains($0.name.sqliteFolded) && $0.primaryKeyPosition == 0 }
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
