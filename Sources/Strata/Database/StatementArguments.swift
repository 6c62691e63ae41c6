/// The values bound to a statement's parameters: positional (`?`, `?NNN`) or named (`:name`, `@name`, `$name`).
///
/// ```swift
/// try db.execute("INSERT INTO authors (name, born) VALUES (?, ?)", ["Ursula K. Le Guin", 1929])
/// try db.execute("UPDATE authors SET born = :born WHERE name = :name", ["name": "Jane Austen", "born": 1775])
/// ```
public enum StatementArguments: Sendable, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    case positional([DatabaseValue])
    /// Keys may be written with or without their `:`, `@` or `$` prefix.
    case named([String: DatabaseValue])

    public static let none = StatementArguments.positional([])

    public init(arrayLiteral elements: (any DatabaseValueConvertible)?...) {
        self = .positional(elements.map { $0?.databaseValue ?? .null })
    }

    public init(dictionaryLiteral elements: (String, (any DatabaseValueConvertible)?)...) {
        var values: [String: DatabaseValue] = [:]
        for (key, value) in elements { values[Self.bareName(key)] = value?.databaseValue ?? .null }
        self = .named(values)
    }

    public init(_ values: [any DatabaseValueConvertible]) {
        self = .positional(values.map(\.databaseValue))
    }

    public init(_ values: [DatabaseValue]) {
        self = .positional(values)
    }

    public init(_ values: [String: any DatabaseValueConvertible]) {
        var named: [String: DatabaseValue] = [:]
        for (key, value) in values { named[Self.bareName(key)] = value.databaseValue }
        self = .named(named)
    }

    static func bareName(_ name: String) -> String {
        guard let first = name.first, first == ":" || first == "@" || first == "$" else { return name }
        return String(name.dropFirst())
    }
}
