/// A property of a model that holds other models' rows: a `<hasMany>` (an array of the rows whose foreign key names
/// this row's key) or a `<belongsTo>` (the row this row's foreign key names).
///
/// ```xml
/// <model type="Dialog" table="dialogs">
///   <hasMany property="messages" model="Message" foreignKey="dialog_id" orderBy="sent_at" onRemove="delete"/>
/// </model>
/// <model type="Message" table="messages">
///   <belongsTo property="sender" model="Member" foreignKey="sender_id"/>
/// </model>
/// ```
public struct Relationship: Sendable, Equatable {
    /// Which side of the foreign key the property is on.
    public enum Kind: String, Sendable, Equatable {
        /// The property is an array of `model` rows whose `foreignKey` column holds this row's key.
        case hasMany
        /// The property is the `model` row whose key this row's `foreignKey` column holds.
        case belongsTo
    }

    /// What `save` does with a `hasMany` child that is in the database but no longer in the array.
    public enum OnRemove: String, Sendable, Equatable {
        /// Left alone (the default): saving a value loaded without its children never touches them.
        case keep
        /// Deleted, with what it owns in turn.
        case delete
        /// Its foreign key set to NULL.
        case detach
    }

    /// One `orderBy` term: a column of the child table, ascending unless `descending`.
    public struct Order: Sendable, Equatable {
        /// The child table's column.
        public let column: String
        /// Whether the order is descending.
        public let descending: Bool
    }

    /// Whether the property holds many children or one parent.
    public let kind: Kind
    /// The Swift property holding the related rows.
    public let property: String
    /// The `<model type="…">` the property holds.
    public let model: String
    /// `hasMany`: the child table's column holding the parent's key; `belongsTo`: this table's column holding the
    /// referenced row's key.
    public let foreignKey: String
    /// `hasMany`: the children's order in the array (after it, their primary key keeps the order stable).
    public let orderBy: [Order]
    /// What saving does to a child that is no longer in the array.
    public let onRemove: OnRemove
    /// Where the manifest declares the relationship; nil for one made in code.
    public let location: SourceLocation?

    /// Creates a relationship, as a `<hasMany>` or `<belongsTo>` element declares one.
    public init(kind: Kind, property: String, model: String, foreignKey: String, orderBy: [Order] = [],
                onRemove: OnRemove = .keep, location: SourceLocation? = nil) {
        self.kind = kind
        self.property = property
        self.model = model
        self.foreignKey = foreignKey
        self.orderBy = orderBy
        self.onRemove = onRemove
        self.location = location
    }

    /// The terms of an `orderBy` attribute (`sent_at, id DESC`), or nil when one is not a column name with an
    /// optional `ASC`/`DESC`.
    static func orderTerms(_ text: String) -> [Order]? {
        var terms: [Order] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let words = part.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).map(String.init)
            guard let column = words.first, words.count <= 2 else { return nil }
            var descending = false
            if words.count == 2 {
                switch words[1].uppercased() {
                case "ASC": descending = false
                case "DESC": descending = true
                default: return nil
                }
            }
            terms.append(Order(column: column, descending: descending))
        }
        return terms.isEmpty ? nil : terms
    }
}

/// The relationships of a set of models seen as a graph of types: which model's values hold which.
enum RelationshipGraph {
    /// A chain of relationships that leads from a model back to itself (`Dialog.messages → Message.dialog →
    /// Dialog`), as `Type.property` steps, or nil when the types nest without a cycle. Loading such types would
    /// never end, so they are refused.
    static func cycle(in models: [ModelMapping]) -> [String]? {
        var byType: [String: ModelMapping] = [:]
        for model in models where byType[model.typeName] == nil { byType[model.typeName] = model }
        var done: Set<String> = []
        var path: [(type: String, step: String)] = []
        func visit(_ type: String) -> [String]? {
            if let start = path.firstIndex(where: { $0.type == type }) {
                return path[start...].map(\.step)
            }
            guard !done.contains(type), let model = byType[type] else { return nil }
            for relationship in model.relationships {
                path.append((type, "\(type).\(relationship.property)"))
                if let found = visit(relationship.model) { return found }
                path.removeLast()
            }
            done.insert(type)
            return nil
        }
        for model in models.sorted(by: { $0.typeName < $1.typeName }) {
            if let found = visit(model.typeName) { return found }
        }
        return nil
    }

    /// How a cycle is named in messages: `Dialog.messages → Message.dialog → Dialog`.
    static func describe(_ cycle: [String]) -> String {
        let back = cycle.first.map { String($0.prefix { $0 != "." }) } ?? ""
        return (cycle + [back]).joined(separator: " → ")
    }
}
