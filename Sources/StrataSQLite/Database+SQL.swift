import StrataCore

/// SQLite's reading calls for `SQL` fragments (`execute(_: SQL)` and `rows(_: SQL)` come with `DatabaseConnection`).
extension Database {
    /// A lazy cursor over the rows of one query, its interpolated values bound.
    public func query(_ sql: SQL) throws -> RowCursor {
        let (text, arguments) = sql.rendered(for: dialect)
        return try query(text, arguments)
    }

    /// The first column of the first row as `T`, or nil when there is no row or the value is NULL. Reads only that
    /// row, where the `DatabaseConnection` form collects every row first.
    public func scalar<T: DatabaseValueConvertible>(_ sql: SQL, as type: T.Type = T.self) throws -> T? {
        let (text, arguments) = sql.rendered(for: dialect)
        return try scalar(text, arguments, as: T.self)
    }
}
