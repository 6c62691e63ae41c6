import Foundation
import Strata
@testable import StrataCore
@testable import StrataPostgres
@testable import StrataSQLite
import XCTest

/// A database backend the conformance suite runs against: how a test project names its database, how the
/// command is pointed at it, and how a test opens it. Tests written with `forEachBackend` run once per backend this
/// machine can run; behaviour only one backend has (PRAGMAs, WAL, `VACUUM`) is tested in that backend's own files.
struct TestBackend: Sendable, CustomStringConvertible {
    enum Kind: Sendable { case sqlite, postgres }

    let kind: Kind
    /// The manifest's `<database …/>` element for a project rooted at a directory.
    let databaseElement: @Sendable (_ root: URL) -> String
    /// The `--database` value naming a project's database.
    let location: @Sendable (_ root: URL) -> String
    /// Opens a project's database (an empty one the first time), waiting up to `timeout` for another
    /// connection's lock.
    let open: @Sendable (_ root: URL, _ timeout: Duration) throws -> any MigrationDatabase
    /// PostgreSQL only: connections prepare every statement on its first run (`postgresPrepared`).
    var everyStatementPrepared = false

    /// The database's message for a table that does not exist, as a failure's message contains it.
    func noSuchTable(_ name: String) -> String {
        switch kind {
        case .sqlite: "no such table: \(name)"
        case .postgres: "relation \"\(name)\" does not exist"
        }
    }

    var description: String {
        switch kind {
        case .sqlite: "SQLite"
        case .postgres: everyStatementPrepared ? "PostgreSQL (every statement prepared, results in binary where they can be)" : "PostgreSQL"
        }
    }

    static let sqlite = TestBackend(
        kind: .sqlite,
        databaseElement: { _ in #"<database path="db.sqlite"/>"# },
        location: { $0.appendingPathComponent("db.sqlite").path },
        open: { root, timeout in
            try Database(path: root.appendingPathComponent("db.sqlite").path,
                         configuration: Database.Configuration(busyTimeout: timeout))
        })

    /// A database of its own on the test server (`PostgresServer`) for each project root.
    static let postgres = TestBackend(
        kind: .postgres,
        databaseElement: { root in
            let url = (try? PostgresServer.shared().url(for: root)) ?? ""
            return #"<database url=""# + url.replacingOccurrences(of: "&", with: "&amp;") + #""/>"#
        },
        location: { root in (try? PostgresServer.shared().url(for: root)) ?? "" },
        open: { root, timeout in
            try PostgresConnection(url: try PostgresServer.shared().url(for: root), lockTimeout: timeout)
        })

    /// PostgreSQL with every statement prepared on its first run, so each read takes the path a session's repeated
    /// queries take: a prepared statement whose result comes in binary where every column has a binary reading.
    static let postgresPrepared = TestBackend(
        kind: .postgres,
        databaseElement: postgres.databaseElement,
        location: postgres.location,
        open: { root, timeout in
            let connection = try PostgresConnection(url: try PostgresServer.shared().url(for: root), lockTimeout: timeout)
            connection.preparesEveryStatement = true
            return connection
        },
        everyStatementPrepared: true)

    /// Every backend this machine can run, the embedded default first. PostgreSQL runs where the test server
    /// starts (the PostgreSQL test classes say why when it does not).
    static var available: [TestBackend] {
        (try? PostgresServer.shared()) == nil ? [.sqlite] : [.sqlite, .postgres, .postgresPrepared]
    }
}

extension TestBackend {
    /// What a test may need that not every backend has in this build.
    enum Capability {
        /// `ModelStore` and `check`.
        case models
        /// CSV seeds.
        case seeds
        /// Seeds with `mode="replace"` (SQLite's REPLACE; PostgreSQL refuses the mode at plan time, see
        /// `PostgresSeedingTests`).
        case replaceMode
        /// A database size limit a test can set, to fail writes as a full disk does (SQLite: `max_page_count`).
        case sizeLimit
        /// A way to make every COMMIT fail (SQLite: a commit hook).
        case failingCommits
        /// `BEGIN` in a `transaction="none"` file runs (PostgreSQL's lint refuses it before the run).
        case transactionControlInNoneFiles
    }

    func has(_ capability: Capability) -> Bool {
        if everyStatementPrepared { return capability == .models }
        return switch (kind, capability) {
        case (.sqlite, _), (.postgres, .seeds), (.postgres, .models): true
        case (.postgres, _): false
        }
    }
}

extension XCTestCase {
    /// Runs `body` once for each available backend that has every capability `needing` names. A thrown error
    /// names the backend it happened on, and so does one more failure recorded after any assertion that failed on it.
    func forEachBackend(needing capabilities: TestBackend.Capability..., file: StaticString = #filePath, line: UInt = #line,
                        _ body: (TestBackend) throws -> Void) throws {
        // The every-statement-prepared PostgreSQL runs the tests of the mapper alone.
        for backend in TestBackend.available
        where capabilities.allSatisfy(backend.has) && (!backend.everyStatementPrepared || capabilities.contains(.models)) {
            let failuresBefore = testRun?.totalFailureCount ?? 0
            do {
                try body(backend)
            } catch let skip as XCTSkip {
                throw skip
            } catch {
                throw BackendFailure(backend: backend, error: error)
            }
            if (testRun?.totalFailureCount ?? 0) > failuresBefore {
                XCTFail("the failures above happened on \(backend)", file: file, line: line)
            }
        }
    }
}

/// An error thrown by a conformance test, with the backend it was thrown on.
struct BackendFailure: Error, CustomStringConvertible {
    let backend: TestBackend
    let error: any Error
    var description: String { "on \(backend): \(error)" }
}
