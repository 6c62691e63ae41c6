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

/// A malformed CSV file, with the physical place (lines count breaks inside quoted fields).
public struct CSVError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The CSV file.
    public let file: String
    /// The 1-based physical line.
    public let line: Int
    /// The 1-based column (field) in the record.
    public let column: Int
    /// What is wrong and what was expected.
    public let message: String

    /// The file, line and column, then the message.
    public var description: String { placeDescription(file, line, column, message) }
}

/// Where one field lies in the reader's buffer.
struct FieldSlot {
    var start: Int
    var end: Int
    var isQuoted: Bool
    var hasEscapedQuotes: Bool
}

/// The current record as plain pointers, so hot loops read fields without touching the reader's stored
/// properties (each such access costs a dynamic exclusivity check). Valid until the next `readRecord()`.
struct CSVRecord {
    let buffer: UnsafeMutablePointer<UInt8>
    let slots: UnsafeMutablePointer<FieldSlot>
    let count: Int

    @inline(__always)
    func field(_ index: Int) -> CSVField {
        let slot = slots[index]
        return CSVField(bytes: UnsafeBufferPointer(start: buffer + slot.start, count: slot.end - slot.start),
                        isQuoted: slot.isQuoted, hasEscapedQuotes: slot.hasEscapedQuotes)
    }
}

/// One field of the current record; valid until the next `readRecord()`.
struct CSVField {
    let bytes: UnsafeBufferPointer<UInt8>
    /// The field was written in quotes: `""` is the empty string, while an unquoted empty field is NULL.
    let isQuoted: Bool
    /// The quoted field contains doubled quotes that `CSVReader.text(of:)` must undo.
    let hasEscapedQuotes: Bool
}

/// A streaming RFC 4180 reader: constant memory whatever the file size (bounded by the longest record),
/// quoted fields with delimiters, doubled quotes and line breaks, LF / CRLF / lone CR, a UTF-8 BOM, and
/// strict errors for field-count mismatches, unterminated or stray quotes, and invalid UTF-8.
final class CSVReader {
    static let chunkSize = 1 << 20
    /// Bytes read per refill; tests and the fuzzer use tiny chunks to exercise records that span refills.
    let chunkSize: Int
    /// A single record larger than this is refused, so a file without line breaks or with an unterminated quote
    /// cannot take unbounded memory (documented in the README's Seeds section).
    static let maximumRecordSize = 64 << 20
    /// This reader's record limit (`maximumRecordSize`; tests use a small one).
    let recordLimit: Int
    /// True when the last parse stopped for more data inside a quoted field: the hint when the limit is hit.
    private var waitingInQuote = false

    let path: String
    let displayName: String
    let delimiter: UInt8
    let totalBytes: Int
    private let descriptor: Int32
    private var buffer: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    var bufferCapacity: Int { capacity }
    private var dataEnd = 0
    private var position = 0
    private var endOfFile = false
    private var atFileStart = true
    /// Bytes of the file before `buffer[0]`.
    private var bufferOffset = 0
    /// Physical line (1-based) where the next record starts.
    private var nextLine = 1
    /// Physical line where the current record starts.
    private(set) var recordLine = 0
    /// Byte offset in the file where the current record starts.
    private(set) var recordOffset = 0

    private var slots: UnsafeMutablePointer<FieldSlot>
    private var slotCapacity = 64
    /// The fields of the record last read.
    private(set) var record: CSVRecord
    var fieldCount: Int { record.count }
    private var scratch = UnsafeMutablePointer<UInt8>.allocate(capacity: 256)
    private var scratchCapacity = 256
    private let hasher: NormalizingHasher?

    /// Opens `path`; when `hashing`, every byte read also feeds the migration checksum (see `checksum()`).
    /// `offset` and `line` start reading mid-file at a record boundary found by an earlier reader.
    init(path: String, displayName: String? = nil, delimiter: UInt8 = UInt8(ascii: ","), hashing: Bool = false,
         offset: Int = 0, line: Int = 1, chunkSize: Int = CSVReader.chunkSize,
         recordLimit: Int = CSVReader.maximumRecordSize) throws {
        self.chunkSize = max(chunkSize, 1)
        self.recordLimit = recordLimit
        self.path = path
        self.displayName = displayName ?? path
        self.delimiter = delimiter
        // Made before the file is opened: a throw after it would leave the descriptor and buffers to no deinit.
        hasher = hashing ? try NormalizingHasher(content: .csv) : nil
        descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw CSVError(file: displayName ?? path, line: 0, column: 0,
                           message: "cannot open: \(String(cString: strerror(errno)))")
        }
        var info = stat()
        totalBytes = fstat(descriptor, &info) == 0 ? Int(info.st_size) : 0
        if offset > 0 {
            lseek(descriptor, off_t(offset), SEEK_SET)
            bufferOffset = offset
            atFileStart = false
            nextLine = line
        }
        capacity = self.chunkSize * 2
        buffer = .allocate(capacity: capacity)
        slots = .allocate(capacity: slotCapacity)
        record = CSVRecord(buffer: buffer, slots: slots, count: 0)
    }

    deinit {
        close(descriptor)
        buffer.deallocate()
        scratch.deallocate()
        slots.deallocate()
    }

    /// Bytes of the file consumed so far.
    var bytesConsumed: Int { bufferOffset + position }

    /// The checksum of everything read, once the whole file has been read.
    func checksum() throws -> String? {
        try hasher?.finish()
    }

    func field(_ index: Int) -> CSVField { record.field(index) }

    /// The field's text with doubled quotes undone; valid until the next call.
    func text(of field: CSVField) -> UnsafeBufferPointer<UInt8> {
        guard field.hasEscapedQuotes else { return field.bytes }
        if field.bytes.count > scratchCapacity {
            scratch.deallocate()
            scratchCapacity = field.bytes.count
            scratch = .allocate(capacity: scratchCapacity)
        }
        var count = 0
        var skipNext = false
        for byte in field.bytes {
            if skipNext { skipNext = false; continue }
            scratch[count] = byte
            count += 1
            if byte == UInt8(ascii: "\"") { skipNext = true }
        }
        return UnsafeBufferPointer(start: scratch, count: count)
    }

    /// The current record's fields as Swift strings (header rows, tests).
    func strings() -> [String] {
        (0..<fieldCount).map { String(decoding: text(of: field($0)), as: UTF8.self) }
    }

    /// Reads the next record; false at the end of the file.
    func readRecord() throws -> Bool {
        while true {
            if atFileStart {
                // The BOM check needs three bytes, which a small first read may not deliver.
                repeat { try fill() } while dataEnd < 3 && !endOfFile
                if dataEnd - position >= 3 && buffer[0] == 0xEF && buffer[1] == 0xBB && buffer[2] == 0xBF { position = 3 }
                atFileStart = false
            }
            if position >= dataEnd && endOfFile { return false }
            switch try parseRecord() {
            case .record(let end, let lines, let count):
                record = CSVRecord(buffer: buffer, slots: slots, count: count)
                try validateUTF8(from: position, to: end)
                recordLine = nextLine
                recordOffset = bufferOffset + position
                nextLine += lines
                position = end
                return true
            case .needMore:
                try fill()
                waitingInQuote = false
            }
        }
    }

    private enum ParseResult {
        case record(end: Int, lines: Int, fields: Int)
        case needMore
    }

    /// Parses one record at `position` without modifying the buffer, so it can restart after a refill.
    private func parseRecord() throws -> ParseResult {
        let quote = UInt8(ascii: "\"")
        let lf: UInt8 = 0x0A, cr: UInt8 = 0x0D
        let delimiter = self.delimiter
        let buffer = self.buffer
        let dataEnd = self.dataEnd
        let endOfFile = self.endOfFile
        var p = position
        var lines = 0
        var count = 0
        var slots = self.slots
        var capacity = slotCapacity
        defer {
            self.slots = slots
            slotCapacity = capacity
        }

        func append(start: Int, end: Int, quoted: Bool, escaped: Bool) {
            if count == capacity {
                let larger = UnsafeMutablePointer<FieldSlot>.allocate(capacity: capacity * 2)
                larger.moveInitialize(from: slots, count: count)
                slots.deallocate()
                slots = larger
                capacity *= 2
            }
            (slots + count).initialize(to: FieldSlot(start: start, end: end, isQuoted: quoted, hasEscapedQuotes: escaped))
            count += 1
        }

        /// Where a record ends after a line break at `p`, or nil when more data is needed to know.
        func lineEnd(at p: Int) -> Int? {
            if buffer[p] == lf { return p + 1 }
            if p + 1 < dataEnd { return buffer[p + 1] == lf ? p + 2 : p + 1 }
            return endOfFile ? p + 1 : nil
        }

        while true {
            if p < dataEnd && buffer[p] == quote {
                let contentStart = p + 1
                var q = contentStart
                var hasEscapes = false
                while true {
                    guard q < dataEnd else {
                        if endOfFile { throw error(at: p, "unterminated quoted field (the quote opened here is never closed)") }
                        waitingInQuote = true
                        return .needMore
                    }
                    let byte = buffer[q]
                    if byte == quote {
                        if q + 1 < dataEnd {
                            if buffer[q + 1] == quote { hasEscapes = true; q += 2; continue }
                        } else if !endOfFile {
                            return .needMore
                        }
                        break
                    } else if byte == lf {
                        if buffer[q - 1] != cr { lines += 1 }
                    } else if byte == cr {
                        lines += 1
                    }
                    q += 1
                }
                append(start: contentStart, end: q, quoted: true, escaped: hasEscapes)
                p = q + 1
                guard p < dataEnd else {
                    if endOfFile { return .record(end: p, lines: lines + 1, fields: count) }
                    return .needMore
                }
                let next = buffer[p]
                if next == delimiter { p += 1; continue }
                if next == lf || next == cr {
                    guard let end = lineEnd(at: p) else { return .needMore }
                    return .record(end: end, lines: lines + 1, fields: count)
                }
                throw error(at: p, "unexpected character after a closing quote (a quote inside a quoted field must be doubled)")
            } else {
                var q = p
                while q < dataEnd {
                    let byte = buffer[q]
                    if byte == delimiter || byte == lf || byte == cr { break }
                    if byte == quote { throw error(at: q, "stray quote in an unquoted field (quote the whole field and double the quote)") }
                    q += 1
                }
                guard q < dataEnd else {
                    guard endOfFile else { return .needMore }
                    append(start: p, end: q, quoted: false, escaped: false)
                    return .record(end: q, lines: lines + 1, fields: count)
                }
                append(start: p, end: q, quoted: false, escaped: false)
                if buffer[q] == delimiter { p = q + 1; continue }
                guard let end = lineEnd(at: q) else { return .needMore }
                return .record(end: end, lines: lines + 1, fields: count)
            }
        }
    }

    /// `64 MiB`, or bytes for small (test) limits.
    private static func describe(_ bytes: Int) -> String {
        bytes >= 1 << 20 && bytes % (1 << 20) == 0 ? "\(bytes >> 20) MiB" : "\(bytes) bytes"
    }

    /// Moves the unparsed tail to the front and reads more; grows the buffer only for a record larger than it.
    private func fill() throws {
        guard !endOfFile else { return }
        if position > 0 {
            let remaining = dataEnd - position
            if remaining > 0 { (buffer).update(from: buffer + position, count: remaining) }
            bufferOffset += position
            dataEnd = remaining
            position = 0
        }
        if capacity - dataEnd < chunkSize {
            guard capacity < recordLimit else {
                throw error(at: 0, "a record longer than the limit of \(Self.describe(recordLimit)) "
                            + (waitingInQuote ? "(a quoted field goes on past it: is its closing quote missing?)"
                                              : "(no line break within it: is this a CSV file with line breaks?)"))
            }
            let larger = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity * 2)
            larger.update(from: buffer, count: dataEnd)
            buffer.deallocate()
            buffer = larger
            capacity *= 2
        }
        let count = read(descriptor, buffer + dataEnd, capacity - dataEnd)
        guard count >= 0 else {
            throw CSVError(file: displayName, line: nextLine, column: 1, message: "read failed: \(String(cString: strerror(errno)))")
        }
        if count == 0 {
            endOfFile = true
        } else {
            hasher?.update(UnsafeBufferPointer(start: buffer + dataEnd, count: count))
            dataEnd += count
        }
    }

    private func validateUTF8(from start: Int, to end: Int) throws {
        let buffer = self.buffer
        var i = start
        // Fast path: ASCII eight bytes at a time.
        while i + 8 <= end {
            let word = UnsafeRawPointer(buffer + i).loadUnaligned(as: UInt64.self)
            if word & 0x8080_8080_8080_8080 != 0 { break }
            i += 8
        }
        while i < end {
            let byte = buffer[i]
            if byte < 0x80 { i += 1; continue }
            let length: Int
            var low: UInt8 = 0x80, high: UInt8 = 0xBF
            switch byte {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; low = 0xA0
            case 0xE1...0xEC, 0xEE, 0xEF: length = 3
            case 0xED: length = 3; high = 0x9F
            case 0xF0: length = 4; low = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; high = 0x8F
            default: throw error(at: i, "invalid UTF-8 (byte 0x\(String(byte, radix: 16, uppercase: true)))")
            }
            guard i + length <= end else { throw error(at: i, "invalid UTF-8 (truncated sequence)") }
            for k in 1..<length {
                let next = buffer[i + k]
                let (lo, hi) = k == 1 ? (low, high) : (UInt8(0x80), UInt8(0xBF))
                guard next >= lo && next <= hi else { throw error(at: i, "invalid UTF-8 (bad continuation byte)") }
            }
            i += length
        }
    }

    /// An error at a buffer offset inside the current record, with its physical line and character column.
    private func error(at offset: Int, _ message: String) -> CSVError {
        var place = TextPosition(line: nextLine)
        for i in position..<max(position, offset) { place.advance(over: buffer[i]) }
        return CSVError(file: displayName, line: place.line, column: place.column, message: message)
    }
}
