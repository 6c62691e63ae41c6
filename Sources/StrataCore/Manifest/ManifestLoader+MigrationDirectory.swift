/// Reading a `<migrations directory>`: which of its entries are migrations, and the step each becomes.
///
/// The directory's layout is known here and nowhere else. Today it is Strata's own: every `*.sql` file directly
/// in the directory is one migration, its file name its identity (`migrationName`). Another tool's layout
/// (golang-migrate's `1_name.up.sql` beside `1_name.down.sql`, Flyway's `V1__name.sql`, Diesel's `name/up.sql`)
/// is another way of turning the entries into steps, chosen in `readMigrationDirectory`.
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
        do {
            for name in try FileCheck.rawEntries(of: resolved) {
                guard let id = migrationName(name, in: relative, element) else { continue }
                let file = PathComponents.appending(id, to: resolved)
                if let reason = FileCheck.problem(at: file) {
                    problem(element, "migration file '\(id)' in '\(relative)' cannot be read (\(reason))")
                    continue
                }
                found[file] = MigrationStep(id: id, path: file, runsInTransaction: true,
                                            enforcesForeignKeys: element.attribute("foreignKeys") == "on",
                                            location: element.location, format: format,
                                            backends: backend.map { [$0] })
            }
        } catch {
            problem(element, "cannot list migrations directory '\(relative)': \(error)")
        }
        return resolved
    }

    /// The migration name of a directory entry, or nil when the entry is not a migration. Names that look like
    /// one but cannot be taken are reported rather than skipped: an other-case `.SQL` is a warning (it is not a
    /// migration by the documented rule, but was likely meant as one); a name that is not UTF-8 is a problem,
    /// because a migration's name is its identity in history and must be text.
    private mutating func migrationName(_ name: [UInt8], in relative: String, _ element: XMLElement) -> String? {
        let suffix = Array(".sql".utf8)
        guard name.first != UInt8(ascii: "."), name.count > suffix.count else { return nil }
        let tail = name.suffix(suffix.count)
        guard tail.map({ $0 | 0x20 }) == suffix else { return nil }   // ASCII case-insensitive ".sql"
        let shown = FileCheck.displayName(name)
        guard Array(tail) == suffix else {
            warnings.append(ManifestProblem(element.location,
                "'\(shown)' in migrations directory '\(relative)' is not a migration: only names ending in '.sql' (lower case) are; rename it to '\(shown.dropLast(4)).sql' to apply it"))
            return nil
        }
        guard let text = String(validating: name, as: UTF8.self) else {
            problem(element, "migrations directory '\(relative)' holds a file name that is not valid UTF-8 ('\(shown)'); a migration's name is its identity in history and must be text: rename the file")
            return nil
        }
        return text
    }
}
