#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataCore

/// A PostgreSQL database named by a connection URI (command line or manifest) or a libpq keyword/value string
/// (command line).
public struct PostgresTarget: DatabaseTarget {
    /// The URI as given (with its password, if it holds one: never shown; `name` is what output uses).
    package let url: String
    /// The schema for `strata_history`, from the manifest's `<database schema>`; nil: `search_path`'s first.
    public let historySchema: String?

    /// A connection straight to the server for what needs a session of its own while it runs when `url` goes
    /// through a connection pooler (`PostgresConnection.directURL`): `--direct-database`.
    package let directURL: String?

    /// Creates a target for the database at `url`, with `strata_history` in `historySchema`.
    public init(url: String, historySchema: String? = nil, directURL: String? = nil) {
        self.url = url
        self.historySchema = historySchema
        self.directURL = directURL
    }

    /// The URL with any password hidden.
    public var name: String { DatabaseURL.redacted(url) }

    /// A server database is there when it can be connected to; a missing one is reported when it is opened.
    public var exists: Bool { true }

    /// Opens the database for a run that writes. A server that cannot write (a hot standby, or a session that
    /// is read-only by default) is refused before anything runs.
    public func openForWriting(timeout: Duration) throws -> any MigrationDatabase {
        let connection = try PostgresConnection(url: url, schema: historySchema, lockTimeout: timeout)
        connection.directURL = directURL
        if try connection.scalar("SELECT pg_catalog.pg_is_in_recovery()", as: Bool.self) == true {
            throw DatabaseError(kind: .readOnly, code: nil,
                                message: "\(name) is read-only: a hot standby (in recovery); point --database at the primary, or add target_session_attrs=read-write to a URI that names every host")
        }
        if try connection.scalar("SHOW default_transaction_read_only", as: String.self) == "on" {
            throw DatabaseError(kind: .readOnly, code: nil,
                                message: "\(name) is read-only: its sessions start read-only (default_transaction_read_only = on)")
        }
        return connection
    }

    /// As for writing: the rehearsal writes inside a transaction it rolls back, which a hot standby cannot open.
    public func openForRehearsal(timeout: Duration) throws -> any MigrationDatabase {
        try openForWriting(timeout: timeout)
    }

    /// A connection for reading the database's history and schema.
    public func openForReading() throws -> any MigrationDatabase {
        try PostgresConnection(url: url, schema: historySchema)
    }

    /// The database's schema as `strata schema` prints it.
    public func schema() throws -> String {
        try PostgresSchema(connection: PostgresConnection(url: url, schema: historySchema)).text()
    }
}
