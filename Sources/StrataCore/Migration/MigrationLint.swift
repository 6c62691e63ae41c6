/// What migrations may not do, found before anything runs by the dialect's lint: statements that cannot run inside
/// a transaction in transactional files, writes to the history table, and text the database would not run to its
/// end. Only what runs is read (another tool's down section may hold anything), at the file's own line numbers.
enum MigrationLint {
    /// Larger files are checked statement by statement as they run instead, so `validate` never reads a huge data
    /// load into memory.
    static let sizeLimit = 4 << 20

    /// The problems of `migrations` under `dialect`, each with the id of the migration it is in.
    static func findings(_ migrations: [MigrationStep], dialect: any SQLDialect) -> [(id: String, problem: ManifestProblem)] {
        migrations.flatMap { migration in
            guard let bytes = migration.bytesReadAhead else {
                return [(id: String, problem: ManifestProblem)]()
            }
            let section: MigrationSection
            do {
                section = try migration.format.upSection(of: bytes)
            } catch {
                let failure = error as? MigrationFormatError
                return [(migration.id, ManifestProblem(SourceLocation(path: displayPath(migration.path), line: max(failure?.line ?? 1, 1)),
                                                       "\(failure?.message ?? "\(error)") (\(migration.location))"))]
            }
            return dialect.lint(Array(bytes[section.range]), insideTransaction: migration.runsInTransaction).map {
                (migration.id, ManifestProblem(SourceLocation(path: displayPath(migration.path), line: $0.line + section.startLine - 1,
                                                              column: $0.column),
                                               $0.message + " (\(migration.location))"))
            }
        }
    }

    /// The same rules for each migration's down, read as it runs (its own file whole, or its file's down section)
    /// and checked as inside a transaction unless it runs outside one: a rollback is refused before anything runs
    /// rather than failing half-way on a statement that was never going to run.
    static func downFindings(_ migrations: [MigrationStep], dialect: any SQLDialect) -> [(id: String, problem: ManifestProblem)] {
        migrations.flatMap { migration -> [(id: String, problem: ManifestProblem)] in
            guard let down = migration.down else { return [] }
            let path: String
            let format: MigrationFormat
            switch down.source {
            case .section: (path, format) = (migration.path, migration.format)
            case .file(let file): (path, format) = (file, .plain)
            }
            guard let bytes = MigrationScript.fileBytes(path, atMost: sizeLimit) else { return [] }
            let section: MigrationSection?
            do {
                section = format == .plain ? try format.upSection(of: bytes) : try format.downSection(of: bytes)
            } catch {
                let failure = error as? MigrationFormatError
                return [(migration.id, ManifestProblem(SourceLocation(path: displayPath(path), line: max(failure?.line ?? 1, 1)),
                                                       "\(failure?.message ?? "\(error)") (the down of \(migration.id))"))]
            }
            guard let section else { return [] }
            return dialect.lint(Array(bytes[section.range]), insideTransaction: down.runsInTransaction).map {
                (migration.id, ManifestProblem(SourceLocation(path: displayPath(path), line: $0.line + section.startLine - 1,
                                                              column: $0.column),
                                               $0.message + " (the down of \(migration.id), \(migration.location))"))
            }
        }
    }

    /// Migrations too large to be checked ahead of time (`sizeLimit`): said, not passed over in silence. The
    /// backend still checks each of their statements as it runs.
    static func warnings(_ migrations: [MigrationStep]) -> [ManifestProblem] {
        migrations.compactMap { migration in
            guard let size = try? RegularFile(path: migration.path).size, size > sizeLimit else { return nil }
            return ManifestProblem(SourceLocation(path: displayPath(migration.path), line: 1),
                "not checked ahead of time (\(size >> 20) MiB, over the \(sizeLimit >> 20) MiB read ahead); each statement is checked as it runs, and a refused one fails and rolls back the step (\(migration.location))")
        }
    }

    /// What `strata validate` checks without a database: the plan of each backend the manifest is for
    /// (`Manifest.validatedBackends`), with that backend's dialect. A file in several plans is reported once per
    /// distinct finding.
    static func check(_ manifest: Manifest, dialect: (DatabaseBackend) -> any SQLDialect)
        -> (problems: [ManifestProblem], warnings: [ManifestProblem]) {
        var problems: [ManifestProblem] = []
        var warnings: [ManifestProblem] = []
        func add(_ found: [ManifestProblem], to list: inout [ManifestProblem]) {
            for problem in found where !list.contains(problem) { list.append(problem) }
        }
        for backend in manifest.validatedBackends {
            let migrations = manifest.migrations(for: backend)
            add(Self.warnings(migrations), to: &warnings)
            let dialect = dialect(backend)
            add(findings(migrations, dialect: dialect).map(\.problem), to: &problems)
            add(downFindings(migrations, dialect: dialect).map(\.problem), to: &problems)
            add(manifest.plan(for: backend).compactMap { step in
                guard case .seed(let seed) = step, let reason = dialect.seedRefusal(seed) else { return nil }
                return ManifestProblem(seed.location, reason)
            }, to: &problems)
        }
        return (problems, warnings)
    }
}

extension MigrationStep {
    /// The file's bytes when it is no larger than what is checked ahead of time (`MigrationLint.sizeLimit`); nil for
    /// a larger or unreadable file, whose statements are met only as they run.
    package var bytesReadAhead: [UInt8]? { MigrationScript.fileBytes(path, atMost: MigrationLint.sizeLimit) }
}
