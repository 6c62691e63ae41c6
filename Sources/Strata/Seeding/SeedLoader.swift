import Foundation

/// A seed set that cannot be loaded: the file and line, and what is wrong (with the column and value).
public struct SeedError: Error, Sendable, Equatable, CustomStringConvertible {
    public let file: String
    public let line: Int?
    public let column: Int?
    public let message: String

    public var description: String {
        var place = file
        if let line { place += ":\(line)" }
        if let column { place += ":\(column)" }
        return "\(place): \(message)"
    }
}

/// Loads one CSV seed set into its table inside the caller's transaction, streaming the file.
struct SeedLoader {
    /// How often (in rows) progress is reported.
    static let progressInterval = 50_000

    let step: SeedStep
    let database: Database
    var progress: ((_ rows: Int, _ bytesRead: Int, _ totalBytes: Int) -> Void)?
    /// When set, the file's checksum is computed from the same read and stored here.
    var computeChecksum = false

    init(step: SeedStep, database: Database,
         progress: ((_ rows: Int, _ bytesRead: Int, _ totalBytes: Int) -> Void)? = nil) {
        self.step = step
        self.database = database
        self.progress = progress
    }

    /// Data rows in the file (records after the header), read without converting anything.
    static func countRows(_ step: SeedStep) throws -> Int {
        let reader = try CSVReader(path: step.path, displayName: displayPath(step.path), delimiter: step.delimiter)
        guard try reader.readRecord() else { return 0 }
        let width = reader.fieldCount
        var rows = 0
        while try reader.readRecord() {
            if !(width > 1 && isBlankLine(reader)) { rows += 1 }
        }
        return rows
    }

    /// Loads every row; returns the number of rows loaded, and the file's checksum when `computeChecksum` is set
    /// (hashed from the same read, so a large file is read once).
    func load() throws -> (rows: Int, checksum: String?) {
        let file = displayPath(step.path)
        func failure(_ line: Int?, _ message: String) -> SeedError {
            SeedError(file: file, line: line, column: nil, message: message)
        }
        let reader: CSVReader
        do {
            reader = try CSVReader(path: step.path, displayName: file, delimiter: step.delimiter, hashing: computeChecksum)
        } catch let error as CSVError {
            throw failure(nil, error.message)
        }
        let tableColumns = try database.columns(in: step.table)
        guard !tableColumns.isEmpty else { throw failure(nil, "table '\(step.table)' does not exist") }
        guard try readRecord(reader) else { throw failure(1, "the file is empty; a header row naming the columns is required") }

        // Header: every name must be a column of the table.
        let header = reader.strings()
        var targets: [ColumnInfo] = []
        var unknown: [String] = []
        var seen = Set<String>()
        for name in header {
            guard !name.isEmpty else { throw failure(reader.recordLine, "the header has an empty column name") }
            guard seen.insert(name.lowercased()).inserted else { throw failure(reader.recordLine, "the header names '\(name)' twice") }
            if let column = tableColumns.first(where: { $0.name.lowercased() == name.lowercased() }) {
                targets.append(column)
            } else {
                unknown.append(name)
            }
        }
        guard unknown.isEmpty else {
            throw failure(reader.recordLine, "the header names \(unknown.count == 1 ? "a column" : "columns") not in table '\(step.table)': "
                          + unknown.joined(separator: ", ") + " (the table has: " + tableColumns.map(\.name).joined(separator: ", ") + ")")
        }
        for configured in step.columns where !seen.contains(configured.name.lowercased()) {
            throw SeedError(file: step.location.path, line: step.location.line, column: nil,
                            message: "<column name=\"\(configured.name)\"> is not in the header of \(file)")
        }
        let keyIndexes = try step.key.map { key -> Int in
            guard let index = targets.firstIndex(where: { $0.name.lowercased() == key.lowercased() }) else {
                throw failure(reader.recordLine, "key column '\(key)' is not in the header")
            }
            return index
        }
        let kinds = targets.map { target in
            ValueKind(column: step.columns.first { $0.name.lowercased() == target.name.lowercased() },
                      declaredType: target.declaredType)
        }

        let insert: Statement
        do {
            insert = try database.prepare(insertSQL(targets.map(\.name)))
        } catch let error as DatabaseError {
            throw failure(nil, step.key.isEmpty ? error.message
                          : "key (\(step.key.joined(separator: ", "))) must be the primary key or have a UNIQUE index: \(error.message)")
        }
        var keyInsert: Statement?
        if step.mode == .sync {
            try database.execute("DROP TABLE IF EXISTS temp.strata_sync_keys")
            try database.execute("CREATE TEMP TABLE strata_sync_keys (" + keyIndexes.indices.map { "k\($0)" }.joined(separator: ", ") + ")")
            keyInsert = try database.prepare("INSERT INTO temp.strata_sync_keys VALUES (" + keyIndexes.map { _ in "?" }.joined(separator: ", ") + ")")
        }
        defer { if step.mode == .sync { try? database.execute("DROP TABLE IF EXISTS temp.strata_sync_keys") } }

        let dateBuffer = UnsafeMutablePointer<UInt8>.allocate(capacity: 64)
        defer { dateBuffer.deallocate() }
        var rows = 0
        let width = header.count
        while try readRecord(reader) {
            if reader.fieldCount != width {
                if width > 1 && Self.isBlankLine(reader) { continue }
                throw failure(reader.recordLine, "expected \(width) fields as in the header, found \(reader.fieldCount)")
            }
            for index in 0..<width {
                try bind(reader, index, kinds[index], targets[index], to: insert, at: Int32(index + 1), dateBuffer)
            }
            if let keyInsert {
                for (position, index) in keyIndexes.enumerated() {
                    try bind(reader, index, kinds[index], targets[index], to: keyInsert, at: Int32(position + 1), dateBuffer)
                }
            }
            do {
                try insert.run()
                try keyInsert?.run()
            } catch let error as DatabaseError {
                let key = keyIndexes.isEmpty ? "" : " (" + keyIndexes.map { "\(header[$0]) = \(display(reader, $0))" }.joined(separator: ", ") + ")"
                throw failure(reader.recordLine, "row rejected\(key): \(error.message)")
            }
            rows += 1
            if rows % Self.progressInterval == 0 { progress?(rows, reader.bytesConsumed, reader.totalBytes) }
        }
        if step.mode == .sync {
            let keys = keyIndexes.map { quoteIdentifier(targets[$0].name) }
            let tuple = keys.count == 1 ? keys[0] : "(" + keys.joined(separator: ", ") + ")"
            let selected = keyIndexes.indices.map { "k\($0)" }.joined(separator: ", ")
            do {
                try database.execute("DELETE FROM \(quoteIdentifier(step.table)) WHERE \(tuple) NOT IN (SELECT \(selected) FROM temp.strata_sync_keys)")
            } catch let error as DatabaseError {
                throw failure(nil, "sync could not delete rows missing from the file: \(error.message)")
            }
        }
        progress?(rows, reader.totalBytes, reader.totalBytes)
        return (rows, try reader.checksum())
    }

    private func readRecord(_ reader: CSVReader) throws -> Bool {
        do {
            return try reader.readRecord()
        } catch let error as CSVError {
            throw SeedError(file: error.file, line: error.line, column: error.column, message: error.message)
        }
    }

    static func isBlankLine(_ reader: CSVReader) -> Bool {
        reader.fieldCount == 1 && reader.field(0).bytes.isEmpty && !reader.field(0).isQuoted
    }

    private func insertSQL(_ columns: [String]) -> String {
        let table = quoteIdentifier(step.table)
        let names = columns.map(quoteIdentifier).joined(separator: ", ")
        let values = columns.map { _ in "?" }.joined(separator: ", ")
        let keys = step.key.map(quoteIdentifier).joined(separator: ", ")
        let base = "INSERT INTO \(table) (\(names)) VALUES (\(values))"
        switch step.mode {
        case .insert:
            return base
        case .replace:
            return "REPLACE INTO \(table) (\(names)) VALUES (\(values))"
        case .ignore:
            // ON CONFLICT DO NOTHING skips only uniqueness conflicts; NOT NULL and CHECK still fail loudly,
            // unlike INSERT OR IGNORE.
            return base + (step.key.isEmpty ? " ON CONFLICT DO NOTHING" : " ON CONFLICT (\(keys)) DO NOTHING")
        case .upsert, .sync:
            let keySet = Set(step.key.map { $0.lowercased() })
            let updates = columns.filter { !keySet.contains($0.lowercased()) }
                .map { "\(quoteIdentifier($0)) = excluded.\(quoteIdentifier($0))" }
            return base + " ON CONFLICT (\(keys)) DO " + (updates.isEmpty ? "NOTHING" : "UPDATE SET " + updates.joined(separator: ", "))
        }
    }

    private func display(_ reader: CSVReader, _ index: Int) -> String {
        let field = reader.field(index)
        if field.bytes.isEmpty && !field.isQuoted { return "NULL" }
        var text = String(decoding: reader.text(of: field), as: UTF8.self)
        if text.count > 60 { text = String(text.prefix(57)) + "..." }
        return "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }

    /// Converts field `index` of the current record and binds it; a value that does not convert is an error.
    @inline(__always)
    private func bind(_ reader: CSVReader, _ index: Int, _ kind: ValueKind, _ column: ColumnInfo,
                      to statement: Statement, at parameter: Int32, _ dateBuffer: UnsafeMutablePointer<UInt8>) throws {
        let field = reader.field(index)
        let bytes = reader.text(of: field)
        if !field.isQuoted && (bytes.isEmpty || isNullToken(bytes)) {
            if column.isNotNull {
                throw SeedError(file: displayPath(step.path), line: reader.recordLine, column: nil,
                    message: "column '\(column.name)' is NOT NULL but the value is NULL (an unquoted empty field is NULL; write \"\" for an empty string)")
            }
            statement.bindNull(at: parameter)
            return
        }
        switch kind {
        case .text, .untyped:
            statement.bind(text: bytes, at: parameter)
        case .integer:
            guard let value = FieldParser.integer(bytes) else { throw conversion(reader, index, column, kind) }
            statement.bind(int64: value, at: parameter)
        case .real:
            guard let value = FieldParser.real(bytes) else { throw conversion(reader, index, column, kind) }
            statement.bind(double: value, at: parameter)
        case .numeric:
            if let value = FieldParser.integer(bytes) { statement.bind(int64: value, at: parameter) }
            else if let value = FieldParser.real(bytes) { statement.bind(double: value, at: parameter) }
            else { throw conversion(reader, index, column, kind) }
        case .boolean:
            guard let value = FieldParser.boolean(bytes) else { throw conversion(reader, index, column, kind) }
            statement.bind(int64: value ? 1 : 0, at: parameter)
        case .blob(let format):
            guard let value = FieldParser.blob(bytes, format: format) else { throw conversion(reader, index, column, kind) }
            value.withUnsafeBufferPointer { statement.bind(blob: $0, at: parameter) }
        case .date(let inputUnix, let storage), .datetime(let inputUnix, let storage):
            let isDate: Bool
            if case .date = kind { isDate = true } else { isDate = false }
            var instant: ISO8601.Instant
            if inputUnix {
                guard let seconds = FieldParser.integer(bytes) else { throw conversion(reader, index, column, kind) }
                instant = ISO8601.Instant(seconds: seconds, nanoseconds: 0, hasTime: !isDate)
            } else {
                guard let parsed = ISO8601.parse(bytes: bytes) else { throw conversion(reader, index, column, kind) }
                instant = parsed
            }
            if isDate && instant.hasTime && (inputUnix ? instant.seconds % 86_400 != 0 : true) {
                throw conversion(reader, index, column, kind)
            }
            switch storage {
            case .unix:
                if instant.nanoseconds == 0 { statement.bind(int64: instant.seconds, at: parameter) }
                else { statement.bind(double: Double(instant.seconds) + Double(instant.nanoseconds) / 1e9, at: parameter) }
            case .text:
                let length = ISO8601.write(instant, includeTime: !isDate, into: dateBuffer)
                guard length > 0 else { throw conversion(reader, index, column, kind) }
                statement.bind(text: UnsafeBufferPointer(start: dateBuffer, count: length), at: parameter)
            }
        }
    }

    @inline(__always)
    private func isNullToken(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let token = step.nullToken, !token.isEmpty, bytes.count == token.utf8.count else { return false }
        return token.utf8.elementsEqual(bytes)
    }

    private func conversion(_ reader: CSVReader, _ index: Int, _ column: ColumnInfo, _ kind: ValueKind) -> SeedError {
        SeedError(file: displayPath(step.path), line: reader.recordLine, column: nil,
                  message: "column '\(column.name)': \(display(reader, index)) is not \(kind.name)")
    }
}
