/// How a Swift type maps onto a table; anything not stated follows the default naming rules.
public struct ModelMapping: Sendable, Equatable {
    /// The Swift type's name, as `String(describing:)` gives it.
    public let typeName: String
    /// The table; nil: the type's name in snake case.
    public let table: String?
    /// The primary key columns; empty: the table's declared primary key.
    public let primaryKey: [String]
    /// Property name to column name.
    public let columns: [String: String]
    /// Properties whose dates are stored otherwise than the database's `dateStorage`, by property name.
    public let dateStorage: [String: DateStorage]
    /// Properties that hold other models' rows (`<hasMany>`, `<belongsTo>`).
    public let relationships: [Relationship]
    /// Where the manifest declares the mapping; nil for one made in code.
    public let location: SourceLocation?

    /// Creates a mapping; what it leaves out follows the default naming rules.
    public init(typeName: String, table: String? = nil, primaryKey: [String] = [], columns: [String: String] = [:],
                dateStorage: [String: DateStorage] = [:], relationships: [Relationship] = [],
                location: SourceLocation? = nil) {
        self.typeName = typeName
        self.table = table
        self.primaryKey = primaryKey
        self.columns = columns
        self.dateStorage = dateStorage
        self.relationships = relationships
        self.location = location
    }

    /// The relationship a property holds, if it is one.
    public func relationship(_ property: String) -> Relationship? {
        relationships.first { $0.property == property }
    }
}
