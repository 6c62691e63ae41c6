/// Brings a database up to date with a manifest: each migration and seed exactly once, each completely or not at all.
///
/// ```swift
/// let manifest = try Manifest.load(path: "manifests/example.xml")
/// let db = try Database(path: "library.sqlite")
/// let report = try Migrator(manifest: manifest, database: db).migrate()
/// if let failure = report.failure { print(failure) }   // "sql/002_x.sql:3:1: no such table: …"
/// ```
/// Safe to run from several processes at once: the "already applied?" check and the step run inside one
/// transaction that holds the database's write lock (`MigrationDatabase.withWriteLock`: `BEGIN IMMEDIATE` on
/// SQLite), so the database's own lock serialises them; nothing is left locked by a crash. The runner is the same
/// for every backend: what differs is behind `MigrationDatabase`.
///
/// `Migrator` is the façade over the runner's parts, each with one job: `Planner` (statuses, the plan, refusals,
/// the plan id), `HistoryBook` (comparing records with files), `RunLoop` (the steps in order) and one
/// `StepExecutor` per kind of step, `Maintenance` (baseline, repair, resolve) and `MigrationLint`.
public struct Migrator {
    /// The manifest whose plan the migrator runs.
    public let manifest: Manifest
    /// The database it brings up to date.
    public let database: any MigrationDatabase
    /// The bodies of code steps, by name (`register(_:_:)`).
    var codeBodies: [String: CodeBody] = [:]
    /// The bodies that undo code steps, by name (`registerDown(_:_:)`).
    var codeDowns: [String: CodeBody] = [:]
    /// Names registered more than once: refused before anything runs rather than one body silently replacing another.
    private var registeredTwice: [String] = []

    /// Creates a migrator bringing `database` up to date with `manifest`.
    public init(manifest: Manifest, database: any MigrationDatabase) {
        self.manifest = manifest
        self.database = database
    }

    /// The Swift code of a code step: it runs inside the step's transaction on `database`, and throwing rolls back
    /// its writes (nothing is recorded).
    public typealias CodeBody = (_ database: any DatabaseConnection) throws -> Void

    /// Supplies the body of the manifest's code step `name` (`<code name="…">`). It runs once, in plan order, in one
    /// transaction with the step's history row: a throw rolls back what it wrote and records nothing, and the run
    /// fails naming the step. The body must not end that transaction (`COMMIT`, `ROLLBACK` are refused).
    ///
    /// `plan` and `migrate` refuse before anything runs when a registered name is not a code step of the manifest,
    /// when a name is registered twice, and when a code step due in this run has no body (reason `code-step`).
    /// Where a step is retried after a lock timeout (PostgreSQL), its body runs again after the rollback.
    public mutating func register(_ name: String, _ body: @escaping CodeBody) {
        if codeBodies[name] != nil && !registeredTwice.contains(name) { registeredTwice.append(name) }
        codeBodies[name] = body
    }

    /// Supplies what undoes the manifest's code step `name`, for `rollback`: it runs in one transaction with the
    /// removal of the step's history row, as the body does with its writing. A code step in a rollback's range
    /// without one is refused (reason `no-down`).
    public mutating func registerDown(_ name: String, _ body: @escaping CodeBody) {
        codeDowns[name] = body
    }

    var planner: Planner {
        var planner = Planner(manifest: manifest, database: database, registered: Set(codeBodies.keys), registeredTwice: registeredTwice)
        planner.registeredDowns = Set(codeDowns.keys)
        return planner
    }

    private var backend: DatabaseBackend { database.dialect.backend }

    // MARK: Validation

    /// Files larger than this are checked statement by statement as they run instead of ahead of time.
    static var lintSizeLimit: Int { MigrationLint.sizeLimit }

    /// What migrations may not do, found before anything runs by the dialect's lint: statements that cannot run
    /// inside a transaction in transactional files, writes to the history table, and text the database would not
    /// run to its end. Checks the migrations of this database's backend.
    public func lint() -> [ManifestProblem] {
        Self.lint(manifest.migrations(for: backend), dialect: database.dialect)
    }

    /// `lint()` for a backend without opening a database of it (`strata validate` checks each backend the manifest
    /// is for with its dialect).
    public static func lint(_ migrations: [MigrationStep], dialect: any SQLDialect) -> [ManifestProblem] {
        MigrationLint.findings(migrations, dialect: dialect).map(\.problem)
    }

    /// What `strata validate` checks without a database: the plan of each backend the manifest is for
    /// (`Manifest.validatedBackends`), with that backend's dialect. A file in several plans is reported once per
    /// distinct finding.
    public static func lint(_ manifest: Manifest, dialect: (DatabaseBackend) -> any SQLDialect)
        -> (problems: [ManifestProblem], warnings: [ManifestProblem]) {
        MigrationLint.check(manifest, dialect: dialect)
    }

    /// The same rules for each migration's down, as a rollback reads it (`strata validate` checks them per backend).
    package static func downLint(_ migrations: [MigrationStep], dialect: any SQLDialect) -> [ManifestProblem] {
        MigrationLint.downFindings(migrations, dialect: dialect).map(\.problem)
    }

    /// Migrations `lint()` could not check ahead of time because they are larger than `lintSizeLimit`: said, not
    /// passed over in silence. The backend still checks each of their statements as it runs.
    public func lintWarnings() -> [ManifestProblem] {
        MigrationLint.warnings(manifest.migrations(for: backend))
    }

    /// `lintWarnings()` for any list of migrations.
    public static func lintWarnings(_ migrations: [MigrationStep]) -> [ManifestProblem] {
        MigrationLint.warnings(migrations)
    }

    // MARK: Status and plan

    /// Every step of the manifest, and every recorded step no longer in it, with its state.
    public func status(_ options: MigrationOptions = MigrationOptions()) throws -> [StepStatus] {
        try planner.status(options)
    }

    /// What `migrate` would do with these options, writing nothing.
    public func plan(_ options: MigrationOptions = MigrationOptions()) throws -> MigrationPlan {
        try planner.plan(options, forMigrate: false)
    }

    /// What would make `migrate` refuse with these options, without counting seed rows; writes nothing. Lets a
    /// caller refuse before creating a database file.
    public func refusals(_ options: MigrationOptions = MigrationOptions()) throws -> [Refusal] {
        try planner.plan(options, forMigrate: true).refusals
    }

    // MARK: Migrate

    /// Applies every pending step in plan order. Refusals (drift, dirty, strict order, invalid SQL) throw
    /// `MigrationError.refused` before anything runs; a failing step is returned in `MigrationReport.failure`.
    public func migrate(_ options: MigrationOptions = MigrationOptions(),
                        progress: ((MigrationEvent) -> Void)? = nil) throws -> MigrationReport {
        let plan = try planner.plan(options, forMigrate: true)
        guard plan.refusals.isEmpty else { throw MigrationError.refused(plan.refusals) }
        guard let backupOptions = options.backup, !plan.steps.isEmpty else {
            return try run(plan.steps, options, watcher: nil, progress)
        }
        var cancelled = MigrationReport()
        cancelled.cancelled = true
        cancelled.notRun = plan.steps.map(\.step.id)
        if options.cancellation?.isCancelled == true { return cancelled }
        switch try backUp(backupOptions, options, progress) {
        case .cancelled:
            return cancelled
        case .nothingToApply:
            var report = MigrationReport()
            report.alreadyApplied = plan.steps.map(\.step.id)
            return report
        case .taken(let backup, let copied):
            var report = try run(copied.steps, options, watcher: nil, progress)
            report.backup = backup
            // Steps of the first plan another run applied before the backup was taken: in it, and not run here.
            let later = Set(copied.steps.map { HistoryBook.key($0.step.kind, $0.step.id) })
            let before = plan.steps.filter { !later.contains(HistoryBook.key($0.step.kind, $0.step.id)) }.map(\.step.id)
            report.alreadyApplied = before + report.alreadyApplied
            return report
        }
    }

    /// Applies `steps` (a plan without refusals) in order; `watcher` sees each step before and after it runs.
    func run(_ steps: [PlannedStep], _ options: MigrationOptions, watcher: (any StepWatcher)?,
             _ progress: ((MigrationEvent) -> Void)?) throws -> MigrationReport {
        var loop = RunLoop(database: database, options: options, codeBodies: codeBodies, watcher: watcher, progress: progress)
        loop.codeDowns = codeDowns
        loop.rollbackScope = RollbackScope(seeds: manifest.seeds,
                                           neverUndone: Set(manifest.migrations.filter(\.repeatable).map(\.id)))
        return try loop.run(steps)
    }

    // MARK: Rollback

    /// Undoes the applied steps `target` names, newest first (plan order): each migration's down runs in its own
    /// transaction with the removal of its history row (and an audit row saying what was rolled back and when), under
    /// the deployers' lock, so several runs at once roll each step back once. Refused before anything runs
    /// (`MigrationError.refused`) when a step in the range has no down, has changed since it was applied, is no longer
    /// in the manifest, or is a code step without a registered down, or when any step is dirty. A rolled-back step
    /// reads `pending` again, and the next `migrate` applies it as new. Seeds whose tables a down drops read
    /// `pending` with it; repeatable migrations are never rolled back. `options.backup` backs up first, as `migrate`.
    public func rollback(_ target: RollbackTarget, _ options: MigrationOptions = MigrationOptions(),
                         progress: ((MigrationEvent) -> Void)? = nil) throws -> MigrationReport {
        var options = options
        options.rollback = target
        return try migrate(options, progress: progress)
    }

    /// What `rollback` would do, writing nothing: its downs in order, and what would stop it.
    public func rollbackPlan(_ target: RollbackTarget, _ options: MigrationOptions = MigrationOptions()) throws -> MigrationPlan {
        var options = options
        options.rollback = target
        return try plan(options)
    }

    // MARK: Baseline, repair, resolve

    /// Records every step up to and including `id` as applied without running it (adopting an existing database).
    /// `id` is a step's identity, or the version one migration's file name starts with (`3`, `20240101120000`).
    /// Steps already recorded are left alone. Returns the ids recorded.
    @discardableResult
    public func baseline(through id: String, _ options: MigrationOptions = MigrationOptions()) throws -> [String] {
        try Maintenance(planner: planner).baseline(through: id, options)
    }

    /// Adopts a database another tool migrated: records as applied, without running them, exactly the migrations
    /// `tool`'s own history table (`ForeignTool.table`) says it applied, matched to files by that tool's version
    /// rules. Refused before anything is recorded (`MigrationError.refused`, reason `foreign-history`) when the table
    /// is missing or not the tool's, marks a step dirty or failed, or names a version no file has.
    @discardableResult
    public func baseline(from tool: ForeignTool) throws -> ForeignBaseline {
        try Maintenance(planner: planner).baseline(from: tool)
    }

    /// The other tools' history tables this database holds, with their row counts (what `status` points at when
    /// Strata's own history is empty).
    public func foreignHistories() -> [(tool: ForeignTool, rows: Int)] {
        ForeignHistory.present(in: database)
    }

    /// Re-records the checksums of drifted steps (after a human checked them) and marks records of files
    /// no longer in the manifest as deleted.
    public func repair() throws -> RepairReport {
        try Maintenance(planner: planner).repair()
    }

    /// Settles a dirty step after a human has checked the database.
    public func resolve(_ id: String, as resolution: Resolution) throws {
        try Maintenance(planner: planner).resolve(id, as: resolution)
    }

    /// What interrupted statements outside a transaction left unusable in the database (`UnfinishedObject`).
    public func unfinishedObjects() throws -> [UnfinishedObject] {
        try database.unfinishedObjects()
    }
}
