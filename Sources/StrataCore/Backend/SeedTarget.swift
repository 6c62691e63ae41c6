/// A seed's table on one database: its columns, and a sink for the seed's rows.
public protocol SeedTarget: AnyObject {
    /// The database's name, for messages ("SQLite").
    var databaseName: String { get }
    /// The table's columns in order; empty when the table does not exist.
    var columns: [ColumnInfo] { get }
    /// A sink writing rows of `columns` (the file's header, in order) as the seed's mode asks, matching rows by
    /// the columns at `keyIndexes`. Fails (a `DatabaseError`) when those columns are not a key of the table.
    func sink(columns: [ColumnInfo], keyIndexes: [Int]) throws -> any SeedSink
    /// How the fields of `column` are converted, given the seed's `<column>` for it (`configured`), if any. The
    /// default is SQLite's rules (`SeedConversion.standard`); a backend whose types say more (ranges, lengths,
    /// precision) checks that too. Throws a `SeedError` for a `<column type>` the column cannot take without loss.
    func conversion(of column: ColumnInfo, configured: SeedColumn?) throws -> SeedConversion
}

extension SeedTarget {
    /// The conversion of one CSV column into the table's column: the manifest's `<column>` where it gives one, else
    /// the dialect's rule for the declared type.
    public func conversion(of column: ColumnInfo, configured: SeedColumn?) throws -> SeedConversion {
        .standard(for: column, configured: configured)
    }
}

/// Where a seed's converted rows go. The seeder reads the file and converts each field as its column asks; the sink
/// writes rows in the bulk form the database is fastest with (SQLite: multi-row `INSERT`s), and when the database
/// refuses one it names the row's line (`SeedRejection`).
public protocol SeedSink: AnyObject {
    /// Appends one row (its fields in the order of the sink's columns) read from `line` of the file, starting at
    /// byte `offset`; the sink may write it now or later. Text and blob bytes are valid only during the call.
    func append(_ row: UnsafePointer<ColumnValue>, line: Int, offset: Int) throws
    /// Writes what is still held and, in sync mode, deletes the rows the file does not have (refusing with a
    /// `SeedError` when other rows reference them). Returns the rows written: inserted or updated, not skipped.
    func finish() throws -> Int
    /// Removes what the sink set up in the database (sync's key table); called however the load ended.
    func close()
}

/// Rows a sink's database refused.
public struct SeedRejection: Error {
    /// Why the database refused the rows.
    public enum Cause: Sendable {
        /// This row was refused.
        case row
        /// A batch starting at this row was refused, though each of its rows alone was not.
        case batch
        /// The database rolled the whole transaction back after an error (disk full, I/O error): nothing of the
        /// seed is kept, and no later row may run on its own.
        case transactionLost
        /// This row has the same values in the key `columns` (table column names) as the row at `firstLine`: in a
        /// mode that matches rows by key, the later row would overwrite the earlier without a word.
        case duplicateKey(firstLine: Int, columns: [String])
    }

    /// Why the database refused the rows.
    public let cause: Cause
    /// The row's (or the batch's first row's) line and byte offset in the file; with `rowsAfter`, those of a row
    /// before it.
    public let line: Int
    /// The byte offset in the file of the row at `line`.
    public let offset: Int
    /// How many data rows after the row at `line` the refused row is. A sink that streams rows and hears of a
    /// refusal only later (PostgreSQL's COPY names the row by its number) keeps the place of every thousandth
    /// row, not of each; the seeder reads on from there to the row.
    public let rowsAfter: Int
    /// The column whose value the database refused, when it named one (a table column's name).
    public let column: String?
    /// The database's own error.
    public let error: DatabaseError

    /// Creates a rejection from what the database refused and where in the file.
    public init(cause: Cause, line: Int, offset: Int, rowsAfter: Int = 0, column: String? = nil, error: DatabaseError) {
        self.cause = cause
        self.line = line
        self.offset = offset
        self.rowsAfter = rowsAfter
        self.column = column
        self.error = error
    }
}
