/// Writing values over rows by primary key: `update` (the row must exist) and `save` (update the row with the
/// value's key, or insert a new one), one at a time or many in one transaction.
extension ModelStore {
    /// Updates the row with the value's primary key; throws when there is no such row.
    public func update<T: Encodable>(_ value: T) throws {
        let layout = try layout(of: T.self)
        if writesGraph(layout) { _ = try writeGraph(value, layout: layout, .update); return }
        try update(row: try encode(value), layout: layout)
    }

    /// Updates the existing row of `value` (found by its primary key); fails when there is none.
    public func update<T>(_ value: T) throws {
        let layout = try layout(of: T.self)
        if writesGraph(layout) { _ = try writeGraph(value, layout: layout, .update); return }
        try update(row: try mirrorRow(value, typeName: Self.typeName(T.self)), layout: layout)
    }

    /// Inserts the value, or updates the row with its primary key when there is one. With relationships in the
    /// manifest, writes the value's whole graph in one savepoint (see the README's "Relationships").
    public func save<T: Encodable>(_ value: T) throws {
        let layout = try layout(of: T.self)
        if writesGraph(layout) { _ = try writeGraph(value, layout: layout, .save); return }
        try save(row: try encode(value), layout: layout)
    }

    /// Inserts `value`'s row, or updates it when one with its primary key exists.
    public func save<T>(_ value: T) throws {
        let layout = try layout(of: T.self)
        if writesGraph(layout) { _ = try writeGraph(value, layout: layout, .save); return }
        try save(row: try mirrorRow(value, typeName: Self.typeName(T.self)), layout: layout)
    }

    /// Inserts or updates many values in one transaction, each SQL statement prepared once.
    public func save<S: Sequence>(contentsOf values: S) throws where S.Element: Encodable {
        let layout = try layout(of: S.Element.self)
        if writesGraph(layout) { return try writeGraphs(values, layout: layout, .save) }
        let encoding = rowEncoding(layout.typeName)
        let statements = StatementCache()
        try batch(layout, values, encode: { try encoding.encode($0) }) { try save(row: $0, layout: layout, statements: statements) }
    }

    /// Updates the row with the value's key when the key is set and the row exists; inserts otherwise: as one
    /// statement that inserts or updates (`RowWriter.upsert`) where the database has one and the value has every
    /// column the table needs for a new row, else as an UPDATE then an INSERT (an upsert would not do: the database
    /// checks NOT NULL columns the type may not have before it looks for the conflict, so saving a value read back
    /// would fail). Returns the key the database generated when it inserted a row, nil when it updated one.
    @discardableResult
    func save(row: EncodedRow, layout: ModelLayout, statements: StatementCache? = nil) throws -> Int64? {
        let columns = columns(layout, row)
        try requireKey(layout, columns)
        let keyIsSet = zip(columns, row.values).allSatisfy { !layout.isPrimaryKey($0.0) || $0.1 != .null }
        let named = Set(columns.map(\.sqliteFolded))
        let coversNewRow = layout.columns.allSatisfy {
            !$0.isNotNull || $0.defaultSQL != nil || $0.isGenerated || named.contains($0.name.sqliteFolded)
        }
        if keyIsSet, coversNewRow,
           try rowWriter(layout).upsert(row, columns: columns, layout: layout, into: database, statements: statements) {
            return nil
        }
        if keyIsSet, try updateRow(row: row, layout: layout) { return nil }
        return try insert(row: row, layout: layout, statements: statements)
    }

    func update(row: EncodedRow, layout: ModelLayout) throws {
        guard try updateRow(row: row, layout: layout) else {
            let columns = columns(layout, row)
            let key = zip(columns, row.values).filter { layout.isPrimaryKey($0.0) }.map { "\($0.0) = \($0.1)" }
            throw MappingError(typeName: layout.typeName, value: key.joined(separator: ", "),
                               message: "no row has this primary key; use insert or save")
        }
    }

    /// True when a row with the value's key exists (and was updated).
    private func updateRow(row: EncodedRow, layout: ModelLayout) throws -> Bool {
        let columns = columns(layout, row)
        try requireKey(layout, columns)
        var sets: [String] = [], setValues: [DatabaseValue] = []
        var keys: [String] = [], keyValues: [DatabaseValue] = []
        for (column, value) in zip(columns, try row.parameters(layout, dialect: database.dialect)) {
            if layout.isPrimaryKey(column) {
                keys.append(quoteIdentifier(column))
                keyValues.append(value)
            } else {
                sets.append(quoteIdentifier(column))
                setValues.append(value)
            }
        }
        // Parameters are numbered in the order they are bound: the SET values, then the key's.
        let dialect = database.dialect
        sets = sets.enumerated().map { "\($1) = \(dialect.placeholder($0 + 1))" }
        keys = keys.enumerated().map { "\($1) = \(dialect.placeholder(sets.count + $0 + 1))" }
        if sets.isEmpty {
            // Only key columns: "updating" means the row exists.
            return try database.scalar("SELECT count(*) FROM \(quoteIdentifier(layout.table)) WHERE \(keys.joined(separator: " AND "))",
                                       .positional(keyValues), as: Int.self) ?? 0 > 0
        }
        try database.execute(try rowWriter(layout).updateSQL(layout, assignments: sets.joined(separator: ", "),
                                                             condition: keys.joined(separator: " AND ")),
                             .positional(setValues + keyValues))
        return database.changes > 0
    }
}
