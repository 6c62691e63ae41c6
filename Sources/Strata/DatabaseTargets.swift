#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Picks the backend for a database named on the command line or in a manifest: what a deploy script names with
/// `--database`, a Swift program names here.
public enum DatabaseTargets {
    /// The database `option` (a `--database` value) names, else the manifest's `<database>`; throws
    /// `MigrationError.noDatabase` when neither names one, and `DatabaseLocationError` for a name its backend refuses.
    public static func target(option: String?, manifest: Manifest?) throws -> any DatabaseTarget {
        try target(option: option, manifest: manifest, direct: nil)
    }

    /// `target(option:manifest:)`, with `direct` (a `--direct-database` value): a connection straight to the same
    /// PostgreSQL database for what needs a session of its own while it runs, when the target goes through a
    /// connection pooler (`PostgresConnection.directURL`). Refused for a SQLite target.
    public static func target(option: String?, manifest: Manifest?, direct: String?) throws -> any DatabaseTarget {
        let target = try baseTarget(option: option, manifest: manifest)
        guard let direct else { return target }
        guard let postgres = target as? PostgresTarget, PostgresURL.isURI(direct) || DatabaseURL.isKeywordValue(direct) else {
            throw DatabaseLocationError("--direct-database names a PostgreSQL connection straight to the server (postgresql://… or host=… dbname=…), used with a PostgreSQL --database that goes through a connection pooler")
        }
        return PostgresTarget(url: postgres.url, historySchema: postgres.historySchema, directURL: direct)
    }

    private static func baseTarget(option: String?, manifest: Manifest?) throws -> any DatabaseTarget {
        if let option {
            return try target(location: option, source: "--database '\(DatabaseURL.redacted(option))'",
                              historySchema: manifest?.databaseSchema)
        }
        if let manifest, manifest.databaseBackend == .postgresql {
            return PostgresTarget(url: try manifest.resolvedDatabaseURL(), historySchema: manifest.databaseSchema)
        }
        if let path = manifest?.databasePath.map(displayPath) {
            return try target(location: path, source: "<database path=\"\(DatabaseURL.redacted(path))\">")
        }
        throw MigrationError.noDatabase
    }

    /// The database at `location`: a PostgreSQL connection URI (`postgres://`, `postgresql://`) or libpq
    /// keyword/value string (`host=db dbname=app`), else a SQLite path or `file:` URI; `source` is how refusals
    /// name it. Refused (`DatabaseLocationError`): a keyword/value string libpq does not accept, and any other URI
    /// (`PostgreSQL://…`, `mysql://…`): neither may quietly become a SQLite file of that name.
    public static func target(location: String, source: String) throws -> any DatabaseTarget {
        try target(location: location, source: source, historySchema: nil)
    }

    /// `target(location:source:)`, the history kept in `historySchema` on PostgreSQL (the manifest's `<database schema>`
    /// holds when another database replaces its own).
    static func target(location: String, source: String, historySchema: String?) throws -> any DatabaseTarget {
        if PostgresURL.isURI(location) { return PostgresTarget(url: location, historySchema: historySchema) }
        if DatabaseURL.isKeywordValue(location) {
            if let problem = PostgresURL.problem(with: location) {
                throw DatabaseLocationError("\(source) reads as a libpq connection string (keyword=value), which libpq refuses: \(problem); "
                                            + "for a SQLite file whose name starts with 'name=', write it as ./name=…")
            }
            return PostgresTarget(url: location, historySchema: historySchema)
        }
        if let scheme = DatabaseURL.unreadScheme(of: location) {
            throw DatabaseLocationError("\(source) is a URI with the scheme '\(scheme)', which Strata does not read: name a PostgreSQL "
                                        + "database with postgresql://… or postgres://… (lower case, at the very start, as libpq reads them) "
                                        + "or a libpq keyword/value string (host=… dbname=…), a SQLite database with a file path or a file: URI")
        }
        return try SQLiteTarget(path: location, source: source)
    }

    /// The refusal a backup (`MigrationOptions.backup`) of `target` meets before anything is opened: nil for a
    /// SQLite file; for a PostgreSQL database, the reason with what to use instead (`pg_dump`, point-in-time
    /// recovery). `Migrator` refuses the same on a connection, for programs that open one themselves.
    public static func backupRefusal(for target: any DatabaseTarget) -> Refusal? {
        guard !(target is SQLiteTarget) else { return nil }
        return Refusal(reason: .backup, id: DatabaseBackend.postgresql.rawValue,
                       message: PostgresConnection.backupUnavailableReason(target.name))
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
