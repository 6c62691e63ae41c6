import Foundation

/// Creates new migration files with a prefix that sorts after every existing one.
public enum MigrationFile {
    /// Creates `NNN_name.sql` in the manifest's migrations directory and returns its path.
    ///
    /// The number is one more than the highest leading number among existing migrations, zero-padded to the
    /// widest existing prefix (at least three digits), so natural and plain byte order agree.
    public static func create(named name: String, in manifest: Manifest) throws -> String {
        guard let directory = manifest.migrationDirectory else {
            throw MigrationError.invalidStep("the manifest has no <migrations directory=\"…\"> to create the file in")
        }
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
            .map { CharacterSet.alphanumerics.contains($0) && $0.isASCII ? String($0) : "_" }
            .joined()
            .split(separator: "_").joined(separator: "_")
        guard !slug.isEmpty else {
            throw MigrationError.invalidStep("'\(name)' has no letters or digits to name a file with")
        }
        var highest = 0
        var width = 3
        for migration in manifest.migrations {
            let digits = migration.id.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, let number = Int(digits) else { continue }
            highest = max(highest, number)
            width = max(width, digits.count)
        }
        let number = String(highest + 1)
        let prefix = String(repeating: "0", count: max(0, width - number.count)) + number
        let path = (directory as NSString).appendingPathComponent("\(prefix)_\(slug).sql")
        guard !FileManager.default.fileExists(atPath: path) else {
            throw MigrationError.invalidStep("\(path) already exists")
        }
        let header = "-- \(name)\n-- Runs once, inside a transaction with its history row; see README \"Migrations\".\n\n"
        guard FileManager.default.createFile(atPath: path, contents: Data(header.utf8)) else {
            throw MigrationError.invalidStep("cannot create \(path)")
        }
        return path
    }
}
