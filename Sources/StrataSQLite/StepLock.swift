#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The kernel lock a process holds while it applies a `transaction="none"` step, so others can tell a step
/// being applied from one whose process died.
///
/// A `running` history row alone cannot say whether its process is alive: a `host:pid` is reused (pids are small
/// in containers) and means nothing on another host sharing the file. A `flock` lock is released by the kernel
/// when its process dies however it dies, so "running and its lock is held" is conclusive, and "running and
/// nobody holds its lock" means the run is over (finished since the row was read, or dead).
///
/// Each step has its own file beside the database, `<database>-strata-runner-<16 hex digits>.lock` (the digits
/// are the start of the SHA-256 of `kind/id`, so any id gives a valid, fixed-length name); it holds one line
/// naming the step and its runner, for a human who finds it. The files are left in place (removing a lock file
/// safely needs more care than it is worth); deleting them while no strata process runs is harmless.
/// `flock` locks belong to the open file description, so even two connections in one process exclude each other.
final class StepLock: StepClaim {
    private var descriptor: Int32

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit { release() }

    /// The lock file of one step of the database at `databasePath`.
    static func path(databasePath: String, kind: StepKind, id: String) -> String {
        let digest = (try? Checksum.of(Array("\(kind.rawValue)/\(id)".utf8))) ?? ""
        return "\(databasePath)-strata-runner-\(digest.prefix(16)).lock"
    }

    /// Takes the step's lock without waiting. Nil when another open file description holds it; a database with no
    /// file (in memory) has no other process to exclude and gets a lock that holds nothing.
    static func acquire(databasePath: String?, kind: StepKind, id: String) throws -> StepLock? {
        guard let databasePath else { return StepLock(descriptor: -1) }
        let path = path(databasePath: databasePath, kind: kind, id: id)
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw StepLockError(path: path, errno: errno)
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(descriptor)
            if code == EWOULDBLOCK { return nil }
            throw StepLockError(path: path, errno: code)
        }
        let note = "\(kind.rawValue) \(id) is being applied by \(Runner.current); this lock is released when it stops\n"
        if ftruncate(descriptor, 0) == 0 {
            _ = note.withCString { write(descriptor, $0, strlen($0)) }
        }
        return StepLock(descriptor: descriptor)
    }

    /// True when some open file description holds the step's lock: a process is applying it now. Opens the file
    /// read-only and never creates it, so read-only commands write nothing.
    static func isHeld(databasePath: String?, kind: StepKind, id: String) -> Bool {
        guard let databasePath else { return false }
        let descriptor = open(path(databasePath: databasePath, kind: kind, id: id), O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        // A shared lock is refused only while someone holds the exclusive one; taken for an instant and dropped.
        guard flock(descriptor, LOCK_SH | LOCK_NB) == 0 else { return errno == EWOULDBLOCK }
        flock(descriptor, LOCK_UN)
        return false
    }

    /// Releases the lock (closing the file releases it); later calls do nothing.
    func release() {
        guard descriptor >= 0 else { return }
        close(descriptor)
        descriptor = -1
    }
}

/// The runner lock file could not be created or locked.
struct StepLockError: Error, CustomStringConvertible {
    let path: String
    let errno: Int32

    var description: String {
        "cannot lock \(displayPath(path)) (\(String(cString: strerror(errno)))), which marks a transaction=\"none\" step as being applied; the database's directory must be writable"
    }
}

/// Step locks of one SQLite database: files beside it, locked with `flock`, which the kernel releases when the
/// holder dies, whatever the way.
struct FileStepLocks: StepLocking {
    /// The main database's file; nil for a database in memory, where no other process can run a step.
    let databasePath: String?

    func claim(kind: StepKind, id: String) throws -> (any StepClaim)? {
        try StepLock.acquire(databasePath: databasePath, kind: kind, id: id)
    }

    func isHeld(kind: StepKind, id: String) -> Bool {
        StepLock.isHeld(databasePath: databasePath, kind: kind, id: id)
    }
}
