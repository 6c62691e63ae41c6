#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Creates new migration files with a prefix that sorts after every existing one.
public enum MigrationFile {
    /// The second line of a file `create` writes: where the reader learns how it runs (`HowMigrationsRun.md`).
    public static let headerNote = "-- Runs once, inside a transaction with its history row; see the manual's How Migrations Run article."

    /// Creates `NNN_name.sql` in the manifest's migrations directory for `backend` (see `directory(for:in:)`) and
    /// returns its path (for a layout with down files, the up's; the down is created beside it).
    ///
    /// The number is one more than the highest leading number among the migrations the new file joins (those of
    /// its directory's backend, or of every backend for an unmarked directory), zero-padded to the widest existing
    /// prefix (at least three digits), so natural and plain byte order agree.
    ///
    /// In a `format="dbmate"` directory the prefix is dbmate's: the time now, UTC, as `YYYYMMDDHHMMSS`
    /// (`20240101120000_add_users.sql`), or one more than the highest prefix when that is not later (a clock behind
    /// the last file's), so the new file still sorts last. golang-migrate and sqlx get `NNN_name.up.sql` and
    /// `NNN_name.down.sql`, Flyway `V{n}__name.sql` (the next major version), diesel a directory
    /// `YYYY-MM-DD-HHMMSS_name` holding `up.sql` and `down.sql`.
    public static func create(named name: String, in manifest: Manifest, backend: DatabaseBackend? = nil,
                              now: Date = Date()) throws -> String {
        try createFiles(named: name, in: manifest, backend: backend, now: now)[0]
    }

    /// `create(named:in:backend:now:)`, returning every file it made: the up first, then its down where the layout
    /// keeps downs in files of their own.
    public static func createFiles(named name: String, in manifest: Manifest, backend: DatabaseBackend? = nil,
                                   now: Date = Date()) throws -> [String] {
        let chosen = try directory(for: backend, in: manifest)
        let directory = chosen.path
        // The name is copied into the file's header comment: a line break there would turn the rest into SQL.
        for (offset, scalar) in name.unicodeScalars.enumerated() {
            let kind: String
            switch scalar.properties.generalCategory {
            case .control: kind = "control character"
            case .lineSeparator, .paragraphSeparator: kind = "line-breaking character"
            default: continue
            }
            let code = String(scalar.value, radix: 16, uppercase: true)
            throw MigrationError.invalidStep("the name \(name.debugDescription) contains the \(kind) U+\(String(repeating: "0", count: max(0, 4 - code.count)))\(code) at position \(offset + 1); a migration name is one line of printable text")
        }
        let slug = name.lowercased().unicodeScalars
            .map { ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) ? String($0) : "_" }
            .joined()
            .split(separator: "_").joined(separator: "_")
        guard !slug.isEmpty else {
            throw MigrationError.invalidStep("'\(name)' has no letters or digits to name a file with")
        }
        // Prefixes are compared and incremented as decimal digit strings: a prefix of any length (even beyond
        // 64 bits, such as `9223372036854775807_x.sql`) gets a successor instead of a trap or being skipped.
        var highest: [UInt8] = [UInt8(ascii: "0")]
        var width = 3
        let neighbours = chosen.backend.map(manifest.migrations(for:)) ?? manifest.migrations
        for migration in neighbours {
            let digits = Array(migration.id.utf8.prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
            guard !digits.isEmpty else { continue }
            let significant = Array(digits.drop { $0 == UInt8(ascii: "0") })
            if significant.count > highest.count
                || (significant.count == highest.count && highest.lexicographicallyPrecedes(significant)) {
                highest = significant
            }
            width = max(width, digits.count)
        }
        let next = decimalSuccessor(highest)
        let number = String(decoding: next, as: UTF8.self)
        var prefix = String(repeating: "0", count: max(0, width - number.count)) + number
        if chosen.format == .dbmate {
            // dbmate names a file by the time it was made; never one that sorts before an existing file.
            let stamp = Array(ISO8601.format(now).utf8.prefix(19).filter { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
            let later = stamp.count > next.count || (stamp.count == next.count && !stamp.lexicographicallyPrecedes(next))
            prefix = later ? String(decoding: stamp, as: UTF8.self) : number
        }
        let header = "-- \(name)\n" + Self.headerNote + "\n\n"
        let downHeader = "-- Undoes \(name): run by 'strata rollback' (a down that holds no statement is refused).\n\n"
        // Each tool's own naming, so the directory stays one that tool reads as it always did.
        let files: [(name: String, content: String)]
        switch chosen.format {
        case .golangMigrate, .sqlx:
            files = [("\(prefix)_\(slug).up.sql", header), ("\(prefix)_\(slug).down.sql", downHeader)]
        case .flyway:
            files = [("V\(String(decoding: decimalSuccessor(flywayHighest(neighbours)), as: UTF8.self))__\(slug).sql", header)]
        case .diesel:
            let stamp = String(ISO8601.format(now).prefix(19).compactMap { $0 == "T" ? "-" : $0 == ":" ? nil : $0 })
            let folder = "\(stamp)_\(slug)"
            if let last = neighbours.map(\.id).max(by: NaturalOrder.areInIncreasingOrder),
               !NaturalOrder.areInIncreasingOrder(last, folder + "/up.sql") {
                throw MigrationError.invalidStep("diesel names a migration by the time it is made, and \(folder) would not sort after \(last) (is the clock behind?)")
            }
            files = [("\(folder)/up.sql", header), ("\(folder)/down.sql", downHeader)]
        default:
            files = [("\(prefix)_\(slug).sql", header + chosen.format.skeleton)]
        }
        let paths = files.map { PathComponents.appending($0.name, to: directory) }
        for path in paths where FileManager.default.fileExists(atPath: path) {
            throw MigrationError.invalidStep("\(path) already exists")
        }
        for (file, path) in zip(files, paths) {
            let folder = PathComponents.deletingLast(path)
            if folder != directory { try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false) }
            guard FileManager.default.createFile(atPath: path, contents: Data(file.content.utf8)) else {
                throw MigrationError.invalidStep("cannot create \(path)")
            }
        }
        return paths
    }

    /// The highest major version of the Flyway `V…__` files among `migrations` (`V2.1__x.sql`: 2), as decimal digits.
    private static func flywayHighest(_ migrations: [MigrationStep]) -> [UInt8] {
        var highest: [UInt8] = [UInt8(ascii: "0")]
        for migration in migrations where migration.id.hasPrefix("V") {
            let digits = Array(migration.id.utf8.dropFirst().prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
                .drop { $0 == UInt8(ascii: "0") })
            if digits.count > highest.count || (digits.count == highest.count && highest.lexicographicallyPrecedes(digits)) {
                highest = digits
            }
        }
        return highest
    }

    /// Where `strata new` creates a file: with a backend, the top manifest's first `<migrations directory>` marked
    /// for it, else its first unmarked one; without, the first unmarked one, else the first marked one when every
    /// marked directory is for one backend. A choice between backends is refused rather than guessed.
    public static func directory(for backend: DatabaseBackend?, in manifest: Manifest) throws -> MigrationDirectory {
        let directories = manifest.migrationDirectories
        if let backend, let marked = directories.first(where: { $0.backend == backend }) { return marked }
        if let unmarked = directories.first(where: { $0.backend == nil }) { return unmarked }
        guard let first = directories.first else {
            throw MigrationError.invalidStep("the manifest has no <migrations directory=\"…\"> to create the file in")
        }
        let marked = DatabaseBackend.allCases.filter { backend in directories.contains { $0.backend == backend } }
        if let backend {
            throw MigrationError.invalidStep("the manifest has no <migrations directory=\"…\"> for \(backend.displayName) (nor an unmarked one); its directories are for \(marked.map(\.displayName).joined(separator: " and "))")
        }
        guard marked.count == 1 else {
            let listed = marked.compactMap { backend in directories.first { $0.backend == backend }.map { "\(backend.rawValue): \(displayPath($0.path))" } }
            throw MigrationError.invalidStep("the manifest has migrations directories for several backends (\(listed.joined(separator: ", "))); say which with --backend")
        }
        return first
    }

    /// The decimal digits of `digits + 1` (ASCII, most significant first).
    static func decimalSuccessor(_ digits: [UInt8]) -> [UInt8] {
        var result = digits
        var index = result.count - 1
        while index >= 0 {
            if result[index] == UInt8(ascii: "9") {
                result[index] = UInt8(ascii: "0")
                index -= 1
            } else {
                result[index] += 1
                return result
            }
        }
        return [UInt8(ascii: "1")] + result
    }
}
