#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The values bound to a statement's parameters: positional (`?`, `?NNN`) or named (`:name`, `@name`, `$name`).
///
/// ```swift
/// try db.execute("INSERT INTO authors (name, born) VALUES (?, ?)", ["Ursula K. Le Guin", 1929])
/// try db.execute("UPDATE authors SET born = :born WHERE name = :name", ["name": "Jane Austen", "born": 1775])
/// ```
public enum StatementArguments: Sendable, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    /// Values bound to `?` placeholders, in order.
    case positional([DatabaseValue])
    /// Keys may be written with or without their `:`, `@` or `$` prefix.
    case named([String: DatabaseValue])
    /// Arguments holding a value SQLite cannot store as given (an unsigned integer above `Int64.max`); binding
    /// them throws this error, so nothing runs with a changed value.
    case unrepresentable(DatabaseError)
    /// Positional values among which are dates, kept as `Date` (by 0-based index; `values` holds SQLite's text for
    /// them) until a statement binds them, since databases keep dates at different precisions
    /// (`SQLDialect.datePrecision`): what an array of arguments holding a `Date` makes. Backends bind
    /// them through `values(_:dates:precision:)`.
    case positionalWithDates([DatabaseValue], dates: [Int: Date])
    /// Named values among which are dates, kept as `Date` (by bare name; `values` holds SQLite's text for them)
    /// until a statement binds them, since a database may store dates as numbers (`SQLDialect.dateStorage`).
    case namedWithDates([String: DatabaseValue], dates: [String: Date])

    /// No arguments.
    public static let none = StatementArguments.positional([])

    /// Positional arguments from an array literal; nil binds NULL.
    public init(arrayLiteral elements: (any DatabaseValueConvertible)?...) {
        self.init(positional: elements)
    }

    /// Named arguments from a dictionary literal; nil binds NULL.
    public init(dictionaryLiteral elements: (String, (any DatabaseValueConvertible)?)...) {
        self.init(named: elements.map { ($0.0, $0.1) })
    }

    /// Positional arguments from values.
    public init(_ values: [any DatabaseValueConvertible]) {
        self.init(positional: values)
    }

    private init(positional values: [(any DatabaseValueConvertible)?]) {
        var converted: [DatabaseValue] = []
        var dates: [Int: Date] = [:]
        converted.reserveCapacity(values.count)
        for (offset, value) in values.enumerated() {
            guard let value else { converted.append(.null); continue }
            // Kept whole: only the database the statement runs on knows how finely to write it.
            if let date = value as? Date { dates[offset] = date }
            switch checkedDatabaseValue(value) {
            case .success(let bound): converted.append(bound)
            case .failure(let error):
                self = .unrepresentable(error.with(message: "argument \(offset + 1): \(error.message)"))
                return
            }
        }
        self = dates.isEmpty ? .positional(converted) : .positionalWithDates(converted, dates: dates)
    }

    private init(named values: [(String, (any DatabaseValueConvertible)?)]) {
        var converted: [String: DatabaseValue] = [:]
        var dates: [String: Date] = [:]
        for (key, value) in values {
            guard let value else { converted[Self.bareName(key)] = .null; continue }
            if let date = value as? Date { dates[Self.bareName(key)] = date }
            switch checkedDatabaseValue(value) {
            case .success(let bound): converted[Self.bareName(key)] = bound
            case .failure(let error):
                self = .unrepresentable(error.with(message: "argument :\(Self.bareName(key)): \(error.message)"))
                return
            }
        }
        self = dates.isEmpty ? .named(converted) : .namedWithDates(converted, dates: dates)
    }

    /// Positional arguments from database values.
    public init(_ values: [DatabaseValue]) {
        self = .positional(values)
    }

    /// Named arguments from values keyed by parameter name.
    public init(_ values: [String: any DatabaseValueConvertible]) {
        self.init(named: values.map { ($0.key, $0.value) })
    }

    /// Positional `values` with the `dates` at their indexes written as `storage` keeps them, text at `precision`:
    /// how a backend binds `positionalWithDates`.
    package static func values(_ values: [DatabaseValue], dates: [Int: Date], precision: DatePrecision,
                               storage: DateStorage = .iso8601Text) -> [DatabaseValue] {
        var values = values
        for (index, date) in dates where values.indices.contains(index) {
            values[index] = storage.databaseValue(of: date, precision: precision)
        }
        return values
    }

    /// Named `values` with the `dates` under their names written as `storage` keeps them, text at `precision`.
    package static func values(_ values: [String: DatabaseValue], dates: [String: Date], precision: DatePrecision,
                               storage: DateStorage) -> [String: DatabaseValue] {
        var values = values
        for (name, date) in dates where values[name] != nil {
            values[name] = storage.databaseValue(of: date, precision: precision)
        }
        return values
    }

    package static func bareName(_ name: String) -> String {
        guard let first = name.first, first == ":" || first == "@" || first == "$" else { return name }
        return String(name.dropFirst())
    }
}
