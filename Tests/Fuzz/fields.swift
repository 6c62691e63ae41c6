// libFuzzer target: the seed field parsers and the value conversions themselves, on arbitrary bytes and on
// extreme numbers (Int64.min/max seconds, NaN and huge reals, 20-digit migration prefixes). The csv target only
// reaches the parsers through what the reader yields; this one also drives the formatters and converters.
@testable import StrataFuzz
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFields(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeBufferPointer(start: data, count: size)

    // Every field parser, on the raw bytes.
    _ = FieldParser.integer(bytes)
    _ = FieldParser.real(bytes)
    _ = FieldParser.boolean(bytes)
    for format in [BlobFormat.automatic, .hex, .base64] { _ = FieldParser.blob(bytes, format: format) }
    let output = UnsafeMutablePointer<UInt8>.allocate(capacity: 64)
    defer { output.deallocate() }
    if let instant = ISO8601.parse(bytes: bytes) {
        _ = ISO8601.write(instant, includeTime: instant.hasTime, into: output)
    }

    // The first 8 bytes as unix seconds, the next 4 as nanoseconds: the seeding path of format="unix" columns.
    var raw = [UInt8](repeating: 0, count: 20)
    for index in 0..<min(size, raw.count) { raw[index] = bytes[index] }
    let seconds = raw[0..<8].reduce(Int64(0)) { $0 << 8 | Int64($1) }
    let nanos = Int32(truncatingIfNeeded: raw[8..<12].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } % 1_000_000_000)
    for includeTime in [false, true] {
        let instant = ISO8601.Instant(seconds: seconds, nanoseconds: nanos, hasTime: includeTime)
        let length = ISO8601.write(instant, includeTime: includeTime, into: output)
        if length > 0 {
            // What was written must read back as the same instant (a date as the start of its day).
            let parsed = ISO8601.parse(bytes: UnsafeBufferPointer(start: output, count: length))
            let expected = includeTime ? seconds : ISO8601.floorDiv(seconds, 86_400) * 86_400
            if parsed?.seconds != expected || (includeTime && parsed?.nanoseconds != nanos) {
                fatalError("round trip of \(seconds).\(nanos) gave \(String(describing: parsed))")
            }
        }
        _ = ISO8601.format(seconds: seconds, includeTime: includeTime)
    }
    _ = ISO8601.floorDiv(seconds, 86_400)
    _ = ISO8601.floorMod(seconds, 86_400)

    // The same bits as a Double: dates, and the checked numeric conversions of the value layer.
    let real = Double(bitPattern: UInt64(bitPattern: seconds))
    _ = ISO8601.format(Date(timeIntervalSince1970: real))
    _ = Float.fromDatabaseValue(.real(real))
    _ = Int64.fromDatabaseValue(.real(real))
    _ = Int8.fromDatabaseValue(.real(real))
    _ = Bool.fromDatabaseValue(.real(real))
    _ = Date.fromDatabaseValue(.real(real)).map(ISO8601.format)
    _ = Date.fromDatabaseValue(.integer(seconds)).map(ISO8601.format)
    _ = checkedDatabaseValue(UInt64(bitPattern: seconds))
    _ = StatementArguments([UInt64(bitPattern: seconds), real])

    // Digit strings as migration number prefixes.
    let digits = bytes.prefix(64).map { UInt8(ascii: "0") + $0 % 10 }
    if !digits.isEmpty { _ = MigrationFile.decimalSuccessor(digits) }
    return 0
}
