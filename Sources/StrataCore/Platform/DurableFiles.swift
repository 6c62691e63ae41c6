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

/// The file operations a backup and a restore need to be durable and never overwrite anything: creating a file that
/// must not exist yet, syncing a file and the directory that names it, and giving a finished file its name only if
/// no other file has it.
package enum DurableFiles {
    /// A file operation that failed, with the path and the system's reason.
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
        /// `errno` of the failed call.
        package let code: Int32

        init(_ what: String, _ path: String, _ code: Int32) {
            description = "cannot \(what) \(displayPath(path)): \(String(cString: strerror(code)))"
            self.code = code
        }
    }

    /// Creates an empty file at `path` with `mode`, failing if anything is there (so two processes never share one
    /// temporary file). The process's umask still applies, as it does to the files SQLite creates.
    package static func createNew(_ path: String, mode: UInt32) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode_t(mode))
        guard descriptor >= 0 else { throw Failure("create", path, errno) }
        // The umask may only have narrowed it; an explicit chmod would not widen what the umask took away either.
        close(descriptor)
    }

    /// Flushes the file's data and size to the disk.
    package static func sync(file path: String) throws {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Failure("open", path, errno) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw Failure("sync", path, errno) }
    }

    /// Flushes a directory, so the names created, renamed or removed in it survive a crash.
    package static func sync(directory path: String) throws {
        let descriptor = open(path.isEmpty ? "." : path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Failure("open the directory", path, errno) }
        defer { close(descriptor) }
        // Some filesystems cannot sync a directory (EINVAL): their names are as durable as they will be.
        guard fsync(descriptor) == 0 || errno == EINVAL else { throw Failure("sync the directory", path, errno) }
    }

    /// Gives the finished file `temporary` the name `name()` returns in `directory`, never replacing a file that
    /// has it: a hard link is made (which fails when the name is taken) and the temporary name removed. When the
    /// name is taken, `name()` is asked again: a name holding the time changes with the clock, so two processes
    /// finishing in the same millisecond get two names. Returns the path given; the directory is synced.
    ///
    /// On a filesystem without hard links (FAT, some network filesystems) the file is renamed after checking that
    /// the name is free, which two processes naming a file in the same instant could race.
    package static func publish(_ temporary: String, in directory: String, as name: () -> String) throws -> String {
        var attempts = 0
        while true {
            let path = PathComponents.appending(name(), to: directory)
            if link(temporary, path) == 0 {
                unlink(temporary)
                try sync(directory: directory)
                return path
            }
            let code = errno
            switch code {
            case EEXIST:
                attempts += 1
                // The clock has not moved on yet: wait for it, a millisecond at a time, for at most 5 s.
                guard attempts < 5000 else { throw Failure("name the file (every name tried was taken)", path, code) }
                sleepBlocking(for: .milliseconds(1))
            case EPERM, EOPNOTSUPP, ENOSYS, EXDEV, EMLINK:
                guard access(path, F_OK) != 0 else {
                    attempts += 1
                    guard attempts < 5000 else { throw Failure("name the file (every name tried was taken)", path, EEXIST) }
                    sleepBlocking(for: .milliseconds(1))
                    continue
                }
                guard rename(temporary, path) == 0 else { throw Failure("rename to", path, errno) }
                try sync(directory: directory)
                return path
            default:
                throw Failure("name the file", path, code)
            }
        }
    }

    /// Removes a SQLite database file and the journal, WAL and shared-memory files SQLite may have made beside it.
    package static func removeDatabase(_ path: String) {
        for suffix in ["", "-journal", "-wal", "-shm"] { unlink(path + suffix) }
    }

    /// The mode bits (permissions) of the file at `path`; nil when it cannot be read.
    package static func mode(of path: String) -> UInt32? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return UInt32(info.st_mode) & 0o7777
    }

    /// The size of the file at `path` in bytes; nil when it cannot be read.
    package static func size(of path: String) -> Int? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int(info.st_size)
    }

    /// Whether the two paths name one file (the same device and inode); false when either cannot be read.
    package static func sameFile(_ first: String, _ second: String) -> Bool {
        var a = stat(), b = stat()
        guard stat(first, &a) == 0, stat(second, &b) == 0 else { return false }
        return a.st_dev == b.st_dev && a.st_ino == b.st_ino
    }

    /// The file `path` names once every symbolic link is followed (as SQLite opens it), or nil when that file does
    /// not exist.
    package static func resolved(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Whether anything (a file, a directory, a dangling symbolic link) has the name `path`.
    package static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// A name no other process picks: `prefix`, this process's id and random hex digits.
    package static func uniqueName(_ prefix: String) -> String {
        "\(prefix)\(getpid())-\(String(UInt64.random(in: 0...UInt64.max), radix: 16))"
    }

    /// The time as file names hold it: `20260301T120000.123Z` (UTC, to the millisecond, every field fixed width,
    /// so names sort by time).
    package static func stamp(_ date: Date) -> String {
        String(isoMilliseconds(date).filter { $0 != "-" && $0 != ":" })
    }

    /// `2026-03-01T12:00:00.123Z`: ISO-8601 UTC, always with the milliseconds (`.000` too), as a stamp holds them.
    package static func isoMilliseconds(_ date: Date) -> String {
        let text = ISO8601.format(date)                 // 2026-03-01T12:00:00Z or …:00.123Z
        return text.contains(".") ? text : String(text.dropLast()) + ".000Z"
    }
}
