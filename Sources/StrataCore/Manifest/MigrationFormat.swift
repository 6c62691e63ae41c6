#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How a migration file is laid out.
///
/// Files written for goose, sql-migrate or dbmate hold an up section (run to apply the change) and a down section
/// (run to undo it). Run whole, the down section undoes the up section and the step is still recorded applied, so
/// the sections are split only where the manifest declares the format (`format="goose"`), and a `plain` file that
/// holds any of those tools' markers is refused.
public enum MigrationFormat: String, Sendable, Equatable, Codable, CaseIterable {
    /// Strata's own: the whole file runs.
    case plain
    /// [goose](https://github.com/pressly/goose): `-- +goose Up`, `-- +goose Down`, `-- +goose StatementBegin` /
    /// `StatementEnd`, `-- +goose NO TRANSACTION`.
    case goose
    /// [sql-migrate](https://github.com/rubenv/sql-migrate): `-- +migrate Up [notransaction]`, `-- +migrate Down`,
    /// `-- +migrate StatementBegin` / `StatementEnd`.
    case sqlMigrate = "sql-migrate"
    /// [dbmate](https://github.com/amacneil/dbmate): `-- migrate:up [transaction:false]`, `-- migrate:down`.
    case dbmate
}

/// The part of a migration file that runs: a byte range of the file, so the checksum stays that of the whole file
/// and error positions stay the file's own.
public struct MigrationSection: Sendable, Equatable {
    /// Byte offsets in the file. For `plain` the whole file (a UTF-8 BOM included); otherwise from the start of the
    /// line after the up marker to the start of the down marker's line (or the end of the file).
    public let range: Range<Int>
    /// The file's 1-based line at `range.lowerBound`. The range always starts a line, so columns need no offset.
    public let startLine: Int
    /// The file's last line inside the range (`startLine - 1` when the section is empty), for messages and `plan`.
    public let endLine: Int
    /// False when the file asks to run outside a transaction (`-- +goose NO TRANSACTION`,
    /// `-- +migrate Up notransaction`, `-- migrate:up transaction:false`).
    public let runsInTransaction: Bool
}

/// A migration file whose sections cannot be followed: a marker in a file declared `plain`, a missing or repeated
/// up marker, SQL before it, an unknown annotation or option. `line` is the file's 1-based line.
public struct MigrationFormatError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The 1-based line of the file where the problem is.
    public let line: Int
    /// What is wrong and what was expected.
    public let message: String

    /// The line and the message.
    public var description: String { "line \(line): \(message)" }
}

extension MigrationFormat {
    /// The section of `bytes` (a whole migration file) that applies it.
    ///
    /// Markers are recognised line by line, as the tools themselves do: `--` at the start of a line (after optional
    /// blanks), then the tool's marker, case-insensitively. `StatementBegin`/`StatementEnd` are checked for pairing
    /// and otherwise left in place: they are comments, and SQLite's parser finds statement ends by itself.
    /// - Throws: `MigrationFormatError` naming the line.
    public func upSection(of bytes: [UInt8]) throws -> MigrationSection {
        var scanner = SectionScanner(format: self)
        try bytes.withUnsafeBufferPointer { try scanner.feed($0) }
        return try scanner.finish()
    }

    /// The section of `bytes` (a whole migration file) that undoes it: from the line after the down marker to the end
    /// of the file; nil for a file without one (and for `plain`, whose down, if any, is a file of its own).
    /// - Throws: `MigrationFormatError` naming the line, as `upSection(of:)` does.
    public func downSection(of bytes: [UInt8]) throws -> MigrationSection? {
        var scanner = SectionScanner(format: self)
        try bytes.withUnsafeBufferPointer { try scanner.feed($0) }
        return try scanner.finishDown()
    }

    /// As `upSection(of:)`, reading the file a chunk at a time: memory stays constant whatever the file's size.
    /// - Throws: `MigrationFormatError`; one with line 0 when the file cannot be read.
    public func upSection(ofFileAt path: String) throws -> MigrationSection {
        try upSection(ofFileAt: path, chunkSize: 1 << 16)
    }

    func upSection(ofFileAt path: String, chunkSize: Int) throws -> MigrationSection {
        var scanner = try scanned(fileAt: path, chunkSize: chunkSize)
        return try scanner.finish()
    }

    /// Both sections of a file, read a chunk at a time: the up section, and the down section when there is one.
    public func sections(ofFileAt path: String) throws -> (up: MigrationSection, down: MigrationSection?) {
        var scanner = try scanned(fileAt: path, chunkSize: 1 << 16)
        let up = try scanner.finish()
        return (up, try scanner.finishDown())
    }

    private func scanned(fileAt path: String, chunkSize: Int) throws -> SectionScanner {
        if let problem = FileCheck.problem(at: path) {
            throw MigrationFormatError(line: 0, message: "cannot read the migration file (\(problem))")
        }
        var scanner = SectionScanner(format: self)
        do {
            let file = try RegularFile(path: path)
            while true {
                let chunk = try file.read(upTo: max(chunkSize, 1))
                if chunk.isEmpty { break }
                try chunk.withUnsafeBufferPointer { try scanner.feed($0) }
            }
        } catch let error as MigrationFormatError {
            throw error
        } catch {
            throw MigrationFormatError(line: 0, message: "cannot read the migration file (\(error))")
        }
        return scanner
    }

    /// The markers of an empty file in this format (what `strata new` writes after its comment header).
    var skeleton: String {
        switch self {
        case .plain: ""
        case .goose: "-- +goose Up\n\n-- +goose Down\n"
        case .sqlMigrate: "-- +migrate Up\n\n-- +migrate Down\n"
        case .dbmate: "-- migrate:up\n\n-- migrate:down\n"
        }
    }

    /// The tool's name as messages and the manifest write it.
    var toolName: String { rawValue }
}

/// Reads a migration file line by line, in chunks of any size, and finds its up section. Only the first
/// `prefixLimit` bytes of a line are kept (markers are short), so memory is constant.
struct SectionScanner {
    let format: MigrationFormat
    private static let prefixLimit = 512

    private var offset = 0
    private var line = 1
    private var lineStart = 0
    private var prefix: [UInt8] = []
    private var pendingCR = false
    /// The current line's first two non-blank bytes are not `--`: nothing more of it is kept.
    private var lineIsSQL = false
    private var nonBlank = 0

    private var upMarkerLine: Int?
    private var upStart: Int?
    private var downMarkerLine: Int?
    private var downStart: Int?
    private var upEnd: Int?
    private var blockLine: Int?
    private var firstSQLLine: Int?
    private var noTransaction = false
    /// The down marker's own "no transaction" option (sql-migrate's `notransaction`, dbmate's `transaction:false`).
    private var downNoTransaction = false
    /// goose's `NO TRANSACTION`: the whole file, both sections, runs outside a transaction.
    private var fileNoTransaction = false

    init(format: MigrationFormat) {
        self.format = format
        prefix.reserveCapacity(Self.prefixLimit)
    }

    mutating func feed(_ bytes: UnsafeBufferPointer<UInt8>) throws {
        guard let base = bytes.baseAddress else { return }
        let count = bytes.count
        var index = 0
        while index < count {
            let byte = base[index]
            if pendingCR {
                pendingCR = false
                if byte == 0x0A {
                    index += 1
                    offset += 1
                    try endLine(next: offset)
                    continue
                }
                try endLine(next: offset)
            }
            if byte == 0x0A {
                offset += 1
                try endLine(next: offset)
            } else if byte == 0x0D {
                offset += 1
                pendingCR = true
            } else if lineIsSQL {
                // The rest of a SQL line cannot hold a marker: skip to its end with memchr (most of a large file).
                let rest = count - index
                let newline = memchr(base + index, 0x0A, rest).map { UnsafePointer($0.assumingMemoryBound(to: UInt8.self)) - base } ?? count
                let carriage = memchr(base + index, 0x0D, newline - index).map { UnsafePointer($0.assumingMemoryBound(to: UInt8.self)) - base } ?? newline
                offset += carriage - index
                index = carriage
                continue
            } else {
                if prefix.count < Self.prefixLimit { prefix.append(byte) }
                offset += 1
                // A line is SQL as soon as its first two non-blank bytes are not `--` (a BOM is not text).
                let isBOM = lineStart == 0 && offset <= 3 && (byte == 0xEF || byte == 0xBB || byte == 0xBF)
                if !isBOM && byte != 0x20 && byte != 0x09 && byte != 0x0C && byte != 0x0B {
                    nonBlank += 1
                    if byte != 0x2D && nonBlank <= 2 { lineIsSQL = true }
                }
            }
            index += 1
        }
    }

    mutating func finish() throws -> MigrationSection {
        if pendingCR || lineStart < offset {
            pendingCR = false
            try endLine(next: offset)
        }
        let total = offset
        // `line` is now one past the last line; a file that ends with a line break has no text on it.
        let lastLine = line - 1
        guard format != .plain else {
            return MigrationSection(range: 0..<total, startLine: 1, endLine: lastLine, runsInTransaction: true)
        }
        guard let upMarkerLine, let upStart else {
            throw MigrationFormatError(line: firstSQLLine ?? 1,
                message: "no \(upMarker) marker: a \(format.toolName) file must have one before its SQL")
        }
        if let blockLine {
            throw MigrationFormatError(line: blockLine, message: "\(blockBegin) has no matching \(blockEnd)")
        }
        return MigrationSection(range: upStart..<(upEnd ?? total), startLine: upMarkerLine + 1,
                                endLine: downMarkerLine.map { $0 - 1 } ?? lastLine, runsInTransaction: !noTransaction)
    }

    /// After `finish()`'s checks: the down section, nil without a down marker.
    mutating func finishDown() throws -> MigrationSection? {
        _ = try finish()
        return downSection
    }

    /// The down section found so far (after `finish()`), nil without a down marker.
    private var downSection: MigrationSection? {
        guard let downMarkerLine, let downStart else { return nil }
        return MigrationSection(range: downStart..<max(offset, downStart), startLine: downMarkerLine + 1, endLine: line - 1,
                                runsInTransaction: !(downNoTransaction || fileNoTransaction))
    }

    // MARK: One line

    private mutating func endLine(next: Int) throws {
        defer {
            line += 1
            lineStart = next
            prefix.removeAll(keepingCapacity: true)
            lineIsSQL = false
            nonBlank = 0
        }
        if lineIsSQL {
            if upMarkerLine == nil && firstSQLLine == nil { firstSQLLine = line }
            return
        }
        var text = prefix[...]
        if lineStart == 0, text.starts(with: [0xEF, 0xBB, 0xBF]) { text = text.dropFirst(3) }
        text = text.drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0C || $0 == 0x0B }
        guard !text.isEmpty else { return }
        guard text.starts(with: [0x2D, 0x2D]) else {   // not a `--` comment: SQL
            if upMarkerLine == nil && firstSQLLine == nil { firstSQLLine = line }
            return
        }
        guard let marker = Marker(comment: text.dropFirst(2)) else { return }
        let shown = String(decoding: text, as: UTF8.self).trimmingWhitespace()
        guard marker.tool == format else {
            if format == .plain {
                throw MigrationFormatError(line: line, message: "'\(shown)' is a \(marker.tool.toolName) section marker: "
                    + "run whole, the file's down section would undo its up section; declare the format with "
                    + "format=\"\(marker.tool.toolName)\" on its <migrations> or <migration> so only the up section runs")
            }
            throw MigrationFormatError(line: line, message: "'\(shown)' is a \(marker.tool.toolName) marker, but the "
                + "file is declared format=\"\(format.toolName)\"")
        }
        try apply(marker, shown: shown, next: next)
    }

    private mutating func apply(_ marker: Marker, shown: String, next: Int) throws {
        func fail(_ message: String) -> MigrationFormatError { MigrationFormatError(line: line, message: message) }
        switch marker.command {
        case "up":
            if let upMarkerLine { throw fail("a second \(upMarker) (the first is on line \(upMarkerLine)); Strata runs one up section") }
            if let downMarkerLine { throw fail("\(upMarker) after the \(downMarker) on line \(downMarkerLine)") }
            if let firstSQLLine {
                throw MigrationFormatError(line: firstSQLLine, message: "SQL before the \(upMarker) marker on line \(line) belongs to no section")
            }
            for option in marker.options {
                switch (format, option) {
                case (.sqlMigrate, "notransaction"), (.dbmate, "transaction:false"): noTransaction = true
                case (.dbmate, "transaction:true"): break
                default: throw fail("unknown \(format.toolName) option '\(option)' in '\(shown)'")
                }
            }
            upMarkerLine = line
            upStart = next
        case "down":
            guard upMarkerLine != nil else { throw fail("\(downMarker) before any \(upMarker)") }
            if let downMarkerLine { throw fail("a second \(downMarker) (the first is on line \(downMarkerLine))") }
            if let blockLine { throw fail("\(downMarker) inside the \(blockBegin) of line \(blockLine)") }
            for option in marker.options {
                switch (format, option) {
                case (.sqlMigrate, "notransaction"), (.dbmate, "transaction:false"): downNoTransaction = true
                case (.dbmate, "transaction:true"): break
                default: throw fail("unknown \(format.toolName) option '\(option)' in '\(shown)'")
                }
            }
            downMarkerLine = line
            downStart = next
            upEnd = lineStart
        case "statementbegin" where format != .dbmate:
            guard upMarkerLine != nil else { throw fail("\(blockBegin) before any \(upMarker)") }
            if let blockLine { throw fail("\(blockBegin) inside the \(blockBegin) of line \(blockLine)") }
            blockLine = line
        case "statementend" where format != .dbmate:
            guard blockLine != nil else { throw fail("\(blockEnd) without a \(blockBegin)") }
            blockLine = nil
        case "no transaction" where format == .goose:
            noTransaction = true
            fileNoTransaction = true
        case "envsub off" where format == .goose, "envsubst off" where format == .goose:
            break
        case "envsub on" where format == .goose, "envsubst on" where format == .goose:
            throw fail("'\(shown)' asks goose to substitute environment variables into the SQL; Strata runs SQL as written")
        default:
            throw fail("unknown \(format.toolName) annotation '\(shown)'")
        }
    }

    private var upMarker: String { Marker.spelling(format, "Up") }
    private var downMarker: String { Marker.spelling(format, "Down") }
    private var blockBegin: String { Marker.spelling(format, "StatementBegin") }
    private var blockEnd: String { Marker.spelling(format, "StatementEnd") }
}

/// A marker line of one of the tools, read from the text after `--`.
private struct Marker {
    let tool: MigrationFormat
    /// Lower-cased, blanks collapsed: "up", "down", "statementbegin", "no transaction", …
    let command: String
    let options: [String]

    init?(comment: ArraySlice<UInt8>) {
        let words = String(decoding: comment, as: UTF8.self).lowercased()
            .split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard let first = words.first else { return nil }
        switch first {
        case "+goose":
            tool = .goose
            command = words.dropFirst().joined(separator: " ")
            options = []
        case "+migrate":
            tool = .sqlMigrate
            command = words.count > 1 ? words[1] : ""
            options = Array(words.dropFirst(2))
        case "migrate:up", "migrate:down":
            tool = .dbmate
            command = String(first.dropFirst("migrate:".count))
            options = Array(words.dropFirst())
        default:
            return nil
        }
    }

    static func spelling(_ format: MigrationFormat, _ command: String) -> String {
        switch format {
        case .goose: "'-- +goose \(command)'"
        case .sqlMigrate: "'-- +migrate \(command)'"
        case .dbmate, .plain: "'-- migrate:\(command.lowercased())'"
        }
    }
}
