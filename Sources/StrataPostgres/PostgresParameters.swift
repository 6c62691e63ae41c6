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
    /// Each parameter's bytes, NUL-terminated for the text format; nil for SQL NULL.
    private(set) var values: [[UInt8]?] = []
    private(set) var types: [Oid] = []
    private(set) var formats: [Int32] = []

    static let byteaOID: Oid = 17

    init() {}

    init(_ values: [DatabaseValue], sql: String?) throws {
        for (offset, value) in values.enumerated() {
            try append(value, index: offset + 1, sql: sql)
        }
    }

    var count: Int { values.count }

    /// Adds a value; text holding a NUL byte is refused, since libpq would end the value there without a word.
    mutating func append(_ value: DatabaseValue, index: Int, sql: String?) throws {
        switch value {
        case .null:
            values.append(nil); types.append(0); formats.append(0)
        case .integer(let integer):
            appendText(Array(String(integer).utf8))
        case .real(let real):
            appendText(Array(Self.text(of: real).utf8))
        case .text(let text):
            let bytes = Array(text.utf8)
            if bytes.contains(0) {
                throw DatabaseError(kind: .conversion, code: nil,
                                    message: "parameter \(index) is text with a NUL byte, which PostgreSQL cannot store", sql: sql)
            }
            appendText(bytes)
        case .blob(let data):
            values.append(Array(data)); types.append(Self.byteaOID); formats.append(1)
        }
    }

    /// Replaces the value at a 1-based index, growing the list with NULLs as needed.
    mutating func set(_ value: DatabaseValue, at index: Int, sql: String?) throws {
        var single = PostgresParameters()
        try single.append(value, index: index, sql: sql)
        while values.count < index { values.append(nil); types.append(0); formats.append(0) }
        values[index - 1] = single.values[0]
        types[index - 1] = single.types[0]
        formats[index - 1] = single.formats[0]
    }

    private mutating func appendText(_ bytes: [UInt8]) {
        values.append(bytes + [0]); types.append(0); formats.append(0)
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
        let lengths = values.map { Int32($0?.count ?? 0) }
        // Copies that live for the call: libpq reads them before PQexecParams returns.
        let buffers: [UnsafeMutableBufferPointer<UInt8>?] = values.map { bytes in
            bytes.map { bytes in
                let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(bytes.count, 1))
                _ = buffer.initialize(from: bytes)
                return buffer
            }
        }
        defer { buffers.forEach { $0?.deallocate() } }
        let pointers: [UnsafePointer<CChar>?] = buffers.map { buffer in
            buffer?.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) }
        }
        return types.withUnsafeBufferPointer { types in
            pointers.withUnsafeBufferPointer { pointers in
                lengths.withUnsafeBufferPointer { lengths in
                    formats.withUnsafeBufferPointer { formats in
                        body(Int32(values.count), types.baseAddress, pointers.baseAddress, lengths.baseAddress,
                             formats.baseAddress)
                    }
                }
            }
        }
    }
}
