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
        migrations += found.values.compactMap { sectioned($0, transaction: transactionAttribute[$0.path]) }
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
            found[resolved] = MigrationStep(id: child.attribute("id") ?? PathComponents.last(resolved), path: resolved,
                                            runsInTransaction: child.attribute("transaction") != "none",
                                            enforcesForeignKeys: (child.attribute("foreignKeys") ?? element.attribute("foreignKeys")) == "on",
                                            location: child.location,
                                            format: child.attribute("format").flatMap(MigrationFormat.init(rawValue:)) ?? directoryFormat,
                                            backends: (backend ?? directoryBackend).map { [$0] },
                                            repeatable: (child.attribute("repeatable") ?? element.attribute("repeatable")) == "true")
            transactionAttribute[resolved] = child.attribute("transaction")
        }
        return transactionAttribute
    }

    /// Reads the file's sections as its format defines them (a constant-memory pass): a `plain` file holding
    /// another tool's up/down markers is refused, naming the marker's line, and a declared format's own
    /// "no transaction" option is folded into the step.
    private mutating func sectioned(_ step: MigrationStep, transaction: String?) -> MigrationStep? {
        let section: MigrationSection
        var down = step.down
        do {
            let sections = try step.format.sections(ofFileAt: step.path)
            section = sections.up
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
        return MigrationStep(id: step.id, path: step.path, runsInTransaction: step.runsInTransaction && section.runsInTransaction,
                             enforcesForeignKeys: step.enforcesForeignKeys, location: step.location, format: step.format,
                             backends: step.backends, down: down, repeatable: step.repeatable)
    }
}

extension MigrationStep {
    /// The same step, repeatable or not.
    func with(repeatable: Bool) -> MigrationStep {
        MigrationStep(id: id, path: path, runsInTransaction: runsInTransaction, enforcesForeignKeys: enforcesForeignKeys,
                      location: location, format: format, backends: backends, down: down, repeatable: repeatable)
    }
}
