import StrataCore

/// How `ModelStore` writes rows on PostgreSQL: a key column left NULL that the database generates is left out of
/// the INSERT (NULL into an identity column is an error) and the key read back with `RETURNING`; a value given for
/// such a column goes in with `OVERRIDING SYSTEM VALUE`; `save` is one `INSERT … ON CONFLICT (key) DO UPDATE`; each
/// value goes through `parameter` for its column; and a batch runs one statement per set of columns.
extension PostgresDialect: RowWriter {
    package func insert(_ row: EncodedRow, layout: ModelLayout, into database: any DatabaseConnection,
                        statements: StatementCache?) throws -> Int64 {
        try insertReturningKey(row, layout: layout, conflict: "", into: database, statements: statements)
    }

    /// The key `RETURNING` read, as `insert` returned it.
    package func generatedKey(_ inserted: Int64, column: String, layout: ModelLayout,
                              database: any DatabaseConnection) throws -> DatabaseValue? {
        .integer(inserted)
    }

    package func upsert(_ row: EncodedRow, columns: [String], layout: ModelLayout, into database: any DatabaseConnection,
                        statements: StatementCache?) throws -> Bool {
        let keys = columns.filter(layout.isPrimaryKey).map(quoteIdentifier).joined(separator: ", ")
        let sets = columns.filter { !layout.isPrimaryKey($0) }.map { "\(quoteIdentifier($0)) = EXCLUDED.\(quoteIdentifier($0))" }
        let conflict = " ON CONFLICT (\(keys)) " + (sets.isEmpty ? "DO NOTHING" : "DO UPDATE SET " + sets.joined(separator: ", "))
        _ = try insertReturningKey(row, layout: layout, conflict: conflict, into: database, statements: statements)
        return true
    }

    /// The columns an insert names depend on the value: a generated key left NULL is left out.
    package var insertsBatchThroughOneStatement: Bool { false }

    package func insertSQL(_ layout: ModelLayout, columns: [String]) -> String {
        insertSQL(layout, columns: columns, conflict: "").sql
    }

    package func updateSQL(_ layout: ModelLayout, assignments: String, condition: String) -> String {
        "UPDATE \(quoteIdentifier(layout.table)) SET \(assignments) WHERE \(condition)"
    }

    /// An insert naming the row's columns except key columns left NULL that the database generates, reading back
    /// a one-column integer key; `conflict` follows the VALUES. In a batch, where the columns are and what each
    /// needs is worked out once per type, and the SQL once per set of columns.
    private func insertReturningKey(_ row: EncodedRow, layout: ModelLayout, conflict: String,
                                    into database: any DatabaseConnection, statements: StatementCache?) throws -> Int64 {
        let shape = statements?.shape(for: row.properties) { RowShape(layout, $0) } ?? RowShape(layout, row.properties)
        let parameters = try row.parameters(layout, dialect: self, shape)
        var kept: [Int] = [], values: [DatabaseValue] = []
        kept.reserveCapacity(parameters.count)
        values.reserveCapacity(parameters.count)
        for (index, value) in parameters.enumerated() where !(value == .null && shape.isGeneratedKey[index]) {
            kept.append(index)
            values.append(value)
        }
        let (sql, returnsKey) = statements?.insert(kept: kept, conflict: conflict) {
            insertSQL(layout, columns: kept.map { shape.columns[$0] }, conflict: conflict)
        } ?? insertSQL(layout, columns: kept.map { shape.columns[$0] }, conflict: conflict)
        guard let statements else {
            guard returnsKey else {
                try database.execute(sql, .positional(values))
                return 0
            }
            return try database.scalar(sql, .positional(values), as: Int64.self) ?? 0
        }
        // In a batch, the statement for these columns is compiled once and run for every value that names them.
        let statement = try statements.statement(sql) { try database.compile(sql) }
        try statement.bind(.positional(values))
        guard returnsKey else {
            try statement.run()
            return 0
        }
        defer { statement.reset() }
        guard try statement.step(), case .integer(let generated) = statement.value(at: 0) else { return 0 }
        return generated
    }

    /// The INSERT naming `columns`, and whether it reads a one-column integer key back.
    private func insertSQL(_ layout: ModelLayout, columns: [String], conflict: String) -> (sql: String, returnsKey: Bool) {
        let table = quoteIdentifier(layout.table)
        // A value given for a column the database generates (a key read back, saved again) is the row's, also
        // where the column is GENERATED ALWAYS.
        let overriding = columns.contains { layout.columns.named($0)?.isGenerated == true } ? " OVERRIDING SYSTEM VALUE" : ""
        var sql = columns.isEmpty ? "INSERT INTO \(table) DEFAULT VALUES"
            : "INSERT INTO \(table) (\(columns.map(quoteIdentifier).joined(separator: ", ")))\(overriding) VALUES ("
                + columns.indices.map { placeholder($0 + 1) }.joined(separator: ", ") + ")"
        sql += conflict
        let key = layout.primaryKey.count == 1 ? layout.columns.named(layout.primaryKey[0]) : nil
        let returnsKey = key?.affinity == .integer
        if let key, returnsKey { sql += " RETURNING \(quoteIdentifier(key.name))" }
        return (sql, returnsKey)
    }
}
