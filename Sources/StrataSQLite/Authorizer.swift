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

/// What SQL that Strata runs on a user's behalf (migration files, seed loads) may do, decided by SQLite's authorizer
/// after each statement is parsed: SQLite names every table written, every PRAGMA and every transaction statement,
/// however the SQL spells them (quoted, bracketed, schema-qualified, inside a trigger body), so no lexical trick
/// walks around these rules.
struct ScriptRules: Sendable {
    /// The SQL runs inside a transaction Strata owns: it may not end it, nor use what cannot work inside one.
    var insideTransaction: Bool
    /// Tables (lower-case, in any schema) it may not write, alter, drop, index, put triggers on, or create again
    /// (in main or temp): Strata's history.
    var protectedTables: Set<String> = [HistoryStore.table]

    /// Assignments to pragmas that would break what Strata promises about this step or later ones (name and value
    /// lower-case). The one list both the authorizer (at run time) and `SQLLint` (ahead of time) apply.
    func refusal(pragma name: String, value: String) -> String? {
        switch name {
        case "foreign_keys" where insideTransaction:
            return "PRAGMA foreign_keys is silently ignored inside a transaction, and Strata runs this file in one: delete the PRAGMA (Strata runs each migration with foreign keys off and checks them all before it commits; to have them enforced while the file runs instead, also set foreignKeys=\"on\" on its <migration>), or mark the file transaction=\"none\" in the manifest, where the PRAGMA takes effect (the file is then no longer all or nothing)"
        case "journal_mode" where insideTransaction:
            return "PRAGMA journal_mode cannot change inside a transaction; mark the file transaction=\"none\" in the manifest"
        case "journal_mode" where value == "off" || value == "memory":
            return "PRAGMA journal_mode = \(value.uppercased()) would leave later steps without a rollback journal on disk, so a failure or a crash could half-apply them; use DELETE, TRUNCATE, PERSIST or WAL"
        case "writable_schema":
            return "PRAGMA writable_schema lets SQL rewrite the schema behind SQLite's back; Strata refuses it in migrations"
        case "query_only":
            return "PRAGMA query_only would stop Strata recording the step; Strata refuses it in migrations"
        case "soft_heap_limit", "hard_heap_limit":
            return "PRAGMA \(name) sets a memory limit for the whole process, which outlives the step: later steps would fail with out of memory; Strata refuses it in migrations"
        case "case_sensitive_like":
            return "PRAGMA case_sensitive_like changes LIKE for the rest of the run and cannot be read back to restore it; use GLOB or a COLLATE clause instead"
        default:
            return nil
        }
    }
}

/// The authorizer of one connection, installed when it opens and kept until it closes. It does two things at
/// compile time: it enforces the `ScriptRules` of a `withAuthorizer` call, and it notes which statements begin or
/// end a transaction or savepoint (`TransactionControl`), so a `transaction`/`savepoint` scope can refuse one its
/// body runs. SQLite names these however the SQL spells them, so no lexical trick walks around either.
final class ConnectionAuthorizer {
    let connection: OpaquePointer
    /// The rules of the innermost `withAuthorizer` call, or nil outside one (everything is allowed).
    var rules: ScriptRules?
    /// What the statement compiled last does to transactions, if anything; read right after `sqlite3_prepare`.
    var control: TransactionControl?
    /// True while Strata runs a statement of its own that the current rules would refuse (`TransactionState.check`).
    var suspended = false
    /// On a rehearsal's copy: what the rehearsal watches and refuses (`RehearsalRules`), whatever the rules.
    var rehearsal: RehearsalRules?

    init(connection: OpaquePointer) {
        self.connection = connection
    }

    /// Installs the authorizer on the connection. Installing (again) also makes SQLite compile every prepared
    /// statement anew before it next runs, so statements cached before then are checked under the current rules.
    func install() {
        sqlite3_set_authorizer(connection, { context, action, first, second, database, _ in
            guard let context else { return SQLITE_OK }
            let state = Unmanaged<ConnectionAuthorizer>.fromOpaque(context).takeUnretainedValue()
            // Reads and selects are the bulk of the calls and never refused: decide them without making strings.
            if action == SQLITE_READ || action == SQLITE_SELECT || action == SQLITE_FUNCTION { return SQLITE_OK }
            if action == SQLITE_TRANSACTION || action == SQLITE_SAVEPOINT {
                state.control = TransactionControl(action: action, operation: first.map { String(cString: $0) },
                                                   name: second.map { String(cString: $0) })
            }
            let rules = state.rules != nil && !state.suspended
            guard rules || state.rehearsal != nil else { return SQLITE_OK }
            let (first, second, database) = (first.map { String(cString: $0) }, second.map { String(cString: $0) },
                                             database.map { String(cString: $0) })
            if rules, let reason = state.decide(action, first, second, database) {
                Denials.shared[state.connection] = reason
                return SQLITE_DENY
            }
            // On a rehearsal's copy, after the rules: what it must see, and what would reach outside the copy.
            switch state.rehearsal?.decide(action, first, second, database) ?? .allow {
            case .allow: return SQLITE_OK
            case .countRowByRow: return SQLITE_IGNORE
            case .deny(let reason):
                Denials.shared[state.connection] = reason
                return SQLITE_DENY
            }
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Compiles a statement with `prepare` and returns SQLite's code with what the statement does to transactions.
    func classifying(_ prepare: () -> Int32) -> (code: Int32, control: TransactionControl?) {
        control = nil
        let code = prepare()
        let found = control
        control = nil
        return (code, found)
    }

    /// The reason to refuse an action under `rules`, or nil to allow it. Arguments are those of
    /// `sqlite3_set_authorizer`.
    func decide(_ action: Int32, _ first: String?, _ second: String?, _ database: String?) -> String? {
        guard let rules else { return nil }
        switch action {
        case SQLITE_INSERT, SQLITE_UPDATE, SQLITE_DELETE, SQLITE_DROP_TABLE:
            return protectedMessage(first, in: database, verb: action == SQLITE_DROP_TABLE ? "drops" : "writes to")
        case SQLITE_ALTER_TABLE:
            return protectedMessage(second, in: first, verb: "alters")
        case SQLITE_CREATE_TRIGGER, SQLITE_CREATE_TEMP_TRIGGER:
            // A trigger on the history table would run inside Strata's own history writes.
            return protectedMessage(second, in: nil, verb: "puts a trigger on")
        case SQLITE_CREATE_TEMP_TABLE, SQLITE_CREATE_TEMP_VIEW:
            // A temp table of that name would take the history's writes in its place (temp is searched first).
            return protectedMessage(first, in: nil, verb: "creates another table or view named")
        case SQLITE_CREATE_TABLE, SQLITE_CREATE_VIEW, SQLITE_CREATE_VTABLE:
            // `CREATE VIRTUAL TABLE temp.…` arrives here with the temp schema: as protected as `CREATE TEMP TABLE`.
            let shadows = database?.lowercased() == "temp"
            return protectedMessage(first, in: shadows ? nil : database, verb: "creates another table or view named")
        case SQLITE_CREATE_INDEX, SQLITE_CREATE_TEMP_INDEX, SQLITE_DROP_INDEX, SQLITE_DROP_TEMP_INDEX:
            // The table is the second argument. An index (a unique one especially) can make history writes fail.
            let creates = action == SQLITE_CREATE_INDEX || action == SQLITE_CREATE_TEMP_INDEX
            return protectedMessage(second, in: database, verb: creates ? "puts an index on" : "drops an index on")
        case SQLITE_TRANSACTION where rules.insideTransaction:
            return "\(first ?? "this statement") would end the transaction Strata wraps around the file, breaking all-or-nothing; mark the file transaction=\"none\" in the manifest"
        case SQLITE_ATTACH where rules.insideTransaction, SQLITE_DETACH where rules.insideTransaction:
            return "\(action == SQLITE_ATTACH ? "ATTACH" : "DETACH") cannot run inside a transaction; mark the file transaction=\"none\" in the manifest"
        case SQLITE_PRAGMA where second != nil:
            return rules.refusal(pragma: first?.lowercased() ?? "", value: second?.lowercased() ?? "")
        default:
            return nil
        }
    }

    /// Strata's history: in `main`, or in a schema attached from the same file (an alias of the same table). A nil
    /// schema means wherever the name is. Other files' tables (VACUUM's scratch copy among them) are not Strata's.
    private func protectedMessage(_ table: String?, in schema: String?, verb: String) -> String? {
        guard let table, let rules, rules.protectedTables.contains(table.lowercased()) else { return nil }
        if let schema, schema.lowercased() != "main", !isMainFile(schema) { return nil }
        return HistoryRecord.refusal(verb: verb, table: table)
    }
}

extension ConnectionAuthorizer {
    /// Whether an attached schema is the main database's own file under another name.
    fileprivate func isMainFile(_ schema: String) -> Bool {
        guard let main = sqlite3_db_filename(connection, "main"), let other = sqlite3_db_filename(connection, schema)
        else { return false }
        let mainPath = String(cString: main), otherPath = String(cString: other)
        guard !mainPath.isEmpty, !otherPath.isEmpty else { return false }
        var a = stat(), b = stat()
        guard stat(mainPath, &a) == 0, stat(otherPath, &b) == 0 else { return mainPath == otherPath }
        return a.st_dev == b.st_dev && a.st_ino == b.st_ino
    }
}

/// The reason the authorizer last refused a statement on each connection, so an error made anywhere from
/// `sqlite3_errmsg` (a seed's insert, a script's statement) says why instead of SQLite's bare "not authorized".
private final class Denials: @unchecked Sendable {
    static let shared = Denials()
    private let lock = Lock()
    private var reasons: [OpaquePointer: String] = [:]

    subscript(connection: OpaquePointer) -> String? {
        get { lock.withLock { reasons[connection] } }
        set { lock.withLock { reasons[connection] = newValue } }
    }
}

/// SQLite's message for the last error on `connection`, or the authorizer's reason when it refused the statement.
func errorMessage(_ connection: OpaquePointer, code: Int32) -> String {
    if code & 0xff == SQLITE_AUTH, let reason = Denials.shared[connection] { return reason }
    return String(cString: sqlite3_errmsg(connection))
}

extension Database {
    /// Runs `body` with SQLite's authorizer enforcing `rules` on every statement prepared meanwhile. A refused
    /// statement throws `DatabaseError` with `SQLITE_AUTH` and the reason as its message.
    func withAuthorizer<T>(_ rules: ScriptRules, _ body: () throws -> T) throws -> T {
        let previous = authorizer.rules
        authorizer.rules = rules
        // Installed again so that statements compiled before these rules applied are compiled (and judged) anew.
        authorizer.install()
        defer {
            authorizer.rules = previous
            Denials.shared[handle] = nil
        }
        return try body()
    }
}
