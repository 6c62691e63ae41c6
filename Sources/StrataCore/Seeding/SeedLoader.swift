import Foundation

/// A seed set that cannot be loaded: the file and line, and what is wrong (with the column and value).
public struct SeedError: Error, Sendable, Equatable, CustomStringConvertible {
    public let file: String
    public let line: Int?
    public let column: Int?
    public let message: String

    public init(file: String, line: Int?, column: Int?, message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.message = message
    }

    public var description: String { placeDescription(file, line, column, message) }
}

/// Loads one CSV seed set into its table inside the caller's transaction, streaming the file.
struct SeedLoader {
    /// How often (in rows) progress is reported.
    static let progressInterval = 50_000

    let step: SeedStep
    let target: any SeedTarget
    var progress: ((_ rows: Int, _ bytesRead: Int, _ totalBytes: Int) -> Void)?
    /// When set, the file's checksum is computed from the same read and stored here.
    var computeChecksum = false

    init(step: SeedStep, target: any SeedTarget,
         progress: ((_ rows: Int, _ bytesRead: Int, _ totalBytes: Int) -> Void)? = nil) {
        self.step = step
        self.target = target
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
        let tableColumns = target.columns
        guard !tableColumns.isEmpty else { throw failure(nil, "table '\(step.table)' does not exist") }
        guard try readRecord(reader) else { throw failure(1, "the file is empty; a header row naming the columns is required") }

        // Header: every name must be a column of the table.
        let header = reader.strings()
        var targets: [ColumnInfo] = []
        var unknown: [String] = []
        var seen = Set<String>()
        for name in header {
            guard !name.isEmpty else { throw failure(reader.recordLine, "the header has an empty column name") }
            guard seen.insert(name.sqliteFolded).inserted else { throw failure(reader.recordLine, "the header names '\(name)' twice") }
            if let column = tableColumns.named(name) {
                targets.append(column)
            } else {
                unknown.append(name)
            }
        }
        guard unknown.isEmpty else {
            throw failure(reader.recordLine, "the header names \(unknown.count == 1 ? "a column" : "columns") not in table '\(step.table)': "
                          + unknown.joined(separator: ", ") + " (the table has: " + tableColumns.map(\.name).joined(separator: ", ") + ")")
        }
        for configured in step.columns where !seen.contains(configured.name.sqliteFolded) {
            throw SeedError(file: step.location.path, line: step.location.line, column: nil,
                            message: "<column name=\"\(configured.name)\"> is not in the header of \(file)")
        }
        let keyIndexes = try step.key.map { key -> Int in
            guard let index = targets.firstIndex(where: { sqliteNamesEqual($0.name, key) }) else {
                throw failure(reader.recordLine, "key column '\(key)' is not in the header")
            }
            return index
        }
        // A NULL never equals anything, so a row with a NULL key would never match the row it is meant to
        // update (a duplicate each time) and a sync would keep every stale row; key columns are refused NULL.
        let keyMatches = step.mode == .upsert || step.mode == .sync || ((step.mode == .ignore || step.mode == .replace) && !step.key.isEmpty)
        let plans = targets.enumerated().map { index, target in
            let isKey = keyMatches && keyIndexes.contains(index)
            return FieldPlan(kind: ValueKind(column: step.columns.first { sqliteNamesEqual($0.name, target.name) },
                                             declaredType: target.declaredType, affinity: target.affinity),
                             isNotNull: target.isNotNull || isKey, isKey: isKey)
        }
        let sink: any SeedSink
        do {
            sink = try target.sink(columns: targets, keyIndexes: keyIndexes)
        } catch let error as DatabaseError where error.kind == .syntax {
            // The database refused the seed's statements: for a seed with a key, because the key is not one of
            // the table's (other failures, such as a busy or full database, are passed on as they are).
            throw failure(nil, step.key.isEmpty ? error.message
                          : "key (\(step.key.joined(separator: ", "))) must be the primary key or have a UNIQUE index: \(error.message)")
        }
        defer { sink.close() }
        var converter = FieldConverter(plans: plans, names: header, nullToken: step.nullToken, file: file)
        let width = header.count
        var rows = 0
        do {
            while try readRecord(reader) {
                if reader.fieldCount != width {
                    if width > 1 && Self.isBlankLine(reader) { continue }
                    throw failure(reader.recordLine, "expected \(width) fields as in the header, found \(reader.fieldCount)")
                }
                try converter.appendRecord(reader, to: sink)
                rows += 1
                if rows % Self.progressInterval == 0 { progress?(rows, reader.bytesConsumed, reader.totalBytes) }
            }
            let written = try sink.finish()
            progress?(rows, reader.totalBytes, reader.totalBytes)
            return (written, try reader.checksum())
        } catch let rejection as SeedRejection {
            throw try describe(rejection, keyIndexes: keyIndexes, header: header)
        }
    }

    /// The error for rows the database refused, naming the row's line and key as the file has them.
    private func describe(_ rejection: SeedRejection, keyIndexes: [Int], header: [String]) throws -> SeedError {
        let file = displayPath(step.path)
        switch rejection.cause {
        case .transactionLost:
            return SeedError(file: file, line: rejection.line, column: nil,
                             message: "\(target.databaseName) rolled the transaction back after: \(rejection.error.message); nothing of this seed was kept")
        case .batch:
            return SeedError(file: file, line: rejection.line, column: nil, message: "rows rejected: \(rejection.error.message)")
        case .row:
            // The row is read again from its offset, to show its key as the file writes it.
            let again = try CSVReader(path: step.path, displayName: file, delimiter: step.delimiter,
                                      offset: rejection.offset, line: rejection.line)
            guard try readRecord(again), again.fieldCount == header.count else {
                return SeedError(file: file, line: rejection.line, column: nil, message: "row rejected: \(rejection.error.message)")
            }
            return rejected(again, keyIndexes, header, rejection.error)
        }
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

    private func rejected(_ reader: CSVReader, _ keyIndexes: [Int], _ header: [String], _ error: DatabaseError) -> SeedError {
        let key = keyIndexes.isEmpty ? ""
            : " (" + keyIndexes.map { "\(header[$0]) = \(FieldConverter.display(reader, $0))" }.joined(separator: ", ") + ")"
        return SeedError(file: displayPath(step.path), line: reader.recordLine, column: nil,
                         message: "row rejected\(key): \(error.message)")
    }

}
