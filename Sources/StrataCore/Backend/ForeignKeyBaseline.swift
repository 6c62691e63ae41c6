/// Foreign key violations that were in the database before a run, which a step is not blamed for.
public protocol ForeignKeyBaseline: AnyObject {
    /// How many violations it excuses.
    var count: Int { get }
    /// The violations now that it does not excuse; it narrows to those still there, for the next step.
    func newViolations() throws -> [ForeignKeyViolation]
}

/// One foreign key violation: the row (where the database can name it) and the parent it should refer to.
public struct ForeignKeyViolation: Sendable, Hashable, CustomStringConvertible {
    /// The table holding the violating row.
    public let table: String
    /// The row's id, or nil where the table has none (SQLite's WITHOUT ROWID tables).
    public let rowid: Int64?
    /// The table the row's foreign key refers to.
    public let parent: String
    /// Which of the table's foreign keys.
    public let constraint: Int

    /// Creates a violation as the database reported it.
    public init(table: String, rowid: Int64?, parent: String, constraint: Int) {
        self.table = table
        self.rowid = rowid
        self.parent = parent
        self.constraint = constraint
    }

    /// The table, the row where known, and the parent it should refer to, for messages.
    public var description: String {
        "\(table) row \(rowid.map(String.init) ?? "(without rowid)") references a missing row in \(parent)"
    }
}
