import Foundation
import StrataPostgres
import XCTest

/// The PostgreSQL server the tests run against: a throwaway one started on first use (the `postgresql` package's
/// `initdb` and `pg_ctl`, data and Unix socket in a temporary directory, as the `postgres` user when the tests run
/// as root) and stopped when the test process exits; or, when `STRATA_TEST_POSTGRES_URL` names a server (a URI
/// of a user who may create databases), that one. Each test project gets a database of its own.
final class PostgresServer: @unchecked Sendable {
    /// How tests reach the server: a connection URI without a database name.
    private let base: (host: String, port: String, user: String, password: String?)
    /// The throwaway server, nil for an existing one.
    private let instance: PostgresInstance?
    private let lock = NSLock()
    private var databases: [String: String] = [:]

    private init(base: (host: String, port: String, user: String, password: String?), instance: PostgresInstance?) {
        self.base = base
        self.instance = instance
    }

    /// The server, started once per process; throws `XCTSkip` (with the reason) where none can run.
    static func shared() throws -> PostgresServer {
        switch startup {
        case .success(let server): return server
        case .failure(let reason): throw XCTSkip("PostgreSQL tests skipped: \(reason)")
        }
    }

    private static let startup: Result<PostgresServer, SkipReason> = start()

    struct SkipReason: Error, CustomStringConvertible {
        let description: String
    }

    /// The URI of a database on this server.
    func url(database: String) -> String {
        var url = "postgresql://\(base.user)"
        if let password = base.password { url += ":\(password)" }
        url += "@/\(database)?host=\(base.host)&port=\(base.port)"
        return url
    }

    /// The URI of a database on this server as another login role, with its password (a server named by
    /// `STRATA_TEST_POSTGRES_URL` may ask for one; the throwaway server trusts local connections).
    func url(database: String, user: String, password: String) -> String {
        "postgresql://\(user):\(password)@/\(database)?host=\(base.host)&port=\(base.port)"
    }

    /// The libpq keyword/value string of a database on this server, with `extra` (e.g. `password=…`) appended.
    func keywordValue(database: String, extra: String = "") -> String {
        func quoted(_ value: String) -> String {
            "'" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
        }
        var text = "host=\(quoted(base.host)) port=\(base.port) user=\(quoted(base.user)) dbname=\(quoted(database))"
        if let password = base.password { text += " password=\(quoted(password))" }
        return extra.isEmpty ? text : text + " " + extra
    }

    /// The throwaway server's socket directory; nil for a server named by `STRATA_TEST_POSTGRES_URL`.
    var socketDirectory: String? { instance?.socketDirectory.path }

    /// The server's port (the throwaway one's socket number).
    var port: String { base.port }

    /// Whether connecting takes a password (an existing server named by `STRATA_TEST_POSTGRES_URL`).
    var usesPassword: Bool { base.password != nil }

    /// The host and port query of a URI naming this server (`host=…&port=…`), percent-encoded.
    var hostQuery: String {
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~/"))
        return "host=\(base.host.addingPercentEncoding(withAllowedCharacters: allowed) ?? base.host)&port=\(base.port)"
    }

    /// A fresh, empty database for the project at `root` (the same one each time for the same root).
    func database(for root: URL) throws -> String {
        lock.lock()
        defer { lock.unlock() }
        if let name = databases[root.path] { return name }
        let name = "strata_test_\(databases.count + 1)_\(UUID().uuidString.prefix(8).lowercased())"
        let admin = try PostgresConnection(url: url(database: "postgres"))
        try admin.execute("CREATE DATABASE \(name)", .none)
        databases[root.path] = name
        return name
    }

    /// The URI of the database for the project at `root`.
    func url(for root: URL) throws -> String {
        url(database: try database(for: root))
    }

    private static func start() -> Result<PostgresServer, SkipReason> {
        let environment = ProcessInfo.processInfo.environment
        if let given = environment["STRATA_TEST_POSTGRES_URL"], let components = URLComponents(string: given) {
            let query = Dictionary(components.queryItems?.map { ($0.name, $0.value ?? "") } ?? [], uniquingKeysWith: { a, _ in a })
            return .success(PostgresServer(base: (host: query["host"] ?? components.host ?? "localhost",
                                                  port: query["port"] ?? components.port.map(String.init) ?? "5432",
                                                  user: components.user ?? "postgres", password: components.password),
                                           instance: nil))
        }
        guard let programs = PostgresPrograms.find() else {
            return .failure(SkipReason(description: "no PostgreSQL server binaries (install the postgresql package, or set STRATA_TEST_POSTGRES_URL)"))
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("strata-pg-\(UUID().uuidString.prefix(8))")
        do {
            try programs.makeDirectory(directory)
            // Only a Unix socket in the test directory: no port is taken on the machine, so any number works.
            let instance = try PostgresInstance.initdb(programs, data: directory.appendingPathComponent("data"),
                                                       socketDirectory: directory, port: 5432)
            try instance.start()
            atexit {
                if case .success(let server) = PostgresServer.startup { server.stop() }
            }
            return .success(PostgresServer(base: (host: directory.path, port: "5432", user: "postgres", password: nil),
                                           instance: instance))
        } catch {
            return .failure(SkipReason(description: "the throwaway server did not start: \(error)"))
        }
    }

    /// Stops the throwaway server and removes its directory.
    private func stop() {
        guard let instance else { return }
        instance.stop(mode: "immediate")
        try? FileManager.default.removeItem(at: instance.socketDirectory)
    }
}

/// The PostgreSQL server programs (`initdb`, `pg_ctl`, `pg_basebackup`), run as the `postgres` user when the tests
/// run as root (the server refuses to run as root).
struct PostgresPrograms: Sendable {
    /// The server binaries' directory.
    let directory: URL
    private var asRoot: Bool { getuid() == 0 }

    /// The installed programs; nil where there are none.
    static func find() -> PostgresPrograms? {
        binDirectory().map(PostgresPrograms.init(directory:))
    }

    /// Creates `url` (and its parents) for the server user to write in.
    func makeDirectory(_ url: URL) throws {
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        if asRoot { try Self.run("/bin/chown", ["-R", "postgres:postgres", url.path]) }
    }

    /// Runs one of the server programs, as the server user; throws with its output when it fails.
    @discardableResult
    func run(_ tool: String, _ arguments: [String]) throws -> String {
        let path = directory.appendingPathComponent(tool).path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw PostgresServer.SkipReason(description: "\(path) is not installed")
        }
        if asRoot { return try Self.run("/usr/sbin/runuser", ["-u", "postgres", "--", path] + arguments) }
        return try Self.run(path, arguments)
    }

    /// The server binaries' directory: `pg_config --bindir` names the client's; the server's lives beside it
    /// (Debian: /usr/lib/postgresql/N/bin).
    static func binDirectory() -> URL? {
        var candidates: [URL] = []
        if let output = try? run("/usr/bin/env", ["pg_config", "--bindir"]) {
            candidates.append(URL(fileURLWithPath: output.trimmingCharacters(in: .whitespacesAndNewlines)))
        }
        if let versions = try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql") {
            for version in versions.sorted(by: { (Int($0) ?? 0) > (Int($1) ?? 0) }) {
                candidates.append(URL(fileURLWithPath: "/usr/lib/postgresql/\(version)/bin"))
            }
        }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.appendingPathComponent("pg_ctl").path)
            && FileManager.default.isExecutableFile(atPath: $0.appendingPathComponent("initdb").path) }
    }

    /// Runs a program and returns its output. Not `Process`: its exit monitoring waits on a descriptor the
    /// server `pg_ctl start` leaves running inherits, so it would never see `pg_ctl` exit.
    @discardableResult
    static func run(_ executable: String, _ arguments: [String]) throws -> String {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("strata-pg-run-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: output) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else is inherited: a server outliving a killed test run must not hold the test process's
        // descriptors (a build lock, a pipe another process waits on).
        closeOnExec()
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        guard spawned == 0 else {
            throw PostgresServer.SkipReason(description: "\(executable) could not be started: \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        // Exited normally with status 0: the low seven bits are the terminating signal, the next eight the code.
        guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else {
            throw PostgresServer.SkipReason(description: "\(executable) \(arguments.joined(separator: " ")) failed (status \(status)): \(text)")
        }
        return text
    }

    /// Marks every descriptor above stderr close-on-exec, so programs started here inherit none of them.
    private static func closeOnExec() {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return }
        for descriptor in entries.compactMap({ Int32($0) }) where descriptor > 2 {
            _ = fcntl(descriptor, F_SETFD, fcntl(descriptor, F_GETFD) | FD_CLOEXEC)
        }
    }
}

/// One PostgreSQL server the tests start and stop: a data directory, listening only on the Unix socket
/// `socketDirectory/.s.PGSQL.port` (no TCP port is taken on the machine; servers sharing a socket directory need
/// different port numbers). Its log is the data directory's path plus `.log`.
struct PostgresInstance: Sendable {
    let programs: PostgresPrograms
    let data: URL
    let socketDirectory: URL
    let port: Int

    var log: URL { URL(fileURLWithPath: data.path + ".log") }

    /// A new, stopped server in `data` (created by `initdb`; its parent must exist and be the server user's), whose
    /// `pg_hba.conf` trusts local connections, replication ones included.
    static func initdb(_ programs: PostgresPrograms, data: URL, socketDirectory: URL, port: Int) throws -> PostgresInstance {
        try programs.run("initdb", ["-D", data.path, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C"])
        return PostgresInstance(programs: programs, data: data, socketDirectory: socketDirectory, port: port)
    }

    /// A new, stopped hot standby of this (running) server in `data`, listening on `port` in the same socket
    /// directory: `pg_basebackup -R` copies the data and writes `standby.signal` and the `primary_conninfo` that
    /// streams from this server.
    func standby(data: URL, port: Int) throws -> PostgresInstance {
        try programs.run("pg_basebackup", ["-D", data.path, "-h", socketDirectory.path, "-p", String(self.port),
                                           "-U", "postgres", "-R", "-X", "stream", "--checkpoint=fast", "--no-sync"])
        return PostgresInstance(programs: programs, data: data, socketDirectory: socketDirectory, port: port)
    }

    /// Starts the server and waits until it accepts connections (a standby: read-only ones).
    func start() throws {
        try programs.run("pg_ctl", ["start", "-w", "-t", "120", "-D", data.path, "-l", log.path, "-o",
                                    "-k \(socketDirectory.path) -c listen_addresses='' -p \(port) -c fsync=off -c max_connections=200"])
    }

    /// Stops the server if it runs (`fast`: sessions ended, a clean shutdown; `immediate`: no checkpoint). Errors are
    /// ignored: this runs in clean-ups, on servers that may never have started.
    func stop(mode: String = "fast") {
        _ = try? programs.run("pg_ctl", ["stop", "-w", "-t", "120", "-D", data.path, "-m", mode])
    }

    /// Promotes a standby to a primary, waiting (`-w`) until it is.
    func promote() throws {
        try programs.run("pg_ctl", ["promote", "-w", "-t", "120", "-D", data.path])
    }

    /// The URI of `database` on this server alone, as the `postgres` user.
    func url(database: String) -> String {
        "postgresql://postgres@/\(database)?host=\(socketDirectory.path)&port=\(port)"
    }
}
