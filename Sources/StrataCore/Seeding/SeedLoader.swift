#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A seed set that cannot be loaded: the file and line, and what is wrong (with the column and value).
public struct SeedError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The CSV file.
    public let file: String
    /// The 1-based line, where one row is at fault.
    public let line: Int?
    /// The 1-based column, where one field is at fault.
    public let column: Int?
    /// What is wrong, with the column and value.
    public let message: String

    /// Creates the error, naming what it knows of the place.
    public init(file: String, line: Int?, column: Int?, message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.message = message
    }

    /// The file, line and column, then the message.
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
            if let column = try Self.column(named: name, in: tableColumns, failure: { failure(reader.recordLine, $0) }) {
                guard seen.insert(column.name).inserted else { throw failure(reader.recordLine, "the header names '\(name)' twice") }
                targets.append(column)
            } else {
                guard seen.insert(name.sqliteFolded).inserted else { throw failure(reader.recordLine, "the header names '\(name)' twice") }
                unknown.append(name)
            }
        }
        guard unknown.isEmpty else {
            throw failure(reader.recordLine, "the header names \(unknown.count == 1 ? "a column" : "columns") not in table '\(step.table)': "
                          + unknown.joined(separator: ", ") + " (the table has: " + tableColumns.map(\.name).joined(separator: ", ") + ")")
        }
        // Each `<column>` and key column is found among the header's columns as header names are in the table.
        var configured: [Int: SeedColumn] = [:]
        for column in step.columns {
            let manifestFailure = { (message: String) in
                SeedError(file: step.location.path, line: step.location.line, column: nil, message: message)
            }
            guard let match = try Self.column(named: column.name, in: targets, failure: manifestFailure),
                  let index = targets.firstIndex(of: match) else {
                throw manifestFailure("<column name=\"\(column.name)\"> is not in the header of \(file)")
            }
            configured[index] = column
        }
        let keyIndexes = try step.key.map { key -> Int in
            guard let match = try Self.column(named: key, in: targets, failure: { failure(reader.recordLine, $0) }),
                  let index = targets.firstIndex(of: match) else {
                throw failure(reader.recordLine, "key column '\(key)' is not in the header")
            }
            return index
        }
        // A NULL never equals anything, so a row with a NULL key would never match the row it is meant to
        // update (a duplicate each time) and a sync would keep every stale row; key columns are refused NULL.
        let keyMatches = step.mode == .upsert || step.mode == .sync || ((step.mode == .ignore || step.mode == .replace) && !step.key.isEmpty)
        let plans = try targets.enumerated().map { index, column in
            let isKey = keyMatches && keyIndexes.contains(index)
            let conversion = try target.conversion(of: column, configured: configured[index])
            return FieldPlan(kind: conversion.kind, isNotNull: column.isNotNull || isKey, isKey: isKey,
                             fractionDigits: conversion.fractionDigits)
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
            throw try describe(rejection, keyIndexes: keyIndexes, header: header, targets: targets)
        }
    }

    /// The error for rows the database refused, naming the row's line and key as the file has them.
    private func describe(_ rejection: SeedRejection, keyIndexes: [Int], header: [String],
                          targets: [ColumnInfo]) throws -> SeedError {
        let file = displayPath(step.path)
        switch rejection.cause {
        case .transactionLost:
            return SeedError(file: file, line: rejection.line, column: nil,
                             message: "\(target.databaseName) rolled the transaction back after: \(rejection.error.message); nothing of this seed was kept")
        case .batch:
            return SeedError(file: file, line: rejection.line, column: nil, message: "rows rejected: \(rejection.error.message)")
        case .row, .duplicateKey:
            // The row is read again from its offset (or from an earlier row's, reading on past `rowsAfter` data
            // rows as `load` counts them), to show its key or value as the file writes it.
            let again = try CSVReader(path: step.path, displayName: file, delimiter: step.delimiter,
                                      offset: rejection.offset, line: rejection.line)
            var remaining = rejection.rowsAfter
            while true {
                guard try readRecord(again) else {
                    return SeedError(file: file, line: nil, column: nil, message: "row rejected: \(rejection.error.message)")
                }
                if header.count > 1 && Self.isBlankLine(again) { continue }
                if remaining == 0 { break }
                remaining -= 1
            }
            guard again.fieldCount == header.count else {
                return SeedError(file: file, line: again.recordLine, column: nil, message: "row rejected: \(rejection.error.message)")
            }
            if case .duplicateKey(let firstLine, let columns) = rejection.cause {
                let key = columns.map { name in
                    targets.firstIndex { $0.name == name }.map { "\(header[$0]) = \(FieldConverter.display(again, $0))" } ?? name
                }.joined(separator: ", ")
                return SeedError(file: file, line: again.recordLine, column: nil,
                                 message: "key (\(key)) is also on line \(firstLine): with mode=\"\(step.mode.rawValue)\" each key may appear once in the file (the later row would overwrite the earlier without a word)")
            }
            if let name = rejection.column, let index = targets.firstIndex(where: { $0.name == name }) {
                // The database refused this value (PostgreSQL parses what Strata passes on as text).
                let type = targets[index].declaredType.isEmpty ? "value of its type" : targets[index].declaredType
                return SeedError(file: file, line: again.recordLine, column: nil,
                                 message: "column '\(header[index])': \(FieldConverter.display(again, index)) is not a valid \(type) (\(target.databaseName): \(rejection.error.message))")
            }
            return rejected(again, keyIndexes, header, rejection.error)
        }
    }

    /// The table column `name` (from the file's header or the manifest) means: the one spelled exactly so, else
    /// the one equal to it ignoring ASCII case, as SQLite compares names; nil when there is none. PostgreSQL keeps
    /// `id` and `ID` apart, so a name that matches several columns only by case is refused rather than guessed.
    private static func column(named name: String, in columns: [ColumnInfo],
                               failure: (String) -> SeedError) throws -> ColumnInfo? {
        if let exact = columns.first(where: { $0.name == name }) { return exact }
        let matches = columns.filter { sqliteNamesEqual($0.name, name) }
        guard matches.count <= 1 else {
            throw failure("'\(name)' matches the columns " + matches.map { "'\($0.name)'" }.joined(separator: " and ")
                          + " only by letter case; write the name exactly as the column's")
        }
        return matches.first
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
