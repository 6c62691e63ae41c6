#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Opens a pool for a database named as `--database` names one (`DatabaseTargets` picks the backend): code that
/// takes "a pool of either backend" gets one from a location string.
///
/// ```swift
/// let pool = try DatabasePools.open(location: "library.sqlite")    // or "postgresql://app@db/library"
/// let books = try pool.read { db in try db.scalar("SELECT count(*) FROM books", as: Int.self) }
/// ```
public enum DatabasePools {
    /// A pool on the database at `location`: a SQLite file (`DatabasePool`, WAL, `size` readers beside its one
    /// writer) or a PostgreSQL URI or keyword/value string (`PostgresPool` of `size` connections). A call waits up
    /// to `checkoutTimeout` for a free connection. Names no durable database is kept at (`:memory:`, another
    /// scheme) are refused with `DatabaseLocationError`, as `DatabaseTargets.target(location:source:)` refuses them.
    public static func open(location: String, size: Int = 5,
                            checkoutTimeout: Duration = .seconds(30)) throws -> any ConnectionPool {
        let target = try DatabaseTargets.target(location: location, source: "'\(DatabaseURL.redacted(location))'")
        switch target {
        case let postgres as PostgresTarget:
            return PostgresPool(url: postgres.url, configuration: PostgresPool.Configuration(size: size, checkoutTimeout: checkoutTimeout))
        case let sqlite as SQLiteTarget:
            return try DatabasePool(path: sqlite.path,
                                    configuration: DatabasePool.Configuration(maximumReaderCount: size, checkoutTimeout: checkoutTimeout))
        default:
            throw DatabaseLocationError("'\(DatabaseURL.redacted(location))' names a database no pool is written for (\(type(of: target)))")
        }
    }
}
