import CCrypto
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

/// SHA-256 of a file's content with line endings normalised where they are layout, so an editor switching CRLF and
/// LF (or adding a UTF-8 BOM) is not drift, while any other change is, including a line ending inside a SQL string
/// or a quoted CSV field, which is data.
///
/// A version names the rules, whatever database computes it, and a record is always compared under the version it
/// was written with. 1: BOM removed, every CRLF and CR turned into LF. 2: BOM removed, CRLF and CR turned into LF
/// only outside quoted CSV fields and outside SQL literals as SQLite reads them (strings, quoted identifiers;
/// `SQLScanner`). 3: as 2, with SQL read by PostgreSQL's rules (dollar quotes, `E'…'` escapes, COPY data;
/// `PostgresLiterals`); CSV as in 2.
public enum Checksum {
    /// The version seed records get, and the default here. A migration file's record gets its database's version
    /// (`SQLDialect.checksumVersion`: the rules its SQL is read by).
    public static let algorithmVersion = 2

    /// The newest version this Strata computes; a record of a later one was written by a newer Strata.
    public static let newestVersion = 3

    /// What a file holds, which decides where its line endings are data.
    public enum Content: Sendable {
        /// A SQL migration file, or a CSV seed file.
        case sql, csv
    }

    /// Hex SHA-256 of normalised `bytes`.
    public static func of(_ bytes: [UInt8], content: Content = .sql, version: Int = algorithmVersion) throws -> String {
        let hasher = try NormalizingHasher(content: content, version: version)
        bytes.withUnsafeBufferPointer { hasher.update($0) }
        return try hasher.finish()
    }

    /// Hex SHA-256 of the normalised content of a file, read in chunks so any size works in constant memory.
    /// `version` is the one a history record was written with, so old records compare as they were made.
    public static func ofFile(atPath path: String, content: Content, version: Int = algorithmVersion) throws -> String {
        let file: RegularFile
        do { file = try RegularFile(path: path) } catch { throw ChecksumError(message: "\(error)") }
        let hasher = try NormalizingHasher(content: content, version: version)
        while true {
            let chunk: [UInt8]
            do { chunk = try file.read(upTo: 1 << 20) } catch { throw ChecksumError(message: "cannot read \(path): \(error)") }
            if chunk.isEmpty { break }
            chunk.withUnsafeBufferPointer { hasher.update($0) }
        }
        return try hasher.finish()
    }

    /// The normalised text (BOM removed, line endings as `version` normalises them), as recorded in history.
    public static func normalizedText(_ bytes: [UInt8], content: Content = .sql, version: Int = algorithmVersion) -> String {
        let body = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? bytes.dropFirst(3) : bytes[...]
        var normalizer = LineEndingNormalizer(content: content, version: version)
        return body.withUnsafeBufferPointer { input in
            String(unsafeUninitializedCapacity: input.count + 1) { output in
                guard let target = output.baseAddress else { return 0 }
                let written = normalizer.normalize(input, into: target)
                return written + normalizer.finish(into: target + written)
            }
        }
    }

    static func isKnown(_ version: Int) -> Bool { version >= 1 && version <= newestVersion }
}

/// A file whose checksum cannot be computed (it cannot be read), or a checksum version this build does not know.
public struct ChecksumError: Error, CustomStringConvertible {
    /// What went wrong, naming the file.
    public let message: String
    /// The message.
    public var description: String { message }
}

/// Turns CRLF and lone CR into LF where they are layout, carrying its state across chunks so chunked input
/// normalises exactly as the whole would.
struct LineEndingNormalizer {
    /// Tells literal bytes from layout: SQL's lexical state (SQLite's, or PostgreSQL's in `postgres`), or for CSV
    /// whether an odd number of quotes precedes (in RFC 4180 text a quote only opens, closes or doubles inside a
    /// quoted field, so parity is inside-ness).
    private enum Literals {
        case everywhereLayout
        case sql(SQLScanner, offset: Int)
        case postgres
        case csv(insideQuotes: Bool)
    }

    private var literals: Literals
    /// PostgreSQL's lexical state, kept out of `literals` so its buffers are changed in place.
    private var postgres = PostgresLiterals()
    private var previousWasNormalizedCR = false
    /// A CR that ended a chunk inside a `--` comment: SQLite ends such a comment only at LF, so a lone CR there is
    /// data (the next line is still comment) while CRLF is layout; the next chunk's first byte decides.
    private var pendingCommentCR = false
    /// A CR that ended a chunk where lines end only at LF (PostgreSQL's COPY data): a CRLF is layout, a lone CR data
    /// (`PostgresLiterals.CarriageReturn.layoutBeforeLineFeed`); the next chunk's first byte, or the text's end
    /// (layout: the last line ends there either way), decides.
    private var pendingCopyCR = false

    init(content: Checksum.Content, version: Int) {
        switch (version, content) {
        case (1, _): literals = .everywhereLayout
        case (_, .csv): literals = .csv(insideQuotes: false)
        case (3, .sql): literals = .postgres
        case (_, .sql): literals = .sql(SQLScanner(), offset: 0)
        }
    }

    /// True when no byte of `input` needs rewriting, so it can be used as it is (after `advance(over:)`).
    func isUnchanged(_ input: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = input.baseAddress, !input.isEmpty else { return true }
        return !pendingCommentCR && !pendingCopyCR && memchr(base, 0x0D, input.count) == nil && !(previousWasNormalizedCR && base[0] == 0x0A)
    }

    /// Moves the literal state over bytes that are used unchanged.
    mutating func advance(over input: UnsafeBufferPointer<UInt8>) {
        previousWasNormalizedCR = false
        moveLiteralState(over: input, to: input.count)
    }

    /// Copies `input` to `output` (room for `input.count + 1` bytes) with layout line endings normalised; returns the
    /// bytes written.
    mutating func normalize(_ input: UnsafeBufferPointer<UInt8>, into output: UnsafeMutablePointer<UInt8>) -> Int {
        if case .postgres = literals { return normalizePostgres(input, into: output) }
        var written = 0
        var scanned = 0
        if pendingCommentCR {
            pendingCommentCR = false
            let crlf = input.first == 0x0A
            output[0] = crlf ? 0x0A : 0x0D
            written = 1
            previousWasNormalizedCR = crlf
        }
        for (index, byte) in input.enumerated() {
            if byte == 0x0D || (byte == 0x0A && previousWasNormalizedCR) {
                moveLiteralState(over: input, from: scanned, to: index)
                scanned = index
            }
            if byte == 0x0D && !isInsideLiteral {
                if isInsideLineComment {
                    guard index + 1 < input.count else {
                        pendingCommentCR = true
                        continue
                    }
                    if input[index + 1] != 0x0A {
                        // A lone CR does not end a `--` comment for SQLite: the line after it is comment too.
                        output[written] = 0x0D
                        written += 1
                        previousWasNormalizedCR = false
                        continue
                    }
                }
                output[written] = 0x0A
                written += 1
                previousWasNormalizedCR = true
                continue
            }
            if !(byte == 0x0A && previousWasNormalizedCR) {
                output[written] = byte
                written += 1
            }
            previousWasNormalizedCR = false
        }
        moveLiteralState(over: input, from: scanned, to: input.count)
        return written
    }

    /// `normalize` for PostgreSQL's rules: each CR is decided as it is read (`PostgresLiterals`), and a lone CR in a
    /// `--` comment is layout, since PostgreSQL ends the comment there as at LF.
    private mutating func normalizePostgres(_ input: UnsafeBufferPointer<UInt8>, into output: UnsafeMutablePointer<UInt8>) -> Int {
        guard let base = input.baseAddress else { return 0 }
        var written = 0
        if pendingCopyCR {
            pendingCopyCR = false
            let isData = input[0] != 0x0A
            output[0] = isData ? 0x0D : 0x0A
            written = 1
            previousWasNormalizedCR = !isData
        }
        var index = 0
        while index < input.count {
            let carriageReturn = memchr(base + index, 0x0D, input.count - index)
                .map { base.distance(to: $0.assumingMemoryBound(to: UInt8.self)) } ?? input.count
            if index < carriageReturn {
                // The bytes up to the CR go as they are, but for the LF of a CRLF whose CR became LF.
                let from = previousWasNormalizedCR && input[index] == 0x0A ? index + 1 : index
                (output + written).update(from: base + from, count: carriageReturn - from)
                written += carriageReturn - from
                previousWasNormalizedCR = false
                postgres.advance(over: UnsafeBufferPointer(rebasing: input[index..<carriageReturn]))
            }
            guard carriageReturn < input.count else { break }
            let isData: Bool
            switch postgres.advanceOverCarriageReturn() {
            case .data: isData = true
            case .layout: isData = false
            case .layoutBeforeLineFeed:
                guard carriageReturn + 1 < input.count else {
                    pendingCopyCR = true
                    return written
                }
                isData = input[carriageReturn + 1] != 0x0A
            }
            output[written] = isData ? 0x0D : 0x0A
            written += 1
            previousWasNormalizedCR = !isData
            index = carriageReturn + 1
        }
        return written
    }

    /// At the end of the text: a CR still waiting to be decided is data, but for one in COPY data (where the last
    /// line ends at the end of the text whatever ends it). Returns the bytes written (0 or 1).
    mutating func finish(into output: UnsafeMutablePointer<UInt8>) -> Int {
        if pendingCopyCR {
            pendingCopyCR = false
            output[0] = 0x0A
            return 1
        }
        guard pendingCommentCR else { return 0 }
        pendingCommentCR = false
        output[0] = 0x0D
        return 1
    }

    private var isInsideLineComment: Bool {
        if case .sql(let scanner, _) = literals { return scanner.lexical == .lineComment }
        return false
    }

    private var isInsideLiteral: Bool {
        switch literals {
        case .everywhereLayout, .postgres: false // PostgreSQL's CRs are decided in `normalizePostgres`
        case .sql(let scanner, _): scanner.isInsideLiteral
        case .csv(let inside): inside
        }
    }

    private mutating func moveLiteralState(over input: UnsafeBufferPointer<UInt8>, from start: Int = 0, to end: Int) {
        guard start < end else { return }
        switch literals {
        case .everywhereLayout:
            break
        case .postgres:
            postgres.advance(over: UnsafeBufferPointer(rebasing: input[start..<end]))
        case .sql(var scanner, let offset):
            let part = UnsafeBufferPointer(rebasing: input[start..<end])
            var index = 0
            while index < part.count { _ = scanner.nextStatement(in: part, base: offset, index: &index) }
            literals = .sql(scanner, offset: offset + part.count)
        case .csv(var inside):
            // Quote to quote with memchr: most CSV bytes are not quotes, and this runs over every byte hashed.
            guard let base = input.baseAddress else { return }
            var cursor = base + start
            let limit = base + end
            while cursor < limit, let found = memchr(cursor, Int32(UInt8(ascii: "\"")), limit - cursor) {
                inside.toggle()
                cursor = UnsafePointer(found.assumingMemoryBound(to: UInt8.self)) + 1
            }
            literals = .csv(insideQuotes: inside)
        }
    }
}

/// Feeds normalised bytes into libcrypto's SHA-256.
final class NormalizingHasher {
    private let context: OpaquePointer
    private var normalizer: LineEndingNormalizer
    private var atStart = true
    private var pendingBOM: [UInt8] = []
    private var scratch = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
    private var scratchCapacity = 1

    init(content: Checksum.Content, version: Int = Checksum.algorithmVersion) throws {
        guard Checksum.isKnown(version) else {
            throw ChecksumError(message: "checksum version \(version) was written by a newer Strata; upgrade Strata to compare it")
        }
        guard let context = EVP_MD_CTX_new() else { throw ChecksumError(message: "libcrypto could not allocate a digest") }
        guard EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else {
            EVP_MD_CTX_free(context)
            throw ChecksumError(message: "libcrypto could not start SHA-256")
        }
        self.context = context
        normalizer = LineEndingNormalizer(content: content, version: version)
    }

    deinit {
        EVP_MD_CTX_free(context)
        scratch.deallocate()
    }

    func update(_ input: UnsafeBufferPointer<UInt8>) {
        var bytes = input[...]
        if atStart {
            // The BOM may arrive split over chunks; hold bytes until we know.
            let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
            while pendingBOM.count < 3, let first = bytes.first {
                pendingBOM.append(first)
                bytes = bytes.dropFirst()
                if !bom.starts(with: pendingBOM) { break }
            }
            if pendingBOM == bom {
                atStart = false
                pendingBOM = []
            } else if !bom.starts(with: pendingBOM) {
                atStart = false
                let held = pendingBOM
                pendingBOM = []
                held.withUnsafeBufferPointer { feed($0) }
            } else {
                return
            }
        }
        feed(UnsafeBufferPointer(rebasing: bytes))
    }

    private func feed(_ input: UnsafeBufferPointer<UInt8>) {
        guard let base = input.baseAddress, !input.isEmpty else { return }
        let count = input.count
        // Fast path: nothing to normalise in the chunk.
        if normalizer.isUnchanged(input) {
            normalizer.advance(over: input)
            _ = EVP_DigestUpdate(context, base, count)
            return
        }
        if scratchCapacity < count + 1 {
            scratch.deallocate()
            scratch = .allocate(capacity: count + 1)
            scratchCapacity = count + 1
        }
        let written = normalizer.normalize(input, into: scratch)
        _ = EVP_DigestUpdate(context, scratch, written)
    }

    func finish() throws -> String {
        if !pendingBOM.isEmpty {
            let held = pendingBOM
            pendingBOM = []
            held.withUnsafeBufferPointer { feed($0) }
        }
        let flushed = normalizer.finish(into: scratch)
        if flushed > 0 { _ = EVP_DigestUpdate(context, scratch, flushed) }
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        guard EVP_DigestFinal_ex(context, &digest, &length) == 1, length == 32 else {
            throw ChecksumError(message: "libcrypto could not finish SHA-256")
        }
        return digest.map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }
}
