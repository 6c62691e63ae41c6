// libFuzzer target: the streaming CSV reader and the seed value parsers, on arbitrary bytes.
@testable import StrataFuzz
import Foundation

private let path = FileManager.default.temporaryDirectory.appendingPathComponent("strata-fuzz-\(getpid()).csv").path

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCSV(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 0 else { return 0 }
    let delimiters: [UInt8] = [UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "\t"), UInt8(ascii: "|")]
    let delimiter = delimiters[Int(data[0] & 3)]
    // Small refill sizes (1 to 64 bytes) make records span buffer boundaries in every possible place.
    let chunkSize = Int(data[0] >> 2) + 1
    let body = UnsafeBufferPointer(start: data + 1, count: size - 1)
    guard FileManager.default.createFile(atPath: path, contents: Data(body)) else { return 0 }
    do {
        let reader = try CSVReader(path: path, delimiter: delimiter, hashing: true, chunkSize: chunkSize)
        while try reader.readRecord() {
            let record = reader.record
            for index in 0..<record.count {
                let field = record.field(index)
                let bytes = field.hasEscapedQuotes ? reader.text(of: field) : field.bytes
                _ = FieldParser.integer(bytes)
                _ = FieldParser.real(bytes)
                _ = FieldParser.boolean(bytes)
                _ = FieldParser.blob(bytes, format: .automatic)
                _ = ISO8601.parse(bytes: bytes)
            }
        }
        _ = try reader.checksum()
    } catch {
        // Errors are the expected outcome for malformed input; only crashes, hangs and leaks are findings.
    }
    return 0
}
