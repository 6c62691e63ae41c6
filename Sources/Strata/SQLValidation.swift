/// What `strata validate` checks in a manifest's SQL, and how far: each backend's lint (what the runner refuses),
/// the other backend's syntax in its files, and then the database itself where it can: on SQLite every file run in
/// plan order on an empty in-memory database; on PostgreSQL every statement parsed by the server `--database` names
/// (nothing run or written). A manifest that names no backend is read by both backends' rules, and only what both
/// find is a problem: the dialect is not known, so no backend's fix is advised for another's file.
public struct SQLValidation: Sendable {
    /// How one backend's SQL was checked.
    public struct Check: Sendable, Equatable {
        /// The backend, or nil when the manifest names none and no database was given.
        public let backend: DatabaseBackend?
        /// `scratch-database` (SQLite ran the files), `server` (PostgreSQL parsed them), `rules` (the lint only).
        public let checked: String
        /// What was checked, and what was not and why, in words.
        public let note: String
    }

    /// What would make a migrate fail or refuse.
    public var problems: [ManifestProblem] = []
    /// What a command does not stop for, and what could not be checked.
    public var warnings: [ManifestProblem] = []
    /// How each backend's SQL was checked.
    public var checks: [Check] = []
    /// The backends whose plans were checked.
    public var backends: [DatabaseBackend] = []

    /// Checks `manifest`'s SQL: for `database`'s backend when one is given (on PostgreSQL by that server), else for
    /// each backend the manifest names, else by both backends' rules.
    public static func validate(_ manifest: Manifest, database: (any DatabaseTarget)? = nil) -> SQLValidation {
        var result = SQLValidation()
        let given = database.map { target -> DatabaseBackend in target is PostgresTarget ? .postgresql : .sqlite }
        if let given {
            result.backends = [given]
        } else if manifest.namesBackend {
            result.backends = manifest.validatedBackends
        } else {
            result.backends = DatabaseBackend.allCases.filter(manifest.backends.contains)
            result.checkUnknownDialect(manifest)
            return result
        }
        for backend in result.backends {
            let (problems, warnings) = lint(manifest, backend)
            var found = problems + mistakes(manifest, backend)
            result.add(warnings, to: \.warnings)
            let failing = Set(manifest.migrations(for: backend).filter { migration in
                found.contains { $0.location.path == displayPath(migration.path) }
            }.map(\.id))
            switch backend {
            case .sqlite:
                let scratch = SQLiteScratchCheck.check(manifest.plan(for: .sqlite), skipping: failing)
                found += scratch.problems
                result.add(scratch.warnings, to: \.warnings)
                result.checks.append(Check(backend: .sqlite, checked: "scratch-database",
                                           note: "SQLite ran the migrations in plan order on an empty in-memory database"))
            case .postgresql:
                let (serverFound, check) = serverCheck(manifest, database as? PostgresTarget)
                found += serverFound
                result.checks.append(check)
            }
            result.add(found, to: \.problems)
        }
        return result
    }

    private mutating func add(_ found: [ManifestProblem], to list: WritableKeyPath<SQLValidation, [ManifestProblem]>) {
        for problem in found where !self[keyPath: list].contains(problem) { self[keyPath: list].append(problem) }
    }

    /// The backend's lint, its seed refusals and the files too large to lint.
    static func lint(_ manifest: Manifest, _ backend: DatabaseBackend) -> (problems: [ManifestProblem], warnings: [ManifestProblem]) {
        let migrations = manifest.migrations(for: backend)
        let dialect = DatabaseTargets.dialect(for: backend)
        let seeds = manifest.plan(for: backend).compactMap { step -> ManifestProblem? in
            guard case .seed(let seed) = step, let reason = dialect.seedRefusal(seed) else { return nil }
            return ManifestProblem(seed.location, reason)
        }
        return (Migrator.lint(migrations, dialect: dialect) + Migrator.downLint(migrations, dialect: dialect) + seeds,
                Migrator.lintWarnings(migrations))
    }

    /// The other backend's syntax in the files run on `backend`.
    static func mistakes(_ manifest: Manifest, _ backend: DatabaseBackend) -> [ManifestProblem] {
        manifest.migrations(for: backend).flatMap { migration -> [ManifestProblem] in
            guard let bytes = migration.bytesReadAhead, let section = try? migration.format.upSection(of: bytes) else { return [] }
            return DialectMistakes.findings(in: Array(bytes[section.range]), for: backend).map {
                ManifestProblem(SourceLocation(path: displayPath(migration.path), line: $0.line + section.startLine - 1, column: $0.column),
                                "\($0.message) (this file runs on \(backend.displayName)) (\(migration.location))")
            }
        }
    }

    /// Every statement of the PostgreSQL plan parsed by `target`'s server, or why not.
    static func serverCheck(_ manifest: Manifest, _ target: PostgresTarget?) -> ([ManifestProblem], Check) {
        guard let target else {
            return ([], Check(backend: .postgresql, checked: "rules",
                              note: "PostgreSQL's syntax not checked by a server: give --database postgres://… to have one parse every statement (nothing is run or written)"))
        }
        let connection: PostgresConnection
        do {
            guard let opened = try target.openForReading() as? PostgresConnection else {
                return ([], Check(backend: .postgresql, checked: "rules", note: "PostgreSQL's syntax not checked by a server: \(target.name) is no PostgreSQL connection"))
            }
            connection = opened
        } catch {
            return ([], Check(backend: .postgresql, checked: "rules",
                              note: "PostgreSQL's syntax not checked by a server: could not connect to \(target.name): \(error)"))
        }
        var found: [ManifestProblem] = []
        for migration in manifest.migrations(for: .postgresql) {
            guard let bytes = migration.bytesReadAhead, let section = try? migration.format.upSection(of: bytes) else { continue }
            do {
                found += try connection.syntaxFindings(in: Array(bytes[section.range])).map {
                    ManifestProblem(SourceLocation(path: displayPath(migration.path), line: $0.line + section.startLine - 1, column: $0.column),
                                    "PostgreSQL: \($0.message) (\(migration.location))")
                }
            } catch {
                return (found, Check(backend: .postgresql, checked: "rules",
                                     note: "PostgreSQL's syntax checked by \(target.name) up to \(migration.id) only: \(error)"))
            }
        }
        return (found, Check(backend: .postgresql, checked: "server",
                             note: "the server at \(target.name) parsed every statement (none was run, nothing was written)"))
    }

    /// No backend named, no database given: what both backends' rules find is a problem; what one finds alone is
    /// counted, not reported, since it may be right for the other; SQLite's run on a scratch database is a warning.
    mutating func checkUnknownDialect(_ manifest: Manifest) {
        let (sqlite, sqliteWarnings) = Self.lint(manifest, .sqlite)
        let (postgres, postgresWarnings) = Self.lint(manifest, .postgresql)
        func place(_ problem: ManifestProblem) -> String { "\(problem.location.path):\(problem.location.line)" }
        let agreed = sqlite.filter { problem in postgres.contains { place($0) == place(problem) } }
        add(agreed, to: \.problems)
        add(sqliteWarnings + postgresWarnings, to: \.warnings)
        let sqliteOnly = sqlite.count - agreed.count
        let postgresOnly = postgres.filter { problem in !agreed.contains { place($0) == place(problem) } }.count
        var note = "the manifest names no backend (no <database>, no backend= marks), so the dialect of its SQL is not known: "
            + "only what SQLite's and PostgreSQL's rules both find is reported"
        if sqliteOnly + postgresOnly > 0 {
            note += "; \(sqliteOnly) more by SQLite's rules alone and \(postgresOnly) by PostgreSQL's alone are not"
        }
        note += ". Name the backend in the manifest, or give --database, to check for one."
        checks.append(Check(backend: nil, checked: "rules", note: note))
        warnings.append(ManifestProblem(SourceLocation(path: displayPath(manifest.path), line: 1), note))
        // What SQLite could not run is a fact about SQLite, said as one: not a problem of a file that may be PostgreSQL's.
        let scratch = SQLiteScratchCheck.check(manifest.plan(for: .sqlite))
        add(scratch.problems.map { ManifestProblem($0.location, "if these files are for SQLite: \($0.message)") }, to: \.warnings)
    }
}
