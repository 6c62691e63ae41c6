/// A row that does not fit a Swift type, or a value that does not fit a row. Names the type, the property, the
/// column, the row's 1-based position in the result, and the value.
public struct MappingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The Swift type being mapped.
    public let typeName: String
    /// The property, where one is at fault.
    public let property: String?
    /// The column, where one is at fault.
    public let column: String?
    /// The row's 1-based position in the result, where a row is at fault.
    public let row: Int?
    /// The value that did not fit, as text.
    public let value: String?
    /// What is wrong and what was expected.
    public let message: String

    /// Creates the error, naming what it knows of the place.
    public init(typeName: String, property: String? = nil, column: String? = nil, row: Int? = nil,
                value: String? = nil, message: String) {
        self.typeName = typeName
        self.property = property
        self.column = column
        self.row = row
        self.value = value
        self.message = message
    }

    /// The type, property, column, row and value, then the message.
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
