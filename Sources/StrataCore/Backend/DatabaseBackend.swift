/// A kind of database Strata runs on. A manifest marks a migration for one with `backend="…"` (the raw value);
/// a database's dialect says which it is (`SQLDialect.backend`), and its plan holds the unmarked migrations and
/// those marked for it (`Manifest.plan(for:)`).
public enum DatabaseBackend: String, Sendable, CaseIterable, Codable {
    /// SQLite: a database file, or one in memory.
    case sqlite
    /// PostgreSQL: a server named by a `postgresql://` URL.
    case postgresql

    /// The name for messages: "SQLite", "PostgreSQL".
    public var displayName: String {
        switch self {
        case .sqlite: "SQLite"
        case .postgresql: "PostgreSQL"
        }
    }
}
