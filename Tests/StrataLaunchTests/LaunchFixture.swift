import Foundation
import Strata
import XCTest

/// The app this target plays: its manifest, SQL and CSV files are the target's resources (`Bundle.module`), and
/// an "installed" app is a copy of them at a path of its own, as each install or update of an app gets.
enum LaunchFixture {
    /// The folders the target's resources hold, as an app bundles them.
    static let folders = ["manifests", "sql", "csv"]

    /// The bundled manifest, found the way an app finds it.
    static func bundledManifest() throws -> URL {
        try XCTUnwrap(Bundle.module.url(forResource: "notes", withExtension: "xml", subdirectory: "manifests"),
                      "the test target's resources hold no manifests/notes.xml: check Package.swift's resources")
    }

    /// The folder `manifests/`, `sql/` and `csv/` are in: the resource bundle's.
    static func bundleDirectory(of manifest: URL) -> URL {
        manifest.deletingLastPathComponent().deletingLastPathComponent()
    }

    /// Copies the bundled resources into `directory` (created with its parents), as installing the app would, and
    /// returns the copy's manifest.
    static func install(into directory: URL) throws -> URL {
        let bundle = bundleDirectory(of: try bundledManifest())
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for folder in folders {
            try FileManager.default.copyItem(at: bundle.appendingPathComponent(folder),
                                             to: directory.appendingPathComponent(folder))
        }
        return directory.appendingPathComponent("manifests/notes.xml")
    }

    /// A fresh directory under the system temporary directory, removed when the test ends (made writable first,
    /// for a test that made part of it read-only).
    static func temporaryDirectory(_ test: XCTestCase) throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("strata-launch-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        test.addTeardownBlock {
            try? setPermissions(of: url, directories: 0o755, files: 0o644)
            try? FileManager.default.removeItem(at: url)
        }
        return url
    }

    /// Makes `directory` and everything in it read-only, as a signed or system-installed app bundle is.
    static func makeReadOnly(_ directory: URL) throws {
        try setPermissions(of: directory, directories: 0o555, files: 0o444)
    }

    private static func setPermissions(of directory: URL, directories: Int, files: Int) throws {
        // Children first: a read-only directory's entries can still be chmodded, but be thorough about order anyway.
        let entries = FileManager.default.enumerator(atPath: directory.path)?.allObjects as? [String] ?? []
        for entry in entries.reversed() {
            let path = directory.appendingPathComponent(entry).path
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { continue }
            try FileManager.default.setAttributes([.posixPermissions: isDirectory.boolValue ? directories : files], ofItemAtPath: path)
        }
        try FileManager.default.setAttributes([.posixPermissions: directories], ofItemAtPath: directory.path)
    }

    /// Each history row as `kind identity state applied_at`, in identity order.
    static func history(_ path: String) throws -> [String] {
        let db = try Database(path: path)
        return try db.rows("SELECT kind, identity, state, applied_at FROM strata_history ORDER BY kind, identity").map { row in
            try ["kind", "identity", "state", "applied_at"].map { try row.get($0, as: String.self) }.joined(separator: " ")
        }
    }

    /// Writes a file of an installed copy (before it is made read-only): the files an update adds or changes.
    static func write(_ text: String, to url: URL) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
    }
}

/// Every entry below a directory with what a write would change: type, permissions, size, inode, and modification
/// and status-change times to the nanosecond. A directory's times change when an entry is created or removed in
/// it, so a temporary file made and deleted again still shows. This is what proves a run wrote nothing in a
/// bundle when the tests run as root, whom read-only permissions do not stop.
struct FileSnapshot: Equatable, CustomStringConvertible {
    let entries: [String: String]

    init(_ directory: URL) throws {
        var entries: [String: String] = [:]
        let names = [""] + (FileManager.default.enumerator(atPath: directory.path)?.allObjects as? [String] ?? [])
        for name in names {
            let path = name.isEmpty ? directory.path : directory.appendingPathComponent(name).path
            var info = stat()
            guard lstat(path, &info) == 0 else { throw CocoaError(.fileReadUnknown, userInfo: [NSFilePathErrorKey: path]) }
            #if canImport(Darwin)
            let (modified, changed) = (info.st_mtimespec, info.st_ctimespec)
            #else
            let (modified, changed) = (info.st_mtim, info.st_ctim)
            #endif
            entries[name] = "mode \(String(info.st_mode, radix: 8)) size \(info.st_size) inode \(info.st_ino) "
                + "mtime \(modified.tv_sec).\(modified.tv_nsec) ctime \(changed.tv_sec).\(changed.tv_nsec)"
        }
        self.entries = entries
    }

    var description: String {
        entries.keys.sorted().map { "\($0.isEmpty ? "." : $0): \(entries[$0] ?? "")" }.joined(separator: "\n")
    }
}
