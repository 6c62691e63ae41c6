#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a manifest and its includes into a `Manifest`, collecting every problem rather than stopping at the first.
struct ManifestLoader {
    private var problems: [ManifestProblem] = []
    private var warnings: [ManifestProblem] = []
    private var database = DatabaseElement()
    private var migrations: [MigrationStep] = []
    private var seeds: [SeedStep] = []
    private var codeSteps: [CodeStep] = []
    private var models: [ModelMapping] = []
    private var migrationDirectories: [MigrationDirectory] = []
    /// Every backend a `backend="…"` names, whether or not files are found for it.
    private var namedBackends: Set<DatabaseBackend> = []
    /// The manifests being read, outermost first, to refuse include cycles. A manifest is known by its device and
    /// inode where it has them, so a path through a symbolic link to a directory is not a new manifest.
    private var includeStack: [(path: String, identity: FileCheck.Identity?)] = []

    mutating func load(path: String) throws -> Manifest {
        let resolved = URL(fileURLWithPath: path).standardizedFileURL.path
        let bytes: [UInt8]
        switch FileCheck.read(resolved, limit: XMLDocument.maximumSize) {
        case .success(let read):
            bytes = read
        case .failure(let failure):
            throw ManifestError(problems: [ManifestProblem(SourceLocation(path: path, line: 1), Self.message(failure, "cannot read the manifest"))])
        }
        includeStack = [(resolved, FileCheck.identity(of: resolved))]
        read(bytes, path: path, directory: PathComponents.deletingLast(resolved), isTop: true)
        return try finish(path: path)
    }

    mutating func load(text: String, path: String, directory: String) throws -> Manifest {
        let resolved = URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: directory, isDirectory: true)).standardizedFileURL.path
        includeStack = [(resolved, FileCheck.identity(of: resolved))]
        read(Array(text.utf8), path: path, directory: URL(fileURLWithPath: directory).standardizedFileURL.path, isTop: true)
        return try finish(path: path)
    }

    // MARK: Reading one document

    private mutating func read(_ bytes: [UInt8], path: String, directory: String, isTop: Bool) {
        let document: XMLDocument
        switch XMLDocument.parse(bytes, path: path) {
        case .failure(let error):
            problems += error.problems
            return
        case .success(let parsed):
            document = parsed
        }
        problems += document.validate(schema: ManifestSchema.xsd)
        guard let root = document.root, root.name == "manifest" else { return }
        let context = Context(path: path, directory: directory)
        for element in root.children {
            switch element.name {
            case "database" where isTop:
                readDatabase(element, context)
            case "migrations":
                if isTop, let directory = element.attribute("directory") {
                    migrationDirectories.append(MigrationDirectory(
                        path: context.resolve(directory),
                        format: element.attribute("format").flatMap(MigrationFormat.init(rawValue:)) ?? .plain,
                        backend: element.attribute("backend").flatMap(DatabaseBackend.init(rawValue:)),
                        location: element.location))
                }
                readMigrations(element, context)
            case "seeds":
                element.children.filter { $0.name == "seed" }.forEach { readSeed($0, context) }
            case "models":
                element.children.filter { $0.name == "model" }.forEach { readModel($0, context) }
            case "include":
                readInclude(element, context)
            default:
                break // Only an included manifest's <database> lands here: the top manifest names the database.
            }
        }
    }

    /// Where relative paths of one manifest resolve, and how its problems name it.
    private struct Context {
        let path: String
        let directory: String

        func resolve(_ relative: String, against base: String? = nil) -> String {
            URL(fileURLWithPath: relative, relativeTo: URL(fileURLWithPath: base ?? directory, isDirectory: true))
                .standardizedFileURL.path
        }

        /// The path of a file this manifest names, as the user would write it next to the manifest's path.
        func written(_ relative: String) -> String {
            relative.hasPrefix("/") ? relative : PathComponents.appending(relative, to: PathComponents.deletingLast(path))
        }
    }

    private mutating func problem(_ element: XMLElement, _ message: String) {
        problems.append(ManifestProblem(element.location, message))
    }

    /// Exactly one of `path` (a SQLite file) and `url` (a PostgreSQL URI, checked here but filled from the
    /// environment only when used), and `schema` only with `url`.
    private mutating func readDatabase(_ element: XMLElement, _ context: Context) {
        if let first = database.location {
            problem(element, "a second <database>; the first is at \(first)")
            return
        }
        database.location = element.location
        let url = element.attribute("url")
        switch (element.attribute("path"), url) {
        case (nil, nil):
            problem(element, "<database> names no database: give path=\"…\" for a SQLite file or url=\"postgresql://…\" for a PostgreSQL database")
        case (let path?, let url?):
            problem(element, "<database> has both path=\"\(DatabaseURL.redacted(path))\" and url=\"\(DatabaseURL.redacted(url))\"; give one: path= for a SQLite file, url= for a PostgreSQL database")
        case (let path?, nil):
            DatabaseURL.problems(inPath: path).forEach { problem(element, $0) }
            database.path = context.resolve(path)
        case (nil, let url?):
            DatabaseURL.problems(inTemplate: url).forEach { problem(element, $0) }
            database.url = url
        }
        readBackup(element, context, isSQLite: url == nil)
        guard let schema = element.attribute("schema") else { return }
        if url == nil {
            problem(element, "schema=\"\(schema)\": schema applies to PostgreSQL databases (url=); a SQLite file (path=) has none")
        } else if schema.utf8.count > 63 {
            problem(element, "schema=\"\(schema)\" is \(schema.utf8.count) bytes long; PostgreSQL keeps only the first 63 bytes of a name")
        }
        database.schema = schema
    }

    /// `backup` (a directory, resolved against the manifest's) and `keep`: SQLite only, and `keep` only with `backup`.
    private mutating func readBackup(_ element: XMLElement, _ context: Context, isSQLite: Bool) {
        let keep = element.attribute("keep")
        guard let backup = element.attribute("backup") else {
            if let keep {
                problem(element, "keep=\"\(keep)\" without backup=\"…\": keep says how many backups the backup directory holds; add backup=\"DIR\"")
            }
            return
        }
        guard isSQLite else {
            problem(element, "backup=\"\(backup)\": a backup copies a SQLite database file (path=); back up a PostgreSQL database (url=) with pg_dump or point-in-time recovery")
            return
        }
        database.backup = context.resolve(backup)
        // The schema allows 1 to 999999 digits-only; anything else was reported by it.
        database.keep = keep.flatMap { Int($0.trimmingWhitespace(newlines: true)) }
    }

    private mutating func readMigrations(_ element: XMLElement, _ context: Context) {
        var directory: String?
        var found: [String: MigrationStep] = [:]
        var transactionAttribute: [String: String] = [:]
        var listed: [String: Int] = [:]
        let directoryFormat = element.attribute("format").flatMap(MigrationFormat.init(rawValue:)) ?? .plain
        let directoryBackend = element.attribute("backend").flatMap(DatabaseBackend.init(rawValue:))
        if let directoryBackend { namedBackends.insert(directoryBackend) }
        if let relative = element.attribute("directory") {
            let resolved = context.resolve(relative)
            if !FileCheck.isDirectory(resolved) {
                problem(element, "migrations directory '\(relative)' does not exist (looked for \(resolved))")
            } else {
                directory = resolved
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
                                                    location: element.location, format: directoryFormat,
                                                    backends: directoryBackend.map { [$0] })
                    }
                } catch {
                    problem(element, "cannot list migrations directory '\(relative)': \(error)")
                }
            }
        }
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
                                            backends: (backend ?? directoryBackend).map { [$0] })
            transactionAttribute[resolved] = child.attribute("transaction")
        }
        migrations += found.values.compactMap { sectioned($0, transaction: transactionAttribute[$0.path]) }
        for child in element.children where child.name == "code" {
            readCode(child, following: Array(found.values))
        }
    }

    /// A `<code>` step: its name well formed (`CodeStep.nameProblem`), its `after` a migration of the same
    /// `<migrations>`, whose backends it takes, and a version (the schema refuses an empty one).
    private mutating func readCode(_ element: XMLElement, following migrations: [MigrationStep]) {
        guard let name = element.attribute("name"), let after = element.attribute("after"),
              let version = element.attribute("version") else { return }
        if let reason = Self.codeNameProblem(name) { problem(element, "code step name '\(name)' \(reason)") }
        // By identity (file name, or id where given). Files of several backends may share one (one per backend): the
        // step follows each, so it is in every plan one of them is in.
        let targets = migrations.filter { $0.id == after }
        guard !targets.isEmpty else {
            let ids = migrations.map(\.id).sorted(by: NaturalOrder.areInIncreasingOrder)
            let known = ids.isEmpty ? "it has none" : "its migrations are " + ids.prefix(8).joined(separator: ", ") + (ids.count > 8 ? ", …" : "")
            problem(element, "code step '\(name)': after=\"\(after)\" names no migration of this <migrations> (\(known)); a code step follows a file of the <migrations> it is in")
            return
        }
        let backends: Set<DatabaseBackend>? = targets.contains { $0.backends == nil } ? nil
            : targets.reduce(into: Set<DatabaseBackend>()) { $0.formUnion($1.backends ?? []) }
        codeSteps.append(CodeStep(name: name, after: after, version: version, location: element.location,
                                  backends: backends))
    }

    /// Why a code step's name is not one (nil when it is): 1 to 128 ASCII letters, digits, `_`, `-` and `.`,
    /// starting with a letter, digit or `_`, so it reads the same in the manifest, in Swift and in history.
    static func codeNameProblem(_ name: String) -> String? {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty else { return "is empty" }
        func allowed(_ byte: UInt8, first: Bool) -> Bool {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"): true
            case UInt8(ascii: "-"), UInt8(ascii: "."): !first
            default: false
            }
        }
        guard bytes.count <= 128 else { return "is \(bytes.count) bytes long; at most 128" }
        for (offset, byte) in bytes.enumerated() where !allowed(byte, first: offset == 0) {
            return "is not a code step name: use ASCII letters, digits, '_', '-' and '.', starting with a letter, digit or '_'"
        }
        return nil
    }

    /// Reads the file's sections as its format defines them (a constant-memory pass): a `plain` file holding
    /// another tool's up/down markers is refused, naming the marker's line, and a declared format's own
    /// "no transaction" option is folded into the step.
    private mutating func sectioned(_ step: MigrationStep, transaction: String?) -> MigrationStep? {
        let section: MigrationSection
        do {
            section = try step.format.upSection(ofFileAt: step.path)
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
        return MigrationStep(id: step.id, path: step.path, runsInTransaction: step.runsInTransaction && section.runsInTransaction,
                             enforcesForeignKeys: step.enforcesForeignKeys, location: step.location, format: step.format,
                             backends: step.backends)
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

    private mutating func readSeed(_ element: XMLElement, _ context: Context) {
        guard let file = element.attribute("file"), let table = element.attribute("table") else { return }
        let resolved = context.resolve(file)
        if let reason = FileCheck.problem(at: resolved) {
            problem(element, "seed file '\(file)' cannot be read (\(reason))")
        }
        let mode = element.attribute("mode").flatMap(SeedMode.init(rawValue:)) ?? .insert
        var key: [String] = []
        if let keyText = element.attribute("key") {
            key = Self.list(keyText)
            if key.isEmpty { problem(element, "key is empty; name one or more columns, separated by commas") }
        } else if mode == .upsert || mode == .sync {
            problem(element, "mode=\"\(mode.rawValue)\" needs key=\"…\" naming the columns that identify a row")
        }
        if Set(key.map(\.sqliteFolded)).count != key.count { problem(element, "key names a column twice") }

        var delimiter = UInt8(ascii: ",")
        if let text = element.attribute("delimiter") {
            switch text {
            case ",": delimiter = UInt8(ascii: ",")
            case ";": delimiter = UInt8(ascii: ";")
            case "|": delimiter = UInt8(ascii: "|")
            case "\t", "tab", "\\t": delimiter = UInt8(ascii: "\t")
            default: problem(element, "delimiter '\(text)' is not one of ',' ';' '|' or 'tab'")
            }
        }

        var columns: [SeedColumn] = []
        var columnNames = Set<String>()
        for child in element.children where child.name == "column" {
            guard let name = child.attribute("name") else { continue }
            if !columnNames.insert(name.sqliteFolded).inserted { problem(child, "column '\(name)' is configured twice") }
            let type = child.attribute("type").flatMap(SeedColumn.ValueType.init(rawValue:))
            let storage = child.attribute("storage").flatMap(SeedColumn.DateStorage.init(rawValue:))
            if storage != nil && type != .date && type != .datetime {
                problem(child, "storage applies only to type=\"date\" or type=\"datetime\"")
            }
            let format = child.attribute("format")
            if let format {
                switch type {
                case .blob where format == "hex" || format == "base64": break
                case .date?, .datetime?:
                    if format != "iso8601" && format != "unix" { fallthrough }
                default:
                    problem(child, "format '\(format)' does not apply to type \(type?.rawValue ?? "(none)"); "
                            + "use hex or base64 for blob, iso8601 or unix for date and datetime")
                }
            }
            columns.append(SeedColumn(name: name, type: type, format: format, storage: storage ?? .text))
        }

        // Reloading an insert-mode file adds every row a second time; only modes that match rows may reapply.
        let onChange = element.attribute("onChange").flatMap(SeedChangePolicy.init(rawValue:)) ?? .fail
        if onChange == .reapply && mode == .insert {
            problem(element, "onChange=\"reapply\" with mode=\"insert\" would insert every row again each time the file "
                    + "changes; use mode=\"upsert\" or \"sync\" (with key), or \"replace\" or \"ignore\" on a table with a unique key")
        }

        let contexts = element.attribute("context").map(Self.list) ?? []
        seeds.append(SeedStep(
            id: element.attribute("id") ?? PathComponents.last(resolved), path: resolved, table: table,
            after: element.attribute("after"), mode: mode, key: key,
            onChange: onChange,
            contexts: contexts, delimiter: delimiter, nullToken: element.attribute("null"), columns: columns,
            location: element.location))
    }

    private mutating func readModel(_ element: XMLElement, _ context: Context) {
        guard let type = element.attribute("type") else { return }
        var primaryKey: [String] = []
        if let text = element.attribute("primaryKey") {
            primaryKey = Self.list(text)
            if primaryKey.isEmpty { problem(element, "primaryKey is empty; name one or more columns, separated by commas") }
        }
        var columns: [String: String] = [:]
        var dateStorage: [String: DateStorage] = [:]
        var properties: Set<String> = []
        for child in element.children where child.name == "property" {
            guard let name = child.attribute("name") else { continue }
            guard properties.insert(name).inserted else {
                problem(child, "property '\(name)' of \(type) is mapped twice")
                continue
            }
            let column = child.attribute("column")
            let storage = child.attribute("dateStorage")
            if column == nil && storage == nil {
                problem(child, "property '\(name)' of \(type) says nothing: give it a column, a dateStorage, or both")
            }
            if let column { columns[name] = column }
            if let storage {
                if let parsed = DateStorage(manifestName: storage) {
                    dateStorage[name] = parsed
                } else {
                    problem(child, "dateStorage=\"\(storage)\" is not one of iso8601Text, unixSeconds, julianDay")
                }
            }
        }
        let mappedColumns = columns.values.map(\.sqliteFolded)
        if Set(mappedColumns).count != mappedColumns.count {
            problem(element, "two properties of \(type) map to the same column")
        }
        var relationships: [Relationship] = []
        for child in element.children {
            guard let kind = Relationship.Kind(rawValue: child.name),
                  let relationship = readRelationship(child, kind, of: type) else { continue }
            if columns[relationship.property] != nil {
                problem(child, "property '\(relationship.property)' of \(type) is mapped to a column and is a relationship; it is one or the other")
            } else if relationships.contains(where: { $0.property == relationship.property }) {
                problem(child, "property '\(relationship.property)' of \(type) is declared twice")
            } else {
                relationships.append(relationship)
            }
        }
        for name in dateStorage.keys where relationships.contains(where: { $0.property == name }) {
            problem(element, "property '\(name)' of \(type) is a relationship; a dateStorage applies to a Date property")
        }
        models.append(ModelMapping(typeName: type, table: element.attribute("table"), primaryKey: primaryKey,
                                   columns: columns, dateStorage: dateStorage, relationships: relationships,
                                   location: element.location))
    }

    /// A `<hasMany>` or `<belongsTo>`: which model, through which column; `orderBy` and `onRemove` only on `hasMany`.
    private mutating func readRelationship(_ element: XMLElement, _ kind: Relationship.Kind, of type: String) -> Relationship? {
        guard let property = element.attribute("property"), let model = element.attribute("model"),
              let foreignKey = element.attribute("foreignKey") else { return nil }
        var order: [Relationship.Order] = []
        if let text = element.attribute("orderBy") {
            if kind == .belongsTo {
                problem(element, "orderBy applies to hasMany; a belongsTo holds one row")
            } else if let terms = Relationship.orderTerms(text) {
                order = terms
            } else {
                problem(element, "orderBy=\"\(text)\" is not a list of columns, each optionally followed by ASC or DESC (e.g. \"sent_at, id DESC\")")
            }
        }
        var onRemove = Relationship.OnRemove.keep
        if let text = element.attribute("onRemove") {
            if kind == .belongsTo {
                problem(element, "onRemove applies to hasMany; a belongsTo does not own the row it names")
            } else if let parsed = Relationship.OnRemove(rawValue: text) {
                onRemove = parsed
            } else {
                problem(element, "onRemove=\"\(text)\" is not one of keep, delete, detach")
            }
        }
        return Relationship(kind: kind, property: property, model: model, foreignKey: foreignKey, orderBy: order,
                            onRemove: onRemove, location: element.location)
    }

    private mutating func readInclude(_ element: XMLElement, _ context: Context) {
        guard let relative = element.attribute("manifest") else { return }
        let resolved = context.resolve(relative)
        let identity = FileCheck.identity(of: resolved)
        if let start = includeStack.firstIndex(where: { $0.path == resolved || (identity != nil && $0.identity == identity) }) {
            let names = includeStack[start...].map { PathComponents.last($0.path) }
            let same = includeStack[start].path == resolved ? "" : " (the same file as \(names[0]))"
            problem(element, "include cycle: \((names + [relative]).joined(separator: " → "))\(same)")
            return
        }
        let bytes: [UInt8]
        switch FileCheck.read(resolved, limit: XMLDocument.maximumSize) {
        case .success(let read):
            bytes = read
        case .failure(let failure):
            problem(element, Self.message(failure, "included manifest '\(relative)' cannot be read"))
            return
        }
        includeStack.append((resolved, identity))
        read(bytes, path: context.written(relative), directory: PathComponents.deletingLast(resolved),
             isTop: false)
        includeStack.removeLast()
    }

    // MARK: Checks across all documents

    /// Checks each backend's plan on its own: identities are unique within one backend's migrations (a file in
    /// `sql/` marked `sqlite` and one in `sql/postgresql/` marked `postgresql` may share a name), and a seed's
    /// `after` names a migration in the plan of every backend the manifest has migrations for.
    private mutating func finish(path: String) throws -> Manifest {
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
        // Code steps are registered by name, so a name is unique across the manifest and its includes; their
        // identities (`code:NAME`) are set apart from every migration's.
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
        let warnings = warnings.sorted { ($0.location.path, $0.location.line) < ($1.location.path, $1.location.line) }
        guard problems.isEmpty else {
            throw ManifestError(problems: problems.sorted { ($0.location.path, $0.location.line) < ($1.location.path, $1.location.line) },
                                warnings: warnings)
        }
        return Manifest(path: path, database: database, migrationsByBackend: byBackend, seeds: seeds, codeSteps: codeSteps,
                        models: models, migrationDirectories: migrationDirectories, namedBackends: namedBackends, warnings: warnings)
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

    // MARK: Helpers

    /// Records a problem once: a clash between unmarked migrations is found in every backend's plan.
    private mutating func report(_ problem: ManifestProblem) {
        if !problems.contains(problem) { problems.append(problem) }
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

    static func list(_ text: String) -> [String] {
        text.split(separator: ",").map { $0.trimmingWhitespace() }.filter { !$0.isEmpty }
    }

    /// A manifest that cannot be read: `what` and the reason, or the size limit it exceeds.
    static func message(_ failure: FileCheck.ReadFailure, _ what: String) -> String {
        switch failure {
        case .unreadable(let reason): "\(what) (\(reason))"
        case .tooLarge(let size?): "manifest is \(size) bytes; the limit is \(XMLDocument.maximumSize)"
        case .tooLarge(nil): "manifest is larger than the limit of \(XMLDocument.maximumSize) bytes"
        }
    }
}
