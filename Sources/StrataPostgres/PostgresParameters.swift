import CLibPQ
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataCore

/// Statement parameters as libpq takes them: text for numbers and strings, typed `unknown` so the server infers the
/// type from where the parameter stands (as it does for a quoted literal), and binary `bytea` for blobs.
struct PostgresParameters {
    /// Every parameter's bytes, one after another (text NUL-terminated): one buffer, not one per value, so binding a
    /// row costs no allocation per field.
    private var bytes: [UInt8] = []
    /// Each parameter's start in `bytes`; nil for SQL NULL.
    private var starts: [Int?] = []
    private var lengths: [Int32] = []
    private(set) var types: [Oid] = []
    private(set) var formats: [Int32] = []

    static let byteaOID: Oid = 17

    init() {}

    init(_ values: [DatabaseValue], sql: String?) throws {
        starts.reserveCapacity(values.count)
        lengths.reserveCapacity(values.count)
        types.reserveCapacity(values.count)
        formats.reserveCapacity(values.count)
        for (offset, value) in values.enumerated() {
            try append(value, index: offset + 1, sql: sql)
        }
    }

    var count: Int { starts.count }

    /// Adds a value; text holding a NUL byte is refused, since libpq would end the value there without a word.
    mutating func append(_ value: DatabaseValue, index: Int, sql: String?) throws {
        switch value {
        case .null:
            starts.append(nil); lengths.append(0); types.append(0); formats.append(0)
        case .integer(let integer):
            appendText(String(integer).utf8)
        case .real(let real):
            appendText(Self.text(of: real).utf8)
        case .text(let text):
            if text.utf8.contains(0) {
                throw DatabaseError(kind: .conversion, code: nil,
                                    message: "parameter \(index) is text with a NUL byte, which PostgreSQL cannot store", sql: sql)
            }
            appendText(text.utf8)
        case .blob(let data):
            starts.append(bytes.count)
            bytes.append(contentsOf: data)
            lengths.append(Int32(clamping: data.count)); types.append(Self.byteaOID); formats.append(1)
        }
    }

    /// Replaces the value at a 1-based index, growing the list with NULLs as needed. The replaced bytes stay in the
    /// buffer until the parameters are bound anew.
    mutating func set(_ value: DatabaseValue, at index: Int, sql: String?) throws {
        while starts.count < index { starts.append(nil); lengths.append(0); types.append(0); formats.append(0) }
        var single = PostgresParameters()
        try single.append(value, index: index, sql: sql)
        starts[index - 1] = single.starts[0].map { $0 + bytes.count }
        lengths[index - 1] = single.lengths[0]
        types[index - 1] = single.types[0]
        formats[index - 1] = single.formats[0]
        bytes.append(contentsOf: single.bytes)
    }

    private mutating func appendText(_ utf8: some Collection<UInt8>) {
        starts.append(bytes.count)
        bytes.append(contentsOf: utf8)
        bytes.append(0)
        lengths.append(Int32(clamping: utf8.count)); types.append(0); formats.append(0)
    }

    /// A double as PostgreSQL reads it back exactly: Swift's shortest round-tripping digits, and PostgreSQL's
    /// spellings of the special values.
    static func text(of real: Double) -> String {
        if real.isNaN { return "NaN" }
        if real.isInfinite { return real < 0 ? "-Infinity" : "Infinity" }
        return "\(real)"
    }

    /// Calls `body` with the C arrays `PQexecParams` takes; valid only during the call.
    func withPointers<R>(_ body: (Int32, UnsafePointer<Oid>?, UnsafePointer<UnsafePointer<CChar>?>?,
                                  UnsafePointer<Int32>?, UnsafePointer<Int32>?) -> R) -> R {
        bytes.withUnsafeBufferPointer { buffer in
            let base = buffer.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) }
            // An empty value of an empty buffer still needs a pointer that is not NULL (NULL means SQL NULL).
            let empty: StaticString = ""
            let emptyPointer = UnsafeRawPointer(empty.utf8Start).assumingMemoryBound(to: CChar.self)
            let pointers: [UnsafePointer<CChar>?] = starts.map { start in
                start.map { start in base.map { $0 + start } ?? emptyPointer }
            }
            return types.withUnsafeBufferPointer { types in
                pointers.withUnsafeBufferPointer { pointers in
                    lengths.withUnsafeBufferPointer { lengths in
                        formats.withUnsafeBufferPointer { formats in
                            body(Int32(starts.count), types.baseAddress, pointers.baseAddress, lengths.baseAddress,
                                 formats.baseAddress)
                        }
                    }
                }
            }
        }
    }
}
