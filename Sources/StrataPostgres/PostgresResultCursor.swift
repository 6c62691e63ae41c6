import CLibPQ
import StrataCore

/// The result a PostgreSQL statement is reading and its current row, behind a pointer that stays put: the row
/// container (`RowContainer` over `PostgresColumns`) reads each field through it with the read inlined, instead of a dynamic call
/// and a retain of the statement per field.
///
/// How each column reads is worked out once per result, from its type and format (`PostgresColumnKind`).
struct PostgresResultCursor {
    /// Borrowed from the statement's `PostgresResult`, which outlives every read of it.
    var result: OpaquePointer?
    var row: Int32 = -1
    var rowCount: Int32 = 0
    /// One per column of `result`; a buffer, not an array, so reading it through the pointer retains nothing.
    var kinds = UnsafeMutableBufferPointer<PostgresColumnKind>.allocate(capacity: 0)
    /// The bytes of the last column read that had to be converted (`bytea` hex, an array as JSON, a binary value
    /// as its text), valid until the next read: `ColumnValue` borrows.
    var scratch = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 0)

    /// A binary value's text (`PostgresBinary`), built here before it is kept in `scratch`.
    var formatted: [UInt8] = []

    /// Starts reading `result`; false, reading nothing, for a binary column of a type Strata cannot read in binary,
    /// rather than hand its bytes on as something else.
    mutating func start(_ result: PostgresResult?) -> Bool {
        self.result = result?.handle
        row = -1
        rowCount = result.map { Int32(clamping: $0.rowCount) } ?? 0
        let count = result?.handle.map { Int(PQnfields($0)) } ?? 0
        if kinds.count != count {
            kinds.deallocate()
            kinds = .allocate(capacity: count)
        }
        if let handle = result?.handle {
            for column in 0..<count {
                let type = PQftype(handle, Int32(column))
                guard let kind = PostgresColumnKind(type: type, binary: PQfformat(handle, Int32(column)) == 1) else {
                    clear()
                    return false
                }
                kinds[column] = kind
            }
        }
        return true
    }

    func deallocate() {
        kinds.deallocate()
        scratch.deallocate()
    }

    mutating func clear() {
        result = nil
        row = -1
        rowCount = 0
    }

    /// A column of the current row; NULL outside the result.
    @inline(__always)
    static func column(of cursor: UnsafeMutablePointer<PostgresResultCursor>, at index: Int32) -> ColumnValue {
        let row = cursor.pointee.row
        guard let result = cursor.pointee.result, row >= 0, row < cursor.pointee.rowCount,
              index >= 0, Int(index) < cursor.pointee.kinds.count,
              PQgetisnull(result, row, index) == 0, let start = PQgetvalue(result, row, index) else { return .null }
        let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(start).assumingMemoryBound(to: UInt8.self),
                                        count: Int(PQgetlength(result, row, index)))
        switch cursor.pointee.kinds[Int(index)] {
        case .text: return .text(bytes)
        case .booleanText: return .integer(bytes.first == UInt8(ascii: "t") ? 1 : 0)
        case .integerText: return PostgresText.integer(bytes).map(ColumnValue.integer) ?? .text(bytes)
        case .booleanBinary: return .integer(bytes.first == 1 ? 1 : 0)
        case .integerBinary(let type): return PostgresBinary.integer(bytes, type: type).map(ColumnValue.integer) ?? .blob(bytes)
        case .doubleBinary: return PostgresBinary.double(bytes).map(ColumnValue.real) ?? .blob(bytes)
        case .byteaBinary: return .blob(bytes)
        default: return converted(cursor, bytes, cursor.pointee.kinds[Int(index)])
        }
    }

    /// The reads that convert the bytes, out of line so the common ones above stay small.
    @inline(never)
    static func converted(_ cursor: UnsafeMutablePointer<PostgresResultCursor>, _ bytes: UnsafeBufferPointer<UInt8>,
                          _ kind: PostgresColumnKind) -> ColumnValue {
        switch kind {
        case .text: return .text(bytes)
        case .booleanText: return .integer(bytes.first == UInt8(ascii: "t") ? 1 : 0)
        case .integerText: return PostgresText.integer(bytes).map(ColumnValue.integer) ?? .text(bytes)
        case .floatText: return PostgresText.double(bytes).map(ColumnValue.real) ?? .text(bytes)
        case .byteaText:
            guard let decoded = PostgresText.bytea(bytes) else { return .text(bytes) }
            return .blob(cursor.pointee.keep(decoded))
        case .arrayText(let elements):
            // An array reads as JSON, the form a Swift array takes in a row on every backend.
            guard let json = PostgresArrays.json(fromArrayText: bytes, elements: elements) else { return .text(bytes) }
            return .text(cursor.pointee.keep(json))
        case .booleanBinary: return .integer(bytes.first == 1 ? 1 : 0)
        case .integerBinary(let type): return PostgresBinary.integer(bytes, type: type).map(ColumnValue.integer) ?? .blob(bytes)
        case .doubleBinary: return PostgresBinary.double(bytes).map(ColumnValue.real) ?? .blob(bytes)
        case .byteaBinary: return .blob(bytes)
        case .jsonbBinary: return PostgresBinary.jsonb(bytes).map(ColumnValue.text) ?? .blob(bytes)
        // A malformed value (which the server does not send) stays bytes, which no property reads as the text.
        case .uuidBinary:
            return formatting(cursor, bytes) { PostgresBinary.uuidText(bytes, into: &$0) }
        case .numericBinary:
            return formatting(cursor, bytes) { PostgresBinary.numericText(bytes, into: &$0) }
        case .dateBinary:
            return formatting(cursor, bytes) { PostgresBinary.dateText(bytes, into: &$0) }
        case .timestampBinary(let withZone):
            return formatting(cursor, bytes) { PostgresBinary.timestampText(bytes, withZone: withZone, into: &$0) }
        }
    }

    /// The text `format` writes for a binary value, kept in the scratch buffer; the bytes as a blob if it fails.
    private static func formatting(_ cursor: UnsafeMutablePointer<PostgresResultCursor>, _ bytes: UnsafeBufferPointer<UInt8>,
                                   _ format: (inout [UInt8]) -> Bool) -> ColumnValue {
        var text = cursor.pointee.formatted
        cursor.pointee.formatted = []
        defer { cursor.pointee.formatted = text }
        guard format(&text) else { return .blob(bytes) }
        return .text(cursor.pointee.keep(text))
    }

    /// Copies `bytes` into the scratch buffer and returns them from there.
    mutating func keep(_ bytes: [UInt8]) -> UnsafeBufferPointer<UInt8> {
        if scratch.count < bytes.count {
            scratch.deallocate()
            scratch = .allocate(capacity: bytes.count)
        }
        _ = scratch.initialize(from: bytes)
        return UnsafeBufferPointer(rebasing: scratch[..<bytes.count])
    }
}

/// How a result column reads: decided by its type OID and format, once per result.
enum PostgresColumnKind {
    /// The server's text, as is: text, numeric, dates, uuid, json and every type without a reading of its own.
    case text
    case booleanText
    case integerText
    case floatText
    case byteaText
    case arrayText(PostgresArrays.Elements)
    case booleanBinary
    /// `int2`, `int4`, `int8` or `oid`.
    case integerBinary(Oid)
    case doubleBinary
    case byteaBinary
    case jsonbBinary
    case uuidBinary
    case numericBinary
    case dateBinary
    case timestampBinary(withZone: Bool)

    /// Nil for a binary column of a type without a binary reading.
    init?(type: Oid, binary: Bool) {
        if binary {
            switch type {
            case PostgresType.bool: self = .booleanBinary
            case PostgresType.int2, PostgresType.int4, PostgresType.int8, PostgresType.oid: self = .integerBinary(type)
            case PostgresType.float8: self = .doubleBinary
            case PostgresType.bytea: self = .byteaBinary
            // Their binary form is their text.
            case PostgresType.text, PostgresType.varchar, PostgresType.bpchar, PostgresType.name, PostgresType.json: self = .text
            case PostgresType.jsonb: self = .jsonbBinary
            case PostgresType.uuid: self = .uuidBinary
            case PostgresType.numeric: self = .numericBinary
            case PostgresType.date: self = .dateBinary
            case PostgresType.timestamp: self = .timestampBinary(withZone: false)
            case PostgresType.timestamptz: self = .timestampBinary(withZone: true)
            default: return nil
            }
            return
        }
        switch type {
        case PostgresType.bool: self = .booleanText
        case PostgresType.int2, PostgresType.int4, PostgresType.int8, PostgresType.oid: self = .integerText
        case PostgresType.float4, PostgresType.float8: self = .floatText
        case PostgresType.bytea: self = .byteaText
        default: self = PostgresArrays.elements(ofArrayType: type).map(PostgresColumnKind.arrayText) ?? .text
        }
    }
}
