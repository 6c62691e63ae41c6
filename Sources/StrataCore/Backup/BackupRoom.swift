#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether the backup `migrate` would take first fits where it goes, judged before a rehearsal copies anything
/// (`Migrator.rehearse`): what `BackupDirectory.take` would refuse or run out of room for.
///
/// The backup is a copy of the database file (`BackupSource.backupByteCount`), written into the directory, or into
/// the nearest existing directory above it, which `take` creates it in. Older backups beyond `keep` are removed only
/// once the new one is in place, so they give it no room. Beside the copy SQLite writes a journal of its one write
/// transaction (only its header: no page of an empty file is journaled), and the check opens a `-wal` and `-shm`
/// beside a copy of a WAL database: `besideCopy` allows for those. A copy larger than the free space would fail;
/// one within `besideCopy` of it is not known; the rest fits.
package enum BackupRoom {
    /// Room allowed beside the copy while it is written and checked.
    package static let besideCopy: Int64 = 64 << 10

    package static func judge(_ options: BackupOptions, source: any BackupSource) -> RehearsedBackup {
        let directory = options.directory
        let shown = displayPath(directory)
        func outcome(_ outcome: RehearsedBackup.Outcome, _ note: String, bytes: Int64? = nil, free: Int64? = nil) -> RehearsedBackup {
            RehearsedBackup(directory: directory, outcome: outcome, bytes: bytes, free: free, note: note)
        }
        guard let base = source.backupBaseName else {
            return outcome(.wouldFail, "the database is not a file (in memory or temporary): migrate has nothing to back up into \(shown) and stops")
        }
        if let keep = options.keep, keep < 1 {
            return outcome(.wouldFail, "keep=\(keep): a backup directory keeps at least the backup just taken")
        }
        let place: String
        switch existingDirectory(directory) {
        case .success(let found): place = found
        case .failure(let problem): return outcome(.wouldFail, "could not back up \(base) into \(shown): \(problem.reason)")
        }
        guard access(place, W_OK | X_OK) == 0 else {
            let reason = String(cString: strerror(errno))
            return outcome(.wouldFail, "could not back up \(base) into \(shown): \(displayPath(place)) cannot be written (\(reason))")
        }
        guard let bytes = source.backupByteCount else {
            return outcome(.notKnown, "the size of \(base) cannot be read, so whether its backup fits \(shown) is not known")
        }
        guard let free = FilesystemRoom.freeBytes(place) else {
            return outcome(.notKnown, "the free space of \(displayPath(place)) cannot be read, so whether the backup of \(base) fits it is not known", bytes: bytes)
        }
        let need = FilesystemRoom.roundedUp(bytes, block: FilesystemRoom.blockSize(place))
        let (withBeside, overflow) = need.addingReportingOverflow(besideCopy)
        let created = place == directory ? "" : " (which migrate would create in \(displayPath(place)))"
        let copy = "the copy of \(base) needs \(FilesystemRoom.size(need)) in \(shown)\(created), whose filesystem has \(FilesystemRoom.size(free)) free"
        if need > free {
            return outcome(.wouldFail, "could not back up \(base) into \(shown): \(copy) (older backups beyond keep are removed only once the new one is in place): the copy would run out of room (\"database or disk is full\"), and nothing would be applied", bytes: bytes, free: free)
        }
        if overflow || withBeside > free {
            return outcome(.notKnown, "\(copy), only just more, and SQLite writes a journal (and, for a WAL database, a -wal and -shm) beside it: whether the backup fits is not known", bytes: bytes, free: free)
        }
        return outcome(.fits, "\(copy): it fits", bytes: bytes, free: free)
    }

    private struct Problem: Error {
        let reason: String
    }

    /// `directory` when it exists and is a directory, else the nearest directory above it that exists (where
    /// `take` would create it); a problem where `take` would stop (a file in the way, an unreadable path).
    private static func existingDirectory(_ directory: String) -> Result<String, Problem> {
        var path = directory.isEmpty ? "." : directory
        while true {
            var info = stat()
            if stat(path, &info) == 0 {
                guard info.st_mode & S_IFMT == S_IFDIR else {
                    return .failure(Problem(reason: "\(displayPath(path)) is \(RegularFile.kind(info.st_mode)), not a directory"))
                }
                return .success(path)
            }
            let code = errno
            guard code == ENOENT else {
                return .failure(Problem(reason: "cannot use \(displayPath(path)): \(String(cString: strerror(code)))"))
            }
            let parent = PathComponents.deletingLast(path)
            let next = parent.isEmpty ? (path.hasPrefix("/") ? "/" : ".") : parent
            guard next != path else { return .failure(Problem(reason: "no directory above \(displayPath(directory)) exists")) }
            path = next
        }
    }
}
