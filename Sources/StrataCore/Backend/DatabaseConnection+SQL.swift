/// Statements written once for every backend: a string literal is an `SQL` fragment, its interpolated values bound
/// with the connection's own placeholders.
///
/// ```swift
/// try db.execute("UPDATE books SET copies = \(copies) WHERE isbn = \(isbn)")
/// let titles = try db.rows("SELECT title FROM books WHERE author_id = \(id)")
/// ```
/// SQL held in a `String` runs through the overloads that take it with its native arguments (`.none` for none), so
/// which overload a call picks shows in its shape: a literal alone is a fragment, text and arguments are native.
extension DatabaseConnection {
    /// Runs one statement, its interpolated values bound.
    public func execute(_ sql: SQL) throws {
        let (text, arguments) = sql.rendered(for: dialect)
        try execute(text, arguments)
    }

    /// Every row of one query, its interpolated values bound.
    public func rows(_ sql: SQL) throws -> [Row] {
        let (text, arguments) = sql.rendered(for: dialect)
        return try rows(text, arguments)
    }

    /// The first column of the first row as `T`, or nil when there is no row or the value is NULL.
    public func scalar<T: DatabaseValueConvertible>(_ sql: SQL, as type: T.Type = T.self) throws -> T? {
        let (text, arguments) = sql.rendered(for: dialect)
        return try scalar(text, arguments, as: T.self)
    }
}
