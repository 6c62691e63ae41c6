/// Where a seed's rows go: one table of one database, written the way the seed's mode asks. The seeder reads,
/// converts and binds the rows and finds a failing row's line; the target knows the database's SQL for inserting,
/// upserting and syncing.
public protocol SeedTarget: AnyObject {
    /// The database's name, for messages ("SQLite").
    var databaseName: String { get }
    /// The table's columns in order; empty when the table does not exist.
    var columns: [ColumnInfo] { get }
    /// The most parameters one statement may have: a batch binds rows × columns.
    var maximumParameters: Int { get }
    /// A statement writing `rows` rows of `columns` as the seed's mode asks; row r's field c is parameter
    /// r × columns.count + c + 1. Fails when the seed's key is not a key of the table.
    func insertStatement(columns: [String], rows: Int) throws -> any PreparedStatement
    /// Sync mode: a statement recording one row's key (its key fields as parameters, in key order), so that
    /// `deleteRowsNotRecorded` keeps exactly the rows the file has.
    func keyRecorder(keyColumns: [ColumnInfo]) throws -> any PreparedStatement
    /// Sync mode: deletes the table's rows whose key was not recorded, refusing (a `SeedError` naming them) when
    /// other rows reference one of them.
    func deleteRowsNotRecorded(keyColumns: [String]) throws
    /// Removes what the target set up for the load (sync's key table).
    func finish()
    /// Rows the most recent insert statement wrote (not counting what triggers did).
    var changes: Int { get }
    /// True when the database ended the seed's transaction by itself after an error.
    var transactionLost: Bool { get }
}
