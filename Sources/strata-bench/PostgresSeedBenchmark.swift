import CLibPQ
import Foundation
import Strata

/// Loads the seed benchmark's CSV into PostgreSQL three ways, on the same server in the same run: Strata's
/// `migrate` (COPY, in a child process), `psql -c "\copy … csv header"`, and a hand-written loop of one prepared
/// INSERT per row in one transaction. Rounds alternate the order; each load starts from an empty table, and every
/// load's table must hold the same rows (compared by a hash of the table's text). The server is the one
/// `STRATA_BENCH_POSTGRES_URL` names (a database the benchmark may create and drop `items` and `strata_history`
/// in), else a throwaway one started as the tests start theirs.
struct PostgresSeedBenchmark {
    static let schema = """
        CREATE TABLE items (
            id bigint PRIMARY KEY, name text NOT NULL, quantity integer, active boolean,
            price numeric(10, 2), day date, note text
        )
        """

    let rows: Int
    let rounds: Int
    let insertRounds: Int

    init(arguments: [String]) {
        rows = Int(option("--rows", in: arguments) ?? "1000000") ?? 1_000_000
        rounds = max(1, Int(option("--rounds", in: arguments) ?? "5") ?? 5)
        insertRounds = max(1, Int(option("--insert-rounds", in: arguments) ?? "2") ?? 2)
    }

    func run() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("strata-bench-pg-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try ThrowawayPostgres.fromEnvironmentOrStart(in: directory.appendingPathComponent("server"))
        defer { server.stop() }
        let url = server.url
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("csv"), withIntermediateDirectories: true)
        let csv = directory.appendingPathComponent("csv/items.csv").path
        let size = try SeedBenchmark.writeCSV(csv, rows: rows)
        try Data("""
            <manifest version="1"><seeds><seed file="csv/items.csv" table="items"/></seeds></manifest>
            """.utf8).write(to: directory.appendingPathComponent("manifest.xml"))
        let admin = try PostgresConnection(url: url)
        let version = try admin.scalar("SHOW server_version", as: String.self) ?? "?"
        print("postgres seed benchmark: \(grouped(rows)) rows, 7 columns, \(megabytes(size)) CSV, PostgreSQL \(version)")
        print("  best of \(rounds) rounds (order alternating), INSERT loop best of \(insertRounds)")

        func reset() throws {
            try admin.execute("DROP TABLE IF EXISTS items")
            try admin.execute("DROP TABLE IF EXISTS strata_history")
            try admin.execute(Self.schema, .none)
            try admin.execute("CHECKPOINT")
        }
        var contents: String?
        func verify(_ who: String) throws {
            let count = try admin.scalar("SELECT count(*) FROM items", as: Int.self) ?? -1
            let hash = try admin.scalar("SELECT md5(string_agg(items::text, E'\\n' ORDER BY id)) FROM items", as: String.self) ?? ""
            guard count == rows else { throw BenchError("\(who) loaded \(count) rows, expected \(rows)") }
            if let contents, contents != hash { throw BenchError("\(who) loaded different values than the others") }
            contents = hash
        }
        let psql = try ThrowawayPostgres.tool("psql")
        var strataTimes: [Double] = [], copyTimes: [Double] = [], insertTimes: [Double] = []
        var strataPeak = 0
        for round in 0..<rounds {
            let order = round % 2 == 0 ? ["strata", "copy"] : ["copy", "strata"]
            for who in order {
                try reset()
                if who == "strata" {
                    let result = try spawn(CommandLine.arguments[0], ["seed-child-postgres", directory.path, url])
                    strataTimes.append(result.seconds)
                    strataPeak = max(strataPeak, result.peakBytes)
                } else {
                    let result = try spawn(psql, ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-c",
                                                  "\\copy items (id, name, quantity, active, price, day, note) FROM '\(csv)' WITH (FORMAT csv, HEADER true)"])
                    copyTimes.append(result.seconds)
                }
                try verify(who)
            }
            print("  round \(round + 1): strata \(format(strataTimes.last ?? 0)) s, \\copy \(format(copyTimes.last ?? 0)) s")
        }
        let values = InsertLoopRows(rows: rows)
        for round in 0..<insertRounds {
            try reset()
            insertTimes.append(try values.insertLoop(url: url))
            try verify("the INSERT loop")
            print("  INSERT loop round \(round + 1): \(format(insertTimes.last ?? 0)) s")
        }
        try reset()
        let strata = strataTimes.min() ?? 0, copy = copyTimes.min() ?? 0, insert = insertTimes.min() ?? 0
        print("  strata migrate (seed, COPY)   \(format(strata)) s  \(grouped(Int(Double(rows) / strata))) rows/s  peak RSS \(megabytes(strataPeak))")
        print("  psql \\copy … csv header       \(format(copy)) s  \(grouped(Int(Double(rows) / copy))) rows/s")
        print("  prepared INSERT per row       \(format(insert)) s  (one transaction, text parameters, values generated in advance)")
        print("  ratio                         strata runs at \(format(copy / strata))x \\copy's speed (target ≥ 0.9x), \(format(insert / strata))x the INSERT loop's (target ≥ 10x)")
    }

    /// The child process: one `migrate` of the seed into the database at `url`, as `strata migrate` would run it.
    static func child(directory: String, url: String) throws {
        let manifest = try Manifest.load(path: directory + "/manifest.xml")
        let report = try Migrator(manifest: manifest, database: try PostgresConnection(url: url)).migrate()
        if let failure = report.failure { throw BenchError("\(failure)") }
        guard report.applied.first?.rowCount != nil else { throw BenchError("the seed did not run") }
    }
}

/// The CSV's rows as the text of each field (NULL where the CSV has an unquoted empty field), NUL-terminated in
/// one buffer, so the INSERT loop measures the server round trips and not the making of its values.
struct InsertLoopRows {
    let rows: Int
    private var bytes: [UInt8] = []
    /// Per row, 7 offsets into `bytes`; -1 for NULL.
    private var offsets: [Int] = []

    init(rows: Int) {
        self.rows = rows
        var source = SampleSource(seed: 0x9E37_79B9_7F4A_7C15)
        bytes.reserveCapacity(rows * 60)
        offsets.reserveCapacity(rows * 7)
        for id in 1...max(rows, 1) {
            for field in SeedBenchmark.fields(id: id, source: &source) {
                if let field {
                    offsets.append(bytes.count)
                    bytes.append(contentsOf: field.utf8)
                    bytes.append(0)
                } else {
                    offsets.append(-1)
                }
            }
        }
    }

    /// Seconds for BEGIN, one prepared INSERT per row, COMMIT.
    func insertLoop(url: String) throws -> Double {
        guard let connection = PQconnectdb(url), PQstatus(connection) == CONNECTION_OK else { throw BenchError("cannot connect") }
        defer { PQfinish(connection) }
        func exec(_ sql: String) throws {
            let result = PQexec(connection, sql)
            defer { PQclear(result) }
            guard PQresultStatus(result) == PGRES_COMMAND_OK else { throw BenchError(String(cString: PQerrorMessage(connection))) }
        }
        let prepared = PQprepare(connection, "item", "INSERT INTO items VALUES ($1, $2, $3, $4, $5, $6, $7)", 7, nil)
        defer { PQclear(prepared) }
        guard PQresultStatus(prepared) == PGRES_COMMAND_OK else { throw BenchError(String(cString: PQerrorMessage(connection))) }
        let start = ContinuousClock.now
        try exec("BEGIN")
        try bytes.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            let text = UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self)
            var values = [UnsafePointer<CChar>?](repeating: nil, count: 7)
            for row in 0..<rows {
                for field in 0..<7 {
                    let offset = offsets[row * 7 + field]
                    values[field] = offset < 0 ? nil : text + offset
                }
                let result = PQexecPrepared(connection, "item", 7, values, nil, nil, 0)
                defer { PQclear(result) }
                guard PQresultStatus(result) == PGRES_COMMAND_OK else { throw BenchError(String(cString: PQerrorMessage(connection))) }
            }
        }
        try exec("COMMIT")
        return seconds(ContinuousClock.now - start)
    }
}

/// The server the benchmark runs against: `STRATA_BENCH_POSTGRES_URL`, or a throwaway one (`initdb` and `pg_ctl`
/// from the `postgresql` package, data and Unix socket in a temporary directory, run as `postgres` under root),
/// stopped when the benchmark ends.
struct ThrowawayPostgres {
    let url: String
    let directory: URL?

    static func fromEnvironmentOrStart(in directory: URL) throws -> ThrowawayPostgres {
        if let url = ProcessInfo.processInfo.environment["STRATA_BENCH_POSTGRES_URL"] {
            return ThrowawayPostgres(url: url, directory: nil)
        }
        let binaries = try binDirectory()
        let data = directory.appendingPathComponent("data")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let asRoot = getuid() == 0
        if asRoot { try quietly("/bin/chown", ["-R", "postgres:postgres", directory.path]) }
        func server(_ tool: String, _ arguments: [String]) throws {
            let path = binaries.appendingPathComponent(tool).path
            if asRoot { try quietly("/usr/sbin/runuser", ["-u", "postgres", "--", path] + arguments) } else { try quietly(path, arguments) }
        }
        try server("initdb", ["-D", data.path, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C"])
        try server("pg_ctl", ["start", "-w", "-D", data.path, "-l", directory.appendingPathComponent("log").path,
                              "-o", "-k \(directory.path) -c listen_addresses='' -p 5432"])
        return ThrowawayPostgres(url: "postgresql://postgres@/postgres?host=\(directory.path)&port=5432", directory: directory)
    }

    func stop() {
        guard let directory, let binaries = try? Self.binDirectory() else { return }
        let pgctl = binaries.appendingPathComponent("pg_ctl").path
        let data = directory.appendingPathComponent("data").path
        if getuid() == 0 {
            try? Self.quietly("/usr/sbin/runuser", ["-u", "postgres", "--", pgctl, "stop", "-D", data, "-m", "fast"])
        } else {
            try? Self.quietly(pgctl, ["stop", "-D", data, "-m", "fast"])
        }
    }

    /// A client program (`psql`) on the PATH or beside the server binaries.
    static func tool(_ name: String) throws -> String {
        for directory in ["/usr/bin", "/usr/local/bin"] + ((try? binDirectory().path).map { [$0] } ?? []) {
            let path = directory + "/" + name
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        throw BenchError("\(name) not found")
    }

    private static func binDirectory() throws -> URL {
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        for version in versions.sorted(by: { (Int($0) ?? 0) > (Int($1) ?? 0) }) {
            let candidate = URL(fileURLWithPath: "/usr/lib/postgresql/\(version)/bin")
            if FileManager.default.isExecutableFile(atPath: candidate.appendingPathComponent("pg_ctl").path) { return candidate }
        }
        throw BenchError("no PostgreSQL server binaries (install the postgresql package, or set STRATA_BENCH_POSTGRES_URL)")
    }

    /// Runs a program with its output to a file: `pg_ctl start` leaves the server holding any pipe it was given.
    private static func quietly(_ executable: String, _ arguments: [String]) throws {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("strata-bench-run-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: output) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, executable, &actions, nil, argv, environ) == 0 else { throw BenchError("cannot start \(executable)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        guard status == 0 else {
            throw BenchError("\(executable) \(arguments.joined(separator: " ")) failed: \((try? String(contentsOf: output, encoding: .utf8)) ?? "")")
        }
    }
}
