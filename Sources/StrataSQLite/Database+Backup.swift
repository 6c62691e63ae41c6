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

/// Copies of a live database with SQLite's online backup API (`sqlite3_backup_init/step/finish`): what
/// `MigrationOptions.backup` takes before a run writes, and what a program may take itself.
extension Database: BackupSource {
    /// The database file's name, which backups are named after; nil in memory.
    public var backupBaseName: String? { path.map(PathComponents.last) }

    /// The database file's permissions, which backups keep; nil in memory.
    public var backupFileMode: UInt32? { path.flatMap(DurableFiles.mode(of:)) }

    /// The main database's page count × page size, as the backup API copies it; nil when it cannot be read.
    public var backupByteCount: Int64? {
        guard let pages = try? scalar("PRAGMA main.page_count", as: Int64.self),
              let pageSize = try? scalar("PRAGMA main.page_size", as: Int64.self) else { return nil }
        let (bytes, overflow) = pages.multipliedReportingOverflow(by: pageSize)
        return overflow ? nil : bytes
    }

    /// Copies the database to `path` with SQLite's online backup API, after `check` passes.
    public func writeBackup(to path: String, checkingFirst check: () throws -> Void) throws {
        let destination = try Database(path: path, configuration: Configuration(busyTimeout: .zero, foreignKeys: false))
        defer { destination.close() }
        try inOneReadTransaction {
            do {
                // Starts the read transaction now, before the check reads anything.
                _ = try scalar("PRAGMA schema_version", .none, as: Int.self)
            } catch let error as DatabaseError where error.kind == .busy {
                throw Self.noConsistentCopy(error, configuration.busyTimeout)
            }
            try check()
            do {
                try Self.copy(from: self, into: destination)
            } catch let error as DatabaseError where error.kind == .busy {
                throw Self.noConsistentCopy(error, configuration.busyTimeout)
            }
        }
        destination.close()
        // Checked on a connection of its own, so what is read is the file, not the copy's page cache. That
        // connection may write the file (this process made it): closing it removes the -wal and -shm files SQLite
        // makes to read a copy of a WAL database, which a read-only connection would leave behind.
        let problems = try Self.integrityProblems(ofFileAt: path, writable: true)
        guard problems.isEmpty else {
            throw BackupError(.failed, "the copy fails PRAGMA integrity_check (\(problems.joined(separator: "; "))); the database itself may be damaged: run PRAGMA integrity_check on it")
        }
        try DurableFiles.sync(file: path)
    }

    /// Runs `body` inside one read transaction: the caller's when one is open, else a deferred one that `body`'s
    /// first read starts. `sqlite3_backup_step` copies through a read transaction the source connection has open
    /// rather than starting its own, so what `body` reads and what it copies are the same state.
    private func inOneReadTransaction(_ body: () throws -> Void) throws {
        if isInTransaction { try body() } else { try transaction(.deferred) { _ in try body() } }
    }

    private static func noConsistentCopy(_ error: DatabaseError, _ timeout: Duration) -> DatabaseError {
        error.with(message: "another connection held the database's lock for longer than the busy timeout (\(timeout)), so no consistent copy could be read: \(error.message)")
    }

    /// Copies the main database, as one committed state, into a new file at `path`, while other connections and
    /// processes go on reading and writing it; then checks the copy (`PRAGMA integrity_check`) and syncs it to disk.
    ///
    /// ```swift
    /// try db.backup(to: "backups/library-before-import.sqlite")
    /// ```
    /// The whole database is copied in one step, under one read transaction: in WAL mode writers go on meanwhile
    /// and the copy is the state at its start; in rollback-journal mode a writer's commit waits for the copy to end.
    /// A lock held longer than the connection's busy timeout fails it with kind `.busy`. The copy keeps the
    /// database's page size and journal mode, and gets the file's permissions. Nothing is replaced: a file at `path`
    /// is an error; one that fails part-way (a full disk) is removed.
    public func backup(to path: String) throws {
        guard !DurableFiles.exists(path) else {
            throw DatabaseError.misuse("\(path) exists; backup(to:) writes a new file and replaces none")
        }
        do {
            try DurableFiles.createNew(path, mode: backupFileMode ?? 0o644)
        } catch {
            throw DatabaseError(kind: .cannotOpen, message: "\(error)")
        }
        do {
            try writeBackup(to: path)
            try DurableFiles.sync(directory: PathComponents.deletingLast(path))
        } catch {
            DurableFiles.removeDatabase(path)
            throw error
        }
    }

    /// Copies every page of `source`'s main database into `destination`'s in one step, so the copy is one committed
    /// state: the source is read under one read transaction, the destination written under one write transaction
    /// (and its journal), each waiting up to its connection's busy timeout for its lock.
    static func copy(from source: Database, into destination: Database, schema: String = "main") throws {
        guard let backup = sqlite3_backup_init(destination.handle, schema, source.handle, schema) else {
            throw destination.lastError(sqlite3_extended_errcode(destination.handle))
        }
        let step = sqlite3_backup_step(backup, -1)
        let finish = sqlite3_backup_finish(backup)
        guard step != SQLITE_DONE || finish != SQLITE_OK else { return }
        let code = step == SQLITE_DONE ? finish : step
        let message = String(cString: sqlite3_errmsg(destination.handle))
        throw DatabaseError(code: code, message: message == "not an error" ? String(cString: sqlite3_errstr(code)) : message)
    }

    /// What `PRAGMA integrity_check` finds wrong in the database file at `path` (at most 10 lines); empty when it
    /// says `ok`. A connection of its own reads it, with `query_only` on; `writable` lets that connection remove the
    /// -wal and -shm files it needs to read a WAL database when it closes.
    static func integrityProblems(ofFileAt path: String, writable: Bool) throws -> [String] {
        let checker = try Database(path: path, configuration: Configuration(readOnly: !writable, busyTimeout: .seconds(5),
                                                                            foreignKeys: false))
        defer { checker.close() }
        try checker.execute("PRAGMA query_only = ON")
        let lines = try checker.rows("PRAGMA integrity_check(10)", .none).compactMap { try $0.get(0, as: String?.self) }
        return lines == ["ok"] ? [] : lines
    }
}
