import Foundation
import XCTest

/// A fresh directory under the system temporary directory, removed when the test ends.
func makeTemporaryDirectory(_ test: XCTestCase) throws -> URL {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("strata-tests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    test.addTeardownBlock { try? FileManager.default.removeItem(at: url) }
    return url
}

func write(_ text: String, to url: URL) throws {
    try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
    try Data(text.utf8).write(to: url)
}

/// Asserts that `body` throws an error of type `E` and returns it for further checks.
@discardableResult
func assertThrows<E: Error, T>(_ expected: E.Type, file: StaticString = #filePath, line: UInt = #line,
                               _ body: () throws -> T) -> E? {
    do {
        _ = try body()
        XCTFail("expected \(E.self) to be thrown", file: file, line: line)
    } catch let error as E {
        return error
    } catch {
        XCTFail("expected \(E.self), got \(type(of: error)): \(error)", file: file, line: line)
    }
    return nil
}
