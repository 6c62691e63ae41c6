import StrataCore

extension Statement: PreparedStatement {}

extension Database: DatabaseConnection {
    public var dialect: any SQLDialect { SQLiteDialect(dateStorage: configuration.dateStorage) }

    public func compile(_ sql: String) throws -> any PreparedStatement {
        try prepare(sql)
    }

    public func compileForReading(_ sql: String) throws -> any PreparedStatement {
        let statement = try cachedStatement(sql)
        statement.isBusy = true
        return statement
    }

    public func rows(_ sql: String, _ arguments: StatementArguments) throws -> [Row] {
        try query(sql, arguments).all()
    }

    public func withTransaction<T>(_ body: () throws -> T) throws -> T {
        try transaction(.deferred) { _ in try body() }
    }

    public func withSavepoint<T>(_ body: () throws -> T) throws -> T {
        try savepoint { _ in try body() }
    }

    public func declaredTableName(_ name: String) throws -> String? {
        try scalar("SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') AND name = ? COLLATE NOCASE",
                   [name], as: String.self)
    }
}
