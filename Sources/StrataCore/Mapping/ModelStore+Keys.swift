/// Writing by primary key: the key a write needs (present, and unique in the table), and the condition that
/// finds a row by it.
extension ModelStore {
    /// Refuses to write by a key that several rows may share: one call would change every one of them.
    func requireUniqueKey(_ layout: ModelLayout) throws {
        guard !layout.primaryKey.isEmpty else {
            throw MappingError(typeName: layout.typeName,
                               message: "has no primary key (declare one in table '\(layout.table)' or the manifest's primaryKey)")
        }
        guard layout.keyIsUnique else {
            throw MappingError(typeName: layout.typeName, message: layout.keyNotUniqueMessage)
        }
    }

    func requireKey(_ layout: ModelLayout, _ columns: [String]) throws {
        try requireUniqueKey(layout)
        let lowered = Set(columns.map(\.sqliteFolded))
        let missing = layout.primaryKey.filter { !lowered.contains($0.sqliteFolded) }
        guard missing.isEmpty else {
            throw MappingError(typeName: layout.typeName,
                               message: "has no property for primary key column \(missing.joined(separator: ", "))")
        }
    }

    /// `"a" = ? AND "b" = ?` over the layout's primary key, and its values, from a key given by column or property
    /// name; throws for a key that misses a column or names another.
    func keyCondition(_ layout: ModelLayout, _ key: [String: any DatabaseValueConvertible]) throws
        -> (String, StatementArguments) {
        var values: [DatabaseValue] = []
        var terms: [String] = []
        var named: [String: any DatabaseValueConvertible] = [:]
        for (name, value) in key { named[layout.column(for: name).sqliteFolded] = value }
        for column in layout.primaryKey {
            guard let value = named.removeValue(forKey: column.sqliteFolded) else {
                throw MappingError(typeName: layout.typeName, column: column, message: "the key has no value for this column")
            }
            switch database.dialect.checkedParameter(value) {
            case .success(let checked): values.append(checked)
            case .failure(let error):
                throw MappingError(typeName: layout.typeName, column: column, value: "\(value)", message: error.message)
            }
            terms.append("\(quoteIdentifier(column)) = \(database.dialect.placeholder(values.count))")
        }
        guard named.isEmpty, !terms.isEmpty else {
            throw MappingError(typeName: layout.typeName, value: named.keys.sorted().joined(separator: ", "),
                               message: "is not the primary key (\(layout.primaryKey.joined(separator: ", ")))")
        }
        return (terms.joined(separator: " AND "), .positional(values))
    }
}
