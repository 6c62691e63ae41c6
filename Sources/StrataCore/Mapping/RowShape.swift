/// Where a type's properties are stored: each property's column, its declared type where the dialect may need to
/// turn the value into another form (`SQLDialect.parameter`), and whether it is a key the database generates.
package struct RowShape {
    package let properties: [String]
    package let columns: [String]
    package let declaredTypes: [String?]
    package let isGeneratedKey: [Bool]

    package init(_ layout: ModelLayout, _ properties: [String]) {
        self.properties = properties
        columns = properties.map(layout.column(for:))
        let infos = columns.map { layout.columns.named($0) }
        declaredTypes = infos.map { $0?.storageType }
        isGeneratedKey = zip(columns, infos).map { layout.isPrimaryKey($0) && $1?.isGenerated == true }
    }
}

extension EncodedRow {
    /// The row's values as parameters for their columns (`SQLDialect.parameter`); an error names the property.
    package func parameters(_ layout: ModelLayout, dialect: any SQLDialect, _ shape: RowShape? = nil) throws -> [DatabaseValue] {
        let shape = shape ?? RowShape(layout, properties)
        var values = values
        for index in values.indices {
            guard index < shape.declaredTypes.count, let declared = shape.declaredTypes[index] else { continue }
            do {
                values[index] = try dialect.parameter(values[index], forColumnOfType: declared)
            } catch let error as DatabaseError {
                throw MappingError(typeName: layout.typeName, property: properties[index], value: "\(values[index])",
                                   message: error.message)
            }
        }
        return values
    }
}
