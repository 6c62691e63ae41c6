/// Reading `<model>`: the table, key and columns a Swift type maps to, how its dates are stored, and its
/// relationships (`<hasMany>`, `<belongsTo>`).
extension ManifestLoader {
    mutating func readModel(_ element: XMLElement, _ context: Context) {
        guard let type = element.attribute("type") else { return }
        var primaryKey: [String] = []
        if let text = element.attribute("primaryKey") {
            primaryKey = Self.list(text)
            if primaryKey.isEmpty { problem(element, "primaryKey is empty; name one or more columns, separated by commas") }
        }
        var columns: [String: String] = [:]
        var dateStorage: [String: DateStorage] = [:]
        var properties: Set<String> = []
        for child in element.children where child.name == "property" {
            guard let name = child.attribute("name") else { continue }
            guard properties.insert(name).inserted else {
                problem(child, "property '\(name)' of \(type) is mapped twice")
                continue
            }
            let column = child.attribute("column")
            let storage = child.attribute("dateStorage")
            if column == nil && storage == nil {
                problem(child, "property '\(name)' of \(type) says nothing: give it a column, a dateStorage, or both")
            }
            if let column { columns[name] = column }
            if let storage {
                if let parsed = DateStorage(manifestName: storage) {
                    dateStorage[name] = parsed
                } else {
                    problem(child, "dateStorage=\"\(storage)\" is not one of iso8601Text, unixSeconds, julianDay")
                }
            }
        }
        let mappedColumns = columns.values.map(\.sqliteFolded)
        if Set(mappedColumns).count != mappedColumns.count {
            problem(element, "two properties of \(type) map to the same column")
        }
        var relationships: [Relationship] = []
        for child in element.children {
            guard let kind = Relationship.Kind(rawValue: child.name),
                  let relationship = readRelationship(child, kind, of: type) else { continue }
            if columns[relationship.property] != nil {
                problem(child, "property '\(relationship.property)' of \(type) is mapped to a column and is a relationship; it is one or the other")
            } else if relationships.contains(where: { $0.property == relationship.property }) {
                problem(child, "property '\(relationship.property)' of \(type) is declared twice")
            } else {
                relationships.append(relationship)
            }
        }
        for name in dateStorage.keys where relationships.contains(where: { $0.property == name }) {
            problem(element, "property '\(name)' of \(type) is a relationship; a dateStorage applies to a Date property")
        }
        models.append(ModelMapping(typeName: type, table: element.attribute("table"), primaryKey: primaryKey,
                                   columns: columns, dateStorage: dateStorage, relationships: relationships,
                                   location: element.location))
    }

    /// A `<hasMany>` or `<belongsTo>`: which model, through which column; `orderBy` and `onRemove` only on `hasMany`.
    private mutating func readRelationship(_ element: XMLElement, _ kind: Relationship.Kind, of type: String) -> Relationship? {
        guard let property = element.attribute("property"), let model = element.attribute("model"),
              let foreignKey = element.attribute("foreignKey") else { return nil }
        var order: [Relationship.Order] = []
        if let text = element.attribute("orderBy") {
            if kind == .belongsTo {
                problem(element, "orderBy applies to hasMany; a belongsTo holds one row")
            } else if let terms = Relationship.orderTerms(text) {
                order = terms
            } else {
                problem(element, "orderBy=\"\(text)\" is not a list of columns, each optionally followed by ASC or DESC (e.g. \"sent_at, id DESC\")")
            }
        }
        var onRemove = Relationship.OnRemove.keep
        if let text = element.attribute("onRemove") {
            if kind == .belongsTo {
                problem(element, "onRemove applies to hasMany; a belongsTo does not own the row it names")
            } else if let parsed = Relationship.OnRemove(rawValue: text) {
                onRemove = parsed
            } else {
                problem(element, "onRemove=\"\(text)\" is not one of keep, delete, detach")
            }
        }
        return Relationship(kind: kind, property: property, model: model, foreignKey: foreignKey, orderBy: order,
                            onRemove: onRemove, location: element.location)
    }
}
