/// Another migration tool whose own history table `baseline --from` reads, to adopt a database that tool migrated.
public enum ForeignTool: String, CaseIterable, Sendable {
    /// dbmate: `schema_migrations(version)`, one row per version applied.
    case dbmate
    /// golang-migrate: `schema_migrations(version, dirty)`, one row, the version reached.
    case golangMigrate = "golang-migrate"
    /// goose: `goose_db_version(id, version_id, is_applied, tstamp)`, a row per up (and, in older releases, down).
    case goose
    /// Flyway: `flyway_schema_history`, a row per script run, in `installed_rank` order.
    case flyway
    /// sqlx: `_sqlx_migrations(version, description, installed_on, success, checksum, execution_time)`.
    case sqlx
    /// diesel: `__diesel_schema_migrations(version, run_on)`.
    case diesel

    /// The table the tool keeps its history in (in the connection's default schema).
    public var table: String {
        switch self {
        case .dbmate, .golangMigrate: "schema_migrations"
        case .goose: "goose_db_version"
        case .flyway: "flyway_schema_history"
        case .sqlx: "_sqlx_migrations"
        case .diesel: "__diesel_schema_migrations"
        }
    }

    /// The version the tool gives a migration, read from its file name as the tool reads it, in the form
    /// `ForeignVersion` compares; nil for a file the tool would not take as a versioned migration.
    func version(of migration: MigrationStep) -> ForeignVersion? {
        let name = PathComponents.last(migration.id)
        switch self {
        case .dbmate, .golangMigrate, .goose, .sqlx:
            return ForeignVersion(number: String(name.prefix { $0.isASCII && $0.isNumber }))
        case .flyway:
            // V{version}__{description}: the version's parts are separated by '.' or '_'.
            let characters = Array(name)
            guard characters.first == "V",
                  let end = characters.indices.dropFirst().first(where: { characters[$0] == "_" && $0 + 1 < characters.count && characters[$0 + 1] == "_" })
            else { return nil }
            return ForeignVersion(dotted: String(characters[1..<end]))
        case .diesel:
            // {version}_{name}/up.sql: the directory's name up to its first '_', without its '-'s.
            let directory = PathComponents.last(migration.path) == "up.sql"
                ? PathComponents.last(PathComponents.deletingLast(migration.path))
                : String(migration.id.split(separator: "/").first ?? "")
            let version = directory.prefix { $0 != "_" }.filter { $0 != "-" }
            return ForeignVersion(number: String(version))
        }
    }
}

/// A version as a tool compares them: numeric parts, leading zeros and trailing zero parts dropped (`001` is `1`,
/// Flyway's `1.0` is `1`, `1.10` comes after `1.9`).
struct ForeignVersion: Hashable, Comparable, CustomStringConvertible {
    let parts: [String]

    /// Digits only; nil for anything else (an empty string included).
    init?(number text: String) {
        self.init(text, dotted: false)
    }

    /// Digit runs separated by `.` or `_` (Flyway's); nil for anything else.
    init?(dotted text: String) {
        self.init(text, dotted: true)
    }

    private init?(_ text: String, dotted: Bool) {
        let runs = text.split(separator: Character("."), omittingEmptySubsequences: false)
            .flatMap { $0.split(separator: "_", omittingEmptySubsequences: false) }
        guard dotted || runs.count == 1 else { return nil }
        var parts: [String] = []
        for run in runs {
            guard !run.isEmpty, run.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
            let significant = run.drop { $0 == "0" }
            parts.append(significant.isEmpty ? "0" : String(significant))
        }
        while parts.count > 1, parts.last == "0" { parts.removeLast() }
        guard !parts.isEmpty else { return nil }
        self.parts = parts
    }

    var description: String { parts.joined(separator: ".") }

    static func < (left: ForeignVersion, right: ForeignVersion) -> Bool {
        for (a, b) in zip(left.parts, right.parts) where a != b {
            return a.count != b.count ? a.count < b.count : a < b
        }
        return left.parts.count < right.parts.count
    }
}

/// What a tool's history table says was applied, read as that tool reads it.
struct ForeignHistory {
    /// The versions applied.
    var applied: Set<ForeignVersion> = []
    /// Every version up to and including this one counts as applied without a file of its own (golang-migrate's one
    /// row; Flyway's `BASELINE`).
    var through: ForeignVersion?
    /// Why the history cannot be adopted as it stands (a dirty or failed step), one per row.
    var refusals: [Refusal] = []
    /// What was passed over, for the report (Flyway's repeatable rows: Strata applies those files itself).
    var notes: [String] = []

    /// Reads `tool`'s table; refuses when it is missing or not the tool's shape.
    static func read(_ tool: ForeignTool, from database: any DatabaseConnection) throws -> ForeignHistory {
        let table = tool.table
        guard try database.tableExists(table) else {
            throw MigrationError.refused([Refusal(reason: .foreignHistory, id: table,
                message: "this database has no \(table) table, where \(tool.rawValue) keeps its history: nothing to adopt; check --database, or use 'strata baseline --through ID'")])
        }
        let columns = Set(try database.columns(in: table).map { $0.name.lowercased() })
        let needed = neededColumns(tool)
        let lacking = needed.filter { !columns.contains($0) }
        if tool == .dbmate && columns.contains("dirty") {
            throw MigrationError.refused([Refusal(reason: .foreignHistory, id: table,
                message: "\(table) has a dirty column, as golang-migrate's history does, not dbmate's: use --from golang-migrate")])
        }
        if !lacking.isEmpty {
            throw MigrationError.refused([Refusal(reason: .foreignHistory, id: table,
                message: "\(table) is not \(tool.rawValue)'s history table: it lacks the column\(lacking.count == 1 ? "" : "s") \(lacking.joined(separator: ", "))")])
        }
        var history = ForeignHistory()
        func refuse(_ id: String, _ message: String) {
            history.refusals.append(Refusal(reason: .foreignHistory, id: id, message: message))
        }
        func text(_ row: Row, _ index: Int) throws -> String? { try row.get(index, as: String?.self) }
        func flag(_ row: Row, _ index: Int) throws -> Bool { (try row.get(index, as: Int?.self) ?? 0) != 0 }
        switch tool {
        case .dbmate, .diesel:
            for row in try database.rows("SELECT CAST(version AS TEXT) FROM \(table)", .none) {
                guard let version = try text(row, 0) else { continue }
                guard let parsed = ForeignVersion(number: version.filter { $0 != "-" }) else {
                    refuse(version, "\(table) records version '\(version)', which is not a \(tool.rawValue) version (digits)"); continue
                }
                history.applied.insert(parsed)
            }
        case .golangMigrate:
            let rows = try database.rows("SELECT CAST(version AS TEXT), CASE WHEN dirty THEN 1 ELSE 0 END FROM \(table)", .none)
            guard rows.count <= 1 else {
                refuse(table, "\(table) has \(rows.count) rows; golang-migrate keeps exactly one (the version it reached): check the table by hand")
                break
            }
            guard let row = rows.first, let version = try text(row, 0) else { break }
            if try flag(row, 1) {
                refuse(version, "golang-migrate's \(table) marks version \(version) dirty: it failed part-way, and what the database holds of it is not known; fix the database by hand and set the version with 'migrate force', then adopt it")
            }
            guard let parsed = ForeignVersion(number: version) else {
                refuse(version, "\(table) records version '\(version)', which is not a golang-migrate version (digits)"); break
            }
            history.applied.insert(parsed)
            history.through = parsed
        case .goose:
            // Newest row first: a version's latest row says whether it is applied (older goose wrote is_applied false
            // rows for downs); version 0 is the row goose writes when it creates the table.
            var seen: Set<ForeignVersion> = []
            for row in try database.rows("SELECT CAST(version_id AS TEXT), CASE WHEN is_applied THEN 1 ELSE 0 END FROM \(table) ORDER BY id DESC", .none) {
                guard let version = try text(row, 0), let parsed = ForeignVersion(number: version) else { continue }
                guard parsed != ForeignVersion(number: "0"), seen.insert(parsed).inserted else { continue }
                if try flag(row, 1) { history.applied.insert(parsed) }
            }
        case .sqlx:
            for row in try database.rows("SELECT CAST(version AS TEXT), CASE WHEN success THEN 1 ELSE 0 END FROM \(table) ORDER BY version", .none) {
                guard let version = try text(row, 0), let parsed = ForeignVersion(number: version) else { continue }
                if try !flag(row, 1) {
                    refuse(version, "sqlx's \(table) marks version \(version) as not successful: it failed part-way (sqlx calls it partially applied), and what the database holds of it is not known; fix the database and the row by hand, then adopt it")
                }
                history.applied.insert(parsed)
            }
        case .flyway:
            for row in try database.rows("SELECT CAST(version AS TEXT), type, script, CASE WHEN success THEN 1 ELSE 0 END FROM \(table) ORDER BY installed_rank", .none) {
                let version = try text(row, 0)
                let type = (try text(row, 1) ?? "").uppercased()
                let script = try text(row, 2) ?? ""
                guard try flag(row, 3) else {
                    refuse(version ?? script, "Flyway's \(table) records \(script.isEmpty ? "version \(version ?? "")" : script) as failed (success false): what the database holds of it is not known; fix the database and run 'flyway repair', then adopt it")
                    continue
                }
                if type == "SCHEMA" { continue }
                guard let version else {
                    if !script.isEmpty { history.notes.append(script) }
                    continue
                }
                guard let parsed = ForeignVersion(dotted: version) else {
                    refuse(version, "\(table) records version '\(version)', which is not a Flyway version (numbers separated by '.')"); continue
                }
                if type == "BASELINE" {
                    history.through = max(history.through ?? parsed, parsed)
                } else if type.hasPrefix("UNDO") || type == "DELETE" {
                    history.applied.remove(parsed)
                } else {
                    history.applied.insert(parsed)
                }
            }
        }
        return history
    }

    static func neededColumns(_ tool: ForeignTool) -> [String] {
        switch tool {
        case .dbmate: ["version"]
        case .golangMigrate: ["version", "dirty"]
        case .goose: ["id", "version_id", "is_applied"]
        case .flyway: ["installed_rank", "version", "type", "script", "success"]
        case .sqlx: ["version", "success"]
        case .diesel: ["version"]
        }
    }

    /// The tools whose history table this database has, with the table's row count: what `status` and a failed
    /// first `migrate` point at when Strata's own history is empty. `schema_migrations` is dbmate's, or
    /// golang-migrate's when it has a `dirty` column.
    static func present(in database: any DatabaseConnection) -> [(tool: ForeignTool, rows: Int)] {
        ForeignTool.allCases.compactMap { tool in
            guard (try? database.tableExists(tool.table)) == true,
                  let columns = try? Set(database.columns(in: tool.table).map { $0.name.lowercased() }) else { return nil }
            switch tool {
            case .dbmate where columns.contains("dirty"), .golangMigrate where !columns.contains("dirty"): return nil
            default: break
            }
            guard neededColumns(tool).allSatisfy(columns.contains) else { return nil }
            let rows: Int? = try? database.scalar("SELECT count(*) FROM \(tool.table)", .none, as: Int.self)
            return (tool, rows ?? 0)
        }
    }
}
