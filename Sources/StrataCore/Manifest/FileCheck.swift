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

/// What a path is, learnt from `stat`/`lstat` without opening it: opening a FIFO blocks until a writer comes and
/// reading `/dev/zero` never ends, so anything that is not a regular file is refused before it is read.
enum FileCheck {
    /// Why `path` cannot be a migration, seed or manifest, or nil when it is a readable regular file (or a symbolic
    /// link to one). The reason names `path` as given.
    static func problem(at path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else {
            let error = errno
            var link = stat()
            if error == ENOENT, lstat(path, &link) == 0, link.st_mode & S_IFMT == S_IFLNK {
                let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) ?? "?"
                return "\(path) is a symbolic link to '\(target)', which does not exist"
            }
            switch error {
            case ENOENT, ENOTDIR: return "no such file: \(path)"
            case EACCES: return "permission denied: \(path)"
            default: return "\(path): \(String(cString: strerror(error)))"
            }
        }
        guard info.st_mode & S_IFMT == S_IFREG else { return "\(path) is \(RegularFile.kind(info.st_mode)), not a regular file" }
        return access(path, R_OK) == 0 ? nil : "permission denied: \(path)"
    }

    /// Whether `path` is a directory or a symbolic link to one (what `FileManager.fileExists(atPath:isDirectory:)`
    /// answers, without its platform-dependent `ObjCBool`).
    static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }

    /// Device and inode: the same file under any name, so a cycle through a symbolic link is still a cycle.
    struct Identity: Hashable {
        let device: UInt64
        let inode: UInt64
    }

    static func identity(of path: String) -> Identity? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Identity(device: UInt64(truncatingIfNeeded: info.st_dev), inode: UInt64(truncatingIfNeeded: info.st_ino))
    }

    /// Reads a regular file of at most `limit` bytes: the size is checked with `stat` before reading, and at most
    /// `limit + 1` bytes are read, so a file that grows meanwhile cannot make the reader hold more than that.
    static func read(_ path: String, limit: Int) -> Result<[UInt8], ReadFailure> {
        if let problem = problem(at: path) { return .failure(.unreadable(problem)) }
        do {
            let file = try RegularFile(path: path)
            guard file.size <= limit else { return .failure(.tooLarge(file.size)) }
            var bytes: [UInt8] = []
            while bytes.count <= limit {
                let chunk = try file.read(upTo: limit + 1 - bytes.count)
                if chunk.isEmpty { break }
                bytes += chunk
            }
            return bytes.count <= limit ? .success(bytes) : .failure(.tooLarge(nil))
        } catch {
            return .failure(.unreadable("\(error)"))
        }
    }

    enum ReadFailure: Error {
        /// Why the file cannot be read (from `problem(at:)` or the failing call).
        case unreadable(String)
        /// Larger than the limit: its size when known, nil when it grew past the limit while being read.
        case tooLarge(Int?)
    }

    /// The names in a directory as raw bytes: a name need not be UTF-8, and one that is not must be reported,
    /// not dropped (FileManager leaves such names out or mangles them).
    static func rawEntries(of directory: String) throws -> [[UInt8]] {
        guard let handle = opendir(directory) else {
            throw RegularFile.OpenError(description: String(cString: strerror(errno)))
        }
        defer { closedir(handle) }
        var names: [[UInt8]] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in Array(raw.prefix { $0 != 0 }) }
            names.append(name)
        }
        return names
    }

    /// A file name for a message: valid UTF-8 as it is, anything else with each byte that is not printable ASCII
    /// written `\xHH`.
    static func displayName(_ name: [UInt8]) -> String {
        if let text = String(validating: name, as: UTF8.self) { return text }
        return name.map { byte in
            (0x20..<0x7F).contains(byte) && byte != UInt8(ascii: "\\")
                ? String(UnicodeScalar(byte)) : "\\x" + String(byte, radix: 16, uppercase: true).leftPaddedHex
        }.joined()
    }
}

private extension String {
    var leftPaddedHex: String { count < 2 ? "0" + self : self }
}
