#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What the planner and messages read of a migration's part without running it: whether it holds a statement, its
/// text with the environment substituted (for the plan id), and the environment values a message must not quote.
extension MigrationScript {
    /// Whether the part holds nothing that runs: only blanks, `--` and `/* */` comments and semicolons, as the
    /// empty down section `strata new` writes is until someone fills it, or only a file's own outer `BEGIN;` and
    /// `COMMIT;`. A rollback must not count such a down as having undone its step. False for a file that cannot be read or is larger than `recordedTextLimit` (the run
    /// reports the first, and the second is not empty).
    func holdsNoStatement() -> Bool {
        guard let whole = Self.fileBytes(path, atMost: Self.recordedTextLimit),
              let section = try? section(of: whole) else { return false }
        var bytes = whole
        var range = section.range
        // A file's own outer BEGIN/COMMIT pair, taken as the step's transaction, is not a statement of the down.
        if Self.unwrapsOuterTransaction(migration, runsInTransaction: runsInTransaction, path: path),
           let unwrapped = OuterTransaction.unwrapped(Array(whole[section.range]), backend: database.dialect.backend) {
            bytes = unwrapped
            range = 0..<unwrapped.count
        }
        var index = range.lowerBound
        while index < range.upperBound {
            let byte = bytes[index]
            let next = index + 1 < range.upperBound ? bytes[index + 1] : 0
            if byte == UInt8(ascii: "-") && next == UInt8(ascii: "-") {
                while index < range.upperBound && bytes[index] != UInt8(ascii: "\n") { index += 1 }
            } else if byte == UInt8(ascii: "/") && next == UInt8(ascii: "*") {
                index += 2
                while index + 1 < range.upperBound && !(bytes[index] == UInt8(ascii: "*") && bytes[index + 1] == UInt8(ascii: "/")) {
                    index += 1
                }
                index += 2
            } else if byte == UInt8(ascii: ";") || byte == 0xEF || byte == 0xBB || byte == 0xBF
                        || byte == UInt8(ascii: " ") || (byte >= 0x09 && byte <= 0x0D) {
                index += 1
            } else {
                return false
            }
        }
        return true
    }
}

extension MigrationScript {
    /// The up section of a migration as it would run with the environment substituted (`ENVSUB ON` parts), for
    /// the plan id; nil when the file cannot be read ahead or a variable cannot be substituted (the run says why).
    static func substitutedText(of migration: MigrationStep) -> [UInt8]? {
        guard let bytes = fileBytes(migration.path, atMost: recordedTextLimit),
              let section = try? migration.format.upSection(of: bytes) else { return nil }
        return try? substituted(Array(bytes[section.range]), section, migration)
    }
}

extension MigrationScript {
    /// The variables `${NAME…}` in `bytes` names, with their values in `environment`, longest value first (so a value
    /// holding another is replaced whole): what a message must not quote.
    static func namedValues(in bytes: [UInt8], environment: [String: String] = ProcessInfo.processInfo.environment)
        -> [(name: String, value: String)] {
        var names: Set<String> = []
        var index = 0
        while index + 2 < bytes.count {
            guard bytes[index] == UInt8(ascii: "$"), bytes[index + 1] == UInt8(ascii: "{") else { index += 1; continue }
            var end = index + 2
            while end < bytes.count, bytes[end] == UInt8(ascii: "_") || (bytes[end] | 0x20 >= UInt8(ascii: "a") && bytes[end] | 0x20 <= UInt8(ascii: "z"))
                    || (bytes[end] >= UInt8(ascii: "0") && bytes[end] <= UInt8(ascii: "9")) {
                end += 1
            }
            if end > index + 2 { names.insert(String(decoding: bytes[(index + 2)..<end], as: UTF8.self)) }
            index = end
        }
        return names.compactMap { name in environment[name].map { (name, $0) } }
            .sorted { $0.value.utf8.count > $1.value.utf8.count }
    }
}
