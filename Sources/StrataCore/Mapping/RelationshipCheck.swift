/// Checks a model's relationships against the live schema: the foreign key column exists, has a foreign key
/// constraint or at least an index (without either, every load scans the table and nothing stops a dangling key),
/// and stores the same kind of value as the key it names (else rows the database matches would be filed under no
/// parent). Returns one message per problem, each starting with `Type.property`.
func relationshipProblems(_ model: ModelMapping, layout: ModelLayout, layoutOf: (String) throws -> ModelLayout?,
                          database: any DatabaseConnection) throws -> [String] {
    var problems: [String] = []
    for relationship in model.relationships {
        let name = "\(model.typeName).\(relationship.property)"
        guard let other = try layoutOf(relationship.model) else {
            problems.append("\(name): no <model type=\"\(relationship.model)\"> maps the model it names")
            continue
        }
        guard !other.columns.isEmpty else {
            problems.append("\(name): table '\(other.table)' of model \(relationship.model) does not exist")
            continue
        }
        // hasMany: the child's column names this model's key; belongsTo: this model's column names the other's.
        let (holder, referenced) = relationship.kind == .hasMany ? (other, layout) : (layout, other)
        guard referenced.primaryKey.count == 1, let key = referenced.columns.named(referenced.primaryKey[0]) else {
            problems.append("\(name): \(referenced.typeName) needs a one-column primary key for a relationship to name (table '\(referenced.table)' has \(referenced.primaryKey.isEmpty ? "none" : referenced.primaryKey.joined(separator: ", ")))")
            continue
        }
        guard let column = holder.columns.named(relationship.foreignKey) else {
            problems.append("\(name): table '\(holder.table)' has no column '\(relationship.foreignKey)' (it has: \(holder.columns.map(\.name).joined(separator: ", ")))")
            continue
        }
        let links = try database.links(of: column.name, in: holder.table)
        if !links.hasForeignKey && !links.isIndexed {
            problems.append("\(name): column '\(holder.table).\(column.name)' has neither a foreign key nor an index; add REFERENCES \(referenced.table)(\(key.name)), or at least CREATE INDEX … ON \(holder.table)(\(column.name))")
        }
        if !(try database.links(of: key.name, in: referenced.table).comparesExactly) {
            problems.append("\(name): the key '\(referenced.table).\(key.name)' compares with a collation that folds case or accents, so a value saved as 'A' updates the row 'a' while its children are filed under 'A'; give it an exact collation")
        }
        if !links.comparesExactly {
            problems.append("\(name): column '\(holder.table).\(column.name)' compares with a collation that folds case or accents, so keys that differ ('a', 'A') match each other's rows; give it an exact collation (BINARY on SQLite, a deterministic one and not citext on PostgreSQL)")
        }
        if column.affinity != key.affinity && !(column.declaredType.isEmpty) {
            problems.append("\(name): column '\(holder.table).\(column.name)' is \(column.declaredType) (\(column.affinity.rawValue)) but the key it names, '\(referenced.table).\(key.name)', is \(key.declaredType) (\(key.affinity.rawValue)); make them the same type")
        }
        if relationship.kind == .hasMany, relationship.onRemove == .detach, column.isNotNull {
            problems.append("\(name): onRemove=\"detach\" sets '\(holder.table).\(column.name)' to NULL, but the column is NOT NULL")
        }
        for order in relationship.orderBy where other.columns.named(order.column) == nil {
            problems.append("\(name): orderBy names '\(order.column)', which table '\(other.table)' does not have")
        }
    }
    return problems
}
