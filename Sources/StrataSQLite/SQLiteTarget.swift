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
import CSQLite
import StrataCore

/// A SQLite database file named on the command line or in a manifest. Refuses names at which SQLite keeps no file
/// or opens it unlike a file (in memory, temporary, another VFS, no locking): a migrate there could report steps
/// applied and keep nothing, or run without the lock that keeps concurrent deployers apart.
public struct SQLiteTarget: DatabaseTarget {
    /// The path (or `file:` URI) as given.
    public let path: String
    /// How messages name it: `--database '…'` or `<database path="…">`.
    public let source: String
    /// Whether the database file exists.
    public let exists: Bool

    /// Checks `path` without creating anything; `source` is how refusals name it.
    public init(path: String, source: String) throws {
        // SQLite opens "" as a temporary database and ":memory:" in memory, both gone at exit (an unset variable in
        // a deploy script gives "").
        if path.isEmpty || path == ":memory:" {
            throw DatabaseLocationError("\(source) names no database file: SQLite would use a \(path.isEmpty ? "temporary" : "in-memory") database deleted at exit; give the path of a file")
        }
        try Self.refuseURIParameters(path, source: source)
        self.path = path
        self.source = source
        exists = try Self.databaseFileExists(path, source: source)
    }

    /// The path with any password it holds hidden (`DatabaseURL.redacted`): how output names the database.
    public var name: String { DatabaseURL.redacted(path) }

    /// Opens the database for writing (creating the file when absent). What SQLite opened is checked again before
    /// anything is written: a connection without a file, or one SQLite opened read-only, is refused.
    public func openForWriting(timeout: Duration) throws -> any MigrationDatabase {
        let database = try Self.opening(path) { try Database(path: path, configuration: Database.Configuration(busyTimeout: timeout)) }
        try Self.refuseWithoutFile(database, source: source)
        if database.isReadOnly {
            throw DatabaseError(kind: .readOnly, code: nil,
                                message: "\(name) is read-only: SQLite opened it without write access (a mode=ro URI, or a file this user may not write)")
        }
        return database
    }

    /// A connection for reading the database's history and schema; it creates no file.
    public func openForReading() throws -> any MigrationDatabase {
        try openReadOnly()
    }

    /// Only read: the rehearsal copies the database with the backup API and runs the plan on the copy. Opened
    /// read-write with `query_only` on, not read-only: on a database in WAL mode a read-only connection leaves the
    /// `-wal` and `-shm` files it made behind, where the last read-write connection to close removes them. A `-wal`
    /// that already holds frames (its program killed, or still running) is left as it is: the connection never
    /// checkpoints it into the database file when it closes.
    public func openForRehearsal(timeout: Duration) throws -> any MigrationDatabase {
        guard exists else { return try Database(.inMemory) }
        let database = try Self.opening(path) {
            try Database(path: path, configuration: Database.Configuration(busyTimeout: timeout))
        }
        try Self.refuseWithoutFile(database, source: source)
        try database.execute("PRAGMA query_only = ON", .none)
        // Nothing has read the database yet, so the -wal is as the last writer left it.
        var wal = stat()
        if let file = database.path, stat(file + "-wal", &wal) == 0, wal.st_size > 0 {
            let code = strata_sqlite3_no_checkpoint_on_close(database.handle)
            guard code == SQLITE_OK else {
                throw DatabaseError(code: code, message: "could not stop the rehearsal's connection from checkpointing \(path)-wal when it closes")
            }
        }
        return database
    }

    /// The database's schema as `strata schema` prints it.
    public func schema() throws -> String {
        try openReadOnly().canonicalSchema(excluding: ["strata_history"])
    }

    private func openReadOnly() throws -> Database {
        guard exists else { return try Database(.inMemory) }
        return try Self.opening(path) { try Database(path: path, configuration: Database.Configuration(readOnly: true)) }
    }

    /// Whether SQLite finds a database file at `path`, asked of SQLite itself: it reads `file:` URIs, so
    /// `file::memory:`, `file:x.db?mode=memory` and `?vfs=memdb` open databases no file holds, and `file:x.db` is
    /// x.db. A read-only open creates nothing; one whose main database has no file on disk is refused.
    private static func databaseFileExists(_ path: String, source: String) throws -> Bool {
        let probe: Database
        do {
            probe = try opening(path) { try Database(path: path, configuration: Database.Configuration(readOnly: true, foreignKeys: false)) }
        } catch let error as DatabaseError where error.kind == .cannotOpen {
            // No database there yet; or a file that cannot be read, which the command's own open reports.
            return FileManager.default.fileExists(atPath: path)
        }
        defer { probe.close() }
        try refuseWithoutFile(probe, source: source)
        return true
    }

    /// Refuses a connection whose main database is no file on disk (in memory, temporary), or is read through
    /// another VFS than SQLite's default (`memdb` keeps nothing, `unix-none` takes no locks).
    private static func refuseWithoutFile(_ database: Database, source: String) throws {
        guard let file = database.path, FileManager.default.fileExists(atPath: file) else {
            throw DatabaseLocationError("\(source) names no database file: SQLite opens it as a database that no file holds (in memory or temporary), deleted at exit; give the path of a file")
        }
        guard let vfs = database.vfsName, vfs == Database.defaultVFSName else {
            throw DatabaseLocationError("\(source) names no database file SQLite opens as usual: it is read through the VFS '\(database.vfsName ?? "?")', not '\(Database.defaultVFSName ?? "?")', so what is written may not be kept or locked; give the path of a file")
        }
    }

    /// The query parameters of a `file:` URI other than those SQLite opens the file as usual with: `mode=ro` and
    /// `cache` (`mode=rw`/`rwc` conflict with the read-only look Strata takes first, so they are refused too). Any other (`vfs`, `mode=memory`, `nolock`, `immutable`, a VFS's own) changes how SQLite opens,
    /// locks or reads the file: a migrate could report steps applied and keep nothing, or run without the lock
    /// that keeps concurrent deployers apart. Read as SQLite reads a URI: `%HH` decoded, `#` ends it.
    static func uriParametersChangingTheOpen(_ path: String) -> [String] {
        guard path.hasPrefix("file:") else { return [] }
        var bytes = Array(path.utf8.dropFirst(5))
        if let hash = bytes.firstIndex(of: UInt8(ascii: "#")) { bytes.removeSubrange(hash...) }
        guard let question = bytes.firstIndex(of: UInt8(ascii: "?")) else { return [] }
        func hex(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        // `%HH` is the byte HH; `%00` ends the name or value it is in, as SQLite drops the rest.
        func decoded(_ part: ArraySlice<UInt8>) -> String {
            var out: [UInt8] = []
            var index = part.startIndex
            while index < part.endIndex {
                if part[index] == UInt8(ascii: "%"), index + 2 < part.endIndex,
                   let high = hex(part[index + 1]), let low = hex(part[index + 2]) {
                    let byte = high << 4 | low
                    if byte == 0 { break }
                    out.append(byte)
                    index += 3
                } else {
                    out.append(part[index])
                    index += 1
                }
            }
            return String(decoding: out, as: UTF8.self)
        }
        var refused: [String] = []
        for pair in bytes[(question + 1)...].split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let equals = pair.firstIndex(of: UInt8(ascii: "=")) ?? pair.endIndex
            let key = decoded(pair[..<equals])
            let value = equals < pair.endIndex ? decoded(pair[(equals + 1)...]) : ""
            switch key {
            case "mode" where value == "ro", "cache":
                continue
            default:
                refused.append(equals < pair.endIndex ? "\(key)=\(value)" : key)
            }
        }
        return refused
    }

    /// `open()`, its error's message with every piece of a password `path` holds hidden: SQLite quotes parts of a
    /// URI it refuses (`invalid uri authority: …`), and the messages name the path.
    private static func opening(_ path: String, _ open: () throws -> Database) throws -> Database {
        do {
            return try open()
        } catch let error as DatabaseError {
            let message = DatabaseURL.redacted(error.message, secretsOf: path)
            guard message != error.message else { throw error }
            throw DatabaseError(kind: error.kind, code: error.code, message: message, sql: error.sql, line: error.line, column: error.column)
        }
    }

    /// Refuses (exit 2) a `file:` URI whose parameters change how SQLite opens the file, before it is opened.
    private static func refuseURIParameters(_ path: String, source: String) throws {
        let refused = Self.uriParametersChangingTheOpen(path)
        guard !refused.isEmpty else { return }
        throw DatabaseLocationError("\(source) names no database file SQLite opens as usual: \(DatabaseURL.redacted(refused.joined(separator: ", "), secretsOf: path)) changes how SQLite opens, locks or reads it (in memory, another VFS, no locking, or assumed never to change), so a run could keep nothing or run unlocked; give the path of a file (a file: URI may carry only mode=ro and cache)")
    }

}
