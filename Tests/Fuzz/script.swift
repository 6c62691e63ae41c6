// libFuzzer target: the SQL script runner (and the lint scanner) on arbitrary text, in an in-memory database.
import CSQLite
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzScript(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    _ = SQLLint.findings(in: text)
    _ = SQLLint.statements(in: Array(UnsafeBufferPointer(start: data, count: size)))
    guard let db = try? Database(.inMemory) else { return 0 }
    // Bound the work a single input can ask for (recursive CTEs, huge blobs) so hangs are real findings.
    sqlite3_progress_handler(db.handle, 1000, { _ in 1 }, nil)
    sqlite3_progress_handler(db.handle, 100_000, { _ in 1 }, nil)
    sqlite3_limit(db.handle, SQLITE_LIMIT_LENGTH, 1 << 20)
    sqlite3_limit(db.handle, SQLITE_LIMIT_ATTACHED, 0)
    do {
        try db.executeScript(text)
    } catch {
        // DatabaseError with a line and column is the expected outcome for invalid SQL.
    }
    return 0
}
