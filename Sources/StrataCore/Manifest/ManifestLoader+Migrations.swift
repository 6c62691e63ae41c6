/// Reading `<migrations>`: the steps of its directory (`ManifestLoader+MigrationDirectory.swift`) and of the
/// `<migration>`s it lists, each file's up section as its format defines it, and then its `<code>` steps.
extension ManifestLoader {
    /// A `<migration>` inside the element names a file of its directory (or the manifest's, without one) and
    /// refines or adds to what the directory gives: a file both found and listed is one step, as listed.
    mutating func readMigrations(_ element: XMLElement, _ context: Context) {
        var directory: String?
        var found: [String: MigrationStep] = [:]
        let directoryFormat = element.attribute("format").flatMap(MigrationFormat.init(rawValue:)) ?? .plain
        let directoryBackend = element.attribute("backend").flatMap(DatabaseBackend.init(rawValue:))
        if let directoryBackend { namedBackends.insert(directoryBackend) }
        if let relative = element.attribute("directory") {
            directory = readMigrationDirectory(relative, element, context, format: directoryFormat,
                                               backend: directoryBackend, into: &found)
            // `<migrations repeatable="true">`: every file of the directory is repeatable (a listed one may say otherwise).
            if element.attribute("repeatable") == "true" { found = found.mapValues { $0.with(repeatable: true) } }
        }
        let transactionAttribute = readListedMigrations(element, context, directory: directory,
                                                        format: directoryFormat, backend: directoryBackend, into: &found)
        // A file that undoes another is not a migration of its own, however it was found.
        let downs = Set(found.values.compactMap { step -> String? in
            if case .file(let path)? = step.down?.source { return path }
            return nil
        })
        for path in downs {
            // A directory's own down files (NAME.down.sql, a layout's) were never steps; a file the directory would
            // take as a migration, named as another's down, leaves the plan: said, so a slip of the pen is seen.
            if found[path] != nil, !MigrationDown.isNamedAsDown(path), let owner = found.values.first(where: { step in
                if case .file(path)? = step.down?.source { return true }
                return false
            }) {
                warnings.append(ManifestProblem(element.location,
                    "\(displayPath(path)) in this <migrations> directory is taken as the down of migration '\(owner.id)' (its down=\"…\"), not as a migration of its own"))
            }
            found[path] = nil
        }
        let envsub = element.attribute("envsub") == "true"
        migrations += found.values.compactMap { sectioned($0, transaction: transactionAttribute[$0.path], envsub: envsub) }
        for child in element.children where child.name == "code" {
            readCode(child, following: Array(found.values))
        }
    }

    /// The `<migration file>` children, each resolved against the directory when there is one, into `found` by
    /// path; returns each listed file's `transaction` attribute, by path, for `sectioned`.
    private mutating func readListedMigrations(_ element: XMLElement, _ context: Context, directory: String?,
                                               format directoryFormat: MigrationFormat, backend directoryBackend: DatabaseBackend?,
                                               into found: inout [String: MigrationStep]) -> [String: String] {
        var transactionAttribute: [String: String] = [:]
        var listed: [String: Int] = [:]
        for child in element.children where child.name == "migration" {
            guard let file = child.attribute("file") else { continue }
            let backend = child.attribute("backend").flatMap(DatabaseBackend.init(rawValue:))
            if let backend { namedBackends.insert(backend) }
            if let backend, let directoryBackend, backend != directoryBackend {
                problem(child, "migration '\(file)' is marked backend=\"\(backend.rawValue)\" inside <migrations backend=\"\(directoryBackend.rawValue)\"> (line \(element.line)); a <migration> may narrow its <migrations>' backend, not change it: list it in a <migrations> of its own")
                continue
            }
            let resolved = context.resolve(file, against: directory)
            if let reason = FileCheck.problem(at: resolved) {
                problem(child, "migration file '\(file)' cannot be read (\(reason))")
                continue
            }
            if let earlier = listed[resolved] {
                problem(child, "migration file \(file) is listed twice (first on line \(earlier)); a file is one migration")
                continue
            }
            listed[resolved] = child.line
            // What the directory's layout found of the file (its identity, down, transaction) unless the line says otherwise.
            let layout = found[resolved]
            let runsInTransaction = child.attribute("transaction").map { $0 != "none" } ?? layout?.runsInTransaction ?? true
            let format = child.attribute("format").flatMap(MigrationFormat.init(rawValue:)) ?? directoryFormat
            var down = layout?.down.map { MigrationDown(source: $0.source, runsInTransaction: runsInTransaction) }
            if let written = child.attribute("down") {
                guard let named = listedDown(written, of: file, child, context, directory: directory, format: format) else { continue }
                down = MigrationDown(source: .file(named), runsInTransaction: runsInTransaction)
            } else if layout == nil, format == .plain, resolved.hasSuffix(".sql") {
                // Strata's own layout for a listed file too: NAME.down.sql beside NAME.sql undoes it, and a
                // down.sql beside an up.sql (diesel's directories, listed one by one).
                let beside = PathComponents.last(resolved) == "up.sql"
                    ? PathComponents.appending("down.sql", to: PathComponents.deletingLast(resolved))
                    : String(resolved.dropLast(4)) + ".down.sql"
                if FileCheck.problem(at: beside) == nil { down = MigrationDown(source: .file(beside), runsInTransaction: runsInTransaction) }
            }
            found[resolved] = MigrationStep(id: child.attribute("id") ?? layout?.id ?? PathComponents.last(resolved), path: resolved,
                                            runsInTransaction: runsInTransaction,
                                            enforcesForeignKeys: (child.attribute("foreignKeys") ?? element.attribute("foreignKeys")) == "on",
                                            location: child.location, format: format,
                                            backends: (backend ?? directoryBackend).map { [$0] }, down: down,
                                            repeatable: child.attribute("repeatable").map { $0 == "true" }
                                                ?? layout?.repeatable ?? (element.attribute("repeatable") == "true"))
            transactionAttribute[resolved] = child.attribute("transaction")
        }
        return transactionAttribute
    }

    /// The file a `<migration down="…">` names, resolved as its `file` is; nil (reported) when it cannot be read, is
    /// the migration itself, or the migration's format holds its down in the file (goose, sql-migrate, dbmate).
    private mutating func listedDown(_ written: String, of file: String, _ child: XMLElement, _ context: Context,
                                     directory: String?, format: MigrationFormat) -> String? {
        guard !format.hasSections else {
            problem(child, "migration '\(file)' has down=\"\(written)\", but its format (\(format.toolName)) holds the down in the file's own down section; remove one of the two")
            return nil
        }
        let resolved = context.resolve(written, against: directory)
        if let reason = FileCheck.problem(at: resolved) {
            problem(child, "down file '\(written)' of migration '\(file)' cannot be read (\(reason))")
            return nil
        }
        guard resolved != context.resolve(file, against: directory) else {
            problem(child, "migration '\(file)' names itself as its down; a down is the file that undoes it")
            return nil
        }
        return resolved
    }

    /// Reads the file's sections as its format defines them (a constant-memory pass): a `plain` file holding
    /// another tool's up/down markers is refused, naming the marker's line, and a declared format's own
    /// "no transaction" option is folded into the step.
    private mutating func sectioned(_ step: MigrationStep, transaction: String?, envsub: Bool) -> MigrationStep? {
        let section: MigrationSection
        var down = step.down
        do {
            let sections = try step.format.sections(ofFileAt: step.path)
            section = sections.up
            if !envsub, let line = sections.up.environmentLine ?? sections.down?.environmentLine {
                throw MigrationFormatError(line: line, message: "'-- +goose ENVSUB ON' asks goose to substitute environment variables into the SQL; Strata does so only when the manifest opts in: add envsub=\"true\" to its <migrations>")
            }
            if down == nil, let downSection = sections.down {
                down = MigrationDown(source: .section, runsInTransaction: downSection.runsInTransaction && step.runsInTransaction)
            }
        } catch {
            let failure = error as? MigrationFormatError
            problems.append(ManifestProblem(SourceLocation(path: displayPath(step.path), line: max(failure?.line ?? 1, 1)),
                                            "\(failure?.message ?? "\(error)") (\(step.location))"))
            return nil
        }
        if !section.runsInTransaction && transaction == "file" {
            problems.append(ManifestProblem(step.location,
                "migration '\(step.id)' says transaction=\"file\", but the file itself asks to run outside a transaction (\(step.format.rawValue)); remove one of the two"))
        }
        // A repeatable file is applied again over what it applied before: only all or nothing keeps that safe.
        if step.repeatable && !(step.runsInTransaction && section.runsInTransaction) {
            problems.append(ManifestProblem(step.location,
                "migration '\(step.id)' is repeatable and asks to run outside a transaction; a repeatable migration is applied again whenever it changes, so it must run in one transaction: remove transaction=\"none\" (or the file's own no-transaction option), or make it a versioned migration"))
        }
        var sectioned = MigrationStep(id: step.id, path: step.path, runsInTransaction: step.runsInTransaction && section.runsInTransaction,
                                      enforcesForeignKeys: step.enforcesForeignKeys, location: step.location, format: step.format,
                                      backends: step.backends, down: down, repeatable: step.repeatable)
        sectioned.substitutesEnvironment = envsub && step.format == .goose
        return sectioned
    }
}

extension MigrationStep {
    /// The same step, repeatable or not.
    func with(repeatable: Bool) -> MigrationStep {
        MigrationStep(id: id, path: path, runsInTransaction: runsInTransaction, enforcesForeignKeys: enforcesForeignKeys,
                      location: location, format: format, backends: backends, down: down, repeatable: repeatable)
    }
}

extension MigrationDown {
    /// Whether a file's name says it undoes another (`X.down.sql`, diesel's `down.sql`, Flyway's `U1__x.sql`), so a
    /// directory listing it is not taking it as a migration.
    static func isNamedAsDown(_ path: String) -> Bool {
        let name = PathComponents.last(path)
        return name.hasSuffix(".down.sql") || name == "down.sql"
            || (name.first == "U" && name.dropFirst().first?.isNumber == true)
    }
}
