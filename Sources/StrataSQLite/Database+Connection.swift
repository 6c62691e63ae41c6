import StrataCore

extension Statement: PreparedStatement {}

extension Database: DatabaseConnection {
    /// SQLite's dialect, storing dates as the configuration says.
    public var dialect: any SQLDialect { SQLiteDialect(dateStorage: configuration.dateStorage) }

    /// A prepared statement on this connection.
    public func compile(_ sql: String) throws -> any PreparedStatement {
        try prepare(sql)
    }

    /// A prepared statement on this connection that fails unless it only reads.
    public func compileForReading(_ sql: String) throws -> any PreparedStatement {
        let statement = try cachedStatement(sql)
        statement.isBusy = true
        return statement
    }

    /// Every row one statement returns.
    public func rows(_ sql: String, _ arguments: StatementArguments) throws -> [Row] {
        try query(sql, arguments).all()
    }

    /// Runs `body` in a deferred transaction.
    public func withTransaction<T>(_ body: () throws -> T) throws -> T {
        try transaction(.deferred) { _ in try body() }
    }

    /// Runs `body` in a savepoint.
    public func withSavepoint<T>(_ body: () throws -> T) throws -> T {
        try savepoint { _ in try body() }
    }

    /// The table's name as declared, when a table with that name (in any case) exists.
    public func declaredTableName(_ name: String) throws -> String? {
        try scalar("SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') AND name = ? COLLATE NOCASE",
                   [name], as: String.self)
    }
}
