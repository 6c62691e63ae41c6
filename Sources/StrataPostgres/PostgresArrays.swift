import CLibPQ
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataCore

/// PostgreSQL arrays as the mapper sees them: JSON arrays, the form a Swift array takes in a row on every backend.
/// An array column reads as JSON text (`{1,2}` → `[1,2]`, `{"a b",NULL}` → `["a b",null]`), and a JSON array of
/// scalars written to an array column becomes PostgreSQL's array text. Nested arrays and objects are refused when
/// written: a PostgreSQL array is rectangular and holds one type, and a JSON column is what holds the rest.
enum PostgresArrays {
    /// How an array type's elements read: as JSON numbers, JSON booleans, or JSON strings.
    enum Elements { case numbers, booleans, strings }

    /// The element kind of a built-in array type, nil for a type that is not one of them (read as the server's
    /// text). OIDs are fixed by PostgreSQL's catalog (`pg_type.dat`).
    static func elements(ofArrayType oid: Oid) -> Elements? {
        switch oid {
        case 1005, 1007, 1016, 1021, 1022, 1231, 1028: .numbers        // int2, int4, int8, float4, float8, numeric, oid
        case 1000: .booleans
        case 1009, 1015, 1014, 2951, 1182, 1115, 1185, 1183, 1270, 1187, 199, 3807, 1002, 1003: .strings
            // text, varchar, bpchar, uuid, date, timestamp, timestamptz, time, timetz, interval, json, jsonb, char, name
        default: nil
        }
    }

    /// PostgreSQL's text form of an array (`{1,2}`, `[0:1]={1,2}`, `{{1,2},{3,4}}`) as JSON; nil when it is not
    /// well formed.
    static func json(fromArrayText bytes: UnsafeBufferPointer<UInt8>, elements: Elements) -> [UInt8]? {
        var index = 0
        // Bounds other than 1 are written first: `[0:1]={…}`; the JSON array keeps the elements, not the bounds.
        if bytes.first == UInt8(ascii: "[") {
            guard let equals = bytes.firstIndex(of: UInt8(ascii: "=")) else { return nil }
            index = equals + 1
        }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + 8)
        var depth = 0
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "{"):
                output.append(UInt8(ascii: "["))
                depth += 1
                index += 1
            case UInt8(ascii: "}"):
                guard depth > 0 else { return nil }
                output.append(UInt8(ascii: "]"))
                depth -= 1
                index += 1
            case UInt8(ascii: ","):
                output.append(byte)
                index += 1
            case UInt8(ascii: "\""):
                var text: [UInt8] = []
                index += 1
                while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                    if bytes[index] == UInt8(ascii: "\\") { index += 1 }
                    guard index < bytes.count else { return nil }
                    text.append(bytes[index])
                    index += 1
                }
                guard index < bytes.count else { return nil }
                index += 1
                appendElement(text, quoted: true, elements, to: &output)
            default:
                var end = index
                while end < bytes.count, ![UInt8(ascii: ","), UInt8(ascii: "}")].contains(bytes[end]) { end += 1 }
                appendElement(Array(bytes[index..<end]), quoted: false, elements, to: &output)
                index = end
            }
        }
        return depth == 0 ? output : nil
    }

    private static func appendElement(_ text: [UInt8], quoted: Bool, _ elements: Elements, to output: inout [UInt8]) {
        if !quoted, text == Array("NULL".utf8) {
            output += Array("null".utf8)
            return
        }
        switch elements {
        case .booleans where text == [UInt8(ascii: "t")]: output += Array("true".utf8)
        case .booleans where text == [UInt8(ascii: "f")]: output += Array("false".utf8)
        // NaN and Infinity have no JSON number: as strings, a number type refuses them when it reads them.
        case .numbers where text.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || "-+.eE".utf8.contains($0) }):
            output += text
        default:
            output += jsonString(text)
        }
    }

    private static func jsonString(_ text: [UInt8]) -> [UInt8] {
        var output: [UInt8] = [UInt8(ascii: "\"")]
        for byte in text {
            switch byte {
            case UInt8(ascii: "\""): output += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): output += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0..<0x20: output += Array(printfFormat("\\u%04x", Int32(byte)).utf8)
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
        return output
    }

    /// A JSON array of scalars (as the mapper writes a Swift array) in PostgreSQL's array text: strings quoted with
    /// `"` and `\` escaped, numbers and booleans as written, `null` as NULL. Throws for anything else.
    static func arrayText(fromJSON json: String) throws -> String {
        var scanner = JSONScalars(Array(json.utf8))
        return try scanner.arrayText()
    }
}

/// Reads a JSON array of scalars.
private struct JSONScalars {
    let bytes: [UInt8]
    var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    struct NotScalars: Error, CustomStringConvertible {
        let description: String
    }

    mutating func arrayText() throws -> String {
        skipSpace()
        try expect(UInt8(ascii: "["))
        var elements: [String] = []
        skipSpace()
        if peek == UInt8(ascii: "]") {
            index += 1
        } else {
            while true {
                skipSpace()
                elements.append(try element())
                skipSpace()
                if peek == UInt8(ascii: ",") { index += 1; continue }
                try expect(UInt8(ascii: "]"))
                break
            }
        }
        skipSpace()
        guard index == bytes.count else { throw NotScalars(description: "text after the array") }
        return "{" + elements.joined(separator: ",") + "}"
    }

    private var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipSpace() {
        while let byte = peek, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
    }

    private mutating func expect(_ byte: UInt8) throws {
        guard peek == byte else { throw NotScalars(description: "not a JSON array") }
        index += 1
    }

    private mutating func element() throws -> String {
        guard let first = peek else { throw NotScalars(description: "the array ends early") }
        switch first {
        case UInt8(ascii: "["), UInt8(ascii: "{"):
            throw NotScalars(description: "an array holding arrays or objects; only an array of scalars maps to a PostgreSQL array (a json or jsonb column holds the rest)")
        case UInt8(ascii: "\""):
            let start = index
            index += 1
            while let byte = peek, byte != UInt8(ascii: "\"") { index += byte == UInt8(ascii: "\\") ? 2 : 1 }
            try expect(UInt8(ascii: "\""))
            let token = Data(bytes[start..<index])
            guard let text = try? JSONDecoder().decode(String.self, from: token) else {
                throw NotScalars(description: "a string that is not valid JSON")
            }
            return "\"" + text.replacingEvery("\\", with: "\\\\").replacingEvery("\"", with: "\\\"") + "\""
        default:
            let start = index
            while let byte = peek, ![UInt8(ascii: ","), UInt8(ascii: "]"), 0x20, 0x0A, 0x0D, 0x09].contains(byte) { index += 1 }
            let token = String(decoding: bytes[start..<index], as: UTF8.self)
            if token == "null" { return "NULL" }
            guard token == "true" || token == "false" || Double(token) != nil else {
                throw NotScalars(description: "\(token) is not a JSON value")
            }
            return token
        }
    }
}
