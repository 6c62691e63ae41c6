/// How one database writes `ModelStore`'s rows where databases differ: the INSERT and UPDATE it runs, how the key
/// the database generates comes back, and whether `save` can be one statement. The store owns this protocol and
/// writes through it alone, so it spells no backend's SQL and never asks which backend it is on; each backend's
/// dialect adopts it (`SQLiteDialect+RowWriter.swift`, `PostgresDialect+RowWriter.swift`).
///
/// What every backend shares stays in the store: SELECT, DELETE, `count(*)` and key conditions, standard SQL
/// with the dialect's placeholders and `quoteIdentifier`.
package protocol RowWriter {
    /// Inserts `row` into the layout's table; returns what `ModelStore.insert` returns: the new row's rowid on
    /// SQLite, the row's generated one-column integer key on PostgreSQL (0 for a table without one). In a batch,
    /// `statements` keeps what each value's statement needs, so it is worked out once.
    func insert(_ row: EncodedRow, layout: ModelLayout, into database: any DatabaseConnection,
                statements: StatementCache?) throws -> Int64

    /// The key of the row `insert` just wrote, for a one-column integer key `column` the row left NULL, given what
    /// `insert` returned for it; nil when the row has none.
    func generatedKey(_ inserted: Int64, column: String, layout: ModelLayout,
                      database: any DatabaseConnection) throws -> DatabaseValue?

    /// Saves `row`, whose key is set and which has every column a new row needs (`columns`, in property order), as
    /// one statement that inserts it or updates the row with its key; returns false, having done nothing, where
    /// this database has no such statement the store may use, and the store updates, then inserts.
    func upsert(_ row: EncodedRow, columns: [String], layout: ModelLayout, into database: any DatabaseConnection,
                statements: StatementCache?) throws -> Bool

    /// Whether a batch of inserts runs one statement, compiled for the first value's columns
    /// (`insertSQL(_:columns:)`), binding every value straight into it. False where the columns an insert names
    /// depend on each value, and each value goes through `insert`.
    var insertsBatchThroughOneStatement: Bool { get }

    /// The INSERT of a row naming `columns`, its parameters in their order.
    func insertSQL(_ layout: ModelLayout, columns: [String]) -> String

    /// The UPDATE of the layout's table that sets `assignments` (`"a" = ?, …`) on the rows `condition` matches.
    func updateSQL(_ layout: ModelLayout, assignments: String, condition: String) -> String
}

extension ModelStore {
    /// This database's `RowWriter`: its dialect, which every backend of this package gives one.
    func rowWriter(_ layout: ModelLayout) throws -> any RowWriter {
        let dialect = database.dialect
        guard let writer = dialect as? any RowWriter else {
            throw MappingError(typeName: layout.typeName,
                               message: "cannot be written: the \(dialect.name) dialect does not say how ModelStore writes rows (RowWriter)")
        }
        return writer
    }
}
