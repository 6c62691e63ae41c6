import Foundation
import StrataCore
@testable import StrataPostgres
import XCTest

/// A test project's PostgreSQL database looked at from outside, as the conformance suite looks at a SQLite file:
/// its tables, everything it stores, and whether another session has uncommitted writes.
struct PostgresTestDatabase {
    let connection: PostgresConnection

    init(_ root: URL) throws {
        connection = try PostgresConnection(url: try PostgresServer.shared().url(for: root))
    }

    /// The tables of the `public` schema, Strata's history included.
    func userTables() throws -> [String] {
        try connection.rows("SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind = 'r' ORDER BY 1")
            .map { try $0.get(0, as: String.self) }
    }

    /// The schema and every row of every table, as text in a stable order: equal before and after a command that
    /// writes nothing.
    func contents() throws -> String {
        try Self.contents(of: connection)
    }

    static func contents(of connection: PostgresConnection) throws -> String {
        var text = try PostgresSchema(connection: connection).text()
        for table in try PostgresTestDatabase(connection: connection).userTables() {
            let rows = try connection.rows("SELECT t::text FROM \(quoteIdentifier(table)) t ORDER BY 1", .none)
            text += "\n-- \(table)\n" + (try rows.map { try $0.get(0, as: String.self) }.joined(separator: "\n"))
        }
        return text
    }

    /// Whether a session other than this one holds a transaction that has written (it has a transaction id).
    func otherSessionHasWritten() throws -> Bool {
        try connection.scalar("""
            SELECT EXISTS (SELECT 1 FROM pg_stat_activity
                           WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_xid IS NOT NULL)
            """, as: Bool.self) ?? false
    }

    private init(connection: PostgresConnection) {
        self.connection = connection
    }
}

extension Project {
    /// A PostgreSQL project whose `sql/001_t.sql` (`first`) is migrated, then `file` added to the manifest as a
    /// `transaction="none"` step, pending: the start of a test that runs a none step against another session.
    static func postgresWithPendingNoneStep(_ test: XCTestCase, first: String, file: String, sql: String) throws -> Project {
        let project = try Project(test, backend: .postgres, files: ["sql/001_t.sql": first])
        let migrate = try project.strataOnBackend(["migrate"])
        guard migrate.status == 0 else { throw SetupFailure(description: "the first migration failed: \(migrate.stderr)") }
        try project.file("manifest.xml", #"<manifest version="1">"# + project.backend.databaseElement(project.root)
                         + #"<migrations directory="sql"><migration file="\#(file)" transaction="none"/></migrations></manifest>"#)
        try project.file("sql/\(file)", sql)
        return project
    }

    /// Fails the test that set the project up.
    struct SetupFailure: Error, CustomStringConvertible {
        let description: String
    }
}
