#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The column names of a result set and their case-insensitive index, shared by all its rows.
public final class RowLayout: Sendable {
    /// The column names, in result order.
    public let names: [String]
    /// How the rows' database stores dates, which decides what a number read as a `Date` means.
    public let dateStorage: DateStorage
    let indexByLowercasedName: [String: Int]

    /// Creates a layout for columns named `names`, whose dates are stored as `dateStorage` says.
    public init(names: [String], dateStorage: DateStorage = .iso8601Text) {
        self.names = names
        self.dateStorage = dateStorage
        var index: [String: Int] = [:]
        // The first of several same-named columns wins, as in SQL's own name resolution.
        for (offset, name) in names.enumerated() where index[name.sqliteFolded] == nil {
            index[name.sqliteFolded] = offset
        }
        indexByLowercasedName = index
    }

    /// The 0-based index of a column, matched case-insensitively as SQLite matches names (ASCII only).
    public func index(of name: String) -> Int? {
        indexByLowercasedName[name.sqliteFolded]
    }
}

/// One result row, read by 0-based index or by column name (case-insensitive).
///
/// ```swift
/// for row in try db.query("SELECT name, born FROM authors").all() {
///     let name: String = try row.get("name")
///     let born: Int? = try row.get("born")
/// }
/// ```
public struct Row: Sendable, Equatable, CustomStringConvertible {
    let layout: RowLayout
    /// The row's values in column order.
    public let values: [DatabaseValue]

    /// A row of `values` in the columns `layout` names.
    public init(layout: RowLayout, values: [DatabaseValue]) {
        self.layout = layout
        self.values = values
    }

    /// The column names, in result order.
    public var columnNames: [String] { layout.names }
    /// The number of columns.
    public var count: Int { values.count }

    /// The value of the column at the 0-based `index`.
    public subscript(index: Int) -> DatabaseValue { values[index] }

    /// The value of the named column, or nil when the row has no such column.
    public subscript(column: String) -> DatabaseValue? {
        layout.index(of: column).map { values[$0] }
    }

    /// The named column's value as `T`; throws when the column is absent or its value does not convert.
    /// Ask for an optional type to accept NULL.
    public func get<T: DatabaseValueConvertible>(_ column: String, as type: T.Type = T.self) throws -> T {
        guard let index = layout.index(of: column) else {
            throw DatabaseError.misuse(
                "no column '\(column)' in row (columns: \(columnNames.joined(separator: ", ")))")
        }
        return try get(index, as: type)
    }

    /// The value at a 0-based index as `T`; throws when the index is out of range or the value does not convert.
    public func get<T: DatabaseValueConvertible>(_ index: Int, as type: T.Type = T.self) throws -> T {
        guard values.indices.contains(index) else {
            throw DatabaseError.misuse("column index \(index) out of range (row has \(values.count) columns)")
        }
        let value = values[index]
        if T.self == Date.self || T.self == Date?.self {
            // A number means what the database's date storage says, which `Date.fromDatabaseValue` cannot know.
            if case .null = value, let none = Date?.none as? T { return none }
            guard let date = layout.dateStorage.date(from: value), let converted = date as? T else {
                throw DatabaseError(
                    kind: .conversion,
                    message: "column '\(layout.names[index])' holds \(value.storageClass) \(value), which is not a date (\(layout.dateStorage.accepted))")
            }
            return converted
        }
        guard let converted = T.fromDatabaseValue(value) else {
            throw DatabaseError(
                kind: .conversion,
                message: "column '\(layout.names[index])' holds \(value.storageClass) \(value), which is not a \(T.self)")
        }
        return converted
    }

    /// Whether two rows have the same column names and values.
    public static func == (lhs: Row, rhs: Row) -> Bool {
        lhs.columnNames == rhs.columnNames && lhs.values == rhs.values
    }

    /// The row's columns and values, for messages and debugging.
    public var description: String {
        "[" + zip(columnNames, values).map { "\($0): \($1)" }.joined(separator: ", ") + "]"
    }
}
