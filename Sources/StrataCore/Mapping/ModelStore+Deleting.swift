/// Deleting rows: the row of a value or a key, every row or those matching a condition, and with them what the
/// manifest says they own (`onRemove`, through `GraphWriting`).
extension ModelStore {
    /// Deletes the row with the value's primary key, and what the manifest says it owns (`onRemove`); returns
    /// whether a row was deleted.
    @discardableResult
    public func delete<T: Encodable>(_ value: T) throws -> Bool {
        try delete(row: try encode(value), layout: try layout(of: T.self))
    }

    /// Deletes the row of `value` (found by its primary key) and what its relationships remove with it; returns
    /// whether a row was deleted.
    @discardableResult
    public func delete<T>(_ value: T) throws -> Bool {
        try delete(row: try mirrorRow(value, typeName: Self.typeName(T.self)), layout: try layout(of: T.self))
    }

    /// Deletes the row with this primary key (a value, or a dictionary for composite keys).
    @discardableResult
    public func delete<T>(_ type: T.Type, key: any DatabaseValueConvertible) throws -> Bool {
        let layout = try layout(of: T.self)
        guard layout.primaryKey.count == 1 else {
            throw MappingError(typeName: layout.typeName, message: "needs a single-column primary key here")
        }
        return try delete(T.self, key: [layout.primaryKey[0]: key])
    }

    /// Deletes the row of `type` with the primary key `key`; returns whether a row was deleted.
    @discardableResult
    public func delete<T>(_ type: T.Type, key: [String: any DatabaseValueConvertible]) throws -> Bool {
        try delete(layout: try layout(of: T.self), key: key)
    }

    /// Deletes every row of the type's table; returns how many.
    @discardableResult
    public func deleteAll<T>(_ type: T.Type) throws -> Int {
        try deleteAll(layout: try layout(of: T.self), condition: nil, .none)
    }

    /// Deletes every row of `type` matching the SQL `condition` with its arguments; returns how many were deleted.
    @discardableResult
    public func deleteAll<T>(_ type: T.Type, where condition: String, _ arguments: StatementArguments) throws -> Int {
        try deleteAll(layout: try layout(of: T.self), condition: condition, arguments)
    }

    /// Deletes rows, and first what they own when the manifest says so, in one savepoint.
    private func deleteAll(layout: ModelLayout, condition: String?, _ arguments: StatementArguments) throws -> Int {
        let table = quoteIdentifier(layout.table)
        let filter = condition.map { " WHERE \($0)" } ?? ""
        guard ownsRows(layout) else {
            try database.execute("DELETE FROM \(table)\(filter)", arguments)
            return database.changes
        }
        try requireAcyclicRelationships()
        guard layout.primaryKey.count == 1 else {
            throw MappingError(typeName: layout.typeName, message: "deleting what a \(layout.typeName) owns needs a one-column primary key")
        }
        // The condition is evaluated once, into keys: run again after the owned rows are gone, a condition that
        // reads them (dialogs holding spam) would match other rows, or none.
        try requireUniqueKey(layout)
        let key = quoteIdentifier(layout.primaryKey[0])
        return try database.withSavepoint {
            var keys = try database.rows("SELECT \(key) FROM \(table)\(filter)", arguments).map { $0[0] }
            var deleted = 0
            // A NULL key (SQLite allows one outside an INTEGER PRIMARY KEY) names no row and owns none.
            if keys.contains(.null) {
                guard condition == nil else {
                    throw MappingError(typeName: layout.typeName, column: layout.primaryKey[0],
                                       message: "rows matching the condition have a NULL key, so they cannot be deleted by key with what they own; nothing was deleted")
                }
                keys.removeAll { $0 == .null }
                try database.execute("DELETE FROM \(table) WHERE \(key) IS NULL", .none)
                deleted += database.changes
            }
            for list in KeyList.lists(of: keys, dialect: database.dialect) {
                try deleteOwned(layout, keys: list.placeholders, .positional(list.values))
                try database.execute("DELETE FROM \(table) WHERE \(key) IN (\(list.placeholders))", .positional(list.values))
                deleted += database.changes
            }
            return deleted
        }
    }

    private func delete(row: EncodedRow, layout: ModelLayout) throws -> Bool {
        let columns = columns(layout, row)
        try requireKey(layout, columns)
        var key: [String: any DatabaseValueConvertible] = [:]
        for (column, value) in zip(columns, row.values) where layout.isPrimaryKey(column) { key[column] = value }
        return try delete(layout: layout, key: key)
    }

    func delete(layout: ModelLayout, key: [String: any DatabaseValueConvertible]) throws -> Bool {
        if ownsRows(layout) { return try deleteGraph(layout, key: key) }
        return try deleteRow(layout: layout, key: key)
    }

    /// Deletes one row by its key, nothing else.
    func deleteRow(layout: ModelLayout, key: [String: any DatabaseValueConvertible]) throws -> Bool {
        try requireUniqueKey(layout)
        let (condition, arguments) = try keyCondition(layout, key)
        try database.execute("DELETE FROM \(quoteIdentifier(layout.table)) WHERE \(condition)", arguments)
        return database.changes > 0
    }
}
