/// Reading a `<migrations directory>`: its entries listed, turned into steps by its format's layout
/// (`MigrationLayout`: Strata's own, golang-migrate's, sqlx's, diesel's or Flyway's), each up file with its down.
extension ManifestLoader {
    /// Lists the directory `relative` names into `found`, by resolved path; returns the resolved directory, or nil
    /// when it does not exist (reported). An entry that cannot be read, or listed, is a problem of `element`.
    mutating func readMigrationDirectory(_ relative: String, _ element: XMLElement, _ context: Context,
                                         format: MigrationFormat, backend: DatabaseBackend?,
                                         into found: inout [String: MigrationStep]) -> String? {
        let resolved = context.resolve(relative)
        guard FileCheck.isDirectory(resolved) else {
            problem(element, "migrations directory '\(relative)' does not exist (looked for \(resolved))")
            return nil
        }
        var listing: MigrationLayout.Listing
        do {
            listing = try list(resolved, relative: relative, element)
        } catch {
            problem(element, "cannot list migrations directory '\(relative)': \(error)")
            return resolved
        }
        let prefix = resolved.hasSuffix("/") ? resolved : resolved + "/"
        listing.listed = Set(element.children.filter { $0.name == "migration" }.compactMap { child in
            child.attribute("file").map { context.resolve($0, against: resolved) }.flatMap { path in
                path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : nil
            }
        })
        let (entries, layoutProblems) = MigrationLayout(format: format, relative: relative).entries(of: listing)
        for layoutProblem in layoutProblems { problem(element, layoutProblem.message) }
        for entry in entries {
            let file = PathComponents.appending(entry.up, to: resolved)
            if let reason = FileCheck.problem(at: file) {
                problem(element, "migration file '\(entry.up)' in '\(relative)' cannot be read (\(reason))")
                continue
            }
            var runsInTransaction = true
            if format == .sqlx, Self.startsWithNoTransaction(file) { runsInTransaction = false }
            if format == .diesel, let setting = dieselTransaction(entry, in: resolved, relative: relative, element) {
                runsInTransaction = setting
            }
            var down: MigrationDown?
            if let downName = entry.down {
                let downFile = PathComponents.appending(downName, to: resolved)
                if let reason = FileCheck.problem(at: downFile) {
                    problem(element, "down file '\(downName)' in '\(relative)' cannot be read (\(reason))")
                    continue
                }
                down = MigrationDown(source: .file(downFile), runsInTransaction: runsInTransaction)
            }
            found[file] = MigrationStep(id: entry.id, path: file, runsInTransaction: runsInTransaction,
                                        enforcesForeignKeys: element.attribute("foreignKeys") == "on",
                                        location: element.location, format: format,
                                        backends: backend.map { [$0] }, down: down, repeatable: entry.repeatable)
        }
        return resolved
    }

    /// The directory's names that can be migrations, and each subdirectory's (diesel's layout, and the downs of
    /// it another layout refuses). Names that look like a migration but cannot be taken are reported rather than
    /// skipped: an other-case `.SQL` is a warning (it is not a migration by the documented rule, but was likely
    /// meant as one); a name that is not UTF-8 is a problem, because a migration's name is its identity in history
    /// and must be text.
    private mutating func list(_ resolved: String, relative: String, _ element: XMLElement) throws -> MigrationLayout.Listing {
        var listing = MigrationLayout.Listing()
        for name in try FileCheck.rawEntries(of: resolved) where name.first != UInt8(ascii: ".") {
            let shown = FileCheck.displayName(name)
            guard let text = String(validating: name, as: UTF8.self) else {
                if Self.endsInSQL(name) || FileCheck.isDirectory(PathComponents.appending(shown, to: resolved)) {
                    problem(element, "migrations directory '\(relative)' holds a file name that is not valid UTF-8 ('\(shown)'); a migration's name is its identity in history and must be text: rename the file")
                }
                continue
            }
            let path = PathComponents.appending(text, to: resolved)
            if FileCheck.isDirectory(path) {
                let names = (try? FileCheck.rawEntries(of: path)) ?? []
                listing.subdirectories[text] = names.compactMap { String(validating: $0, as: UTF8.self) }
                continue
            }
            guard Self.endsInSQL(name) else { continue }
            guard text.hasSuffix(".sql") else {
                warnings.append(ManifestProblem(element.location,
                    "'\(shown)' in migrations directory '\(relative)' is not a migration: only names ending in '.sql' (lower case) are; rename it to '\(shown.dropLast(4)).sql' to apply it"))
                continue
            }
            listing.files.append(text)
        }
        return listing
    }

    /// A name longer than `.sql` ending in it, in any case.
    private static func endsInSQL(_ name: [UInt8]) -> Bool {
        let suffix = Array(".sql".utf8)
        return name.count > suffix.count && name.suffix(suffix.count).map({ $0 | 0x20 }) == suffix
    }

    /// sqlx runs a file outside a transaction when its text starts with `-- no-transaction`.
    static func startsWithNoTransaction(_ path: String) -> Bool {
        guard let file = try? RegularFile(path: path), let bytes = try? file.read(upTo: 17) else { return false }
        return bytes.starts(with: Array("-- no-transaction".utf8))
    }

    /// diesel's `metadata.toml` beside a migration's `up.sql`: `run_in_transaction = false` runs it outside a
    /// transaction. Nil without the file; any other setting is a problem rather than ignored.
    private mutating func dieselTransaction(_ entry: MigrationLayout.Entry, in resolved: String, relative: String,
                                            _ element: XMLElement) -> Bool? {
        let name = PathComponents.deletingLast(entry.up) + "/metadata.toml"
        let path = PathComponents.appending(name, to: resolved)
        guard FileCheck.identity(of: path) != nil else { return nil }
        guard case .success(let bytes) = FileCheck.read(path, limit: 1 << 16) else {
            problem(element, "'\(name)' in migrations directory '\(relative)' cannot be read")
            return nil
        }
        var setting: Bool?
        for (index, line) in String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let text = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map { $0.trimmingWhitespace() } ?? ""
            if text.isEmpty { continue }
            let pair = text.split(separator: "=", maxSplits: 1).map { $0.trimmingWhitespace() }
            if pair.count == 2, pair[0] == "run_in_transaction", pair[1] == "true" || pair[1] == "false" {
                setting = pair[1] == "true"
            } else {
                problem(element, "'\(name)' in migrations directory '\(relative)', line \(index + 1): '\(text)' is not a setting Strata knows (only run_in_transaction = true or false)")
            }
        }
        return setting
    }
}
