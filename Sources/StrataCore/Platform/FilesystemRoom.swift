#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How much room a filesystem has, for judging ahead whether a file will fit (a rehearsal's copy, a backup).
package enum FilesystemRoom {
    /// Bytes an unprivileged process may still write on the filesystem holding `path`; nil when it cannot be told.
    package static func freeBytes(_ path: String) -> Int64? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        let (bytes, overflow) = Int64(clamping: info.f_bavail).multipliedReportingOverflow(by: Int64(clamping: info.f_frsize))
        return overflow ? Int64.max : bytes
    }

    /// The filesystem's block (fragment) size, which every file's room is a multiple of; 4096 when it cannot be told.
    package static func blockSize(_ path: String) -> Int64 {
        var info = statvfs()
        return statvfs(path, &info) == 0 && info.f_frsize > 0 ? Int64(clamping: info.f_frsize) : 4096
    }

    /// `bytes` rounded up to whole blocks of `block`, or `Int64.max` past it.
    package static func roundedUp(_ bytes: Int64, block: Int64) -> Int64 {
        guard block > 0 else { return bytes }
        let blocks = bytes / block + (bytes % block == 0 ? 0 : 1)
        let (rounded, overflow) = blocks.multipliedReportingOverflow(by: block)
        return overflow ? Int64.max : rounded
    }

    /// "512 bytes", "48 KiB", "2.1 MiB".
    package static func size(_ bytes: Int64) -> String {
        let units = ["bytes", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(bytes) bytes" : printfFormat(value < 10 ? "%.1f" : "%.0f", value) + " " + units[unit]
    }
}
