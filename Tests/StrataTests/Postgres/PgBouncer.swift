import Foundation
import StrataPostgres
import XCTest

/// A PgBouncer (Debian's `pgbouncer`) in front of the test PostgreSQL server: started by a test, listening only on a
/// Unix socket in a directory of its own, every database name passed through to the server as the `postgres` user
/// (`auth_type = any`), with a pool smaller than the deployers the tests run. Run as the `postgres` user when the
/// tests run as root (PgBouncer refuses to run as root). Stopped by the test's teardown, by its own pid.
final class PgBouncer: @unchecked Sendable {
    enum Mode: String {
        case transaction, session
    }

    let mode: Mode
    let directory: URL
    static let port = 6432
    private let pidFile: URL

    /// Installs `pgbouncer` with apt-get when it is missing and this runs as root; otherwise throws `XCTSkip` saying why.
    static func executable() throws -> String {
        let path = "/usr/sbin/pgbouncer"
        if FileManager.default.isExecutableFile(atPath: path) { return path }
        guard getuid() == 0 else { throw XCTSkip("PgBouncer tests skipped: \(path) is not installed (apt-get install pgbouncer)") }
        do {
            try PostgresPrograms.run("/usr/bin/env", ["DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "-qq", "pgbouncer"])
        } catch {
            throw XCTSkip("PgBouncer tests skipped: pgbouncer is not installed and apt-get could not install it: \(error)")
        }
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw XCTSkip("PgBouncer tests skipped: apt-get installed pgbouncer but \(path) is missing")
        }
        return path
    }

    /// Starts a PgBouncer in `mode` with at most `poolSize` server connections per database, and waits until it
    /// answers; stopped when `test` ends.
    static func start(_ test: XCTestCase, mode: Mode, poolSize: Int) throws -> PgBouncer {
        let server = try PostgresServer.shared()
        guard let host = server.socketDirectory else {
            throw XCTSkip("PgBouncer tests skipped: they run in front of the throwaway server, not STRATA_TEST_POSTGRES_URL's")
        }
        let program = try executable()
        guard let programs = PostgresPrograms.find() else { throw XCTSkip("PgBouncer tests skipped: no PostgreSQL server binaries") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("strata-pgb-\(UUID().uuidString.prefix(8))")
        try programs.makeDirectory(directory)
        let config = directory.appendingPathComponent("pgbouncer.ini")
        let pidFile = directory.appendingPathComponent("pgbouncer.pid")
        try """
            [databases]
            * = host=\(host) port=\(server.port) user=postgres

            [pgbouncer]
            unix_socket_dir = \(directory.path)
            listen_port = \(port)
            auth_type = any
            pool_mode = \(mode.rawValue)
            default_pool_size = \(poolSize)
            max_db_connections = \(poolSize)
            max_client_conn = 500
            server_reset_query = DISCARD ALL
            logfile = \(directory.appendingPathComponent("pgbouncer.log").path)
            pidfile = \(pidFile.path)
            admin_users = postgres

            """.write(to: config, atomically: true, encoding: .utf8)
        if getuid() == 0 { try PostgresPrograms.run("/bin/chown", ["-R", "postgres:postgres", directory.path]) }
        let arguments = ["-d", config.path]
        if getuid() == 0 {
            try PostgresPrograms.run("/usr/sbin/runuser", ["-u", "postgres", "--", program] + arguments)
        } else {
            try PostgresPrograms.run(program, arguments)
        }
        let bouncer = PgBouncer(mode: mode, directory: directory, pidFile: pidFile)
        test.addTeardownBlock { bouncer.stop() }
        try bouncer.waitUntilAnswering()
        return bouncer
    }

    private init(mode: Mode, directory: URL, pidFile: URL) {
        self.mode = mode
        self.directory = directory
        self.pidFile = pidFile
    }

    /// The URI of `database` through this PgBouncer.
    func url(database: String) -> String {
        "postgresql://postgres@/\(database)?host=\(directory.path)&port=\(Self.port)"
    }

    /// Waits (a guard of 60 s, not a delay) until a connection through the pooler reaches the server.
    private func waitUntilAnswering() throws {
        let deadline = Date().addingTimeInterval(60)
        var lastError: Error?
        while Date() < deadline {
            do {
                _ = try psql(database: "postgres", "SELECT 1")
                return
            } catch {
                lastError = error
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        let log = (try? String(contentsOf: directory.appendingPathComponent("pgbouncer.log"), encoding: .utf8)) ?? ""
        throw XCTSkip("PgBouncer tests skipped: pgbouncer did not answer within 60 s (\(lastError.map { "\($0)" } ?? "")): \(log)")
    }

    /// What `psql` prints for `sql` through the pooler, unaligned and without headers: the application's own client,
    /// which sets nothing of its own.
    func psql(database: String, _ sql: String) throws -> String {
        try PostgresPrograms.run("/usr/bin/psql", ["-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-d", url(database: database), "-c", sql])
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Stops it by the pid it wrote, and removes its directory.
    func stop() {
        if let text = try? String(contentsOf: pidFile, encoding: .utf8), let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 0 {
            kill(pid, SIGTERM)
            // SIGTERM: an immediate shutdown; wait (bounded) for the process to be gone before removing its socket directory.
            let deadline = Date().addingTimeInterval(30)
            while kill(pid, 0) == 0 && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
            if kill(pid, 0) == 0 { kill(pid, SIGKILL) }
        }
        try? FileManager.default.removeItem(at: directory)
    }
}
