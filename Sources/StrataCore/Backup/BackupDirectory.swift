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

/// Takes a named backup into a directory and keeps the newest `keep` of the database's backups there.
///
/// The copy is written to a hidden temporary file in the directory (`.<database>.backup-in-progress-<pid>-<hex>`),
/// checked and synced by the source, then given its name with a hard link, which never replaces another file; the
/// directory is synced after. A backup that fails leaves no file under a backup's name, and its temporary file is
/// removed (a process killed part-way can leave one behind, hidden, which may be deleted).
package final class BackupDirectory {
    package let options: BackupOptions
    /// This object created the directory (in an earlier `take` too, one that copied nothing).
    private var createdDirectory = false

    package init(_ options: BackupOptions) {
        self.options = options
    }

    /// Copies `source` into the directory, named with `planID`, then removes its backups beyond `keep`.
    package func take(from source: any BackupSource, planID: String) throws -> DatabaseBackup {
        guard BackupName.isPlanID(planID) else { throw Self.notAPlanID(planID) }
        guard let backup = try take(from: source, ofState: { planID }) else {
            throw BackupError(.failed, "no backup was taken of plan \(planID); nothing was applied")
        }
        return backup
    }

    /// Copies `source` into the directory, then removes its backups beyond `keep`. `state` runs inside the read
    /// transaction the copy is read in (`BackupSource.writeBackup(to:checkingFirst:)`), so it sees exactly the state
    /// copied, and says which plan that state precedes, or nil to copy nothing (the directory may have been created;
    /// nothing else is left, and this returns nil). What `state` throws is thrown as it is, nothing left behind.
    package func take(from source: any BackupSource, ofState state: () throws -> String?) throws -> DatabaseBackup? {
        let started = ContinuousClock.now
        let directory = options.directory
        guard let base = source.backupBaseName else {
            throw BackupError(.failed, "the database is not a file (in memory or temporary): there is nothing to back up into \(displayPath(directory)); nothing was applied")
        }
        if let keep = options.keep, keep < 1 {
            throw BackupError(.failed, "keep=\(keep): a backup directory keeps at least the backup just taken (keep 1 or more)")
        }
        if try prepareDirectory() { createdDirectory = true }
        let temporary = PathComponents.appending(DurableFiles.uniqueName(".\(base).backup-in-progress-"), to: directory)
        var takenAt = Date()
        var planID: String?
        // What `state` threw, thrown again as it is rather than as a failed copy.
        var stateError: (any Error)?
        let path: String
        do {
            try DurableFiles.createNew(temporary, mode: source.backupFileMode ?? 0o600)
            do {
                try source.writeBackup(to: temporary) {
                    do {
                        planID = try state()
                    } catch {
                        stateError = error
                        throw error
                    }
                    guard let planID else { throw NothingToCopy() }
                    guard BackupName.isPlanID(planID) else { throw Self.notAPlanID(planID) }
                }
            } catch let error as DatabaseError where error.kind == .busy && stateError == nil {
                throw BackupError(.busy, "could not back up \(base) into \(displayPath(directory)): \(error.message); nothing was applied")
            } catch let error as BackupError where stateError == nil {
                throw BackupError(error.kind, "could not back up \(base) into \(displayPath(directory)): \(error.message); nothing was applied")
            } catch let error where stateError == nil && !(error is NothingToCopy) {
                throw BackupError(.failed, "could not back up \(base) into \(displayPath(directory)): \(Self.reason(error)); nothing was applied")
            }
            let named = planID ?? ""
            path = try DurableFiles.publish(temporary, in: directory) {
                takenAt = Date()
                return BackupName(database: base, stamp: DurableFiles.stamp(takenAt), planID: named).fileName
            }
        } catch is NothingToCopy {
            DurableFiles.removeDatabase(temporary)
            return nil
        } catch let error as BackupError {
            DurableFiles.removeDatabase(temporary)
            throw error
        } catch {
            DurableFiles.removeDatabase(temporary)
            if let stateError { throw stateError }
            throw BackupError(.failed, "could not back up \(base) into \(displayPath(directory)): \(error); nothing was applied")
        }
        let durationMs = Self.milliseconds(since: started)
        let (removed, notRemoved) = removeOldBackups(of: base, keeping: PathComponents.last(path))
        return DatabaseBackup(path: path, planID: planID ?? "", takenAt: DurableFiles.isoMilliseconds(takenAt),
                              size: DurableFiles.size(of: path) ?? 0, durationMs: durationMs,
                              createdDirectory: createdDirectory, removed: removed, notRemoved: notRemoved)
    }

    /// Thrown inside the copy's read transaction when `state` asks for no copy; never leaves `take`.
    private struct NothingToCopy: Error {}

    private static func notAPlanID(_ text: String) -> BackupError {
        BackupError(.failed, "'\(text)' is not a plan id (16 hex digits): backups are named with the plan they precede")
    }

    /// Makes sure the directory exists (creating it and its missing parents); true when it was created.
    private func prepareDirectory() throws -> Bool {
        let directory = options.directory
        var info = stat()
        if stat(directory, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFDIR else {
                throw BackupError(.failed, "the backup directory \(displayPath(directory)) is \(RegularFile.kind(info.st_mode)), not a directory; nothing was applied")
            }
            return false
        }
        let code = errno
        guard code == ENOENT else {
            throw BackupError(.failed, "cannot use the backup directory \(displayPath(directory)): \(String(cString: strerror(code))); nothing was applied")
        }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try DurableFiles.sync(directory: PathComponents.deletingLast(directory))
        } catch {
            throw BackupError(.failed, "cannot create the backup directory \(displayPath(directory)): \(Self.reason(error)); nothing was applied")
        }
        return true
    }

    /// Removes the oldest of the database's backups beyond `keep`, never `newest` (the one just taken, even if the
    /// clock went back and it sorts before older ones). Only names `BackupName.parse` reads as this database's are
    /// counted; every other file is left alone.
    private func removeOldBackups(of base: String, keeping newest: String) -> (removed: [String], notRemoved: [String]) {
        guard let keep = options.keep else { return ([], []) }
        let directory = options.directory
        let names: [[UInt8]]
        do {
            names = try FileCheck.rawEntries(of: directory)
        } catch {
            return ([], ["could not list \(displayPath(directory)) to keep \(keep) backups: \(error)"])
        }
        let older = names.compactMap { String(validating: $0, as: UTF8.self) }
            .filter { $0 != newest }
            .compactMap { BackupName.parse($0, database: base) }
            .sorted { ($0.stamp, $0.fileName) < ($1.stamp, $1.fileName) }
        let excess = older.count - (keep - 1)
        guard excess > 0 else { return ([], []) }
        var removed: [String] = []
        var notRemoved: [String] = []
        for name in older.prefix(excess) {
            let path = PathComponents.appending(name.fileName, to: directory)
            if unlink(path) == 0 {
                removed.append(path)
            } else {
                notRemoved.append("could not remove the old backup \(displayPath(path)) (keep=\(keep)): \(String(cString: strerror(errno)))")
            }
        }
        if !removed.isEmpty {
            do { try DurableFiles.sync(directory: directory) } catch { notRemoved.append("\(error)") }
        }
        return (removed, notRemoved)
    }

    /// A library error's own words, without the type's decoration.
    package static func reason(_ error: any Error) -> String {
        (error as? DatabaseError)?.message ?? "\(error)"
    }

    private static func milliseconds(since start: ContinuousClock.Instant) -> Int {
        let elapsed = (ContinuousClock.now - start).components
        return Int(elapsed.seconds * 1000 + elapsed.attoseconds / 1_000_000_000_000_000)
    }
}
