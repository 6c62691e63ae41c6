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

/// How `Database.restore(backup:to:options:)` waits, and what it keeps.
public struct RestoreOptions: Sendable, Equatable {
    /// How long to wait for other connections' locks: another connection writing the database (in rollback-journal
    /// mode, reading it too) makes the restore wait this long, then refuse with `BackupError.Kind.busy`.
    public var busyTimeout: Duration
    /// Keep the database as it was before the restore beside it (`<database>.before-restore-<time>`) once the
    /// restore has succeeded. By default that copy is kept only until the restore has succeeded.
    public var keepCurrent: Bool
    /// Restore a backup whose name says it is another database's (`BackupName`: `app-a.sqlite.TIME.PLANID.backup`
    /// into an existing `app-b.sqlite`), which is refused otherwise: a mistyped path would replace one database with
    /// another's schema, rows and history. `strata restore --other-database`.
    public var allowOtherDatabase: Bool

    /// Creates options.
    public init(busyTimeout: Duration = .seconds(60), keepCurrent: Bool = false, allowOtherDatabase: Bool = false) {
        self.busyTimeout = busyTimeout
        self.keepCurrent = keepCurrent
        self.allowOtherDatabase = allowOtherDatabase
    }
}

/// What `Database.restore(backup:to:options:)` did.
public struct RestoreReport: Sendable, Equatable {
    /// The database restored.
    public let database: String
    /// The backup it now holds.
    public let backup: String
    /// The file name of the database the backup was taken of, as its name gives it (`library.sqlite` for
    /// `library.sqlite.TIME.PLANID.backup`); nil for a file not named as Strata names backups (renamed, or made
    /// otherwise), of which nothing is known.
    public let backupOf: String?
    /// The backup's name gives another database's file name than `database`'s: it was created from it, or restored
    /// over it with `RestoreOptions.allowOtherDatabase`.
    public var isOtherDatabasesBackup: Bool { backupOf.map { $0 != PathComponents.last(database) } ?? false }
    /// The database did not exist, and the restore created it.
    public let created: Bool
    /// Where the database as it was before the restore is kept (`RestoreOptions.keepCurrent`); nil when it was not
    /// kept (or there was none).
    public let keptCurrent: String?
    /// How long the whole restore took, checks and copies included.
    public let durationMs: Int
}

extension Database {
    /// Puts a backup back: the database file at `databasePath` afterwards holds exactly what the backup holds (its
    /// schema, rows, history and header fields), and passes `PRAGMA integrity_check`.
    ///
    /// ```swift
    /// let report = try Database.restore(backup: "backups/library.sqlite.20260301T120000.123Z.3f9a0c1d2e4b5a69.backup",
    ///                                   to: "library.sqlite")
    /// ```
    /// - The backup is checked first (a regular, non-empty SQLite file passing `PRAGMA integrity_check`); one that
    ///   is not is refused (`BackupError.Kind.refused`) before the database is touched.
    /// - A backup whose name says it was taken of a database with another file name (`app-a.sqlite.TIME.PLANID.backup`
    ///   for an existing `app-b.sqlite`) is refused (`.refused`) unless `allowOtherDatabase`: it would replace one
    ///   database with another's. A missing database may be created from any backup (nothing is replaced), and a
    ///   file not named as Strata names backups is taken as given; `RestoreReport.backupOf` says whose it is.
    /// - An existing database is replaced through SQLite's online backup API, in one write transaction on it: other
    ///   connections see the old contents or the new, never a mix; a connection writing it (in rollback-journal
    ///   mode, reading it too) makes the restore wait up to `busyTimeout`, then refuse with `.busy`. Its journal or
    ///   WAL is SQLite's own, so no stale `-wal` can be mixed in. First the database as it is is copied beside it as
    ///   `<database>.before-restore-<time>` (checked and synced); that copy is removed once the restore has
    ///   succeeded, unless `keepCurrent`. A database that cannot be copied so (one that fails its own integrity
    ///   check) is refused: move it aside, and restore into its path.
    /// - A database that does not exist is created: the backup is copied to a temporary file beside it, checked,
    ///   synced and given the name, never replacing a file that appeared meanwhile. A `-wal` or `-journal` left
    ///   beside a missing database is refused: SQLite would take it for the restored database's own and replay it.
    /// - A write another connection commits while the restore runs, between the copy of the database as it was and
    ///   the restore, is noticed (`PRAGMA data_version`) and fails the restore, the copy kept: that write is in
    ///   neither. Stop the programs that use the database, and no `strata migrate` on it, while restoring.
    /// - `databasePath` is a file path (not a `file:` URI).
    @discardableResult
    public static func restore(backup: String, to databasePath: String,
                               options: RestoreOptions = RestoreOptions()) throws -> RestoreReport {
        let started = ContinuousClock.now
        func milliseconds() -> Int {
            let elapsed = (ContinuousClock.now - started).components
            return Int(elapsed.seconds * 1000 + elapsed.attoseconds / 1_000_000_000_000_000)
        }
        let shown = displayPath(databasePath)
        guard !databasePath.isEmpty, databasePath != ":memory:", !databasePath.hasPrefix("file:") else {
            throw BackupError(.refused, "'\(databasePath)' is not a database file path; restore takes the path of the file to restore into")
        }
        guard !DurableFiles.sameFile(backup, databasePath) else {
            throw BackupError(.refused, "\(displayPath(backup)) is \(shown) itself; name the backup to restore and the database to restore into")
        }
        let backupOf = BackupName.parse(PathComponents.last(backup))?.database
        let exists = DurableFiles.exists(databasePath)
        // The name backups take is the file's SQLite opens, the end of any symbolic links: either name is this database's.
        let names = [databasePath, DurableFiles.resolved(databasePath)].compactMap { $0.map(PathComponents.last) }
        if let backupOf, !names.contains(backupOf), exists, !options.allowOtherDatabase {
            throw BackupError(.refused, "\(displayPath(backup)) is named as a backup of \(backupOf), not of \(PathComponents.last(databasePath)): restoring it would replace \(shown) with another database's schema, rows and history. Check the two paths; to restore it into \(shown) all the same, pass --other-database (RestoreOptions.allowOtherDatabase); nothing was restored")
        }
        let source = try openBackup(backup)
        defer { source.close() }
        // "" for the current directory: names made in it stay as short as the path given.
        let directory = PathComponents.deletingLast(databasePath)

        guard exists else {
            // Appearing since it was looked for is noticed: the restored copy is linked into place, never over a file.
            try create(databasePath, in: directory, from: source, backup: backup)
            return RestoreReport(database: databasePath, backup: backup, backupOf: backupOf, created: true,
                                 keptCurrent: nil, durationMs: milliseconds())
        }
        let live: Database
        do {
            live = try Database(path: databasePath, configuration: Configuration(busyTimeout: options.busyTimeout,
                                                                                  foreignKeys: false))
        } catch let error as DatabaseError {
            throw BackupError(.failed, "cannot open \(shown): \(error.message); nothing was restored")
        }
        defer { live.close() }
        try checkCanReplace(live, databasePath, with: source)
        let versionBefore = try dataVersion(live, shown)
        let kept = try keepCopy(of: live, databasePath, in: directory)
        do {
            try copy(from: source, into: live)
        } catch {
            DurableFiles.removeDatabase(kept)
            try? DurableFiles.sync(directory: directory)
            if let error = error as? DatabaseError, error.kind == .busy {
                throw BackupError(.busy, "another connection is using \(shown): it held the database's lock (a write, or in rollback-journal mode a read) for longer than \(options.busyTimeout), so nothing was restored; stop the programs that use it (and any strata migrate on it), then run again")
            }
            throw BackupError(.failed, "could not restore \(shown) from \(displayPath(backup)): \(BackupDirectory.reason(error)); the restore was rolled back and \(shown) is as it was")
        }
        let versionAfter = try dataVersion(live, shown)
        if versionAfter != versionBefore {
            throw BackupError(.failed, "another connection committed a write to \(shown) while it was being restored: \(shown) now holds \(displayPath(backup)), and a write committed after \(displayPath(kept)) was copied and before the restore is in neither; \(displayPath(kept)), the database as it was, is kept. Stop the programs that use the database while restoring")
        }
        let problems: [String]
        do {
            problems = try integrityProblems(ofFileAt: databasePath, writable: false)
        } catch {
            throw BackupError(.failed, "\(shown) was restored, and could not be checked afterwards (\(BackupDirectory.reason(error))); \(displayPath(kept)), the database as it was, is kept")
        }
        guard problems.isEmpty else {
            throw BackupError(.failed, "\(shown) was restored and then failed PRAGMA integrity_check (\(problems.joined(separator: "; "))); \(displayPath(kept)), the database as it was, is kept")
        }
        if !options.keepCurrent {
            DurableFiles.removeDatabase(kept)
            try? DurableFiles.sync(directory: directory)
        }
        return RestoreReport(database: databasePath, backup: backup, backupOf: backupOf, created: false,
                             keptCurrent: options.keepCurrent ? kept : nil, durationMs: milliseconds())
    }

    /// Opens the backup after checking it is a regular, non-empty SQLite file that passes `PRAGMA integrity_check`.
    /// Where this process may write the backup's directory, its connection may write it, so that reading a copy
    /// of a WAL database leaves no -wal or -shm file beside it; it never writes (`query_only`).
    private static func openBackup(_ backup: String) throws -> Database {
        let shown = displayPath(backup)
        let header: [UInt8]
        do {
            let file = try RegularFile(path: backup)
            guard file.size > 0 else {
                throw BackupError(.refused, "\(shown) is empty: not a backup (a SQLite database holds at least one page); nothing was restored")
            }
            header = try file.read(upTo: 16)
        } catch let error as BackupError {
            throw error
        } catch {
            throw BackupError(.refused, "\(error); nothing was restored")
        }
        guard header == Array("SQLite format 3\0".utf8) else {
            throw BackupError(.refused, "\(shown) is not a SQLite database (its first bytes are not SQLite's header); nothing was restored")
        }
        let folder = PathComponents.deletingLast(backup)
        let writable = access(backup, W_OK) == 0 && access(folder.isEmpty ? "." : folder, W_OK) == 0
        let problems: [String]
        do {
            problems = try integrityProblems(ofFileAt: backup, writable: writable)
        } catch let error as DatabaseError {
            throw BackupError(.refused, "\(shown) cannot be read as a database (\(error.message)); nothing was restored")
        }
        guard problems.isEmpty else {
            throw BackupError(.refused, "\(shown) fails PRAGMA integrity_check (\(problems.joined(separator: "; "))): it cannot be restored; nothing was restored")
        }
        let source = try Database(path: backup, configuration: Configuration(readOnly: !writable, busyTimeout: .seconds(5),
                                                                             foreignKeys: false))
        try source.execute("PRAGMA query_only = ON")
        return source
    }

    /// Refuses a database SQLite cannot restore into as it is: a read-only file, and a WAL database of another page
    /// size than the backup's (SQLite cannot change the page size of a WAL database). A `-wal` beside an existing
    /// database is not judged here: SQLite opens any database with one in WAL mode and reads it as that database's
    /// own, so the restore, written through SQLite, replaces what SQLite reads.
    private static func checkCanReplace(_ live: Database, _ path: String, with source: Database) throws {
        let shown = displayPath(path)
        guard !live.isReadOnly else {
            throw BackupError(.refused, "\(shown) is read-only for this user; nothing was restored")
        }
        let mode: String?
        let pageSizes: (live: Int?, backup: Int?)
        do {
            mode = try live.scalar("PRAGMA journal_mode", .none, as: String.self)?.lowercased()
            pageSizes = (try live.scalar("PRAGMA page_size", .none, as: Int.self),
                         try source.scalar("PRAGMA page_size", .none, as: Int.self))
        } catch let error as DatabaseError where error.kind == .busy {
            throw BackupError(.busy, "another connection is using \(shown) (it held the database's lock past the timeout); nothing was restored: stop the programs that use it, then run again")
        } catch let error as DatabaseError {
            throw BackupError(.refused, "\(shown) cannot be read as a database (\(error.message)): move it (and any \(shown)-wal, \(shown)-journal beside it) aside, and restore into its path; nothing was restored")
        }
        if mode == "wal", let livePage = pageSizes.live, let backupPage = pageSizes.backup, livePage != backupPage {
            throw BackupError(.refused, "\(shown) is in WAL mode with \(livePage)-byte pages and the backup has \(backupPage)-byte pages: SQLite cannot restore across page sizes into a WAL database; with no program using it, run PRAGMA journal_mode = DELETE on \(shown) first (the restored database is in the backup's journal mode); nothing was restored")
        }
    }

    /// `PRAGMA data_version` of `live`: it changes when another connection commits.
    private static func dataVersion(_ live: Database, _ shown: String) throws -> Int? {
        do {
            return try live.scalar("PRAGMA data_version", .none, as: Int.self)
        } catch let error as DatabaseError {
            throw BackupError(error.kind == .busy ? .busy : .failed, "cannot read \(shown) (\(error.message)); nothing was restored")
        }
    }

    /// Copies the database as it is beside it, as `<name>.before-restore-<time>`, checked and synced: what the
    /// restore replaces is on disk before it starts.
    private static func keepCopy(of live: Database, _ path: String, in directory: String) throws -> String {
        let shown = displayPath(path)
        let base = PathComponents.last(path)
        let temporary = PathComponents.appending(DurableFiles.uniqueName(".\(base).before-restore-in-progress-"), to: directory)
        do {
            try DurableFiles.createNew(temporary, mode: DurableFiles.mode(of: path) ?? 0o600)
            try live.writeBackup(to: temporary)
            return try DurableFiles.publish(temporary, in: directory) {
                "\(base).before-restore-\(DurableFiles.stamp(Date()))"
            }
        } catch {
            DurableFiles.removeDatabase(temporary)
            if let error = error as? DatabaseError, error.kind == .busy {
                throw BackupError(.busy, "another connection is using \(shown) (it held the database's lock past the timeout); nothing was restored: stop the programs that use it, then run again")
            }
            throw BackupError(.failed, "could not keep a copy of \(shown) as it is before replacing it (\(BackupDirectory.reason(error))); nothing was restored. A database that fails its own check cannot be kept so: move it (and any \(shown)-wal, \(shown)-journal) aside, and restore into its path")
        }
    }

    /// Restores into a path where no database is: the backup is copied to a temporary file beside it, checked,
    /// synced, and linked to the path, which fails rather than replace a file that appeared meanwhile.
    private static func create(_ path: String, in directory: String, from source: Database, backup: String) throws {
        let shown = displayPath(path)
        for suffix in ["-wal", "-journal"] where DurableFiles.exists(path + suffix) {
            throw BackupError(.refused, "\(shown) does not exist but \(shown)\(suffix) does: left from an earlier database, SQLite would mix it into the restored one; move it aside, then run again; nothing was restored")
        }
        let base = PathComponents.last(path)
        let temporary = PathComponents.appending(DurableFiles.uniqueName(".\(base).restore-in-progress-"), to: directory)
        do {
            try DurableFiles.createNew(temporary, mode: DurableFiles.mode(of: backup) ?? 0o600)
            let destination = try Database(path: temporary, configuration: Configuration(busyTimeout: .zero, foreignKeys: false))
            defer { destination.close() }
            try copy(from: source, into: destination)
            destination.close()
            let problems = try integrityProblems(ofFileAt: temporary, writable: true)
            guard problems.isEmpty else {
                throw BackupError(.failed, "the restored copy fails PRAGMA integrity_check (\(problems.joined(separator: "; ")))")
            }
            try DurableFiles.sync(file: temporary)
            guard link(temporary, path) == 0 else {
                let code = errno
                throw BackupError(code == EEXIST ? .refused : .failed,
                                  code == EEXIST ? "\(shown) was created by another program while the backup was being copied; nothing was replaced"
                                                 : "cannot name the restored database \(shown): \(String(cString: strerror(code)))")
            }
            unlink(temporary)
            try DurableFiles.sync(directory: directory)
        } catch let error as BackupError {
            DurableFiles.removeDatabase(temporary)
            throw BackupError(error.kind, error.message + (error.message.hasSuffix("nothing was replaced") ? "" : "; \(shown) was not created"))
        } catch {
            DurableFiles.removeDatabase(temporary)
            throw BackupError(.failed, "could not restore \(displayPath(backup)) into \(shown): \(BackupDirectory.reason(error)); \(shown) was not created")
        }
    }
}
