import StrataCore

/// SQLite's SQL: `?` placeholders, its parameter limit, type affinity, and its script splitter (`SQLScanner`, the
/// rules of `sqlite3_complete`) with the migration rules `SQLLint` checks ahead of time.
public struct SQLiteDialect: SQLDialect {
    /// How the database stores a `Date` (`Database.Configuration.dateStorage`).
    public let dateStorage: DateStorage

    /// Creates the dialect, storing dates as `dateStorage` says.
    public init(dateStorage: DateStorage = .iso8601Text) {
        self.dateStorage = dateStorage
    }

    /// "SQLite".
    public var name: String { "SQLite" }
    /// SQLite.
    public var backend: DatabaseBackend { .sqlite }

    /// `?`.
    public func placeholder(_ index: Int) -> String { "?" }

    /// SQLite's compiled-in `SQLITE_MAX_VARIABLE_NUMBER` (32,766 since 3.32); a connection may lower it.
    public var maximumParameters: Int { 32_766 }

    /// SQLite's affinity for a declared column type, by its rules.
    public func affinity(ofDeclaredType declaredType: String) -> Affinity {
        Affinity(sqliteDeclaredType: declaredType)
    }

    /// Problems in a SQLite migration that would fail or misbehave, found before it runs.
    public func lint(_ bytes: [UInt8], insideTransaction: Bool) -> [LintFinding] {
        SQLLint.findings(in: bytes, insideTransaction: insideTransaction)
    }

    /// Version 2: line endings inside literals as `SQLScanner` (SQLite's tokenizer) reads them are data.
    public var checksumVersion: Int { 2 }
}
