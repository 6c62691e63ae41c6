#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
private let systemRead = Glibc.read
#elseif canImport(Darwin)
import Darwin
private let systemRead = Darwin.read
#endif

/// A regular file opened for reading in chunks. Anything else (a FIFO, a device such as `/dev/zero`, a directory)
/// is refused when opening, because reading it would block forever, never end, or mean nothing as SQL or CSV.
package final class RegularFile {
    package struct OpenError: Error, CustomStringConvertible {
        package let description: String
    }

    private let descriptor: Int32
    /// The file's size when it was opened.
    package let size: Int

    package init(path: String) throws {
        // O_NONBLOCK: opening a FIFO must not wait for a writer before we can tell what it is.
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw OpenError(description: "cannot read \(path): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw OpenError(description: "cannot read \(path): \(reason)")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            close(descriptor)
            throw OpenError(description: "cannot read \(path): it is \(Self.kind(info.st_mode)), not a regular file")
        }
        self.descriptor = descriptor
        size = Int(info.st_size)
    }

    deinit { close(descriptor) }

    /// Up to `count` bytes; empty at the end of the file.
    package func read(upTo count: Int) throws -> [UInt8] {
        // No larger than the file (plus one byte to see its end): a small file does not cost a whole chunk.
        var bytes = [UInt8](repeating: 0, count: max(1, min(count, size + 1)))
        let got = bytes.withUnsafeMutableBytes { raw -> Int in
            while true {
                let result = systemRead(descriptor, raw.baseAddress, raw.count)
                if result >= 0 || errno != EINTR { return result }
            }
        }
        guard got >= 0 else { throw OpenError(description: "read failed: \(String(cString: strerror(errno)))") }
        bytes.removeSubrange(got...)
        return bytes
    }

    /// The rest of the file.
    package func readToEnd() throws -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(size)
        while true {
            let chunk = try read(upTo: 1 << 20)
            if chunk.isEmpty { return bytes }
            bytes.append(contentsOf: chunk)
        }
    }

    /// "a directory", "a FIFO", … for messages.
    package static func kind(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: "a directory"
        case S_IFIFO: "a FIFO"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        case S_IFLNK: "a symbolic link"
        default: "not a regular file"
        }
    }
}
