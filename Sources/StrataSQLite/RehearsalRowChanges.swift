import CSQLite
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import StrataCore

/// What the authorizer does on a rehearsal's copy, whatever the script rules say: every `DELETE` deletes row by row,
/// tables a statement creates, drops, alters or deletes from are noted, so is a `PRAGMA incremental_vacuum` (it
/// gives pages back inside a transaction, `RehearsalRoomWatch`), and a file that would be attached (by `ATTACH`,
/// or by `VACUUM INTO`, which attaches its target) is refused.
///
/// Row by row, because SQLite empties a table for `DELETE FROM t` without `WHERE` (no triggers, no foreign keys)
/// with its truncate optimisation, which reports no row to the update hook; an authorizer that answers
/// `SQLITE_IGNORE` to `SQLITE_DELETE` turns the optimisation off and lets the delete go on (SQLite's documented
/// behaviour, tested in its `auth3.test`). The update hook itself does not turn it off (only a preupdate hook
/// does, in builds that have one). Such a delete runs slower on the copy than in `migrate`.
final class RehearsalRules {
    enum Decision {
        case allow
        /// `SQLITE_IGNORE` for `SQLITE_DELETE`: the statement runs, deleting (and reporting) row by row.
        case countRowByRow
        case deny(String)
    }

    /// Tables (folded names) a statement prepared since `begin()` creates or drops: their rows may have changed
    /// without a row being reported (a table dropped and created again under the same name).
    private(set) var rebuilt: Set<String> = []
    /// Tables an `ALTER TABLE` prepared since `begin()` changes (`DROP COLUMN` rewrites every row, unreported).
    private(set) var altered: Set<String> = []
    /// Tables a statement prepared since `begin()` may insert into, update or delete from, itself or through a
    /// trigger it compiles in (whether the trigger fires or not).
    private(set) var written: Set<String> = []

    /// What this rule refused since `begin()`: a statement `migrate` would run, which the rehearsal stopped.
    private(set) var refused: String?
    /// A `PRAGMA incremental_vacuum` was prepared since `begin()`: the file may have shrunk inside the step's
    /// transaction, before the page count read at its commit.
    private(set) var incrementalVacuum = false

    func begin() {
        rebuilt = []
        altered = []
        written = []
        refused = nil
        incrementalVacuum = false
    }

    /// The table or view a `DROP` statement being compiled drops: SQLite asks about `SQLITE_DELETE` of it right after
    /// asking about the drop itself, and `SQLITE_IGNORE` there would skip the `DROP` without an error.
    private var dropping: String?

    func decide(_ action: Int32, _ first: String?, _ second: String?, _ database: String?) -> Decision {
        let inMain = database == nil || database == "main"
        let dropped = dropping
        dropping = nil
        switch action {
        case SQLITE_DELETE:
            // SQLite's own tables (sqlite_schema, whose rows every DROP deletes; sqlite_stat1) and the table or view
            // a DROP drops keep their usual treatment: SQLITE_IGNORE would silently skip the DROP.
            guard let table = first, !table.sqliteFolded.hasPrefix("sqlite_"), table != dropped else { return .allow }
            if inMain { written.insert(table.sqliteFolded) }
            return .countRowByRow
        case SQLITE_DROP_TABLE, SQLITE_DROP_TEMP_TABLE, SQLITE_DROP_VIEW, SQLITE_DROP_TEMP_VIEW, SQLITE_DROP_VTABLE:
            dropping = first
            if action == SQLITE_DROP_TABLE, inMain, let table = first { rebuilt.insert(table.sqliteFolded) }
            return .allow
        case SQLITE_INSERT, SQLITE_UPDATE:
            if inMain, let table = first { written.insert(table.sqliteFolded) }
            return .allow
        case SQLITE_CREATE_TABLE:
            if inMain, let table = first { rebuilt.insert(table.sqliteFolded) }
            return .allow
        case SQLITE_ALTER_TABLE:
            // The database, then the table.
            if first == nil || first == "main", let table = second { altered.insert(table.sqliteFolded) }
            return .allow
        case SQLITE_PRAGMA:
            if first?.sqliteFolded == "incremental_vacuum" { incrementalVacuum = true }
            return .allow
        case SQLITE_ATTACH:
            // SQLite names the file only when it is a literal: an expression (`'/srv/app' || '.sqlite'`) or a
            // parameter comes as nil, and may name any file, the real database included.
            if let file = first, file.isEmpty || file == ":memory:" { return .allow }
            refused = "the rehearsal's own rules stopped a statement migrate would run (it runs no ATTACH of a file and no VACUUM INTO)"
            return .deny("rehearse does not run ATTACH of a file (\(first.map { "'\($0)'" } ?? "named by an expression")), nor VACUUM INTO, which attaches its target: it would open, and could create or change, a file outside the rehearsal's copy")
        default:
            return .allow
        }
    }
}

/// Counts the rows each step changes per table on a rehearsal's copy.
///
/// SQLite's update hook (`sqlite3_update_hook`) names every row inserted, updated or deleted in a rowid table of
/// the main database, with its table; with `RehearsalRules` no `DELETE` empties a table unreported. What it does
/// not report is counted instead: every table's rows are counted when the copy is made, and again after each step
/// for the tables that step may have changed (those the hook named, those a statement created, dropped, altered or
/// deleted from, those whose root page moved, and every WITHOUT ROWID table, whose changes SQLite never reports).
/// Where the reported changes do not add up to the rows before and after (rows a REPLACE conflict resolution
/// deleted, which SQLite does not report), the difference is said, never folded into a number.
final class RowChangeWatch {
    private struct Table {
        let name: String
        let rootpage: Int64
        let withoutRowid: Bool
        var rows: Int
    }

    private struct Counts {
        let table: String
        var inserted = 0
        var updated = 0
        var deleted = 0
    }

    private let database: Database
    let rules = RehearsalRules()
    /// Every table of the main database as it was when the step now running began, by folded name.
    private var tables: [String: Table] = [:]
    private var counts: [String: Counts] = [:]
    /// The last table the hook named, whose key is reused while rows of one table come in.
    private var lastName: [CChar] = [0]
    private var lastKey = ""

    init(_ database: Database) throws {
        self.database = database
        for table in try Self.tables(in: database) {
            tables[table.name.sqliteFolded] = Table(name: table.name, rootpage: table.rootpage, withoutRowid: table.withoutRowid,
                                                    rows: try Self.count(table.name, in: database))
        }
        sqlite3_update_hook(database.handle, { context, operation, schema, table, _ in
            guard let context, let schema, let table, strcmp(schema, "main") == 0 else { return }
            Unmanaged<RowChangeWatch>.fromOpaque(context).takeUnretainedValue().note(operation, table)
        }, Unmanaged.passUnretained(self).toOpaque())
        database.authorizer.rehearsal = rules
        // Installed again so that statements compiled before are compiled anew under the rehearsal's rules.
        database.authorizer.install()
    }

    /// Stops watching; called before the copy closes.
    func uninstall() {
        sqlite3_update_hook(database.handle, nil, nil)
        database.authorizer.rehearsal = nil
    }

    private func note(_ operation: Int32, _ table: UnsafePointer<CChar>) {
        if strcmp(table, lastName) != 0 {
            lastName = Array(UnsafeBufferPointer(start: table, count: strlen(table) + 1))
            lastKey = String(cString: table).sqliteFolded
        }
        // Strata's own bookkeeping, one row per step, is not the plan's.
        guard lastKey != HistoryStore.table else { return }
        var entry = counts[lastKey] ?? Counts(table: String(cString: table))
        switch operation {
        case SQLITE_INSERT: entry.inserted += 1
        case SQLITE_UPDATE: entry.updated += 1
        case SQLITE_DELETE: entry.deleted += 1
        default: return
        }
        counts[lastKey] = entry
    }

    /// Before a step: nothing counted yet. The authorizer is installed again so that every statement the step runs
    /// is compiled anew, and seen by it, even one prepared and cached by an earlier step.
    func begin() {
        counts = [:]
        rules.begin()
        database.authorizer.install()
    }

    /// After a step: the rows it changed, per table, sorted by name.
    func finish() throws -> [TableRowChanges] {
        var now: [String: Table] = [:]
        for table in try Self.tables(in: database) {
            let key = table.name.sqliteFolded
            let before = tables[key]
            let mayHaveChanged = before == nil || before?.rootpage != table.rootpage || table.withoutRowid
                || counts[key] != nil || rules.rebuilt.contains(key) || rules.altered.contains(key)
                || rules.written.contains(key)
            let rows = try mayHaveChanged ? Self.count(table.name, in: database) : before?.rows ?? 0
            now[key] = Table(name: table.name, rootpage: table.rootpage, withoutRowid: table.withoutRowid, rows: rows)
        }
        // A table gone whose root page a new one has: renamed (SQLite keeps a table's pages when it renames it).
        var renamedFrom: [String: Table] = [:]
        for (key, table) in now where tables[key] == nil {
            // Only an ALTER TABLE renames: a table created on the page a dropped one freed is a new table.
            if let old = tables.first(where: { now[$0.key] == nil && $0.value.rootpage == table.rootpage
                                               && rules.altered.contains($0.key) })?.value {
                renamedFrom[key] = old
            }
        }
        let renamedAway = Set(renamedFrom.values.map { $0.name.sqliteFolded })
        var changes: [TableRowChanges] = []
        for (key, table) in now {
            let before = tables[key] ?? renamedFrom[key]
            if let change = change(table, before: before, renamed: tables[key] == nil && before != nil,
                                   moved: tables[key] != nil && before?.rootpage != table.rootpage,
                                   createdOrDropped: rules.rebuilt.contains(key)) {
                changes.append(change)
            }
        }
        for (key, old) in tables where now[key] == nil && !renamedAway.contains(key) {
            let reported = counts[key]
            guard old.rows > 0 || reported != nil else { continue }
            changes.append(TableRowChanges(table: old.name, inserted: old.withoutRowid ? nil : reported?.inserted ?? 0,
                                           updated: old.withoutRowid ? nil : reported?.updated ?? 0,
                                           deleted: old.withoutRowid ? nil : reported?.deleted ?? 0,
                                           rowsBefore: old.rows, rowsAfter: nil,
                                           note: "dropped by this step" + (old.rows > 0 ? ", with the \(old.rows) row\(old.rows == 1 ? "" : "s") it held" : "")))
        }
        for (key, reported) in counts where now[key] == nil && tables[key] == nil {
            changes.append(TableRowChanges(table: reported.table, inserted: reported.inserted, updated: reported.updated,
                                           deleted: reported.deleted,
                                           note: "created by this step and gone by its end (dropped, or renamed: the rows are counted under the name the table had when they were written)"))
        }
        tables = now
        return changes.sorted { $0.table.sqliteFolded < $1.table.sqliteFolded }
    }

    /// The changes of a table that exists after the step, or nil when it has none to report.
    private func change(_ table: Table, before: Table?, renamed: Bool, moved: Bool, createdOrDropped: Bool) -> TableRowChanges? {
        let reported = counts[table.name.sqliteFolded]
        var change = TableRowChanges(table: table.name, rowsBefore: before?.rows, rowsAfter: table.rows)
        if table.withoutRowid {
            guard before?.rows != table.rows || rules.written.contains(table.name.sqliteFolded) else { return nil }
            change.note = "a WITHOUT ROWID table, which statements of this step write (or could, through a trigger): SQLite reports no row changes for such a table, so how many rows were inserted, updated or deleted is not known; its rows before and after are counted"
            return change
        }
        guard reported != nil || (before?.rows ?? 0) != table.rows else { return nil }
        change.inserted = reported?.inserted ?? 0
        change.updated = reported?.updated ?? 0
        change.deleted = reported?.deleted ?? 0
        guard let before else {
            change.note = "created by this step"
            let counted = (change.inserted ?? 0) - (change.deleted ?? 0)
            guard counted != table.rows else { return change }
            // SQLite does not report the rows `CREATE TABLE … AS SELECT` writes. With nothing else reported for the
            // table, every row it holds came so; with more, which rows came how cannot be told.
            if reported == nil {
                change.inserted = table.rows
                change.note = "created by this step, with its rows, by CREATE TABLE … AS SELECT (whose rows SQLite does not report; counted after the step)"
            } else {
                change.inserted = nil
                change.updated = nil
                change.deleted = nil
                change.note = "created by this step; the rows SQLite reported (\(reported?.inserted ?? 0) inserted, \(reported?.deleted ?? 0) deleted) do not add up to the \(table.rows) it holds after (CREATE TABLE … AS SELECT and REPLACE conflict resolution write and delete rows unreported), so the changes are not known"
            }
            return change
        }
        if renamed {
            change.note = "renamed from \(before.name) by this step"
        } else if moved {
            change.note = "rebuilt by this step (dropped and created again, renamed over, or moved by VACUUM): the changes are those made under this name"
            return change
        }
        let expected = before.rows + (change.inserted ?? 0) - (change.deleted ?? 0)
        if expected != table.rows && createdOrDropped {
            change.note = "dropped and created again by this step: its rows before and after do not follow from the changes made under this name"
        } else if expected > table.rows {
            let missing = expected - table.rows
            change.note = (change.note.map { $0 + "; " } ?? "")
                + "\(missing) more row\(missing == 1 ? "" : "s") went than SQLite reported deleted: a REPLACE conflict resolution (INSERT OR REPLACE, REPLACE INTO, UPDATE OR REPLACE, or a table's ON CONFLICT REPLACE) deletes the rows it replaces without reporting them"
        } else if expected < table.rows {
            let extra = table.rows - expected
            change.note = (change.note.map { $0 + "; " } ?? "")
                + "\(extra) more row\(extra == 1 ? "" : "s") came than SQLite reported inserted"
        }
        return change
    }

    /// The main database's tables with rows of their own: not views, not virtual tables (whose own tables are
    /// listed as SQLite's shadow tables), not SQLite's own, not Strata's history.
    private static func tables(in database: Database) throws -> [(name: String, rootpage: Int64, withoutRowid: Bool)] {
        try database.query("""
            SELECT l.name, s.rootpage, l.wr FROM pragma_table_list AS l
            JOIN main.sqlite_schema AS s ON s.type = 'table' AND s.name = l.name
            WHERE l.schema = 'main' AND l.type IN ('table', 'shadow') AND s.rootpage > 0
              AND l.name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND l.name <> ? COLLATE NOCASE
            """, [HistoryStore.table]).all().map { row in
            (try row.get(0, as: String.self), try row.get(1, as: Int64.self), try row.get(2, as: Bool.self))
        }
    }

    private static func count(_ table: String, in database: Database) throws -> Int {
        try database.scalar("SELECT count(*) FROM main.\(quoteIdentifier(table))", .none, as: Int.self) ?? 0
    }
}
