import StrataCore

/// How `ModelStore` writes rows on SQLite: NULL into an integer key generates one, read back as the last rowid;
/// `save` updates, then inserts; a batch binds every value into one statement; and inserts and updates state
/// `OR ABORT` on a table whose constraints name a conflict clause.
extension SQLiteDialect: RowWriter {
    package func insert(_ row: EncodedRow, layout: ModelLayout, into database: any DatabaseConnection,
                        statements: StatementCache?) throws -> Int64 {
        try database.execute(insertSQL(layout, columns: row.properties.map(layout.column(for:))), .positional(row.values))
        return database.lastInsertRowID
    }

    /// SQLite's last rowid is the key only where the key is the rowid, which a declaration cannot tell for sure
    /// (`INTEGER PRIMARY KEY DESC` is not; a BIGINT key left NULL stays NULL): the key the row got is read back.
    package func generatedKey(_ inserted: Int64, column: String, layout: ModelLayout,
                              database: any DatabaseConnection) throws -> DatabaseValue? {
        let key = try database.scalar("SELECT \(quoteIdentifier(column)) FROM \(quoteIdentifier(layout.table)) WHERE rowid = \(placeholder(1))",
                                      .positional([.integer(inserted)]), as: Int64.self)
        return key.map { .integer($0) }
    }

    /// None: `save` on SQLite is an UPDATE by key, then an INSERT when no row had it, which the store does itself.
    package func upsert(_ row: EncodedRow, columns: [String], layout: ModelLayout, into database: any DatabaseConnection,
                        statements: StatementCache?) throws -> Bool {
        false
    }

    /// Every value's columns are the same: NULL into a key generates one, so no column is left out.
    package var insertsBatchThroughOneStatement: Bool { true }

    package func insertSQL(_ layout: ModelLayout, columns: [String]) -> String {
        "INSERT\(Self.orAbort(layout)) INTO \(quoteIdentifier(layout.table)) (\(columns.map(quoteIdentifier).joined(separator: ", "))) "
            + "VALUES (\(columns.indices.map { placeholder($0 + 1) }.joined(separator: ", ")))"
    }

    package func updateSQL(_ layout: ModelLayout, assignments: String, condition: String) -> String {
        "UPDATE\(Self.orAbort(layout)) \(quoteIdentifier(layout.table)) SET \(assignments) WHERE \(condition)"
    }

    /// ` OR ABORT` for a table whose constraints carry their own conflict clause: without it, REPLACE would make an
    /// insert or update delete the row it conflicts with (and rows of other tables, by cascade), and IGNORE would
    /// make it do nothing without an error. Only there, since an OR clause also overrides the conflict handling of
    /// statements in the table's triggers.
    private static func orAbort(_ layout: ModelLayout) -> String {
        layout.declaresConflictClause ? " OR ABORT" : ""
    }
}
