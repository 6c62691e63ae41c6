/// Inserting values as new rows: one at a time, or many in one transaction through one prepared statement where
/// the database's `RowWriter` allows it.
extension ModelStore {
    /// Inserts a value; returns the new row's rowid on SQLite (the key, for an integer primary key left nil), and
    /// on PostgreSQL the row's integer key (generated when left nil: an identity or `serial` column), 0 for a table
    /// without a one-column integer key.
    @discardableResult
    public func insert<T: Encodable>(_ value: T) throws -> Int64 {
        let layout = try layout(of: T.self)
        if writesGraph(layout) { return insertedKey(try writeGraph(value, layout: layout, .insert)) }
        return try insert(row: try encode(value), layout: layout)
    }

    /// Inserts a value that is not `Encodable`, reading its properties with `Mirror`.
    @discardableResult
    public func insert<T>(_ value: T) throws -> Int64 {
        let layout = try layout(of: T.self)
        if writesGraph(layout) { return insertedKey(try writeGraph(value, layout: layout, .insert)) }
        return try insert(row: try mirrorRow(value, typeName: Self.typeName(T.self)), layout: layout)
    }

    /// Inserts many values in one transaction (a savepoint when one is already open) through one prepared
    /// statement: all are inserted, or none.
    public func insert<S: Sequence>(contentsOf values: S) throws where S.Element: Encodable {
        let layout = try layout(of: S.Element.self)
        if writesGraph(layout) { return try writeGraphs(values, layout: layout, .insert) }
        let writer = try rowWriter(layout)
        if !writer.insertsBatchThroughOneStatement {
            let encoding = rowEncoding(layout.typeName)
            let statements = StatementCache()
            return try batch(layout, values, encode: { try encoding.encode($0) }) {
                _ = try insert(row: $0, layout: layout, statements: statements)
            }
        }
        try database.withSavepoint {
            var binding: BindingEncoding?
            var position = 0
            for value in values {
                position += 1
                try writing(position, of: layout) {
                    if binding == nil {
                        // The first value fixes the columns; every later one binds straight into the statement.
                        let row = try rowEncoding(layout.typeName).encode(value)
                        binding = BindingEncoding(statement: try database.compile(writer.insertSQL(layout, columns: columns(layout, row))),
                                                  typeName: layout.typeName, properties: row.properties,
                                                  datePrecision: database.dialect.datePrecision,
                                                  dateStorage: database.dialect.dateStorage)
                        binding?.fallback.dateStorageByProperty = mappings[layout.typeName]?.dateStorage ?? [:]
                    }
                    try binding?.bind(value)
                    try binding?.statement.run()
                }
            }
        }
    }

    /// Inserts many values that are not `Encodable`, via `Mirror`, in one transaction.
    public func insert<S: Sequence>(contentsOf values: S) throws {
        let layout = try layout(of: S.Element.self)
        if writesGraph(layout) { return try writeGraphs(values, layout: layout, .insert) }
        let writer = try rowWriter(layout)
        if !writer.insertsBatchThroughOneStatement {
            let statements = StatementCache()
            return try batch(layout, values, encode: { try mirrorRow($0, typeName: layout.typeName) }) {
                _ = try insert(row: $0, layout: layout, statements: statements)
            }
        }
        var statement: (any PreparedStatement)?
        try batch(layout, values, encode: { try mirrorRow($0, typeName: layout.typeName) }) { row in
            let insert = try statement ?? database.compile(writer.insertSQL(layout, columns: columns(layout, row)))
            statement = insert
            for (index, value) in row.values.enumerated() { try insert.bind(value, at: Int32(index + 1)) }
            try insert.run()
        }
    }

    /// Inserts one encoded row as the database's `RowWriter` does; returns what `insert` returns.
    func insert(row: EncodedRow, layout: ModelLayout, statements: StatementCache? = nil) throws -> Int64 {
        try rowWriter(layout).insert(row, layout: layout, into: database, statements: statements)
    }
}
