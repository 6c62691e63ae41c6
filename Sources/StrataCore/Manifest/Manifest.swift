#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A database described by a manifest: the ordered plan of migrations and seeds for each backend, and the model
/// mappings.
///
/// ```swift
/// let manifest = try Manifest.load(path: "manifests/example.xml")
/// print(manifest.plan(for: .sqlite).map(\.id))
/// ```
public struct Manifest: Sendable, Equatable {
    /// The manifest path as given to `load`.
    public let path: String
    /// The default database file (`<database path>`), resolved against the manifest's directory; nil when the
    /// manifest names none or names a PostgreSQL database.
    public let databasePath: String?
    /// The PostgreSQL connection URI of `<database url>` as written, `${NAME}` placeholders and all: it may hold a
    /// password, so print `DatabaseURL.redacted(_:)` of it, never the text. `resolvedDatabaseURL(environment:)`
    /// fills the placeholders.
    public let databaseURL: String?
    /// `<database schema>`: the PostgreSQL schema Strata's history table lives in; nil for the backend's default.
    public let databaseSchema: String?
    /// Where the `<database>` element is, for messages about the database it names.
    public let databaseLocation: SourceLocation?
    /// `<database backup="DIR" keep="N">`: the backup `strata migrate` and `strata seed` take before they write,
    /// the directory resolved against the manifest's. A program passes it on as `MigrationOptions.backup`; the
    /// runner takes none unless the options ask.
    public let databaseBackup: BackupOptions?
    /// Every migration of every backend, in natural order of identity (a migration marked for one backend may share
    /// its identity with one marked for another). `migrations(for:)` gives one backend's.
    public let migrations: [MigrationStep]
    /// Every seed set, in document order. Seeds belong to every backend's plan.
    public let seeds: [SeedStep]
    /// Every Swift code step (`<code>` in a `<migrations>`), in document order (includes read where they stand).
    /// Each is in the plans of the migration its `after` names; the program supplies its body with
    /// `Migrator.register(_:_:)`.
    public let codeSteps: [CodeStep]
    /// Model-to-table mappings by Swift type name.
    public let models: [ModelMapping]
    /// The top manifest's `<migrations directory>` elements in document order: where `strata new` creates files.
    public let migrationDirectories: [MigrationDirectory]
    /// The backends the manifest has migrations for: every backend when a migration is unmarked (or there are
    /// none), else those its `backend="…"` marks name. A database of another backend is refused by `Migrator`.
    public let backends: Set<DatabaseBackend>
    /// Things worth a look that do not stop the manifest from loading, e.g. a `2_b.SQL` file a migrations
    /// directory does not take; `strata validate` prints them.
    public let warnings: [ManifestProblem]
    /// The backends the manifest names: its `<database>`'s and every `backend="…"`.
    private let namedBackends: Set<DatabaseBackend>
    private let migrationsByBackend: [DatabaseBackend: [MigrationStep]]
    private let plans: [DatabaseBackend: [PlanStep]]

    /// Loads, validates and resolves a manifest file and its includes.
    /// - Throws: `ManifestError` listing every problem found.
    public static func load(path: String) throws -> Manifest {
        var loader = ManifestLoader()
        return try loader.load(path: path)
    }

    /// Loads a manifest from text; relative paths resolve against `directory`, and problems name `path`.
    public static func load(xml: String, path: String = "<manifest>", directory: String) throws -> Manifest {
        var loader = ManifestLoader()
        return try loader.load(text: xml, path: path, directory: directory)
    }

    /// Builds the plans: `migrationsByBackend` holds each backend's migrations, identities unique and in natural
    /// order (the loader checks both).
    init(path: String, database: DatabaseElement = DatabaseElement(), migrationsByBackend: [DatabaseBackend: [MigrationStep]],
         seeds: [SeedStep], codeSteps: [CodeStep] = [], models: [ModelMapping],
         migrationDirectories: [MigrationDirectory] = [], namedBackends: Set<DatabaseBackend> = [],
         warnings: [ManifestProblem] = []) {
        self.path = path
        databasePath = database.path
        databaseURL = database.url
        databaseSchema = database.schema
        databaseLocation = database.location
        databaseBackup = database.backup.map { BackupOptions(directory: $0, keep: database.keep) }
        self.migrationsByBackend = migrationsByBackend
        self.seeds = seeds
        self.codeSteps = codeSteps
        self.models = models
        self.migrationDirectories = migrationDirectories
        self.warnings = warnings
        self.namedBackends = namedBackends.union(database.backend.map { [$0] } ?? [])

        var all: [MigrationStep] = []
        for backend in DatabaseBackend.allCases {
            for migration in migrationsByBackend[backend] ?? [] where !all.contains(migration) { all.append(migration) }
        }
        migrations = all.sorted { left, right in
            if left.id != right.id { return NaturalOrder.areInIncreasingOrder(left.id, right.id) }
            return Self.rank(left.backends) < Self.rank(right.backends)
        }
        backends = Self.backends(of: all)

        var plans: [DatabaseBackend: [PlanStep]] = [:]
        for backend in DatabaseBackend.allCases {
            // Repeatable migrations come after the versioned ones, in name order (Flyway's rule).
            let all = migrationsByBackend[backend] ?? []
            let ordered = all.filter { !$0.repeatable }
                + all.filter(\.repeatable).sorted { NaturalOrder.areInIncreasingOrder($0.id, $1.id) }
            var plan: [PlanStep] = []
            for migration in ordered {
                plan.append(.migration(migration))
                // Its code steps first, in document order, then the seeds that follow it.
                plan += codeSteps.filter { $0.after == migration.id && ($0.backends?.contains(backend) ?? true) }
                    .map(PlanStep.code)
                plan += seeds.filter { $0.after == migration.id }.map(PlanStep.seed)
            }
            // A seed whose `after` this backend's plan lacks can only be in the plan of a backend the manifest has
            // no migrations for (the loader refuses it otherwise); it goes last, like an unanchored seed.
            let ids = Set(ordered.map(\.id))
            plan += seeds.filter { seed in seed.after.map { !ids.contains($0) } ?? true }.map(PlanStep.seed)
            plans[backend] = plan
        }
        self.plans = plans
    }

    /// Every backend when a migration is unmarked or there are none; else the backends the marks name.
    static func backends(of migrations: [MigrationStep]) -> Set<DatabaseBackend> {
        let marked = migrations.compactMap(\.backends)
        return migrations.isEmpty || marked.count < migrations.count ? Set(DatabaseBackend.allCases) : marked.reduce([]) { $0.union($1) }
    }

    /// The order of migrations sharing one identity in `migrations`: unmarked first, then by backend.
    private static func rank(_ backends: Set<DatabaseBackend>?) -> Int {
        guard let backends else { return -1 }
        return DatabaseBackend.allCases.firstIndex { backends.contains($0) } ?? DatabaseBackend.allCases.count
    }

    /// The plan of a database of `backend`: its migrations (`migrations(for:)`) in natural order, each code step
    /// right after the migration its `after` names (several after one file in document order), then each seed right
    /// after the migration its `after` names, then the other seeds in document order. Migrations marked for
    /// another backend are not part of it.
    public func plan(for backend: DatabaseBackend) -> [PlanStep] {
        plans[backend] ?? []
    }

    /// The migrations of `backend`'s plan: the unmarked ones and those marked for it, in natural order.
    public func migrations(for backend: DatabaseBackend) -> [MigrationStep] {
        migrationsByBackend[backend] ?? []
    }

    /// The backend the `<database>` element names: `.sqlite` for `path=`, `.postgresql` for `url=`; nil without one.
    /// What `DatabaseTargets` routes a manifest's own database by.
    public var databaseBackend: DatabaseBackend? {
        if databaseURL != nil { return .postgresql }
        return databasePath == nil ? nil : .sqlite
    }

    /// Whether the manifest says which backends it is for (a `<database>` element, `backend="…"` marks): without
    /// it, the dialect of its SQL is not known until a database is given.
    public var namesBackend: Bool { !namedBackends.isEmpty }

    /// The backends whose SQL `strata validate` checks: those the manifest names (its `<database>`'s and every
    /// `backend="…"`), or SQLite, the default, when it names none; of those, the ones it has migrations for.
    public var validatedBackends: [DatabaseBackend] {
        let named = namedBackends.isEmpty ? [.sqlite] : namedBackends
        return DatabaseBackend.allCases.filter { named.contains($0) && backends.contains($0) }
    }

    /// `<database url>` with each `${NAME}` replaced by the percent-encoded value of that environment variable.
    /// Done only when the URI is used, so a manifest whose database `--database` overrides needs none of them.
    /// - Throws: `ManifestError` naming the `<database>` element's `file:line` and every variable that is unset or
    ///   empty (an empty host or password would quietly connect elsewhere), or saying the manifest has no `url=`.
    public func resolvedDatabaseURL(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> String {
        let location = databaseLocation ?? SourceLocation(path: path, line: 1)
        guard let databaseURL else {
            throw ManifestError(problems: [ManifestProblem(location,
                "the manifest names no PostgreSQL database: add <database url=\"postgresql://…\"/> or name one with --database")])
        }
        switch DatabaseURL.substitute(databaseURL, environment: environment) {
        case .success(let resolved):
            return resolved
        case .failure(let unresolved):
            let shown = "url=\"\(DatabaseURL.redacted(databaseURL))\""
            var reasons: [String] = []
            if !unresolved.unset.isEmpty {
                reasons.append("\(Self.names(unresolved.unset)) \(unresolved.unset.count == 1 ? "is" : "are") not set")
            }
            if !unresolved.empty.isEmpty {
                reasons.append("\(Self.names(unresolved.empty)) \(unresolved.empty.count == 1 ? "is" : "are") set but empty")
            }
            if unresolved.malformed { reasons.append("it has a '${' or '%' that is not well formed") }
            throw ManifestError(problems: [ManifestProblem(location,
                "\(shown) cannot be used: in the environment, \(reasons.joined(separator: ", and ")); set "
                + "\(unresolved.unset.count + unresolved.empty.count == 1 ? "it" : "them"), or name the database with --database")])
        }
    }

    /// `${A}`, `${A} and ${B}`, `${A}, ${B} and ${C}`.
    private static func names(_ names: [String]) -> String {
        let shown = names.map { "${\($0)}" }
        guard let last = shown.last, shown.count > 1 else { return shown.joined() }
        return shown.dropLast().joined(separator: ", ") + " and " + last
    }

    /// The mapping declared for a Swift type name, if any.
    public func model(named typeName: String) -> ModelMapping? {
        models.first { $0.typeName == typeName }
    }
}

/// What the top manifest's `<database>` says, as the loader read it.
struct DatabaseElement: Sendable, Equatable {
    var path: String?
    var url: String?
    var schema: String?
    var location: SourceLocation?
    /// `backup`, resolved; with `keep`.
    var backup: String?
    var keep: Int?

    var backend: DatabaseBackend? {
        url != nil ? .postgresql : path != nil ? .sqlite : nil
    }
}

/// A `<migrations directory>` of the top manifest: where `strata new` may create a file.
public struct MigrationDirectory: Sendable, Equatable {
    /// The resolved directory path.
    public let path: String
    /// The layout of its files, which a new file follows.
    public let format: MigrationFormat
    /// The backend its `backend="…"` names; nil when its files are in every backend's plan.
    public let backend: DatabaseBackend?
    /// The `<migrations>` element.
    public let location: SourceLocation
}

/// One step of a plan.
public enum PlanStep: Sendable, Equatable {
    /// A SQL migration file.
    case migration(MigrationStep)
    /// A CSV seed set.
    case seed(SeedStep)
    /// Swift code the program registers with `Migrator.register(_:_:)`.
    case code(CodeStep)

    /// The step's identity: the migration's file name, the seed's id, or `code:NAME`.
    public var id: String {
        switch self {
        case .migration(let step): step.id
        case .seed(let step): step.id
        case .code(let step): step.id
        }
    }

    /// Whether the step is a migration or a seed, as its history record says.
    public var kind: StepKind {
        switch self {
        case .migration: .migration
        case .seed: .seed
        case .code: .code
        }
    }

    /// The kind `strata_history` records the step under. A code step is recorded as a migration whose identity is
    /// `code:NAME` (`kind` keeps its two values, so histories written before code steps existed stay valid, and a
    /// Strata that does not know code steps sees the row as a migration missing from the manifest and refuses).
    public var historyKind: StepKind {
        switch self {
        case .migration, .code: .migration
        case .seed: .seed
        }
    }

    /// The file the step reads; for a code step, which reads none, the manifest that declares it (for messages).
    public var filePath: String {
        switch self {
        case .migration(let step): step.path
        case .seed(let step): step.path
        case .code(let step): step.location.path
        }
    }

    /// Where the manifest declares the step.
    public var location: SourceLocation {
        switch self {
        case .migration(let step): step.location
        case .seed(let step): step.location
        case .code(let step): step.location
        }
    }
}

/// Whether a step runs SQL, loads CSV or runs the program's Swift code.
public enum StepKind: String, Sendable, Equatable, Codable {
    /// A migration (SQL, or Swift code recorded as a migration) or a seed set.
    case migration, seed
    /// A Swift code step. History records it with kind `migration` (see `PlanStep.historyKind`).
    case code
}

/// A Swift code step: `<code name="backfill_slugs" after="004_add_slug.sql" version="1"/>` in a `<migrations>`.
/// The manifest names it and places it; the program supplies its body (`Migrator.register(_:_:)`), which runs once,
/// in the step's transaction together with its history row.
public struct CodeStep: Sendable, Equatable {
    /// The prefix of a code step's identity; no migration's identity may start with it.
    public static let identityPrefix = "code:"

    /// The name the program registers the body under.
    public let name: String
    /// The migration (identity: file name or `id`) of the same `<migrations>` it runs right after.
    public let after: String
    /// What history records as the step's checksum: changing it after the step was applied is drift.
    public let version: String
    /// The `<code>` element.
    public let location: SourceLocation
    /// The backends of the migration it follows, whose plans it is in; nil for every backend.
    public let backends: Set<DatabaseBackend>?

    /// `code:NAME`, the step's identity in plans, reports and history.
    public var id: String { Self.identityPrefix + name }

    init(name: String, after: String, version: String, location: SourceLocation, backends: Set<DatabaseBackend>?) {
        self.name = name
        self.after = after
        self.version = version
        self.location = location
        self.backends = backends
    }
}

/// A SQL migration file.
public struct MigrationStep: Sendable, Equatable {
    /// The migration's identity in history: its file name, or the `id` its `<migration>` gives (for layouts such as
    /// diesel's `<name>/up.sql`); unchanged when its folder moves.
    public let id: String
    /// The resolved file path.
    public let path: String
    /// False for `transaction="none"` files (VACUUM, `PRAGMA journal_mode`, …) and for files that ask for it in
    /// their own format (`-- +goose NO TRANSACTION`, …), which run outside a transaction.
    public let runsInTransaction: Bool
    /// True for `foreignKeys="on"`: foreign keys are enforced while the file runs, so `ON DELETE` actions fire.
    /// By default they are off while a migration runs (and checked before it commits), as SQLite's documented
    /// procedure for schema changes requires: a table rebuild must not cascade into its children.
    public var enforcesForeignKeys = false
    /// True for goose files in a `<migrations envsub="true">`: the parts between `-- +goose ENVSUB ON` and `OFF` have
    /// `${NAME}` filled from the environment when they run (`EnvironmentSubstitution`); the checksum stays the file's.
    public var substitutesEnvironment = false
    /// Where the manifest declares it (its `<migrations>` or `<migration>` element).
    public let location: SourceLocation
    /// The backends whose plans hold this migration (`backend="…"` on it or its `<migrations>`); nil for every
    /// backend.
    public let backends: Set<DatabaseBackend>?
    /// How the file is laid out: for anything but `.plain` only the up section runs, found by
    /// `format.upSection(of:)` on the bytes about to run.
    public let format: MigrationFormat
    /// What undoes it (`Migrator.rollback`), nil when nothing does: the file's own down section, or a file of its own.
    public let down: MigrationDown?
    /// A repeatable migration (views, functions, triggers kept as `CREATE OR REPLACE`; Flyway's `R__` files): applied
    /// after the versioned steps of a run whenever its content differs from its last application, never drift,
    /// never rolled back.
    public let repeatable: Bool

    init(id: String, path: String, runsInTransaction: Bool, enforcesForeignKeys: Bool = false, location: SourceLocation,
         format: MigrationFormat = .plain, backends: Set<DatabaseBackend>? = nil, down: MigrationDown? = nil,
         repeatable: Bool = false) {
        self.id = id
        self.backends = backends
        self.path = path
        self.runsInTransaction = runsInTransaction
        self.enforcesForeignKeys = enforcesForeignKeys
        self.location = location
        self.format = format
        self.down = down
        self.repeatable = repeatable
    }
}

/// What undoes a migration: SQL that `Migrator.rollback` runs, newest step first, each in its own transaction with
/// its history change (outside one when it asks to run so, as its up can).
public struct MigrationDown: Sendable, Equatable {
    /// Where the down's SQL is.
    public enum Source: Sendable, Equatable {
        /// The down section of the migration's own file (goose, sql-migrate, dbmate: `format.downSection(of:)`).
        case section
        /// A file of its own, run whole: Strata's `NAME.down.sql` or `<migration down="…">`, golang-migrate's and
        /// sqlx's `.down.sql`, diesel's `down.sql`, Flyway's `U…__` undo file.
        case file(String)
    }

    /// Where the down's SQL comes from.
    public let source: Source
    /// False when the down asks to run outside a transaction (its section's own option, or the migration's).
    public let runsInTransaction: Bool

    /// Creates a down from its source and whether it runs in a transaction.
    public init(source: Source, runsInTransaction: Bool) {
        self.source = source
        self.runsInTransaction = runsInTransaction
    }
}

/// How a seed set's rows meet rows already in the table: the manifest's `mode` attribute.
public enum SeedMode: String, Sendable, Equatable, Codable {
    /// Plain INSERT: a conflict is an error naming the row.
    case insert
    /// Inserts rows whose key is new and skips the rest.
    case ignore
    /// Inserts new rows and updates existing ones by `key` (`ON CONFLICT … DO UPDATE`).
    case upsert
    /// `INSERT OR REPLACE`: a conflicting row is deleted and the new one inserted.
    case replace
    /// Upsert, then deletes the table's rows whose key is not in the file.
    case sync
}

/// What happens when an applied seed set's file has changed.
public enum SeedChangePolicy: String, Sendable, Equatable, Codable {
    /// The change is drift: `migrate` refuses until a human repairs it.
    case fail
    /// The seed set is applied again (meant for `upsert` and `sync`).
    case reapply
}

/// A CSV seed set.
public struct SeedStep: Sendable, Equatable {
    /// The seed's id in the history table: its file path as the manifest gives it.
    public let id: String
    /// The CSV file's path, resolved against the manifest's directory.
    public let path: String
    /// The table the rows go into.
    public let table: String
    /// The migration this seed runs right after; nil means after all migrations.
    public let after: String?
    /// How the rows meet those already in the table.
    public let mode: SeedMode
    /// The key columns for `upsert`, `sync` and `ignore`.
    public let key: [String]
    /// What happens when the file changes after it was applied.
    public let onChange: SeedChangePolicy
    /// Contexts this seed runs in; empty means always.
    public let contexts: [String]
    /// The field delimiter: `,`, `;`, tab or `|`.
    public let delimiter: UInt8
    /// An unquoted field equal to this token is NULL too (an unquoted empty field always is).
    public let nullToken: String?
    /// Per-column conversions overriding the table's declared types.
    public let columns: [SeedColumn]
    /// Where the manifest declares the seed.
    public let location: SourceLocation
}

/// A typed conversion for one CSV column.
public struct SeedColumn: Sendable, Equatable {
    /// The type a CSV column's text is converted to.
    public enum ValueType: String, Sendable, Equatable, Codable {
        /// One of the types a `<column type>` names.
        case integer, real, text, blob, boolean, date, datetime
    }

    /// How dates and datetimes are stored.
    public enum DateStorage: String, Sendable, Equatable, Codable {
        /// UTC ISO-8601 text: `2024-05-01` or `2024-05-01T09:30:00Z`.
        case text
        /// Seconds since 1970 as an integer.
        case unix
    }

    /// The CSV column's name (its header).
    public let name: String
    /// The type its text converts to; nil: the table column's declared type decides.
    public let type: ValueType?
    /// For blobs: `hex` or `base64` (default: `\x…` is hex, anything else base64).
    /// For dates and datetimes: `iso8601` (default) or `unix` when the CSV holds unix seconds.
    public let format: String?
    /// How dates and datetimes are written into the table.
    public let storage: DateStorage
}
