/// How one CSV column is converted, and whether the table refuses NULL in it.
struct FieldPlan {
    let kind: ValueKind
    /// NULL is refused: a NOT NULL column, or a key column rows are matched by.
    let isNotNull: Bool
    /// A key column of a mode that matches rows by key (worded differently when NULL).
    var isKey = false
}

/// Copies of one batch's text values, kept until the batch has run so SQLite can bind them without
/// copying each one (no malloc and free per value).
struct BindArena: ~Copyable {
    private let base: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    private var used = 0
    /// Values that did not fit, freed at the next reset.
    private var overflow: [UnsafeMutablePointer<UInt8>] = []

    init(capacity: Int = 1 << 16) {
        self.capacity = capacity
        base = .allocate(capacity: capacity)
    }

    deinit {
        base.deallocate()
        overflow.forEach { $0.deallocate() }
    }

    @inline(__always)
    mutating func store(_ bytes: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return bytes }
        if used + bytes.count <= capacity {
            let target = base + used
            target.update(from: source, count: bytes.count)
            used += bytes.count
            return UnsafeBufferPointer(start: target, count: bytes.count)
        }
        let target = UnsafeMutablePointer<UInt8>.allocate(capacity: bytes.count)
        target.update(from: source, count: bytes.count)
        overflow.append(target)
        return UnsafeBufferPointer(start: target, count: bytes.count)
    }

    /// Call once the statement using the stored values has run.
    mutating func reset() {
        used = 0
        if !overflow.isEmpty {
            overflow.forEach { $0.deallocate() }
            overflow.removeAll(keepingCapacity: true)
        }
    }
}

/// Converts the fields of CSV records and binds them to a statement. A noncopyable value used as a local, so
/// its state is checked for exclusive access at compile time rather than on every field.
struct FieldBinder: ~Copyable {
    private let plans: UnsafeMutablePointer<FieldPlan>
    private let width: Int
    /// Column names, read only to word errors.
    private let names: [String]
    private let nullToken: [UInt8]
    private let file: String
    private let dateBuffer = UnsafeMutablePointer<UInt8>.allocate(capacity: 64)
    private var arena = BindArena()

    init(plans: [FieldPlan], names: [String], nullToken: String?, file: String) {
        self.plans = .allocate(capacity: max(plans.count, 1))
        self.plans.initialize(from: plans, count: plans.count)
        width = plans.count
        self.names = names
        self.nullToken = Array((nullToken ?? "").utf8)
        self.file = file
    }

    deinit {
        plans.deallocate()
        dateBuffer.deallocate()
    }

    /// Binds every field of the reader's current record as row `row` of `statement` (parameters
    /// `row * width + 1 …`). Values stay valid until `ran()` is called.
    @inline(__always)
    mutating func bindRecord(_ reader: CSVReader, to statement: any PreparedStatement, row: Int) throws {
        let record = reader.record
        let base = Int32(row * width)
        for index in 0..<width {
            try bind(record.field(index), plans[index], to: statement, at: base + Int32(index + 1), reader, index)
        }
    }

    /// Binds chosen fields (sync keys) as parameters 1, 2, ….
    mutating func bindFields(_ indexes: [Int], of reader: CSVReader, to statement: any PreparedStatement) throws {
        let record = reader.record
        for (position, index) in indexes.enumerated() {
            try bind(record.field(index), plans[index], to: statement, at: Int32(position + 1), reader, index)
        }
    }

    /// The statements bound since the last call have run; their values may be reused.
    mutating func ran() {
        arena.reset()
    }

    @inline(__always)
    private mutating func bind(_ field: CSVField, _ plan: FieldPlan, to statement: any PreparedStatement, at parameter: Int32,
                               _ reader: CSVReader, _ index: Int) throws {
        let bytes = field.hasEscapedQuotes ? reader.text(of: field) : field.bytes
        if !field.isQuoted && (bytes.isEmpty || isNullToken(bytes)) {
            guard !plan.isNotNull else {
                throw SeedError(file: file, line: reader.recordLine, column: nil, message: plan.isKey
                    ? "key column '\(names[index])' is NULL; every row needs its key to be matched by (an unquoted empty field is NULL)"
                    : "column '\(names[index])' is NOT NULL but the value is NULL (an unquoted empty field is NULL; write \"\" for an empty string)")
            }
            statement.bindNull(at: parameter)
            return
        }
        let kind = plan.kind
        switch kind {
        case .text, .untyped:
            statement.bind(text: arena.store(bytes), at: parameter, copying: false)
        case .integer:
            guard let value = FieldParser.integer(bytes) else { throw conversion(reader, index, kind) }
            statement.bind(int64: value, at: parameter)
        case .real:
            guard let value = FieldParser.real(bytes) else { throw conversion(reader, index, kind) }
            statement.bind(double: value, at: parameter)
        case .numeric:
            if let value = FieldParser.integer(bytes) { statement.bind(int64: value, at: parameter) }
            else if let value = FieldParser.real(bytes) { statement.bind(double: value, at: parameter) }
            else { throw conversion(reader, index, kind) }
        case .boolean:
            guard let value = FieldParser.boolean(bytes) else { throw conversion(reader, index, kind) }
            statement.bind(int64: value ? 1 : 0, at: parameter)
        case .blob(let format):
            guard let value = FieldParser.blob(bytes, format: format) else { throw conversion(reader, index, kind) }
            value.withUnsafeBufferPointer { statement.bind(blob: $0, at: parameter) }
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
            switch storage {
            case .unix:
                if instant.nanoseconds == 0 { statement.bind(int64: instant.seconds, at: parameter) }
                else { statement.bind(double: Double(instant.seconds) + Double(instant.nanoseconds) / 1e9, at: parameter) }
            case .text:
                // Input already in canonical form is stored as written, skipping the formatter.
                let canonical = !inputUnix && (isDate ? bytes.count == 10
                    : bytes.count == 20 && bytes[10] == UInt8(ascii: "T") && bytes[19] == UInt8(ascii: "Z"))
                if canonical {
                    statement.bind(text: arena.store(bytes), at: parameter, copying: false)
                } else {
                    let length = ISO8601.write(instant, includeTime: !isDate, into: dateBuffer)
                    guard length > 0 else { throw conversion(reader, index, kind) }
                    statement.bind(text: arena.store(UnsafeBufferPointer(start: dateBuffer, count: length)), at: parameter,
                                   copying: false)
                }
            }
        }
    }

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
        return "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }
}
