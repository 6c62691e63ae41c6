#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Picks the backend for a database named on the command line or in a manifest: what a deploy script names with
/// `--database`, a Swift program names here.
public enum DatabaseTargets {
    /// The variables naming the database when neither `--database` nor the manifest does, the first set (and not
    /// empty) winning: `STRATA_DATABASE` (Strata's own), then `DATABASE_URL` (the name hosting platforms and CI
    /// services set).
    public static let environmentVariables = ["STRATA_DATABASE", "DATABASE_URL"]

    /// The database `option` (a `--database` value) names, else the manifest's `<database>`, else the first of
    /// `environmentVariables` set in `environment`; throws `MigrationError.noDatabase` when none names one, and
    /// `DatabaseLocationError` for a name its backend refuses. A value from `option` or a variable that would make a
    /// new SQLite file of a bare word (`errdb`: no directory, no `.sqlite`/`.sqlite3`/`.db` ending, no `file:`
    /// form, no such file) is refused too: it is more likely a PostgreSQL database's name than a file wanted there.
    public static func target(option: String?, manifest: Manifest?, environment: [String: String] = [:]) throws -> any DatabaseTarget {
        try target(option: option, manifest: manifest, direct: nil, environment: environment)
    }

    /// `target(option:manifest:environment:)`, with `direct` (a `--direct-database` value): a connection straight to
    /// the same PostgreSQL database for what needs a session of its own while it runs, when the target goes through
    /// a connection pooler (`PostgresConnection.directURL`). Refused for a SQLite target.
    public static func target(option: String?, manifest: Manifest?, direct: String?,
                              environment: [String: String] = [:]) throws -> any DatabaseTarget {
        let target = try baseTarget(option: option, manifest: manifest, environment: environment)
        guard let direct else { return target }
        guard let postgres = target as? PostgresTarget, PostgresURL.isURI(direct) || DatabaseURL.isKeywordValue(direct) else {
            throw DatabaseLocationError("--direct-database names a PostgreSQL connection straight to the server (postgresql://… or host=… dbname=…), used with a PostgreSQL --database that goes through a connection pooler")
        }
        return PostgresTarget(url: postgres.url, historySchema: postgres.historySchema, directURL: direct)
    }

    private static func baseTarget(option: String?, manifest: Manifest?, environment: [String: String]) throws -> any DatabaseTarget {
        if let option {
            return try checkedWord(try target(location: option, source: "--database '\(DatabaseURL.redacted(option))'",
                                              historySchema: manifest?.databaseSchema), location: option)
        }
        if let manifest, manifest.databaseBackend == .postgresql {
            return PostgresTarget(url: try manifest.resolvedDatabaseURL(), historySchema: manifest.databaseSchema)
        }
        if let path = manifest?.databasePath.map(displayPath) {
            return try target(location: path, source: "<database path=\"\(DatabaseURL.redacted(path))\">")
        }
        for name in environmentVariables {
            guard let value = environment[name], !value.isEmpty else { continue }
            let source = "$\(name) ('\(DatabaseURL.redacted(value))')"
            return try checkedWord(try target(location: value, source: source, historySchema: manifest?.databaseSchema),
                                   location: value)
        }
        throw MigrationError.noDatabase
    }

    /// `target`, unless it is a SQLite file that does not exist named by a bare word (see `target(option:…)`).
    static func checkedWord(_ target: any DatabaseTarget, location: String) throws -> any DatabaseTarget {
        guard let sqlite = target as? SQLiteTarget, !sqlite.exists, isBareWord(location) else { return target }
        let shown = DatabaseURL.redacted(location)
        throw DatabaseLocationError("\(sqlite.source) is no file here, and a bare name would become a new SQLite file '\(shown)' "
                                    + "in the current directory. For the PostgreSQL database \(shown), name it as libpq does: "
                                    + "postgres://HOST/\(shown) (or host=HOST dbname=\(shown)); to create a SQLite file, "
                                    + "write ./\(shown) or a name ending in .sqlite, .sqlite3 or .db")
    }

    /// A name with no directory, no SQLite file ending and no `file:` form.
    static func isBareWord(_ location: String) -> Bool {
        guard !location.contains("/"), !location.hasPrefix("file:") else { return false }
        let lower = location.lowercased()
        return ![".sqlite", ".sqlite3", ".db"].contains { lower.hasSuffix($0) }
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
