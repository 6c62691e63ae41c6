import Foundation

/// Picks the backend for a database named on the command line or in a manifest: what a deploy script names with
/// `--database`, a Swift program names here.
public enum DatabaseTargets {
    /// The database `option` (a `--database` value) names, else the manifest's `<database>`; throws
    /// `MigrationError.noDatabase` when neither names one, and `DatabaseLocationError` for a name its backend refuses.
    public static func target(option: String?, manifest: Manifest?) throws -> any DatabaseTarget {
        if let option {
            if PostgresURL.isPostgres(option) { return PostgresTarget(url: option, historySchema: manifest?.databaseSchema) }
            return try target(location: option, source: "--database '\(DatabaseURL.redacted(option))'")
        }
        if let manifest, manifest.databaseBackend == .postgresql {
            return PostgresTarget(url: try manifest.resolvedDatabaseURL(), historySchema: manifest.databaseSchema)
        }
        if let path = manifest?.databasePath.map(displayPath) {
            return try target(location: path, source: "<database path=\"\(path)\">")
        }
        throw MigrationError.noDatabase
    }

    /// The database at `location`: a PostgreSQL connection URI (`postgres://`, `postgresql://`) or a SQLite path;
    /// `source` is how refusals name it.
    public static func target(location: String, source: String) throws -> any DatabaseTarget {
        if PostgresURL.isPostgres(location) { return PostgresTarget(url: location) }
        return try SQLiteTarget(path: location, source: source)
    }

    /// The dialect of `backend`, for checks that read SQL without a database (`strata validate`).
    public static func dialect(for backend: DatabaseBackend) -> any SQLDialect {
        switch backend {
        case .sqlite: SQLiteDialect()
        case .postgresql: PostgresDialect()
        }
    }

    /// An empty database of the default backend (SQLite, in memory), for checks that need a dialect but no data.
    public static func scratch() throws -> any MigrationDatabase {
        try Database(.inMemory)
    }
}
