/// Reading rows into values: every row of a type's table, rows matching a condition, any query's rows, one row by
/// its primary key, and counts.
extension ModelStore {
    // The reading entry points are inlinable so that a caller's module specializes them for its model type:
    // appending decoded values to an array of a concrete type costs a fraction of the generic path's
    // value-witness calls.

    /// Every row of the type's table.
    @inlinable
    public func fetchAll<T: Decodable>(_ type: T.Type) throws -> [T] {
        try fetchAll(T.self, sql: try selectAll(T.self), .none)
    }

    /// Rows matching an SQL condition, with arguments in the backend's native placeholders.
    @inlinable
    public func fetchAll<T: Decodable>(_ type: T.Type, where condition: String,
                                       _ arguments: StatementArguments) throws -> [T] {
        try fetchAll(T.self, sql: try selectAll(T.self) + " WHERE \(condition)", arguments)
    }

    /// The first row matching an SQL condition, or nil.
    @inlinable
    public func fetchFirst<T: Decodable>(_ type: T.Type, where condition: String,
                                         _ arguments: StatementArguments) throws -> T? {
        try fetchAll(T.self, sql: try selectAll(T.self) + " WHERE \(condition) LIMIT 1", arguments).first
    }

    /// Rows of any query (joins, projections) decoded into `T`; result columns match properties by the same rules.
    @inlinable
    public func fetchAll<T: Decodable>(_ type: T.Type, sql: String, _ arguments: StatementArguments) throws -> [T] {
        var result: [T] = []
        try forEach(T.self, sql: sql, arguments) { result.append($0) }
        return result
    }

    /// Decodes rows one at a time without collecting them.
    @inlinable
    public func forEach<T: Decodable>(_ type: T.Type, sql: String, _ arguments: StatementArguments,
                                      _ body: (T) throws -> Void) throws {
        // Decided once, not per row (and at compile time where `T` is known).
        if DecodingContext.readsRowAsOneValue(T.self) {
            return try forEachValue(T.self, sql: sql, arguments, body)
        }
        try decodeRows(T.self, sql: sql, arguments) { decoder, context in
            while try context.nextRow() {
                try body(try T(from: decoder))
            }
        }
    }

    /// `forEach` for a type the mapper reads from a row's first column itself (`DecodingContext.readsRowAsOneValue`).
    @usableFromInline
    func forEachValue<T: Decodable>(_ type: T.Type, sql: String, _ arguments: StatementArguments,
                                    _ body: (T) throws -> Void) throws {
        try decodeRows(T.self, sql: sql, arguments) { _, context in
            while try context.nextRow() {
                try body(try context.decodeRowAsOneValue(T.self))
            }
        }
    }

    /// `SELECT * FROM` the type's table.
    @usableFromInline
    func selectAll<T>(_ type: T.Type) throws -> String {
        "SELECT * FROM \(quoteIdentifier(try layout(of: T.self).table))"
    }

    @usableFromInline
    func decodeRows<T>(_ type: T.Type, sql: String, _ arguments: StatementArguments,
                       _ body: (any Decoder, DecodingContext) throws -> Void) throws {
        let statement = try database.compileForReading(sql)
        do {
            try statement.bind(arguments)
            // The result's own layout, read next, needs no description of the statement beforehand.
            try statement.start()
        } catch {
            statement.reset()
            throw error
        }
        let layout = try? layout(of: T.self)
        let context: DecodingContext
        if let layout, layout.mapping?.relationships.isEmpty == false {
            // Relationships load for all rows at once before the first is decoded (`GraphReading`).
            try requireAcyclicRelationships()
            let rows = try BufferedStatement(reading: statement)
            context = DecodingContext(statement: rows, typeName: Self.typeName(T.self), layout: layout,
                                      dateStorage: database.dialect.dateStorage)
            context.graph = GraphReading(store: self, typeName: Self.typeName(T.self), layout: layout, rows: rows)
        } else {
            context = DecodingContext(statement: statement, typeName: Self.typeName(T.self), layout: layout,
                                      dateStorage: database.dialect.dateStorage)
        }
        defer {
            context.finish()
            statement.reset()
        }
        // Boxed once here rather than once per row by each `T(from:)` call.
        let decoder: any Decoder = RowDecoder(context: context)
        try body(decoder, context)
    }

    /// Decodes the rows of a query with the value of one of their columns (which `T` need not have): how related
    /// rows are filed under the key they name.
    func decodeGrouped<T: Decodable>(_ type: T.Type, sql: String, _ arguments: StatementArguments, groupColumn: String,
                                     _ body: (DatabaseValue, T) throws -> Void) throws {
        try decodeRows(T.self, sql: sql, arguments) { decoder, context in
            guard let index = context.statement.layout.index(of: groupColumn) else {
                throw MappingError(typeName: Self.typeName(T.self), column: groupColumn,
                                   message: "has no column in the result (columns: \(context.statement.layout.names.joined(separator: ", ")))")
            }
            while try context.nextRow() {
                let group = context.statement.value(at: Int32(index))
                try body(group, try T(from: decoder))
            }
        }
    }

    /// The row with this primary key (single-column keys).
    public func find<T: Decodable>(_ type: T.Type, key: any DatabaseValueConvertible) throws -> T? {
        let layout = try layout(of: T.self)
        guard layout.primaryKey.count == 1 else {
            throw MappingError(typeName: layout.typeName, message: layout.primaryKey.isEmpty
                ? "has no primary key (declare one in the table or the manifest's primaryKey)"
                : "has a composite primary key (\(layout.primaryKey.joined(separator: ", "))); pass find(_:key:) a dictionary")
        }
        return try find(T.self, key: [layout.primaryKey[0]: key])
    }

    /// The row with this composite primary key, given by column or property name.
    public func find<T: Decodable>(_ type: T.Type, key: [String: any DatabaseValueConvertible]) throws -> T? {
        let layout = try layout(of: T.self)
        let (condition, arguments) = try keyCondition(layout, key)
        return try fetchAll(T.self, sql: "SELECT * FROM \(quoteIdentifier(layout.table)) WHERE \(condition) LIMIT 1",
                            arguments).first
    }

    /// The number of rows in `type`'s table.
    public func count<T>(_ type: T.Type) throws -> Int {
        let layout = try layout(of: T.self)
        return try database.scalar("SELECT count(*) FROM \(quoteIdentifier(layout.table))", .none, as: Int.self) ?? 0
    }

    /// The number of rows in `type`'s table matching the SQL `condition` with its arguments.
    public func count<T>(_ type: T.Type, where condition: String, _ arguments: StatementArguments) throws -> Int {
        let layout = try layout(of: T.self)
        return try database.scalar("SELECT count(*) FROM \(quoteIdentifier(layout.table)) WHERE \(condition)",
                                   arguments, as: Int.self) ?? 0
    }
}
