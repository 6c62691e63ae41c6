/// The reading and condition entry points for `SQL` fragments: a literal condition binds what it interpolates, with
/// the connection's placeholders.
///
/// ```swift
/// let books = try store.fetchAll(Book.self, where: "author_id = \(id) ORDER BY published_on")
/// ```
/// Each renders the fragment and runs the `String` form with the arguments it binds.
extension ModelStore {
    /// Rows matching a condition, its interpolated values bound.
    @inlinable
    public func fetchAll<T: Decodable>(_ type: T.Type, where condition: SQL) throws -> [T] {
        let select = SQL(verbatim: try selectAll(T.self))
        return try fetchAll(T.self, sql: "\(sql: select) WHERE \(sql: condition)")
    }

    /// The first row matching a condition, or nil.
    @inlinable
    public func fetchFirst<T: Decodable>(_ type: T.Type, where condition: SQL) throws -> T? {
        let select = SQL(verbatim: try selectAll(T.self))
        return try fetchAll(T.self, sql: "\(sql: select) WHERE \(sql: condition) LIMIT 1").first
    }

    /// Rows of any query decoded into `T`, its interpolated values bound.
    @inlinable
    public func fetchAll<T: Decodable>(_ type: T.Type, sql: SQL) throws -> [T] {
        let (text, arguments) = sql.rendered(for: database.dialect)
        return try fetchAll(T.self, sql: text, arguments)
    }

    /// Decodes the rows of a query one at a time without collecting them.
    @inlinable
    public func forEach<T: Decodable>(_ type: T.Type, sql: SQL, _ body: (T) throws -> Void) throws {
        let (text, arguments) = sql.rendered(for: database.dialect)
        try forEach(T.self, sql: text, arguments, body)
    }

    /// The number of rows matching a condition.
    public func count<T>(_ type: T.Type, where condition: SQL) throws -> Int {
        let (text, arguments) = condition.rendered(for: database.dialect)
        return try count(T.self, where: text, arguments)
    }

    /// Deletes the rows matching a condition; returns how many.
    @discardableResult
    public func deleteAll<T>(_ type: T.Type, where condition: SQL) throws -> Int {
        let (text, arguments) = condition.rendered(for: database.dialect)
        return try deleteAll(T.self, where: text, arguments)
    }
}
