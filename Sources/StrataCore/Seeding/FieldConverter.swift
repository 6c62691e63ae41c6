/// How one CSV column is converted, and whether the table refuses NULL in it.
struct FieldPlan {
    let kind: ValueKind
    /// NULL is refused: a NOT NULL column, or a key column rows are matched by.
    let isNotNull: Bool
    /// A key column of a mode that matches rows by key (worded differently when NULL).
    var isKey = false
    /// Digits of fractional seconds a datetime may have (`SeedConversion.fractionDigits`).
    var fractionDigits = 9
}

/// Converts the fields of CSV records as their columns ask and hands them to a seed sink. A noncopyable value used
/// as a local, so its state is checked for exclusive access at compile time rather than on every field.
struct FieldConverter: ~Copyable {
    private let plans: UnsafeMutablePointer<FieldPlan>
    private let width: Int
    /// Column names, read only to word errors.
    private let names: [String]
    private let nullToken: [UInt8]
    private let file: String
    private let dateBuffer = UnsafeMutablePointer<UInt8>.allocate(capacity: 64)
    /// The current record's converted fields.
    private let row: UnsafeMutablePointer<ColumnValue>
    /// Copies of the record's fields whose bytes are not the file's as read (doubled quotes undone, dates
    /// rewritten, decoded blobs): the reader and the date buffer reuse their memory for the next field.
    private var rewritten = BindArena(capacity: 1 << 12)

    init(plans: [FieldPlan], names: [String], nullToken: String?, file: String) {
        self.plans = .allocate(capacity: max(plans.count, 1))
        self.plans.initialize(from: plans, count: plans.count)
        width = plans.count
        row = .allocate(capacity: max(plans.count, 1))
        row.initialize(repeating: .null, count: max(plans.count, 1))
        self.names = names
        self.nullToken = Array((nullToken ?? "").utf8)
        self.file = file
    }

    deinit {
        row.deinitialize(count: max(width, 1))
        row.deallocate()
        plans.deallocate()
        dateBuffer.deallocate()
    }

    /// Converts every field of the reader's current record and appends the row to the sink.
    @inline(__always)
    mutating func appendRecord(_ reader: CSVReader, to sink: any SeedSink) throws {
        rewritten.reset()
        let record = reader.record
        for index in 0..<width {
            row[index] = try convert(record.field(index), plans[index], at: index, reader)
        }
        try sink.append(row, line: reader.recordLine, offset: reader.recordOffset)
    }

    @inline(__always)
    private mutating func convert(_ field: CSVField, _ plan: FieldPlan, at index: Int,
                                  _ reader: CSVReader) throws -> ColumnValue {
        let bytes = field.hasEscapedQuotes ? rewritten.store(reader.text(of: field)) : field.bytes
        if !field.isQuoted && (bytes.isEmpty || isNullToken(bytes)) {
            guard !plan.isNotNull else {
                throw SeedError(file: file, line: reader.recordLine, column: nil, message: plan.isKey
                    ? "key column '\(names[index])' is NULL; every row needs its key to be matched by (an unquoted empty field is NULL)"
                    : "column '\(names[index])' is NOT NULL but the value is NULL (an unquoted empty field is NULL; write \"\" for an empty string)")
            }
            return .null
        }
        let kind = plan.kind
        switch kind {
        case .text, .untyped:
            return .text(bytes)
        case .integerText(let minimum, let maximum):
            guard let value = FieldParser.integer(bytes), value >= minimum, value <= maximum else {
                throw conversion(reader, index, kind)
            }
            return .text(bytes)
        case .realText(let single):
            guard let value = FieldParser.real(bytes), !single || abs(value) <= Double(Float.greatestFiniteMagnitude) else {
                throw conversion(reader, index, kind)
            }
            return .text(bytes)
        case .decimalText(let scale):
            guard let needed = FieldParser.decimalScale(bytes), needed <= scale ?? .max else {
                throw conversion(reader, index, kind)
            }
            return .text(bytes)
        case .limitedText(let maximum, let countsBytes):
            guard (countsBytes ? bytes.count : FieldParser.scalarCount(bytes)) <= maximum else {
                throw conversion(reader, index, kind)
            }
            return .text(bytes)
        case .integer:
            guard let value = FieldParser.integer(bytes) else { throw conversion(reader, index, kind) }
            return .integer(value)
        case .real:
            guard let value = FieldParser.real(bytes) else { throw conversion(reader, index, kind) }
            return .real(value)
        case .numeric:
            if let value = FieldParser.integer(bytes) { return .integer(value) }
            else if let value = FieldParser.real(bytes) { return .real(value) }
            else { throw conversion(reader, index, kind) }
        case .boolean:
            guard let value = FieldParser.boolean(bytes) else { throw conversion(reader, index, kind) }
            return .integer(value ? 1 : 0)
        case .blob(let format):
            guard let value = FieldParser.blob(bytes, format: format) else { throw conversion(reader, index, kind) }
            return value.withUnsafeBufferPointer { .blob(rewritten.store($0)) }
        case .date(let inputUnix, let storage), .datetime(let inputUnix, let storage):
            var isDate = false
            if case .date = kind { isDate = true }
            let instant: ISO8601.Instant
            if inputUnix {
                guard let seconds = FieldParser.integer(bytes) else { throw conversion(reader, index, kind) }
                instant = ISO8601.Instant(seconds: seconds, nanoseconds: 0, hasTime: !isDate)
            } else {
                guard let parsed = ISO8601.parse(bytes: bytes) else { throw conversion(reader, index, kind) }
                instant = parsed
            }
            // A date column takes a date, not a moment within one.
            if isDate && (inputUnix ? instant.seconds % 86_400 != 0 : instant.hasTime) {
                throw conversion(reader, index, kind)
            }
            // A column that keeps fewer digits of a second would round the moment; refused instead.
            if plan.fractionDigits < 9, instant.nanoseconds % Self.nanosecondsPerUnit[max(plan.fractionDigits, 0)] != 0 {
                throw SeedError(file: file, line: reader.recordLine, column: nil,
                                message: "column '\(names[index])': \(Self.display(reader, index)) has more digits of a second than the column keeps (\(plan.fractionDigits)); it would be rounded")
            }
            switch storage {
            case .unix:
                if instant.nanoseconds == 0 { return .integer(instant.seconds) }
                return .real(Double(instant.seconds) + Double(instant.nanoseconds) / 1e9)
            case .text:
                // Input already in canonical form is stored as written, skipping the formatter.
                let canonical = !inputUnix && (isDate ? bytes.count == 10
                    : bytes.count == 20 && bytes[10] == UInt8(ascii: "T") && bytes[19] == UInt8(ascii: "Z"))
                if canonical {
                    return .text(bytes)
                } else {
                    let length = ISO8601.write(instant, includeTime: !isDate, into: dateBuffer)
                    guard length > 0 else { throw conversion(reader, index, kind) }
                    return .text(rewritten.store(UnsafeBufferPointer(start: dateBuffer, count: length)))
                }
            }
        }
    }

    /// Nanoseconds in the last unit a column with 0…8 fractional digits keeps.
    private static let nanosecondsPerUnit: [Int32] = [1_000_000_000, 100_000_000, 10_000_000, 1_000_000, 100_000, 10_000, 1000, 100, 10]

    @inline(__always)
    private func isNullToken(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        !nullToken.isEmpty && bytes.count == nullToken.count && nullToken.elementsEqual(bytes)
    }

    private func conversion(_ reader: CSVReader, _ index: Int, _ kind: ValueKind) -> SeedError {
        SeedError(file: file, line: reader.recordLine, column: nil,
                  message: "column '\(names[index])': \(Self.display(reader, index)) is not \(kind.name)")
    }

    /// A field as an error message shows it: quoted and shortened, or NULL.
    static func display(_ reader: CSVReader, _ index: Int) -> String {
        let field = reader.field(index)
        if field.bytes.isEmpty && !field.isQuoted { return "NULL" }
        let text = String(decoding: reader.text(of: field), as: UTF8.self).truncated(to: 60)
        return "'" + text.replacingEvery("'", with: "''") + "'"
    }
}
