// libFuzzer target: the SQL script runner (and the lint scanner) on arbitrary text, in an in-memory database; and
// the statement scanner checked against SQLite's own sqlite3_complete on every statement it ends.
@testable import StrataFuzz
import CSQLite
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzScript(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let text = String(decoding: bytes, as: UTF8.self)
    _ = SQLLint.findings(in: text)
    _ = SQLLint.findings(in: bytes, insideTransaction: false)
    checkBoundariesAgreeWithSQLite(bytes)
    _ = try? Checksum.of(bytes)
    _ = try? Checksum.of(bytes, content: .csv)
    _ = try? Checksum.of(bytes, version: 3)
    guard let db = try? Database(.inMemory) else { return 0 }
    // Bound the work a single input can ask for (recursive CTEs, huge blobs) so hangs are real findings.
    sqlite3_progress_handler(db.handle, 100_000, { _ in 1 }, nil)
    sqlite3_limit(db.handle, SQLITE_LIMIT_LENGTH, 1 << 20)
    sqlite3_limit(db.handle, SQLITE_LIMIT_ATTACHED, 0)
    do {
        try db.withAuthorizer(ScriptRules(insideTransaction: true)) { try db.executeScript(text) }
    } catch {
        // DatabaseError with a line and column is the expected outcome for invalid SQL.
    }
    return 0
}

/// Every statement end the scanner reports is one where SQLite too says the text so far is complete.
private func checkBoundariesAgreeWithSQLite(_ bytes: [UInt8]) {
    guard !bytes.contains(0) else { return }
    var scanner = SQLScanner()
    bytes.withUnsafeBufferPointer { buffer in
        var index = 0
        while index < buffer.count {
            guard let range = scanner.nextStatement(in: buffer, base: 0, index: &index) else { continue }
            let prefix = Array(buffer[..<range.upperBound]) + [0]
            let complete = prefix.withUnsafeBufferPointer { sqlite3_complete(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self)) }
            if complete == 0 { fatalError("scanner ended a statement at \(range.upperBound) where sqlite3_complete disagrees") }
        }
    }
}
