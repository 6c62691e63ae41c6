import Foundation
import XCTest
import Strata
@testable import StrataCore
@testable import StrataSQLite
import StrataPostgres

/// `strata migrate` killed with SIGKILL at random moments, on every backend: after every kill the database is
/// intact, its history agrees with its schema and data, and the next run completes. Seeded, so a failing trial can
/// be replayed.
final class CrashInjectionTests: XCTestCase {
    /// SplitMix64: a small reproducible generator.
    struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// `STRATA_LONG_TESTS=1`: the long run, with 100 trials per backend on the full-size data; by default 20
    /// trials on a fifth of it, the same phases (every kill moment still lands somewhere in the run).
    static let isLong = ProcessInfo.processInfo.environment["STRATA_LONG_TESTS"] == "1"
    static let seedRows = isLong ? 100_000 : 20_000
    static let extraRows = isLong ? 200_000 : 40_000

    static func manifest(_ backend: TestBackend, root: URL) -> String {
        """
        <manifest version="1">\(backend.databaseElement(root))
          <migrations directory="sql"><migration file="003_none.sql" transaction="none"/></migrations>
          <seeds><seed file="csv/items.csv" table="items" after="002_index.sql"/></seeds>
        </manifest>
        """
    }

    static func files(_ backend: TestBackend) -> [String: String] {
        [
            "sql/001_items.sql": "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price REAL);\nCREATE TABLE log (message TEXT);",
            "sql/002_index.sql": "CREATE INDEX items_name ON items (name);\n" + backend.crashItemsLogTrigger,
            "sql/003_none.sql": backend.crashStatementOutsideTransactions,
            "sql/004_extra.sql": "CREATE TABLE extra (n INTEGER);\nWITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < \(extraRows))\nINSERT INTO extra SELECT n FROM c;\nUPDATE extra SET n = n + 1;",
        ]
    }

    /// A project on `backend` as every trial starts from: the first migration applied (by `strata migrate` with a
    /// manifest of that file alone), then the whole manifest and every file in place.
    func startingProject(_ backend: TestBackend, csv: String) throws -> Project {
        let files = Self.files(backend)
        let project = try Project(self, backend: backend, files: ["sql/001_items.sql": try XCTUnwrap(files["sql/001_items.sql"])])
        let first = try project.strataOnBackend(["migrate"])
        XCTAssertEqual(first.status, 0, first.stderr)
        try project.file("manifest.xml", Self.manifest(backend, root: project.root))
        for (path, text) in files { try project.file(path, text) }
        try project.file("csv/items.csv", csv)
        return project
    }

    func testSIGKILLAtRandomMomentsLosesNothing() throws {
        let trials = Int(ProcessInfo.processInfo.environment["STRATA_CRASH_TRIALS"] ?? "") ?? (Self.isLong ? 100 : 20)
        let seed = UInt64(ProcessInfo.processInfo.environment["STRATA_CRASH_SEED"] ?? "") ?? 0x5EED
        let csv = Self.csv()

        try forEachBackend(needing: .seeds) { backend in
            var random = SeededGenerator(state: seed)

            // Kill moments are spread over how long a whole run takes on this machine now (measured once on a
            // project like the trials'), so a slow or busy machine moves the moments with the run instead of
            // bunching them in its first step.
            let reference = try startingProject(backend, csv: csv)
            let clock = ContinuousClock()
            let whole = try clock.measure { XCTAssertEqual(try reference.strataOnBackend(["migrate"]).status, 0) }
            let span = max(UInt64(Double(whole.components.seconds) * 1000 + Double(whole.components.attoseconds) / 1e15) * 11 / 10, 50)

            var killedIn: [String: Int] = [:]
            for trial in 1...trials {
                let project = try startingProject(backend, csv: csv)
                // Stratified: trial k's moment falls in the k-th of `trials` equal slices of the run, at a random place
                // in it, so even a short run of trials covers the whole run and no phase is missed by chance.
                let slice = max(span / UInt64(trials), 1)
                let delay = Double(UInt64(trial - 1) * span / UInt64(trials) + random.next() % slice) / 1000
                let (process, _, _) = try startStrata(["migrate", "--manifest", project.manifestPath, "--database", project.location],
                                                      in: project.root)
                Thread.sleep(forTimeInterval: delay)
                let wasRunning = process.isRunning
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                try backend.waitUntilKilledClientsAreGone(project.root)

                let db = try project.connection()
                let recorded = Set(try db.rows("SELECT identity FROM strata_history WHERE state IN ('applied', 'baseline')")
                    .compactMap { try? $0.get(0, as: String.self) })
                let dirty = try db.scalar("SELECT count(*) FROM strata_history WHERE state = 'running'", as: Int.self) ?? 0
                let phase = !wasRunning ? "finished" : dirty > 0 ? "during the none step" : "with \(recorded.count) of 5 steps done"
                killedIn[phase, default: 0] += 1
                try verify(backend, db, recorded: recorded, trial: trial, delay: delay)

                var rerun = try project.strataOnBackend(["migrate"])
                if rerun.status == 3 && rerun.stderr.contains("strata resolve 003_none.sql") {
                    // Killed during the transaction="none" step: dirty by design until a human resolves it.
                    if try resolveNoneStep(backend, project, db, trial: trial) { killedIn["leaving an INVALID index", default: 0] += 1 }
                    rerun = try project.strataOnBackend(["migrate"])
                }
                XCTAssertEqual(rerun.status, 0, "trial \(trial) (delay \(delay) s): \(rerun.stderr)")
                let complete = Set(try db.rows("SELECT identity FROM strata_history WHERE state = 'applied'")
                    .compactMap { try? $0.get(0, as: String.self) })
                XCTAssertEqual(complete, ["001_items.sql", "002_index.sql", "items.csv", "003_none.sql", "004_extra.sql"],
                               "trial \(trial)")
                try verify(backend, db, recorded: complete, trial: trial, delay: delay)
            }
            print("crash injection on \(backend): \(trials) trials (seed \(seed), kills within \(span) ms, 1.1x one whole run); killed: "
                  + killedIn.sorted { $0.key < $1.key }.map { "\($0.key) ×\($0.value)" }.joined(separator: ", "))
            XCTAssertGreaterThan(killedIn.filter { $0.key.hasPrefix("with") || $0.key.hasPrefix("during") }.count, 2, "kills landed in several phases")
        }
    }

    /// A client killed while its `CREATE INDEX CONCURRENTLY` waits for another session's writes (after the build
    /// committed the index as INVALID): once the server notices and ends the statement, the INVALID index is what
    /// is left. `status` shows it, `resolve` refuses until it is dropped, and the next run builds it.
    func testAClientKilledDuringAConcurrentIndexBuildLeavesAnInvalidIndexThatMustBeDroppedBeforeResolve() throws {
        let project = try Project.postgresWithPendingNoneStep(self, first: "CREATE TABLE t (x int); INSERT INTO t VALUES (1);",
                                                              file: "002_t_x.sql", sql: "CREATE INDEX CONCURRENTLY t_x ON t (x);")
        let db = try PostgresTestDatabase(project.root).connection
        let writer = try PostgresTestDatabase(project.root).connection
        try writer.execute("BEGIN")
        try writer.execute("INSERT INTO t VALUES (2)")

        let (process, _, _) = try startStrata(["migrate", "--manifest", project.manifestPath, "--database", project.location],
                                              in: project.root)
        func builder() throws -> Int64? {
            try db.scalar("""
                SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'CREATE INDEX CONCURRENTLY%'
                  AND wait_event_type = 'Lock'
                """, as: Int64.self)
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while try builder() == nil, ContinuousClock.now < deadline, process.isRunning { Thread.sleep(forTimeInterval: 0.02) }
        XCTAssertEqual(try db.scalar("SELECT indisvalid FROM pg_index WHERE indexrelid = 'public.t_x'::regclass", as: Bool.self), false)
        let pid = try XCTUnwrap(try builder(), "the index build never waited for the open transaction")
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        while try db.scalar("SELECT count(*) FROM pg_stat_activity WHERE pid = $1", [pid], as: Int.self) != 0 {
            guard ContinuousClock.now < deadline + .seconds(60) else { return XCTFail("the killed client's server process did not end") }
            Thread.sleep(forTimeInterval: 0.05)
        }
        try writer.execute("COMMIT")

        let status = try project.strataOnBackend(["status"])
        XCTAssertEqual(status.status, 3)
        XCTAssertTrue(status.stdout.contains("dirty"), status.stdout)
        XCTAssertTrue(status.stderr.contains("index public.t_x on public.t is INVALID"), status.stderr)
        XCTAssertTrue(try resolveNoneStep(project.backend, project, db, id: "002_t_x.sql", index: "t_x", trial: 0))
        let rerun = try project.strataOnBackend(["migrate"])
        XCTAssertEqual(rerun.status, 0, rerun.stderr)
        XCTAssertEqual(try db.scalar("SELECT indisvalid FROM pg_index WHERE indexrelid = 'public.t_x'::regclass", as: Bool.self), true)
        XCTAssertEqual(try db.history.record(kind: .migration, identity: "002_t_x.sql")?.state, .applied)
    }

    /// What a human does after a kill during the transaction="none" step. SQLite's `VACUUM` either finished or
    /// changed nothing: applied. A killed `CREATE INDEX CONCURRENTLY` left no index (rolled back), a valid one
    /// (applied), or an INVALID one, which `resolve` refuses until it is dropped.
    /// True when an INVALID index was there.
    func resolveNoneStep(_ backend: TestBackend, _ project: Project, _ db: any DatabaseConnection,
                         id: String = "003_none.sql", index: String = "items_price", trial: Int) throws -> Bool {
        let unfinished = try project.migrator().unfinishedObjects()
        if !unfinished.isEmpty {
            XCTAssertEqual(unfinished.map(\.name), ["public.\(index)"], "trial \(trial)")
            for resolution in ["--applied", "--rolled-back"] {
                let refused = try project.strataOnBackend(["resolve", id, resolution])
                XCTAssertEqual(refused.status, 3, "trial \(trial): \(refused.stderr)")
                XCTAssertTrue(refused.stderr.contains("index public.\(index) on"), "trial \(trial): \(refused.stderr)")
            }
            try db.execute("DROP INDEX CONCURRENTLY public.\(index)", .none)
        }
        let built = try backend.kind == .sqlite || backend.schemaObjectNames(db).contains(index)
        let resolve = try project.strataOnBackend(["resolve", id, built ? "--applied" : "--rolled-back"])
        XCTAssertEqual(resolve.status, 0, "trial \(trial): \(resolve.stderr)")
        return !unfinished.isEmpty
    }

    /// Every recorded step is fully present and no unrecorded step is partly present.
    func verify(_ backend: TestBackend, _ db: any DatabaseConnection, recorded: Set<String>, trial: Int, delay: Double) throws {
        let context = "trial \(trial) (delay \(delay) s)"
        XCTAssertEqual(try backend.integrityProblems(db), [], context)
        let objects = try backend.schemaObjectNames(db)
        XCTAssertEqual(objects.contains("items_name"), recorded.contains("002_index.sql"), context)
        XCTAssertEqual(objects.contains("items_log"), recorded.contains("002_index.sql"), context)
        let items = try db.scalar("SELECT count(*) FROM items", as: Int.self)
        XCTAssertEqual(items, recorded.contains("items.csv") ? Self.seedRows : 0, context)
        XCTAssertEqual(objects.contains("extra"), recorded.contains("004_extra.sql"), context)
        if objects.contains("extra") {
            XCTAssertEqual(try db.scalar("SELECT count(*) FROM extra", as: Int.self), Self.extraRows, context)
            XCTAssertEqual(try db.scalar("SELECT min(n) FROM extra", as: Int.self), 2, "the UPDATE ran once, whole: \(context)")
        }
        if backend.kind == .postgres && recorded.contains("003_none.sql") {
            XCTAssertEqual(try db.scalar("SELECT indisvalid FROM pg_index WHERE indexrelid = 'public.items_price'::regclass",
                                         as: Bool.self), true, context)
        }
        let dirty = try db.rows("SELECT identity FROM strata_history WHERE state NOT IN ('applied', 'baseline')")
            .compactMap { try? $0.get(0, as: String.self) }
        XCTAssertTrue(dirty.allSatisfy { $0 == "003_none.sql" }, "only the transaction=\"none\" file can be dirty: \(dirty), \(context)")
    }

    static func csv() -> String {
        var text = "id,name,price\n"
        text.reserveCapacity(seedRows * 24)
        for id in 1...seedRows { text += "\(id),item \(id % 997),\(Double(id % 10_000) / 100)\n" }
        return text
    }
}

extension TestBackend {
    /// The names of the user schema's tables, indexes, views and triggers.
    func schemaObjectNames(_ db: any DatabaseConnection) throws -> Set<String> {
        switch kind {
        case .sqlite: Set(try (db as! Database).schemaObjects().map(\.name))
        case .postgres: Set(try db.rows("""
            SELECT c.relname FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'i', 'v')
            UNION ALL SELECT t.tgname FROM pg_trigger t WHERE NOT t.tgisinternal
            """).map { try $0.get(0, as: String.self) })
        }
    }

    /// Waits until nothing of a killed client is still working on the database (PostgreSQL: its server process,
    /// which runs on until it notices the client is gone, has left `pg_stat_activity`; SQLite: nothing to wait for).
    func waitUntilKilledClientsAreGone(_ root: URL) throws {
        switch kind {
        case .sqlite: return
        case .postgres:
            let db = try PostgresTestDatabase(root).connection
            let deadline = ContinuousClock.now + .seconds(60)
            while try db.scalar("""
                SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
                """, as: Int.self) ?? 0 > 0 {
                guard ContinuousClock.now < deadline else { return XCTFail("a killed client's server process did not end") }
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
    }

    /// A trigger named `items_log` that writes the name of each deleted item into `log (message)`.
    var crashItemsLogTrigger: String {
        switch kind {
        case .sqlite: "CREATE TRIGGER items_log AFTER DELETE ON items BEGIN INSERT INTO log VALUES (OLD.name); END;"
        case .postgres: """
            CREATE FUNCTION items_log_row() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN INSERT INTO log VALUES (OLD.name); RETURN OLD; END $$;
            CREATE TRIGGER items_log AFTER DELETE ON items FOR EACH ROW EXECUTE FUNCTION items_log_row();
            """
        }
    }

    /// A statement that cannot run inside a transaction, for a `transaction="none"` step: SQLite's `VACUUM`
    /// rewrites the whole database; PostgreSQL's `CREATE INDEX CONCURRENTLY` commits an INVALID index first and
    /// validates it in later transactions, which is what a kill can leave behind.
    var crashStatementOutsideTransactions: String {
        switch kind {
        case .sqlite: "VACUUM;"
        case .postgres: "CREATE INDEX CONCURRENTLY items_price ON items (price, name);"
        }
    }
}
