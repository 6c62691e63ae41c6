#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataCore

/// What a migration file can change on the connection that would otherwise outlive the file and change what later
/// steps of the same run do: connection-level pragmas (`recursive_triggers`, `ignore_check_constraints`,
/// `synchronous`, `busy_timeout`, `foreign_keys`, `max_page_count`, …), temp tables, views and triggers (a temp
/// trigger on a main table fires in every later step), and attached databases. Taken before a step and restored
/// after it, so each file starts from the connection as the run opened it.
struct ConnectionSnapshot: SessionSnapshot {
    /// Pragmas that are per connection, readable, and change behaviour, limits or durability.
    static let pragmas = ["foreign_keys", "recursive_triggers", "ignore_check_constraints", "legacy_alter_table",
                          "reverse_unordered_selects", "trusted_schema", "synchronous", "busy_timeout",
                          "automatic_index", "cell_size_check", "secure_delete", "defer_foreign_keys", "query_only",
                          "max_page_count", "locking_mode", "cache_size", "mmap_size", "journal_size_limit",
                          "wal_autocheckpoint"]

    private let database: Database
    private let values: [String: DatabaseValue]
    private let tempObjects: Set<String>
    private let schemas: Set<String>

    init(_ database: Database) throws {
        var values: [String: DatabaseValue] = [:]
        for pragma in Self.pragmas {
            values[pragma] = try database.query("PRAGMA \(pragma)", .none).next()?[0] ?? .null
        }
        self.database = database
        self.values = values
        tempObjects = try Self.tempObjects(database)
        schemas = try Self.schemas(database)
    }

    /// Puts back what the file changed: drops the temp objects it created, detaches what it attached, and resets
    /// the pragmas it set. Called outside any transaction.
    func restore() throws {
        let created = try Self.tempObjects(database).subtracting(tempObjects)
        // Triggers and views first: they may depend on the tables.
        for kind in ["trigger", "view", "table"] {
            for object in created.sorted() where object.hasPrefix(kind + " ") {
                let name = String(object.dropFirst(kind.count + 1))
                try database.execute("DROP \(kind.uppercased()) IF EXISTS temp.\(quoteIdentifier(name))", .none)
            }
        }
        for schema in try Self.schemas(database).subtracting(schemas).sorted() {
            try database.execute("DETACH DATABASE \(quoteIdentifier(schema))", .none)
        }
        for pragma in Self.pragmas {
            let now = try database.query("PRAGMA \(pragma)", .none).next()?[0] ?? .null
            guard let before = values[pragma], now != before else { continue }
            switch before {
            case .integer(let value): try database.execute("PRAGMA \(pragma) = \(value)", .none)
            case .text(let value): try database.execute("PRAGMA \(pragma) = \(quoteIdentifier(value))", .none)
            default: continue
            }
        }
    }

    /// Temp tables, views and triggers, as "type name"; SQLite's own (`sqlite_sequence`) are not the file's to drop.
    private static func tempObjects(_ database: Database) throws -> Set<String> {
        Set(try database.query("""
            SELECT type, name FROM temp.sqlite_schema
            WHERE type IN ('table', 'view', 'trigger') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
            """).all().map { "\(try $0.get(0, as: String.self)) \(try $0.get(1, as: String.self))" })
    }

    private static func schemas(_ database: Database) throws -> Set<String> {
        Set(try database.query("PRAGMA database_list").all().map { try $0.get(1, as: String.self) })
    }
}

/// The foreign key violations a database had before a step, so a step fails only for violations it made, not for
/// rows that were already wrong (written before Strata, or with foreign keys off).
///
/// A violation is known by what it is, not where it is: the child table, the parent table and the child row's
/// foreign key values. A table rebuild moves rows to new rowids and may renumber constraints, and SQLite reuses
/// rowids, so rowids would excuse new violations and blame old ones. Rows of tables without rowid cannot be read
/// back from `PRAGMA foreign_key_check`, so their violations are never excused. After each step the baseline keeps
/// only what is still there: a violation a step fixed is not excused again later in the run.
final class SQLiteForeignKeyBaseline: ForeignKeyBaseline {
    private struct Identity: Hashable {
        let table: String
        let parent: String
        let values: String
    }

    private let database: Database
    private var counts: [Identity: Int] = [:]

    /// No violations excused.
    init(excusingNothingOn database: Database) {
        self.database = database
    }

    /// The violations in `database` now.
    init(_ database: Database) throws {
        self.database = database
        for violation in try database.foreignKeyViolations() {
            if let identity = try Self.identity(of: violation, in: database) { counts[identity, default: 0] += 1 }
        }
    }

    var isEmpty: Bool { counts.isEmpty }
    var count: Int { counts.values.reduce(0, +) }

    /// The violations in `database` now beyond the baseline. The baseline keeps only what is still there, for the
    /// next step.
    func newViolations() throws -> [ForeignKeyViolation] {
        var unused = counts
        var remaining: [Identity: Int] = [:]
        var new: [ForeignKeyViolation] = []
        for violation in try database.foreignKeyViolations() {
            guard let identity = try Self.identity(of: violation, in: database),
                  let left = unused[identity], left > 0 else {
                new.append(violation)
                continue
            }
            unused[identity] = left - 1
            remaining[identity, default: 0] += 1
        }
        counts = remaining
        return new
    }

    /// The child row's foreign key values for the violated constraint, or nil for a table without rowid.
    private static func identity(of violation: ForeignKeyViolation, in database: Database) throws -> Identity? {
        guard let rowid = violation.rowid else { return nil }
        let columns = try database.query("SELECT \"from\" FROM pragma_foreign_key_list(?) WHERE id = ? ORDER BY seq",
                                         [violation.table, violation.constraint]).all()
            .map { try $0.get(0, as: String.self) }
        guard !columns.isEmpty else { return nil }
        let quoted = columns.map { "quote(\(quoteIdentifier($0)))" }.joined(separator: " || ',' || ")
        guard let values = try database.scalar("SELECT \(quoted) FROM \(quoteIdentifier(violation.table)) WHERE rowid = ?",
                                                [rowid], as: String.self) else { return nil }
        return Identity(table: violation.table.lowercased(), parent: violation.parent.lowercased(), values: values)
    }
}
