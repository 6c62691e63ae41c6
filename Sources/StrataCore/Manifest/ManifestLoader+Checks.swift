#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The checks that hold across all documents, made once every manifest is read: each backend's plan, seeds'
/// `after`, names that must be unique (seed ids, code step names, model types), and relationships.
extension ManifestLoader {
    /// Checks everything read and makes the manifest, or throws every problem found, sorted by place.
    mutating func finish(path: String) throws -> Manifest {
        checkDownsAreNoMigrations()
        let byBackend = plans()
        checkSeeds(byBackend)
        checkCodeSteps()
        checkModels(path: path)
        let warnings = warnings.sorted { ($0.location.path, $0.location.line) < ($1.location.path, $1.location.line) }
        guard problems.isEmpty else {
            throw ManifestError(problems: problems.sorted { ($0.location.path, $0.location.line) < ($1.location.path, $1.location.line) },
                                warnings: warnings)
        }
        return Manifest(path: path, database: database, migrationsByBackend: byBackend, seeds: seeds, codeSteps: codeSteps,
                        models: models, migrationDirectories: migrationDirectories, namedBackends: namedBackends, warnings: warnings)
    }

    /// A file is a migration or the down of one, never both: a `<migration down="…">` naming a migration (a slip of
    /// the pen), or a down that another `<migrations directory>` also takes as a migration, would run the down as
    /// an up (or drop a migration from the plan without a word).
    private mutating func checkDownsAreNoMigrations() {
        var migrationAt: [String: MigrationStep] = [:]
        for migration in migrations { migrationAt[migration.path] = migration }
        for migration in migrations {
            guard case .file(let down)? = migration.down?.source, let other = migrationAt[down] else { continue }
            problems.append(ManifestProblem(migration.location,
                "the down of migration '\(migration.id)' is \(displayPath(down)), which is also migration '\(other.id)' (\(other.location)); a file is a migration or a down, not both: name the file that undoes it, or keep the down out of the migrations directories"))
        }
    }

    /// Each backend's plan, checked on its own: identities are unique within one backend's migrations (a file in
    /// `sql/` marked `sqlite` and one in `sql/postgresql/` marked `postgresql` may share a name), and a file is one
    /// migration however often it is listed.
    private mutating func plans() -> [DatabaseBackend: [MigrationStep]] {
        // A file is known by device and inode, so a symlinked directory or an include cannot list it twice unnoticed.
        func identity(_ path: String) -> String {
            var info = stat()
            return stat(path, &info) == 0 ? "\(info.st_dev):\(info.st_ino)" : path
        }
        var byBackend: [DatabaseBackend: [MigrationStep]] = [:]
        for backend in DatabaseBackend.allCases {
            var byID: [String: MigrationStep] = [:]
            var byPath: [String: MigrationStep] = [:]
            for migration in migrations.sorted(by: { $0.location.line < $1.location.line })
            where migration.backends?.contains(backend) ?? true {
                if let first = byPath[identity(migration.path)], first.id != migration.id {
                    report(ManifestProblem(migration.location,
                        "migration file \(migration.path) is listed twice\(Self.plan(of: backend, first, migration)), as '\(first.id)' (\(first.location)) and as '\(migration.id)'; a file is one migration"))
                    continue
                }
                byPath[identity(migration.path)] = migration
                if let first = byID[migration.id] {
                    if identity(first.path) == identity(migration.path) { continue }
                    let named = [first, migration].contains { $0.id != PathComponents.last($0.path) }
                    let plan = Self.plan(of: backend, first, migration)
                    var message = named
                        ? "migration id '\(migration.id)' is used twice\(plan) (\(first.path) and \(migration.path)); ids must be unique"
                        : "migration file name '\(migration.id)' is used twice\(plan) (\(first.path) and \(migration.path)); a migration's file name is its identity (give one an id=\"…\")"
                    if let hint = Self.backendHint(first, migration) { message += "; " + hint }
                    report(ManifestProblem(migration.location, message))
                } else {
                    byID[migration.id] = migration
                }
            }
            byBackend[backend] = byID.values.sorted { NaturalOrder.areInIncreasingOrder($0.id, $1.id) }
        }
        return byBackend
    }

    /// Seed ids are unique, and a seed's `after` names a migration in the plan of every backend the manifest has
    /// migrations for.
    private mutating func checkSeeds(_ byBackend: [DatabaseBackend: [MigrationStep]]) {
        let runsOn = Manifest.backends(of: byBackend.values.flatMap { $0 })
        let everyMigration = byBackend.values.flatMap { $0 }
        var seedIDs: [String: SourceLocation] = [:]
        for seed in seeds {
            if let first = seedIDs[seed.id] {
                problems.append(ManifestProblem(seed.location, "seed id '\(seed.id)' is already used at \(first); give one an id=\"…\""))
            } else {
                seedIDs[seed.id] = seed.location
            }
            guard let after = seed.after else { continue }
            guard let target = everyMigration.filter({ $0.id == after }).min(by: { $0.location.line < $1.location.line }) else {
                problems.append(ManifestProblem(seed.location, "after=\"\(after)\" names no migration of this manifest"))
                continue
            }
            let lacking = DatabaseBackend.allCases.filter { runsOn.contains($0) && !(byBackend[$0] ?? []).contains { $0.id == after } }
            // An unmarked target missing from a plan is a clash reported above.
            guard !lacking.isEmpty, let markedFor = target.backends else { continue }
            let marks = DatabaseBackend.allCases.filter(markedFor.contains).map { "backend=\"\($0.rawValue)\"" }
            let plans = lacking.count == 1 ? "plan does not" : "plans do not"
            problems.append(ManifestProblem(seed.location,
                "after=\"\(after)\" names a migration the \(Self.spoken(lacking.map(\.displayName))) \(plans) have (it is marked \(Self.spoken(marks)) at \(target.location)); "
                + "a seed runs on every backend the manifest has migrations for, so name a migration in every backend's plan "
                + "(an unmarked one, or a name each backend's migrations have)"))
        }
    }

    /// Code steps are registered by name, so a name is unique across the manifest and its includes; their
    /// identities (`code:NAME`) are set apart from every migration's.
    private mutating func checkCodeSteps() {
        var codeNames: [String: SourceLocation] = [:]
        for code in codeSteps {
            if let first = codeNames[code.name] {
                problems.append(ManifestProblem(code.location, "code step name '\(code.name)' is already used at \(first); a name is registered once"))
            } else {
                codeNames[code.name] = code.location
            }
        }
        for migration in migrations where migration.id.hasPrefix(CodeStep.identityPrefix) {
            report(ManifestProblem(migration.location,
                "migration identity '\(migration.id)' starts with '\(CodeStep.identityPrefix)', which is kept for code steps in history; rename the file or give it an id=\"…\""))
        }
    }

    /// A type is mapped once, and its relationships hold (`checkRelationships`).
    private mutating func checkModels(path: String) {
        var modelTypes: [String: SourceLocation] = [:]
        for model in models {
            guard let location = model.location else { continue }
            if let first = modelTypes[model.typeName] {
                problems.append(ManifestProblem(location, "model \(model.typeName) is already mapped at \(first)"))
            } else {
                modelTypes[model.typeName] = location
            }
        }
        checkRelationships(path: path)
    }

    /// Every relationship names a model the manifest maps, and no chain of them leads a type back to itself.
    private mutating func checkRelationships(path: String) {
        let mapped = Set(models.map(\.typeName))
        for model in models {
            for relationship in model.relationships where !mapped.contains(relationship.model) {
                problems.append(ManifestProblem(relationship.location ?? model.location ?? SourceLocation(path: path, line: 1),
                    "\(model.typeName).\(relationship.property) names model \(relationship.model), which no <model type=\"\(relationship.model)\"> maps"))
            }
        }
        if let cycle = RelationshipGraph.cycle(in: models) {
            let start = models.first { cycle.first?.hasPrefix($0.typeName + ".") == true }
            let location = start.flatMap { model in
                model.relationships.first { cycle.first == "\(model.typeName).\($0.property)" }?.location
            } ?? start?.location ?? SourceLocation(path: path, line: 1)
            problems.append(ManifestProblem(location,
                "relationships nest in a cycle (\(RelationshipGraph.describe(cycle))): loading or saving such values would never end; drop one side (load it with a query of its own)"))
        }
    }

    /// " in the PostgreSQL plan" when either migration is marked for a backend; nothing when both are in every
    /// plan, where the backend is beside the point.
    private static func plan(of backend: DatabaseBackend, _ first: MigrationStep, _ second: MigrationStep) -> String {
        first.backends == nil && second.backends == nil ? "" : " in the \(backend.displayName) plan"
    }

    /// For an unmarked migration that clashes with a marked one: mark the unmarked one for the other backend.
    private static func backendHint(_ first: MigrationStep, _ second: MigrationStep) -> String? {
        let pair = [first, second]
        guard let unmarked = pair.first(where: { $0.backends == nil }), let marked = pair.first(where: { $0.backends != nil }),
              let markedFor = marked.backends else { return nil }
        let others = DatabaseBackend.allCases.filter { !markedFor.contains($0) }
        let suggestion = others.count == 1 ? "backend=\"\(others[0].rawValue)\"" : "backend=\"…\""
        return "\(unmarked.path) has no backend=\"…\", so it is in every backend's plan: if it is another backend's version, mark it (or its <migrations>) \(suggestion)"
    }

    /// `A`, `A and B`, `A, B and C`.
    private static func spoken(_ items: [String]) -> String {
        guard let last = items.last, items.count > 1 else { return items.joined() }
        return items.dropLast().joined(separator: ", ") + " and " + last
    }
}
