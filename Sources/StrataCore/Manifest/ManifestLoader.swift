#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Reads a manifest and its includes into a `Manifest`, collecting every problem rather than stopping at the first.
///
/// This file is the driver: it reads each document, hands each element to its reader, and checks the whole at the
/// end. Each reader is an extension in a file named for the element it reads (`ManifestLoader+Database.swift`,
/// `+Migrations.swift`, `+MigrationDirectory.swift`, `+CodeSteps.swift`, `+Seeds.swift`, `+Models.swift`,
/// `+Includes.swift`); what holds across all documents is checked in `+Checks.swift`.
struct ManifestLoader {
    var problems: [ManifestProblem] = []
    var warnings: [ManifestProblem] = []
    var database = DatabaseElement()
    var migrations: [MigrationStep] = []
    var seeds: [SeedStep] = []
    var codeSteps: [CodeStep] = []
    var models: [ModelMapping] = []
    var migrationDirectories: [MigrationDirectory] = []
    /// Every backend a `backend="…"` names, whether or not files are found for it.
    var namedBackends: Set<DatabaseBackend> = []
    /// The manifests being read, outermost first, to refuse include cycles. A manifest is known by its device and
    /// inode where it has them, so a path through a symbolic link to a directory is not a new manifest.
    var includeStack: [(path: String, identity: FileCheck.Identity?)] = []

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

    /// Parses and validates one document, then reads its elements in order. An included manifest (`isTop` false)
    /// names no database and no directory `strata new` writes to.
    mutating func read(_ bytes: [UInt8], path: String, directory: String, isTop: Bool) {
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
    struct Context {
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

    // MARK: Helpers

    mutating func problem(_ element: XMLElement, _ message: String) {
        problems.append(ManifestProblem(element.location, message))
    }

    /// Records a problem once: a clash between unmarked migrations is found in every backend's plan.
    mutating func report(_ problem: ManifestProblem) {
        if !problems.contains(problem) { problems.append(problem) }
    }

    /// The items of a comma-separated attribute (`key`, `primaryKey`, `context`), trimmed, empty ones dropped.
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
