/// Where a Swift type lives in the database: its table, primary key and property-to-column names.
///
/// The manifest's `<model>` entry wins; otherwise the defaults are:
/// - table: the first existing table named exactly like the type, then its snake_case name, then that plus `s`
///   (`LoanItem` → `LoanItem`, `loan_item`, `loan_items`), matched case-insensitively;
/// - column: a column named exactly like the property (case-insensitively), else the snake_case name
///   (`publishedOn` → `published_on`);
/// - primary key: the manifest's `primaryKey`, else the table's declared primary key.
public struct ModelLayout: Sendable, Equatable {
    /// The Swift type's name.
    public let typeName: String
    /// The table the type's rows live in.
    public let table: String
    /// The primary key columns, in key order.
    public let primaryKey: [String]
    /// The table's columns as declared; empty when the table does not exist.
    public let columns: [ColumnInfo]
    let mapping: ModelMapping?
    /// The table declares a conflict clause on a constraint (`UNIQUE ON CONFLICT REPLACE`, …), so writes state
    /// `OR ABORT`: an insert or update must never delete another row or be dropped in silence.
    package let declaresConflictClause: Bool
    /// The primary key tells the table's rows apart (it contains one of the table's unique keys): only then may a
    /// write by key change one row at most.
    let keyIsUnique: Bool

    init(typeName: String, mapping: ModelMapping?, database: any DatabaseConnection) throws {
        self.typeName = typeName
        self.mapping = mapping
        var table = mapping?.table
        if table == nil {
            let snake = snakeCase(typeName)
            for candidate in [typeName, snake, snake + "s"] {
                if let declared = try database.declaredTableName(candidate) {
                    table = declared
                    break
                }
            }
            table = table ?? snake
        }
        let resolved = table ?? snakeCase(typeName)
        self.table = resolved
        columns = try database.columns(in: resolved)
        declaresConflictClause = try database.declaresConflictClause(resolved)
        if let key = mapping?.primaryKey, !key.isEmpty {
            primaryKey = key
        } else {
            primaryKey = columns.filter { $0.primaryKeyPosition > 0 }
                .sorted { $0.primaryKeyPosition < $1.primaryKeyPosition }.map(\.name)
        }
        let key = Set(primaryKey.map(\.sqliteFolded))
        let uniqueKeys = try database.uniqueKeys(in: resolved)
        keyIsUnique = !key.isEmpty && uniqueKeys.contains { Set($0.map(\.sqliteFolded)).isSubset(of: key) }
    }

    /// The column a property is stored in.
    public func column(for property: String) -> String {
        if let mapped = mapping?.columns[property] { return mapped }
        if let exact = columns.named(property) { return exact.name }
        let snake = snakeCase(property)
        return columns.named(snake)?.name ?? snake
    }

    /// Why writes by this layout's key are refused when it is not unique.
    var keyNotUniqueMessage: String {
        "primary key (\(primaryKey.joined(separator: ", "))) is not unique in table '\(table)': one save, update or delete would change every row with the same value; name the table's primary key, or columns with a UNIQUE index, as the manifest's primaryKey"
    }

    package func isPrimaryKey(_ column: String) -> Bool {
        primaryKey.contains { sqliteNamesEqual($0, column) }
    }
}

/// `publishedOn` → `published_on`, `bookID` → `book_id`, `URLString` → `url_string`.
public func snakeCase(_ name: String) -> String {
    let characters = Array(name)
    var result = ""
    for (index, character) in characters.enumerated() {
        if character.isUppercase && index > 0 {
            let previous = characters[index - 1]
            let nextIsLower = index + 1 < characters.count && characters[index + 1].isLowercase
            if previous.isLowercase || previous.isNumber || (previous.isUppercase && nextIsLower) {
                if previous != "_" { result.append("_") }
            }
        }
        result += character.lowercased()
    }
    return result
}
