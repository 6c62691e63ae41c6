import StrataCore

/// Whether a step of a PostgreSQL rehearsal may meet a constraint declared `INITIALLY DEFERRED`. After the first step
/// the rehearsal checks every constraint at once (`checkDeferredAsCommitWould`: no statement gives a transaction
/// back the modes a new one starts with), where `migrate` checks such a constraint, and fires such a trigger, at the
/// step's commit; a step that meets none runs as in `migrate`.
///
/// Only constraints declared `INITIALLY DEFERRED` (`pg_constraint.condeferred`; a constraint trigger has its row
/// there too) differ: one `DEFERRABLE INITIALLY IMMEDIATE` is checked at once in both, and a step's own
/// `SET CONSTRAINTS … DEFERRED` defers it until the step's end in both. So the step may meet one when one exists as
/// it begins (not another session's temporary one, which no statement of this session can reach), when one of its
/// statements says `DEFERRED` (it may declare or defer one; seen as the statement is sent, in a file of any size,
/// with the data of a `COPY` left out), or when one exists after it that did not before (made by a function, a
/// seed or a code step; seen only for a step that ran to its end, since a failed one's savepoint is rolled back:
/// a failure on a constraint that is gone after the rollback is judged apart, `PostgresConstraintWatch`).
final class PostgresDeferredWatch {
    /// The constraints declared `INITIALLY DEFERRED` as the step now running began, by oid (empty for the first).
    private var atStart: [Int64: String] = [:]
    /// Whether every constraint is checked at once while the step now running runs: an earlier step ended.
    private var checkedAtOnce = false
    /// The step now running's file, and its first statement that says `DEFERRED`: `sql/005_x.sql:12`.
    private var path: String?
    private var saying: String?
    /// Made by the step now running, seen after its end.
    private var created: [String] = []

    /// Called before each step; `checkedAtOnce`: an earlier step ended.
    func begin(_ step: PlanStep, checkedAtOnce: Bool, on connection: PostgresConnection) throws {
        self.checkedAtOnce = checkedAtOnce
        saying = nil
        created = []
        if case .migration(let migration) = step { path = displayPath(migration.path) } else { path = nil }
        atStart = checkedAtOnce ? try Self.initiallyDeferred(connection) : [:]
    }

    /// Shown each statement of the step's script before it is sent.
    func saw(_ statement: PostgresStatementText) {
        guard checkedAtOnce, saying == nil, Self.saysDeferred(statement.sql) else { return }
        saying = "\(path ?? "the step's file"):\(statement.line)"
    }

    /// Called after the step ran to its end: notes what it made that no statement showed.
    func ended(on connection: PostgresConnection) throws {
        guard checkedAtOnce else { return }
        created = try Self.initiallyDeferred(connection).filter { atStart[$0.key] == nil }.map(\.value).sorted()
    }

    /// Why the step now running (or just run) does not run as in `migrate`, or nil when it meets no such constraint.
    var reason: String? {
        var seen: [String] = []
        if !atStart.isEmpty {
            let names = atStart.values.sorted()
            seen.append("\(names.count == 1 ? "constraint" : "constraints") \(Self.list(names)) \(names.count == 1 ? "is" : "are") declared INITIALLY DEFERRED")
        }
        if let saying {
            seen.append("\(saying) says DEFERRED (the statement may declare a constraint INITIALLY DEFERRED, or defer one)")
        }
        if !created.isEmpty {
            seen.append("the step made \(created.count == 1 ? "constraint" : "constraints") \(Self.list(created)) declared INITIALLY DEFERRED")
        }
        guard !seen.isEmpty else { return nil }
        return "constraints declared INITIALLY DEFERRED are checked at once in the rehearsal after its first step (one transaction cannot start afresh as each of migrate's does), where migrate checks them, and fires such triggers, at the step's commit, and this step may meet one: " + seen.joined(separator: "; ")
    }

    /// `a on public.t`, `a on public.t, b on public.u and 3 more`.
    private static func list(_ names: [String]) -> String {
        names.count <= 3 ? names.joined(separator: ", ") : names.prefix(3).joined(separator: ", ") + " and \(names.count - 3) more"
    }

    /// The constraints declared `INITIALLY DEFERRED` this session can meet, by oid: `name on schema.table`. Other
    /// sessions' temporary schemas are left out.
    private static func initiallyDeferred(_ connection: PostgresConnection) throws -> [Int64: String] {
        var result: [Int64: String] = [:]
        for row in try connection.rows("""
            SELECT k.oid::int8, format('%I', k.conname) || coalesce(' on ' || format('%I.%I', rn.nspname, c.relname), '')
            FROM pg_catalog.pg_constraint k
            JOIN pg_catalog.pg_namespace n ON n.oid = k.connamespace
            LEFT JOIN pg_catalog.pg_class c ON c.oid = k.conrelid
            LEFT JOIN pg_catalog.pg_namespace rn ON rn.oid = c.relnamespace
            WHERE k.condeferred AND (n.nspname NOT LIKE 'pg\\_temp\\_%' OR n.oid = pg_catalog.pg_my_temp_schema())
            """, .none) {
            result[try row.get(0, as: Int64.self)] = try row.get(1)
        }
        return result
    }

    /// Whether `sql` holds the word `DEFERRED` in any case, anywhere (in a string or a dollar-quoted body too: it may
    /// be run as SQL), not as part of a longer name (`deferred_until`, `undeferred`).
    static func saysDeferred(_ sql: String) -> Bool {
        var sql = sql
        return sql.withUTF8 { bytes in
            let word = Array("deferred".utf8)
            // Letters, digits, `_`, non-ASCII bytes; not `$`, which may close a dollar quote right after the word.
            func isNamePart(_ index: Int) -> Bool { PostgresLexer.isDollarTagPart(bytes[index]) }
            var index = 0
            while index + word.count <= bytes.count {
                if word.indices.allSatisfy({ bytes[index + $0] | 0x20 == word[$0] }),
                   index == 0 || !isNamePart(index - 1),
                   index + word.count == bytes.count || !isNamePart(index + word.count) {
                    return true
                }
                index += 1
            }
            return false
        }
    }
}
