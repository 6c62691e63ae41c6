// libFuzzer target: the manifest loader (libxml2 parsing, schema validation, checks) on arbitrary XML text, and the
// up/down section reader of every migration format on the same bytes taken as a migration file.
@testable import StrataFuzz
import Foundation

private let fixtures: String = {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("strata-fuzz-manifest-\(getpid())")
    for directory in ["sql", "csv"] {
        try? FileManager.default.createDirectory(at: root.appendingPathComponent(directory), withIntermediateDirectories: true)
    }
    _ = FileManager.default.createFile(atPath: root.appendingPathComponent("sql/001_a.sql").path, contents: Data("CREATE TABLE a (x);".utf8))
    _ = FileManager.default.createFile(atPath: root.appendingPathComponent("sql/2_b.sql").path, contents: Data("VACUUM;".utf8))
    _ = FileManager.default.createFile(atPath: root.appendingPathComponent("sql/3_c.sql").path,
                                       contents: Data("-- +goose Up\nCREATE TABLE c (x);\n-- +goose Down\nDROP TABLE c;\n".utf8))
    _ = FileManager.default.createFile(atPath: root.appendingPathComponent("csv/a.csv").path, contents: Data("x\n1\n".utf8))
    _ = FileManager.default.createFile(atPath: root.appendingPathComponent("other.xml").path,
                                   contents: Data(#"<manifest version="1"><include manifest="other.xml"/></manifest>"#.utf8))
    return root.path
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzManifest(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    for format in MigrationFormat.allCases {
        if let section = try? format.upSection(of: bytes) {
            precondition(section.range.lowerBound >= 0 && section.range.upperBound <= size && section.startLine >= 1)
        }
    }
    let text = String(decoding: bytes, as: UTF8.self)
    do {
        let manifest = try Manifest.load(xml: text, path: "fuzz.xml", directory: fixtures)
        for backend in DatabaseBackend.allCases { _ = manifest.plan(for: backend).map(\.id) }
        _ = try? manifest.resolvedDatabaseURL(environment: [:])
    } catch {
        // A ManifestError is the expected outcome for most inputs.
    }
    return 0
}
