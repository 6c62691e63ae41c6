import StrataCore

/// Whether a step of a PostgreSQL rehearsal that failed on a constraint may have failed only because the steps
/// share one transaction, where `migrate` commits each (`PostgresRehearsalStage.stoppedByStage`). The server names
/// the constraint (or the unique index) in the error; it is looked up once the failed step's savepoint is rolled
/// back. Three ways, each said rather than judged:
/// - a unique key holding a date/time column, in a table an earlier step of the rehearsal inserted or updated rows
///   of: `now()`, `current_timestamp` and `transaction_timestamp()` are one value for the whole rehearsal, one per
///   step in `migrate`, so two steps' "now" collide only here (at a statement or at the step's end);
/// - after an earlier step ended every constraint is checked at once (`checkDeferredAsCommitWould`), and the one
///   refused is declared `INITIALLY DEFERRED`: `migrate` checks it at the step's commit;
/// - or the one refused is gone after the rollback: the failing step made it (in a function, a `DO` block, a code
///   step: anywhere its text need not say `DEFERRED`), and how it was declared went with the rollback.
///
/// Not the rehearsal's: a constraint that cannot be deferred (`NOT NULL`, `CHECK`), a failure in the step's first
/// statement-level check after no earlier step, and a constraint the failing statement itself builds (`ALTER TABLE
/// … ADD`, `CREATE UNIQUE INDEX`), whose rows PostgreSQL checks as it is made whatever its mode.
final class PostgresConstraintWatch {
    /// The first word of the statement last sent in the step now running (`ALTER`, `INSERT`), or nil.
    private var lastWord: String?

    /// Called before each step.
    func begin() {
        lastWord = nil
    }

    /// Shown each statement of the step's script before it is sent.
    func saw(_ statement: PostgresStatementText) {
        lastWord = String(statement.sql.prefix { $0.isASCII && $0.isLetter }).uppercased()
    }

    /// Why `error`, which failed the step now running, may be the rehearsal's and not `migrate`'s, or nil.
    /// `checkedAtOnce`: an earlier step ended; `writtenBefore(oid)`: rows of that table were inserted or updated by
    /// the steps before this one.
    func reason(_ error: DatabaseError, checkedAtOnce: Bool, writtenBefore: (Int64) -> Bool,
                on connection: PostgresConnection) throws -> String? {
        guard checkedAtOnce, let state = error.code?.value, state.hasPrefix("23"),
              let constraint = error.constraint, let schema = constraint.schema, let table = constraint.table else { return nil }
        let found = try Self.lookUp(constraint.name, schema: schema, table: table, on: connection)
        let named = "\(Self.quoted(constraint.name)) on \(Self.quoted(schema)).\(Self.quoted(table))"
        if state == "23505", let found, writtenBefore(found.table), !found.dateTimeColumns.isEmpty {
            let columns = found.dateTimeColumns.joined(separator: ", ")
            let key = found.index == nil
                ? "the unique index \(named) this step builds is on a table holding date/time columns (\(columns))"
                : "the unique key \(named) holds the date/time column\(found.dateTimeColumns.count == 1 ? "" : "s") \(columns)"
            return "\(key), and earlier steps of the rehearsal wrote rows there: the steps share one transaction in the rehearsal, where now(), current_timestamp and transaction_timestamp() are one value for every step, and migrate gives each step its own, so the duplicate may be two steps' \"now\""
        }
        // Checked at the step's end in both, as its commit checks it in migrate.
        guard error.sql != "COMMIT TRANSACTION", ["23503", "23505", "23P01"].contains(state) else { return nil }
        if found?.deferred == true {
            return "constraint \(named) is declared INITIALLY DEFERRED: after its first step the rehearsal checks every constraint at once (one transaction cannot start afresh as each of migrate's does), where migrate checks this one at the step's commit"
        }
        guard found?.deferred == nil, found?.index == nil else { return nil }
        if lastWord == "ALTER" || lastWord == "CREATE" { return nil }
        return "the step made constraint \(named) itself (it is gone once the step is rolled back), so how it was declared cannot be read: after its first step the rehearsal checks every constraint at once (one transaction cannot start afresh as each of migrate's does), where migrate checks one declared INITIALLY DEFERRED at the step's commit"
    }

    /// What the catalog holds under the names an error gave: the table's oid, the constraint's `condeferred` (nil:
    /// no constraint of that name on it or referring to it: a foreign key refusing a delete of the row it refers to
    /// names the referred table), the unique index of that name (nil: none), and the date/time columns of
    /// that index's key, or of the whole table when there is no such index. Nil when the table is not there.
    private static func lookUp(_ name: String, schema: String, table: String, on connection: PostgresConnection) throws
        -> (table: Int64, deferred: Bool?, index: Int64?, dateTimeColumns: [String])? {
        guard let row = try connection.rows("""
            SELECT c.oid::int8,
                   (SELECT k.condeferred FROM pg_catalog.pg_constraint k
                    WHERE (k.conrelid = c.oid OR k.confrelid = c.oid) AND k.conname = $3 LIMIT 1),
                   (SELECT i.indexrelid::int8 FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid
                    WHERE i.indrelid = c.oid AND ic.relname = $3 LIMIT 1)
            FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = $1 AND c.relname = $2
            """, [schema, table, name]).first else { return nil }
        let oid: Int64 = try row.get(0)
        let deferred: Bool? = try row.get(1)
        let index: Int64? = try row.get(2)
        // An index's own attributes are its key columns and expressions (then its INCLUDE columns), typed.
        let columns = try connection.rows("""
            SELECT a.attname::text FROM pg_catalog.pg_attribute a
            JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
            LEFT JOIN pg_catalog.pg_type b ON b.oid = t.typbasetype
            WHERE a.attrelid = $1::int8::oid AND a.attnum > 0 AND NOT a.attisdropped
              AND ($2::int8 = 1 OR a.attnum <= (SELECT i.indnkeyatts FROM pg_catalog.pg_index i WHERE i.indexrelid = $1::int8::oid))
              AND coalesce(b.typcategory, t.typcategory) = 'D'
            ORDER BY a.attnum
            """, [index ?? oid, Int64(index == nil ? 1 : 0)]).map { try $0.get(0, as: String.self) }
        return (oid, deferred, index, columns.map(quoted))
    }

    /// A name as `format('%I')` writes it (keywords aside): bare when it is a plain lower-case identifier.
    private static func quoted(_ name: String) -> String {
        let plain = name.first.map { $0 == "_" || ("a"..."z").contains($0) } == true
            && name.allSatisfy { $0 == "_" || $0 == "$" || ("a"..."z").contains($0) || ("0"..."9").contains($0) }
        return plain ? name : "\"" + String(name.flatMap { $0 == "\"" ? ["\"", "\""] : [$0] }) + "\""
    }
}
