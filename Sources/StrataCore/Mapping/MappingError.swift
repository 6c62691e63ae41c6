/// A row that does not fit a Swift type, or a value that does not fit a row. Names the type, the property, the
/// column, the row's 1-based position in the result, and the value.
public struct MappingError: Error, Sendable, Equatable, CustomStringConvertible {
    public let typeName: String
    public let property: String?
    public let column: String?
    public let row: Int?
    public let value: String?
    public let message: String

    public init(typeName: String, property: String? = nil, column: String? = nil, row: Int? = nil,
                value: String? = nil, message: String) {
        self.typeName = typeName
        self.property = property
        self.column = column
        self.row = row
        self.value = value
        self.message = message
    }

    public var description: String {
        var text = typeName
        if let property { text += "." + property }
        var place: [String] = []
        if let column { place.append("column '\(column)'") }
        if let row { place.append("row \(row)") }
        if !place.isEmpty { text += " (" + place.joined(separator: ", ") + ")" }
        text += ": "
        if let value { text += value + " " }
        return text + message
    }
}
