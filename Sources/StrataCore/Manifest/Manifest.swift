import Foundation

/// A database described by a manifest: the ordered plan of migrations and seeds, and the model mappings.
///
/// ```swift
/// let manifest = try Manifest.load(path: "manifests/example.xml")
/// print(manifest.plan.map(\.id))
/// ```
public struct Manifest: Sendable, Equatable {
    /// The manifest path as given to `load`.
    public let path: String
    /// The default database file, resolved against the manifest's directory; nil when the manifest names none.
    public let databasePath: String?
    /// Every migration, in natural order of file name.
    public let migrations: [MigrationStep]
    /// Every seed set, in document order.
    public let seeds: [SeedStep]
    /// Migrations with each seed placed right after the migration its `after` names (or at the end).
    public let plan: [PlanStep]
    /// Model-to-table mappings by Swift type name.
    public let models: [ModelMapping]
    /// The top manifest's first `<migrations directory>`, where `strata new` creates files.
    public let migrationDirectory: String?
    /// That directory's `format`, which the files `strata new` creates follow.
    public let migrationDirectoryFormat: MigrationFormat
    /// Things worth a look that do not stop the manifest from loading, e.g. a `2_b.SQL` file a migrations
    /// directory does not take; `strata validate` prints them.
    public let warnings: [ManifestProblem]

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

    init(path: String, databasePath: String?, migrations: [MigrationStep], seeds: [SeedStep], models: [ModelMapping],
         migrationDirectory: String?, migrationDirectoryFormat: MigrationFormat = .plain, warnings: [ManifestProblem] = []) {
        self.path = path
        self.migrationDirectoryFormat = migrationDirectoryFormat
        self.warnings = warnings
        self.migrationDirectory = migrationDirectory
        self.databasePath = databasePath
        self.migrations = migrations
        self.seeds = seeds
        self.models = models
        var plan: [PlanStep] = []
        for migration in migrations {
            plan.append(.migration(migration))
            plan += seeds.filter { $0.after == migration.id }.map(PlanStep.seed)
        }
        plan += seeds.filter { $0.after == nil }.map(PlanStep.seed)
        self.plan = plan
    }

    /// The mapping declared for a Swift type name, if any.
    public func model(named typeName: String) -> ModelMapping? {
        models.first { $0.typeName == typeName }
    }
}

/// One step of a plan.
public enum PlanStep: Sendable, Equatable {
    case migration(MigrationStep)
    case seed(SeedStep)

    /// The step's identity: the migration's file name or the seed's id.
    public var id: String {
        switch self {
        case .migration(let step): step.id
        case .seed(let step): step.id
        }
    }

    public var kind: StepKind {
        switch self {
        case .migration: .migration
        case .seed: .seed
        }
    }

    /// The file the step reads.
    public var filePath: String {
        switch self {
        case .migration(let step): step.path
        case .seed(let step): step.path
        }
    }

    public var location: SourceLocation {
        switch self {
        case .migration(let step): step.location
        case .seed(let step): step.location
        }
    }
}

/// Whether a step runs SQL or loads CSV.
public enum StepKind: String, Sendable, Equatable, Codable {
    case migration, seed
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
    /// Where the manifest declares it (its `<migrations>` or `<migration>` element).
    public let location: SourceLocation
    /// How the file is laid out: for anything but `.plain` only the up section runs, found by
    /// `format.upSection(of:)` on the bytes about to run.
    public let format: MigrationFormat

    init(id: String, path: String, runsInTransaction: Bool, enforcesForeignKeys: Bool = false, location: SourceLocation,
         format: MigrationFormat = .plain) {
        self.id = id
        self.path = path
        self.runsInTransaction = runsInTransaction
        self.enforcesForeignKeys = enforcesForeignKeys
        self.location = location
        self.format = format
    }
}

/// How a seed set's rows meet rows already in the table.
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
    public let id: String
    public let path: String
    public let table: String
    /// The migration this seed runs right after; nil means after all migrations.
    public let after: String?
    public let mode: SeedMode
    /// The key columns for `upsert`, `sync` and `ignore`.
    public let key: [String]
    public let onChange: SeedChangePolicy
    /// Contexts this seed runs in; empty means always.
    public let contexts: [String]
    /// The field delimiter: `,`, `;`, tab or `|`.
    public let delimiter: UInt8
    /// An unquoted field equal to this token is NULL too (an unquoted empty field always is).
    public let nullToken: String?
    /// Per-column conversions overriding the table's declared types.
    public let columns: [SeedColumn]
    public let location: SourceLocation
}

/// A typed conversion for one CSV column.
public struct SeedColumn: Sendable, Equatable {
    public enum ValueType: String, Sendable, Equatable, Codable {
        case integer, real, text, blob, boolean, date, datetime
    }

    /// How dates and datetimes are stored.
    public enum DateStorage: String, Sendable, Equatable, Codable {
        /// UTC ISO-8601 text: `2024-05-01` or `2024-05-01T09:30:00Z`.
        case text
        /// Seconds since 1970 as an integer.
        case unix
    }

    public let name: String
    public let type: ValueType?
    /// For blobs: `hex` or `base64` (default: `\x…` is hex, anything else base64).
    /// For dates and datetimes: `iso8601` (default) or `unix` when the CSV holds unix seconds.
    public let format: String?
    public let storage: DateStorage
}

/// How a Swift type maps onto a table; anything not stated follows the default naming rules.
public struct ModelMapping: Sendable, Equatable {
    public let typeName: String
    public let table: String?
    public let primaryKey: [String]
    /// Property name to column name.
    public let columns: [String: String]
    public let location: SourceLocation?

    public init(typeName: String, table: String? = nil, primaryKey: [String] = [], columns: [String: String] = [:],
                location: SourceLocation? = nil) {
        self.typeName = typeName
        self.table = table
        self.primaryKey = primaryKey
        self.columns = columns
        self.location = location
    }
}
