// libFuzzer target: the manifest loader (libxml2 parsing, schema validation, checks) on arbitrary XML text.
import Foundation

private let fixtures: String = {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("strata-fuzz-manifest-\(getpid())")
    for directory in ["sql", "csv"] {
        try? FileManager.default.createDirectory(at: root.appendingPathComponent(directory), withIntermediateDirectories: true)
    }
    _ = FileManager.default.createFile(atPath: root.appendingPathComponent("sql/001_a.sql").path, contents: Data("CREATE TABLE a (x);".utf8))
    _ = FileManager.default.createFile(atPath: root.appendingPathComponent("sql/2_b.sql").path, contents: Data("VACUUM;".utf8))
    _ = FileManager.default.createFile(atPath: root.appendingPathComponent("csv/a.csv").path, contents: Data("x\n1\n".utf8))
    _ = FileManager.default.createFile(atPath: root.appendingPathComponent("other.xml").path,
                                   contents: Data(#"<manifest version="1"><include manifest="other.xml"/></manifest>"#.utf8))
    return root.path
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzManifest(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    do {
        let manifest = try Manifest.load(xml: text, path: "fuzz.xml", directory: fixtures)
        _ = manifest.plan.map(\.id)
    } catch {
        // A ManifestError is the expected outcome for most inputs.
    }
    return 0
}
