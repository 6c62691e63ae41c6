import CCrypto
import Foundation

/// SHA-256 of a file's content with line endings normalised, so an editor switching CRLF and LF
/// (or adding a UTF-8 BOM) is not drift, while any other change is.
public enum Checksum {
    /// Bumped whenever the normalisation changes, so old history rows can be told apart.
    public static let algorithmVersion = 1

    /// Hex SHA-256 of normalised `bytes`.
    public static func of(_ bytes: [UInt8]) throws -> String {
        let hasher = try NormalizingHasher()
        bytes.withUnsafeBufferPointer { hasher.update($0) }
        return try hasher.finish()
    }

    /// Hex SHA-256 of the normalised content of a file, read in chunks so any size works in constant memory.
    public static func ofFile(atPath path: String) throws -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw ChecksumError(message: "cannot read \(path)")
        }
        defer { try? handle.close() }
        let hasher = try NormalizingHasher()
        while true {
            let chunk = try handle.read(upToCount: 1 << 20) ?? Data()
            if chunk.isEmpty { break }
            chunk.withUnsafeBytes { hasher.update($0.bindMemory(to: UInt8.self)) }
        }
        return try hasher.finish()
    }

    /// The normalised text (BOM removed, CRLF and CR turned into LF), as recorded in history.
    public static func normalizedText(_ bytes: [UInt8]) -> String {
        let body = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? bytes.dropFirst(3) : bytes[...]
        var previousWasCR = false
        return body.withUnsafeBufferPointer { input in
            String(unsafeUninitializedCapacity: input.count) { output in
                guard let target = output.baseAddress else { return 0 }
                return normalizeLineEndings(input, into: target, previousWasCR: &previousWasCR)
            }
        }
    }

    /// Copies `input` to `output` (room for `input.count` bytes) with CRLF and lone CR turned into LF; returns the
    /// bytes written. `previousWasCR` carries a CR at the end of one chunk over to the next, so chunked input
    /// normalises exactly as the whole would.
    static func normalizeLineEndings(_ input: UnsafeBufferPointer<UInt8>, into output: UnsafeMutablePointer<UInt8>,
                                     previousWasCR: inout Bool) -> Int {
        var written = 0
        for byte in input {
            if byte == 0x0D {
                output[written] = 0x0A
                written += 1
                previousWasCR = true
            } else {
                if !(byte == 0x0A && previousWasCR) {
                    output[written] = byte
                    written += 1
                }
                previousWasCR = false
            }
        }
        return written
    }
}

public struct ChecksumError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

/// Feeds normalised bytes into libcrypto's SHA-256, carrying a trailing CR across chunk boundaries.
final class NormalizingHasher {
    private let context: OpaquePointer
    private var atStart = true
    private var pendingBOM: [UInt8] = []
    private var lastWasCR = false
    private var scratch = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
    private var scratchCapacity = 1

    init() throws {
        guard let context = EVP_MD_CTX_new() else { throw ChecksumError(message: "libcrypto could not allocate a digest") }
        guard EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else {
            EVP_MD_CTX_free(context)
            throw ChecksumError(message: "libcrypto could not start SHA-256")
        }
        self.context = context
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
                held.withUnsafeBufferPointer { feed($0[...]) }
            } else {
                return
            }
        }
        feed(bytes)
    }

    private func feed(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) {
        let input = UnsafeBufferPointer(rebasing: bytes)
        guard let base = input.baseAddress, !input.isEmpty else { return }
        let count = input.count
        // Fast path: no CR anywhere in the chunk means nothing to normalise.
        if memchr(base, 0x0D, count) == nil && !(lastWasCR && base[0] == 0x0A) {
            _ = EVP_DigestUpdate(context, base, count)
            lastWasCR = false
            return
        }
        if scratchCapacity < count {
            scratch.deallocate()
            scratch = .allocate(capacity: count)
            scratchCapacity = count
        }
        let written = Checksum.normalizeLineEndings(input, into: scratch, previousWasCR: &lastWasCR)
        _ = EVP_DigestUpdate(context, scratch, written)
    }

    func finish() throws -> String {
        if !pendingBOM.isEmpty {
            let held = pendingBOM
            pendingBOM = []
            held.withUnsafeBufferPointer { feed($0[...]) }
        }
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
