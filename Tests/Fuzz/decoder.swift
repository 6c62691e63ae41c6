// libFuzzer target: the row decoder, decoding rows of arbitrary column values into a struct.
@testable import StrataFuzz
import Foundation

private enum Kind: String, Codable { case a, b }
private struct Nested: Codable { var x: Int; var y: [String] }
private struct Item: Codable {
    var tiny: Int8
    var name: String
    var count: Int
    var flag: Bool
    var price: Double
    var day: Date
    var note: String?
    var id: UUID?
    var kind: Kind?
    var nested: Nested?
    var big: UInt32
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDecoder(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    guard let db = try? Database(.inMemory),
          (try? db.execute("CREATE TABLE item (tiny, name, count, flag, price, day, note, id, kind, nested, big)")) != nil,
          let insert = try? db.prepare("INSERT INTO item VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
    else { return 0 }
    // Each column value takes one kind byte and up to 8 payload bytes.
    var index = 0
    func next() -> UInt8? {
        guard index < bytes.count else { return nil }
        defer { index += 1 }
        return bytes[index]
    }
    var rows = 0
    rowLoop: while rows < 20 {
        var values: [DatabaseValue] = []
        for _ in 0..<11 {
            guard let kind = next() else { break rowLoop }
            let length = Int(kind >> 3) % 9
            var payload: [UInt8] = []
            for _ in 0..<length { if let byte = next() { payload.append(byte) } }
            let number = payload.reduce(Int64(0)) { $0 << 8 | Int64($1) }
            switch kind & 7 {
            case 0: values.append(.null)
            case 1, 2: values.append(.integer(kind & 1 == 0 ? -number : number))
            case 3: values.append(.real(Double(bitPattern: UInt64(bitPattern: number))))
            case 4, 5: values.append(.text(String(decoding: payload, as: UTF8.self)))
            case 6: values.append(.text(["a", "b", "2024-01-01", "1970-01-01T00:00:00Z", #"{"x":1,"y":["z"]}"#,
                                         "00000000-0000-0000-0000-000000000000", "c"][Int(number & 0xFF) % 7]))
            default: values.append(.blob(Data(payload)))
            }
        }
        guard (try? insert.execute(.positional(values))) != nil else { break }
        rows += 1
    }
    do {
        _ = try ModelStore(database: db).fetchAll(Item.self)
    } catch {
        // MappingError naming the property and value is the expected outcome.
    }
    return 0
}
