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
    /// Rows per multi-row INSERT; measured here, 64 beat 32 by a few percent.
    static let maximumBatch = 64

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
        /// The database may roll the whole transaction back after some errors (disk full, I/O error, out of
        /// memory, interrupt); replaying rows after that would commit each on its own, so the seed stops instead.
        func stopIfTransactionLost(_ error: DatabaseError, line: Int?) throws {
            if target.transactionLost {
                throw failure(line, "\(target.databaseName) rolled the transaction back after: \(error.message); nothing of this seed was kept")
            }
        }

        // Rows go in batches through one multi-row INSERT: a third less time in SQLite than row by row.
        // Sync mode also records keys per row, so it stays row by row.
        let width = header.count
        let batchSize = step.mode == .sync ? 1 : max(1, min(Self.maximumBatch, target.maximumParameters / width))
        let names = targets.map(\.name)
        let single: any PreparedStatement
        let batch: (any PreparedStatement)?
        do {
            single = try target.insertStatement(columns: names, rows: 1)
            batch = batchSize > 1 ? try target.insertStatement(columns: names, rows: batchSize) : nil
        } catch let error as DatabaseError {
            throw failure(nil, step.key.isEmpty ? error.message
                          : "key (\(step.key.joined(separator: ", "))) must be the primary key or have a UNIQUE index: \(error.message)")
        }
        defer { target.finish() }
        let keyInsert = step.mode == .sync ? try target.keyRecorder(keyColumns: keyIndexes.map { targets[$0] }) : nil

        var binder = FieldBinder(plans: plans, names: header, nullToken: step.nullToken, file: file)

        // In `ignore` mode a row whose key exists is skipped: what was loaded is what SQLite inserted, counted from
        // each statement's changes (which leave out what triggers do).
        let countsSkips = step.mode == .ignore
        var skipped = 0

        /// Inserts `count` rows one at a time from a file offset, so a failure names its exact line.
        func replay(from offset: Int, line: Int, count: Int) throws {
            let again = try CSVReader(path: step.path, displayName: file, delimiter: step.delimiter, offset: offset, line: line)
            var done = 0
            while done < count, try readRecord(again) {
                if width > 1 && Self.isBlankLine(again) { continue }
                try binder.bindRecord(again, to: single, row: 0)
                do {
                    try single.run()
                } catch let error as DatabaseError {
                    try stopIfTransactionLost(error, line: again.recordLine)
                    throw rejected(again, keyIndexes, header, error)
                }
                if countsSkips { skipped += 1 - target.changes }
                binder.ran()
                done += 1
            }
        }

        var rows = 0
        var inBatch = 0
        var batchOffset = 0
        var batchLine = 0
        while try readRecord(reader) {
            if reader.fieldCount != width {
                if width > 1 && Self.isBlankLine(reader) { continue }
                throw failure(reader.recordLine, "expected \(width) fields as in the header, found \(reader.fieldCount)")
            }
            if let batch {
                if inBatch == 0 {
                    batchOffset = reader.recordOffset
                    batchLine = reader.recordLine
                }
                try binder.bindRecord(reader, to: batch, row: inBatch)
                inBatch += 1
                if inBatch == batchSize {
                    do {
                        try batch.run()
                    } catch let error as DatabaseError {
                        // The database undid the whole statement; replaying the batch row by row finds the culprit.
                        binder.ran()
                        try stopIfTransactionLost(error, line: batchLine)
                        try replay(from: batchOffset, line: batchLine, count: batchSize)
                        throw failure(batchLine, "rows rejected: \(error.message)")
                    }
                    if countsSkips { skipped += batchSize - target.changes }
                    binder.ran()
                    inBatch = 0
                }
            } else {
                try binder.bindRecord(reader, to: single, row: 0)
                if let keyInsert { try binder.bindFields(keyIndexes, of: reader, to: keyInsert) }
                do {
                    try single.run()
                    if countsSkips { skipped += 1 - target.changes }
                    try keyInsert?.run()
                } catch let error as DatabaseError {
                    try stopIfTransactionLost(error, line: reader.recordLine)
                    throw rejected(reader, keyIndexes, header, error)
                }
                binder.ran()
            }
            rows += 1
            if rows % Self.progressInterval == 0 { progress?(rows, reader.bytesConsumed, reader.totalBytes) }
        }
        if inBatch > 0 {
            // The last, partial batch: bound values are dropped and the rows inserted one by one.
            binder.ran()
            try replay(from: batchOffset, line: batchLine, count: inBatch)
        }
        if step.mode == .sync {
            try target.deleteRowsNotRecorded(keyColumns: keyIndexes.map { targets[$0].name })
        }
        progress?(rows, reader.totalBytes, reader.totalBytes)
        return (rows - skipped, try reader.checksum())
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
            : " (" + keyIndexes.map { "\(header[$0]) = \(FieldBinder.display(reader, $0))" }.joined(separator: ", ") + ")"
        return SeedError(file: displayPath(step.path), line: reader.recordLine, column: nil,
                         message: "row rejected\(key): \(error.message)")
    }

}
