import CSQLite
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataCore

extension Affinity {
    /// SQLite's type affinity of a declared column type (the rules of "Datatypes In SQLite", section 3.1).
    public init(sqliteDeclaredType declaredType: String) {
        let type = declaredType.uppercased()
        if type.contains("INT") { self = .integer }
        else if type.contains("CHAR") || type.contains("CLOB") || type.contains("TEXT") { self = .text }
        else if type.contains("BLOB") || type.isEmpty { self = .blob }
        else if type.contains("REAL") || type.contains("FLOA") || type.contains("DOUB") { self = .real }
        else { self = .numeric }
    }
}

/// An entry of `sqlite_schema`.
public struct SchemaObject: Sendable, Equatable {
    /// `table`, `index`, `view` or `trigger`.
    public let type: String
    /// The object's name.
    public let name: String
    /// The table it belongs to (a table's own name for a table).
    public let table: String
    /// Its `CREATE` statement.
    public let sql: String
}

extension Database {
    /// True when a table or a view of that name exists, compared case-insensitively as SQLite compares names.
    ///
    /// Views count, unlike FMDB's `tableExists:`: a view is read like a table, and the mapper and seeds take
    /// either. A plain name is looked up in the main database only (not `temp`, where SQLite would look first);
    /// `schema.name` looks in that schema (`temp.cache`, `aux.t` for a database attached as `aux`). A name whose
    /// part before the first dot is not a schema of this connection is taken whole, as a table named with a dot.
    public func tableExists(_ name: String) throws -> Bool {
        let (schema, table) = try splitSchema(name)
        return try scalar("SELECT count(*) FROM \(quoteIdentifier(schema)).sqlite_schema WHERE type IN ('table', 'view') AND name = ? COLLATE NOCASE",
                          [table], as: Int.self) ?? 0 > 0
    }

    /// True when the table or view (named as `tableExists(_:)` takes it) has a column of that name, compared
    /// case-insensitively; false when there is no such table. Declared and generated columns count; the implicit
    /// `rowid` does not, nor a virtual table's hidden columns.
    public func columnExists(_ column: String, in table: String) throws -> Bool {
        let (schema, table) = try splitSchema(table)
        return try scalar("SELECT count(*) FROM pragma_table_xinfo(?, ?) WHERE name = ? COLLATE NOCASE AND hidden IN (0, 2, 3)",
                          [table, schema, column], as: Int.self) ?? 0 > 0
    }

    /// The schema a name qualifies (`main` when none does) and the table name itself.
    private func splitSchema(_ name: String) throws -> (schema: String, table: String) {
        guard let dot = name.firstIndex(of: ".") else { return ("main", name) }
        let prefix = String(name[..<dot])
        let schemas: [String] = try query("SELECT name FROM pragma_database_list", .none).all().map { try $0.get(0) }
        guard let schema = schemas.first(where: { sqliteNamesEqual($0, prefix) }) else { return ("main", name) }
        return (schema, String(name[name.index(after: dot)...]))
    }

    /// The columns of a table in declaration order; empty when there is no such table.
    public func columns(in table: String) throws -> [ColumnInfo] {
        try query("SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?)", [table]).all().map { row in
            let declaredType: String = try row.get(1)
            return ColumnInfo(name: try row.get(0), declaredType: declaredType,
                              affinity: Affinity(sqliteDeclaredType: declaredType), isNotNull: try row.get(2),
                              defaultSQL: try row.get(3), primaryKeyPosition: try row.get(4))
        }
    }

    /// Every unique index that is not partial and is over columns only (not expressions or the rowid), the
    /// primary key's included, whose collations make `WHERE column = value` match one row at most: each column's
    /// index collation is the column's own, or coarser than the column's `BINARY` (`NOCASE`, `RTRIM`: rows that
    /// differ under them differ under `BINARY` too). An index unique under `BINARY` on a `NOCASE` column does not
    /// count: `WHERE code = 'a'` matches `a` and `A`. An `INTEGER PRIMARY KEY` (the rowid, which has no index)
    /// holds integers only, so no collation applies.
    public func links(of column: String, in table: String) throws -> ColumnLinks {
        let foreignKey = try query("SELECT count(*) FROM pragma_foreign_key_list(?) WHERE seq = 0 AND \"from\" = ? COLLATE NOCASE",
                                   [table, column]).all().first?.get(0, as: Int.self) ?? 0
        // SQLite's `INTEGER PRIMARY KEY` is the rowid, indexed without an index of its own.
        let leadsKey = try columns(in: table).contains { $0.primaryKeyPosition == 1 && sqliteNamesEqual($0.name, column) }
        let indexes = try query("""
            SELECT count(*) FROM pragma_index_list(?) AS l, pragma_index_info(l.name) AS i
            WHERE i.seqno = 0 AND i.name = ? COLLATE NOCASE
            """, [table, column]).all().first?.get(0, as: Int.self) ?? 0
        let collation = try self.collation(of: column, in: table)?.uppercased() ?? "BINARY"
        return ColumnLinks(hasForeignKey: foreignKey > 0, isIndexed: leadsKey || indexes > 0,
                           comparesExactly: collation == "BINARY")
    }

    /// The unique keys of `table`: its primary key and each unique constraint or index, their columns in key order.
    public func uniqueKeys(in table: String) throws -> [[String]] {
        var keys: [[String]] = []
        var primaryKeyIndexed = false
        let indexes = try query("SELECT name, origin FROM pragma_index_list(?) WHERE \"unique\" = 1 AND partial = 0",
                                [table]).all()
        for index in indexes {
            if try index.get(1, as: String.self) == "pk" { primaryKeyIndexed = true }
            var names: [String] = []
            for column in try query("SELECT cid, name, coll FROM pragma_index_xinfo(?) WHERE key = 1 ORDER BY seqno",
                                    [try index.get(0, as: String.self)]).all() {
                guard try column.get(0, as: Int.self) >= 0, let name = try column.get(1, as: String?.self),
                      let collation = try column.get(2, as: String?.self),
                      Self.tellsApart(indexCollation: collation,
                                      columnCollation: try self.collation(of: name, in: table) ?? "BINARY")
                else {
                    names = []
                    break
                }
                names.append(name)
            }
            if !names.isEmpty { keys.append(names) }
        }
        let primaryKey = try columns(in: table).filter { $0.primaryKeyPosition > 0 }
            .sorted { $0.primaryKeyPosition < $1.primaryKeyPosition }.map(\.name)
        if !primaryKeyIndexed && primaryKey.count == 1 { keys.insert(primaryKey, at: 0) }
        return keys
    }

    /// Whether values unique under `indexCollation` are unique under `columnCollation`, which `=` on the column uses.
    static func tellsApart(indexCollation: String, columnCollation: String) -> Bool {
        let index = indexCollation.uppercased(), column = columnCollation.uppercased()
        return index == column || (column == "BINARY" && (index == "NOCASE" || index == "RTRIM"))
    }

    /// True when the table's `CREATE TABLE` declares a conflict clause on a constraint (`UNIQUE ON CONFLICT
    /// REPLACE`, `PRIMARY KEY ON CONFLICT IGNORE`, `NOT NULL ON CONFLICT …`). A statement without its own conflict
    /// resolution takes the constraint's: REPLACE deletes the conflicting row (firing ON DELETE actions in other
    /// tables), IGNORE drops the new row without an error. Writers that must not do either state `OR ABORT` on
    /// such tables. Read from the statement's tokens (strings, quoted names and comments are not words), in the
    /// main and temp schemas; a name that merely contains the word `conflict` counts too, which errs on the safe side.
    public func declaresConflictClause(_ table: String) throws -> Bool {
        let statements: [String] = try query("""
            SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?1 COLLATE NOCASE AND sql IS NOT NULL
            UNION ALL
            SELECT sql FROM sqlite_temp_schema WHERE type = 'table' AND name = ?1 COLLATE NOCASE AND sql IS NOT NULL
            """, [table]).all().map { try $0.get(0) }
        return statements.contains(where: Self.mentionsConflictKeyword)
    }

    /// True when `sql` holds the keyword CONFLICT (any case) outside strings, quoted identifiers and comments.
    static func mentionsConflictKeyword(_ sql: String) -> Bool {
        Array(sql.utf8).withUnsafeBufferPointer { text in
            var finder = KeywordFinder(text: text, keyword: Array("conflict".utf8))
            var scanner = SQLScanner()
            var index = 0
            while index < text.count { _ = scanner.nextStatement(in: text, base: 0, index: &index, tokens: &finder) }
            _ = scanner.finish(at: text.count, tokens: &finder)
            return finder.found
        }
    }

    /// The name of a column's collating sequence (`BINARY`, `NOCASE`, …), or nil when there is no such column.
    func collation(of column: String, in table: String) throws -> String? {
        var collation: UnsafePointer<CChar>?
        let code = sqlite3_table_column_metadata(handle, nil, table, column, nil, &collation, nil, nil, nil)
        guard code == SQLITE_OK else { return nil }
        return collation.map { String(cString: $0) }
    }

    /// Rows that break a foreign key, as `PRAGMA foreign_key_check` reports them.
    public func foreignKeyViolations() throws -> [ForeignKeyViolation] {
        try query("PRAGMA foreign_key_check").all().map { row in
            ForeignKeyViolation(table: try row.get(0), rowid: try row.get(1), parent: try row.get(2),
                                constraint: try row.get(3))
        }
    }

    /// The user schema (tables, indexes, views, triggers) in a stable order: by type, then name.
    public func schemaObjects() throws -> [SchemaObject] {
        try query("""
            SELECT type, name, tbl_name, sql FROM sqlite_schema
            WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'
            ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 WHEN 'view' THEN 2 ELSE 3 END, name
            """).all().map { row in
            SchemaObject(type: try row.get(0), name: try row.get(1), table: try row.get(2), sql: try row.get(3))
        }
    }
}

extension Database {
    /// The schema as SQL text in a stable order (tables, indexes, views, triggers, each by name), one statement
    /// per object, so two databases can be compared with `diff`. Tables named in `excluding` are left out.
    public func canonicalSchema(excluding excluded: Set<String> = []) throws -> String {
        try schemaObjects()
            .filter { !excluded.contains($0.name) && !excluded.contains($0.table) }
            .map { $0.sql + ";\n" }
            .joined(separator: "\n")
    }
}

/// Notes whether a bare word equal to a lower-case ASCII keyword (ASCII case folded) goes by.
private struct KeywordFinder: SQLTokenSink {
    let text: UnsafeBufferPointer<UInt8>
    let keyword: [UInt8]
    var found = false

    mutating func word(from start: Int, to end: Int) {
        guard !found, end - start == keyword.count else { return }
        found = zip(text[start..<end], keyword).allSatisfy { ($0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0) == $1 }
    }

    mutating func quoted(_ quote: UInt8, from start: Int, to end: Int) {}
    mutating func punctuation(_ byte: UInt8, at offset: Int) {}
}
