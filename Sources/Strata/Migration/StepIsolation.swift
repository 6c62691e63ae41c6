import Foundation

/// What a migration file can change on the connection that would otherwise outlive the file and change what later
/// steps of the same run do: connection-level pragmas (`recursive_triggers`, `ignore_check_constraints`,
/// `synchronous`, `busy_timeout`, …), temp tables, views and triggers (a temp trigger on a main table fires in
/// every later step), and attached databases. Taken before a step and restored after it, so each file starts from
/// the connection as the run opened it.
struct ConnectionSnapshot {
    /// Pragmas that are per connection, readable, and change behaviour or durability.
    static let pragmas = ["recursive_triggers", "ignore_check_constraints", "legacy_alter_table",
                          "reverse_unordered_selects", "trusted_schema", "synchronous", "busy_timeout",
                          "automatic_index", "cell_size_check", "secure_delete", "defer_foreign_keys"]

    private let values: [String: DatabaseValue]
    private let tempObjects: Set<String>
    private let schemas: Set<String>

    init(_ database: Database) throws {
        var values: [String: DatabaseValue] = [:]
        for pragma in Self.pragmas {
            values[pragma] = try database.query("PRAGMA \(pragma)").next()?[0] ?? .null
        }
        self.values = values
        tempObjects = try Self.tempObjects(database)
        schemas = try Self.schemas(database)
    }

    /// Puts back what the file changed: drops the temp objects it created, detaches what it attached, and resets
    /// the pragmas it set. Called outside any transaction.
    func restore(_ database: Database) throws {
        let created = try Self.tempObjects(database).subtracting(tempObjects)
        // Triggers and views first: they may depend on the tables.
        for kind in ["trigger", "view", "table"] {
            for object in created.sorted() where object.hasPrefix(kind + " ") {
                let name = String(object.dropFirst(kind.count + 1))
                try database.execute("DROP \(kind.uppercased()) IF EXISTS temp.\(quoteIdentifier(name))")
            }
        }
        for schema in try Self.schemas(database).subtracting(schemas).sorted() {
            try database.execute("DETACH DATABASE \(quoteIdentifier(schema))")
        }
        for pragma in Self.pragmas {
            let now = try database.query("PRAGMA \(pragma)").next()?[0] ?? .null
            guard let before = values[pragma], now != before, case .integer(let value) = before else { continue }
            try database.execute("PRAGMA \(pragma) = \(value)")
        }
    }

    private static func tempObjects(_ database: Database) throws -> Set<String> {
        Set(try database.query("SELECT type, name FROM temp.sqlite_schema WHERE type IN ('table', 'view', 'trigger')")
            .all().map { "\(try $0.get(0, as: String.self)) \(try $0.get(1, as: String.self))" })
    }

    private static func schemas(_ database: Database) throws -> Set<String> {
        Set(try database.query("PRAGMA database_list").all().map { try $0.get(1, as: String.self) })
    }
}

/// The foreign key violations a database had before a run, so a step is failed only for violations it made, not
/// for rows that were already wrong (written before Strata, or with foreign keys off).
struct ForeignKeyBaseline {
    /// How many violations of each (table, row, parent, constraint) there were; rows of tables without rowid have
    /// no row number, so they are counted.
    private var counts: [ForeignKeyViolation: Int] = [:]

    static let none = ForeignKeyBaseline()

    private init() {}

    init(_ database: Database) throws {
        for violation in try database.foreignKeyViolations() { counts[violation, default: 0] += 1 }
    }

    var isEmpty: Bool { counts.isEmpty }
    var count: Int { counts.values.reduce(0, +) }
    var examples: [ForeignKeyViolation] { Array(counts.keys.sorted { $0.description < $1.description }.prefix(3)) }

    /// The violations in `current` beyond those of the baseline.
    func new(in current: [ForeignKeyViolation]) -> [ForeignKeyViolation] {
        var remaining = counts
        return current.filter { violation in
            guard let left = remaining[violation], left > 0 else { return true }
            remaining[violation] = left - 1
            return false
        }
    }
}
