import Foundation

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
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: return "\(path) is a directory"
        case S_IFIFO: return "\(path) is a FIFO (named pipe), not a regular file"
        case S_IFCHR: return "\(path) is a character device, not a regular file"
        case S_IFBLK: return "\(path) is a block device, not a regular file"
        case S_IFSOCK: return "\(path) is a socket, not a regular file"
        default: return "\(path) is not a regular file"
        }
        return access(path, R_OK) == 0 ? nil : "permission denied: \(path)"
    }

    /// The file's size in bytes (following symbolic links), or nil when it cannot be read.
    static func size(at path: String) -> Int? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int(exactly: info.st_size)
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
        if let size = size(at: path), size > limit { return .failure(.tooLarge(size)) }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return .failure(.unreadable("\(path): \(String(cString: strerror(errno)))")) }
        defer { close(descriptor) }
        let capacity = limit + 1
        var bytes = [UInt8](repeating: 0, count: capacity)
        var count = 0
        while count < capacity {
            let got = bytes.withUnsafeMutableBytes { buffer -> Int in
                guard let base = buffer.baseAddress else { return 0 }
                return Foundation.read(descriptor, base + count, capacity - count)
            }
            if got < 0 && errno == EINTR { continue }
            guard got >= 0 else { return .failure(.unreadable("\(path): \(String(cString: strerror(errno)))")) }
            if got == 0 { break }
            count += got
        }
        guard count <= limit else { return .failure(.tooLarge(nil)) }
        bytes.removeSubrange(count...)
        return .success(bytes)
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
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: String(cString: strerror(errno))])
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
