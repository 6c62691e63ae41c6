import CSQLite
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
import StrataCore

/// A throwaway copy of a SQLite database for a rehearsal, in a temporary directory of its own, made with SQLite's
/// online backup API as `Database.backup(to:)` makes one (`Database.copy`): one `sqlite3_backup_step` copies every
/// page inside one read transaction on the source, so the copy is the database as one commit left it, whatever other
/// processes write meanwhile (in rollback-journal mode their commits wait for the copy, up to their busy timeout; in
/// WAL mode they go on). The source is only read.
///
/// The directory (`.strata-rehearsal-XXXXXX`) holds the copy and whatever SQLite and the runner add beside it (its
/// journal or WAL, the lock files of `transaction="none"` steps), and is removed whole by `remove()`. It is made in
/// the system's temporary directory when that is on the database's filesystem, else beside the database, else in the
/// temporary directory: wherever the copy fits, preferring the disk the database is on, so steps take about as long
/// as they will there. While it exists, a `flock` on its `.lock` file marks it as in use; a directory whose lock
/// nobody holds was left by a rehearsal that was killed, and the next rehearsal there removes it.
final class RehearsalCopy {
    /// The directory holding the copy.
    let directory: String
    /// The copy, open.
    let database: Database
    /// The copy's size when it was made (page count × page size).
    let bytes: Int64
    private var lockDescriptor: Int32

    static let prefix = ".strata-rehearsal-"

    /// Of the connection's pragmas (`ConnectionSnapshot.pragmas`), those that change what a statement does, which the
    /// copy takes from the program's connection; not `query_only` (a rehearsal opens the database with it),
    /// durability, locking or memory settings.
    static let behaviourPragmas = ["recursive_triggers", "ignore_check_constraints", "legacy_alter_table",
                                   "reverse_unordered_selects", "trusted_schema", "automatic_index", "cell_size_check",
                                   "secure_delete", "defer_foreign_keys"]

    /// Copies `source` (which must be outside any transaction). Refuses (`MigrationError.refused`) when no candidate
    /// directory has room for it, saying how much it needs and what each has.
    init(of source: Database) throws {
        guard !source.isInTransaction else {
            throw DatabaseError(kind: .misuse, code: nil, message: "rehearse copies the database from a connection outside any transaction; this one has a transaction open")
        }
        let pages = try source.scalar("PRAGMA main.page_count", as: Int64.self) ?? 0
        let pageSize = try source.scalar("PRAGMA main.page_size", as: Int64.self) ?? 4096
        let (bytes, overflow) = pages.multipliedReportingOverflow(by: pageSize)
        guard !overflow else { throw DatabaseError(kind: .other, code: nil, message: "the database reports \(pages) pages of \(pageSize) bytes, which is not a size") }
        self.bytes = bytes

        var looked: [String] = []
        var made: (directory: String, lock: Int32)?
        for candidate in Self.candidates(near: source.path) {
            guard let free = Self.freeBytes(candidate), access(candidate, W_OK | X_OK) == 0 else {
                looked.append("\(candidate): not writable")
                continue
            }
            guard free >= bytes else {
                looked.append("\(candidate): \(Self.size(free)) free")
                continue
            }
            Self.removeAbandoned(in: candidate)
            if let directory = Self.makeDirectory(in: candidate) {
                made = directory
                break
            }
            looked.append("\(candidate): cannot create a directory there (\(String(cString: strerror(errno))))")
        }
        guard let made else {
            throw MigrationError.refused([Refusal(reason: .notRehearsable, id: source.path ?? "database",
                message: "rehearse needs \(Self.size(bytes)) (\(bytes) bytes, the size of \(source.path.map(displayPath) ?? "the database")) free for its copy, and no place has it: \(looked.joined(separator: "; ")); free some space, or point TMPDIR at a filesystem that has it")])
        }
        directory = made.directory
        lockDescriptor = made.lock
        let name = source.path.map { PathComponents.last($0) } ?? "new.sqlite"
        do {
            var configuration = source.configuration
            configuration.readOnly = false
            configuration.walMode = false
            database = try Database(path: PathComponents.appending(name, to: directory), configuration: configuration)
            // The connection's own settings, which migrate's steps run under on the program's connection. (Its SQL
            // functions are not defined here: a closure may read or write the connection it was defined on, the real
            // database; `SQLiteRehearsalStage.stoppedByStage` says when a step needed one.)
            for pragma in Self.behaviourPragmas {
                guard let value = try source.query("PRAGMA \(pragma)", .none).next()?[0], case .integer(let number) = value else { continue }
                try database.execute("PRAGMA \(pragma) = \(number)", .none)
            }
            // One step of the backup API, as `backup(to:)` copies: one committed state, whatever others write.
            do {
                try Database.copy(from: source, into: database)
                // The program's temporary tables, triggers, views and indexes (a temporary trigger on a main table
                // fires in migrate's steps on its connection).
                if try source.scalar("SELECT count(*) FROM temp.sqlite_schema", as: Int.self) ?? 0 > 0 {
                    try Database.copy(from: source, into: database, schema: "temp")
                }
            } catch let error as DatabaseError {
                throw error.with(message: "could not copy the database for the rehearsal: \(error.message)")
            }
        } catch {
            try? Self.removeDirectory(made.directory)
            close(made.lock)
            // Once `database` is set the object is whole and `deinit` runs when this throws: it must not close the
            // same number again, which by then may be another file's descriptor.
            lockDescriptor = -1
            throw error
        }
    }

    deinit {
        if lockDescriptor >= 0 { close(lockDescriptor) }
    }

    /// Closes the copy and removes its directory with everything in it.
    func remove() throws {
        database.close()
        defer {
            if lockDescriptor >= 0 { close(lockDescriptor) }
            lockDescriptor = -1
        }
        try Self.removeDirectory(directory)
    }

    /// Where a copy may go, in order: the temporary directory when it is on the database's filesystem, the
    /// database's own directory, then the temporary directory anyway.
    static func candidates(near path: String?) -> [String] {
        let temporary = temporaryDirectory
        guard let path else { return [temporary] }
        let parent = PathComponents.deletingLast(path).isEmpty ? "." : PathComponents.deletingLast(path)
        var order = sameFilesystem(temporary, parent) ? [temporary, parent] : [parent, temporary]
        if order[0] == order[1] { order.removeLast() }
        return order
    }

    /// `TMPDIR`, else `/tmp`.
    static var temporaryDirectory: String {
        if let value = getenv("TMPDIR"), value.pointee != 0 {
            let path = String(cString: value)
            return path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
        }
        return "/tmp"
    }

    /// Whether both paths exist and are on one filesystem.
    static func sameFilesystem(_ a: String, _ b: String) -> Bool {
        var first = stat(), second = stat()
        return stat(a, &first) == 0 && stat(b, &second) == 0 && first.st_dev == second.st_dev
    }

    /// Bytes an unprivileged process may still write on the filesystem holding `path`; nil when it cannot be told.
    static func freeBytes(_ path: String) -> Int64? { FilesystemRoom.freeBytes(path) }

    /// A new directory in `parent`, locked; nil when it cannot be made.
    private static func makeDirectory(in parent: String) -> (directory: String, lock: Int32)? {
        var template = Array(PathComponents.appending(prefix + "XXXXXX", to: parent).utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ $0.baseAddress.flatMap { mkdtemp($0) } }) else { return nil }
        let directory = String(cString: made)
        let lock = open(PathComponents.appending(".lock", to: directory), O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lock >= 0, flock(lock, LOCK_EX | LOCK_NB) == 0 else {
            if lock >= 0 { close(lock) }
            try? removeDirectory(directory)
            return nil
        }
        return (directory, lock)
    }

    /// Removes the rehearsal directories in `parent` whose lock nobody holds: their rehearsal was killed.
    ///
    /// Only a real directory that this user owns and no one else may enter, as `mkdtemp` makes them, is touched: in
    /// a shared temporary directory anyone can plant a symbolic link under such a name, and following it would
    /// remove the files of the directory it points to. The directory is opened once without following links, and
    /// its lock and files are reached through that descriptor.
    static func removeAbandoned(in parent: String) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: parent) else { return }
        for name in names where name.hasPrefix(prefix) && name.utf8.count == prefix.utf8.count + 6 {
            let directory = PathComponents.appending(name, to: parent)
            let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard descriptor >= 0 else { continue }
            defer { close(descriptor) }
            var info = stat()
            guard fstat(descriptor, &info) == 0, info.st_uid == geteuid(), info.st_mode & 0o077 == 0 else { continue }
            let lock = openat(descriptor, ".lock", O_RDWR | O_CLOEXEC | O_NOFOLLOW)
            guard lock >= 0 else { continue }
            defer { close(lock) }
            guard flock(lock, LOCK_EX | LOCK_NB) == 0 else { continue }
            try? removeDirectory(directory, descriptor: descriptor)
        }
    }

    /// Removes a rehearsal directory this process made: its files (SQLite makes no directories), then the directory.
    private static func removeDirectory(_ directory: String) throws {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw RehearsalCopyError(message: "could not open \(directory), which the rehearsal made (\(String(cString: strerror(errno)))); remove it by hand")
        }
        defer { close(descriptor) }
        try removeDirectory(directory, descriptor: descriptor)
    }

    /// Removes the files of the directory open as `descriptor` through it, then the directory at `directory`.
    /// Anything else found there (a subdirectory) stops the removal, and the error says what is left.
    private static func removeDirectory(_ directory: String, descriptor: Int32) throws {
        let listing = dup(descriptor)
        guard listing >= 0, let stream = fdopendir(listing) else {
            if listing >= 0 { close(listing) }
            throw RehearsalCopyError(message: "could not list \(directory), which the rehearsal made (\(String(cString: strerror(errno)))); remove it by hand")
        }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        closedir(stream)
        for name in names {
            guard unlinkat(descriptor, name, 0) == 0 || errno == ENOENT else {
                throw RehearsalCopyError(message: "could not remove \(PathComponents.appending(name, to: directory)), which the rehearsal made (\(String(cString: strerror(errno)))); remove \(directory) by hand")
            }
        }
        guard rmdir(directory) == 0 else {
            throw RehearsalCopyError(message: "could not remove \(directory), which the rehearsal made (\(String(cString: strerror(errno)))); remove it by hand")
        }
    }

    /// "48 KiB", "2.1 MiB".
    static func size(_ bytes: Int64) -> String { FilesystemRoom.size(bytes) }
}

/// The rehearsal's copy could not be removed: the message says what is left and where.
struct RehearsalCopyError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
