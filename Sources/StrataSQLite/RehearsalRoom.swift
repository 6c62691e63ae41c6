#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import StrataCore

/// What the steps of a SQLite rehearsal need of the database's own filesystem, when the copy is on another one
/// (`RehearsalCopy` puts it in `TMPDIR` when the database's filesystem has less room than the database): there a
/// step may succeed on room that `migrate` will not have, and fail it with "database or disk is full".
///
/// After each step it measures on the copy what `migrate` would need beside the database: the database's growth
/// since the copy (page count × page size), and SQLite's journal at the step's commit, as the database's connection
/// keeps it. In rollback-journal mode that is the `-journal` of the step's largest transaction (the copy runs with
/// `journal_mode = PERSIST`, which keeps the file at that size, cleared before each step); in WAL mode, the `-wal`
/// and `-shm` with every frame the steps wrote since the copy (the copy never checkpoints, so none is reused: a
/// checkpoint in `migrate` moves the pages into the file, which is the growth counted, and may find readers in
/// its way); with the journal in memory or off, nothing. Each file is rounded up to the filesystem's blocks. The sum
/// is compared with the free space of the database's filesystem read then (what an unprivileged process may use).
/// (A backup `migrate` would take there first is judged apart, `RehearsalReport.backup`: a copy that did not fit
/// beside the database leaves no room for one either.)
///
/// The growth is the largest the file may reach, not what is left after the commit: with `auto_vacuum` on, the
/// commit truncates the pages the step freed (a table made and dropped again), while inside the transaction SQLite
/// may already have written them to the file (when its page cache spills). Outside WAL mode the page count is
/// therefore also read inside a one-transaction step's transaction just before it commits (`beforeCommit`), where
/// freed pages still count. Where that count is not the peak, the need is not known: a `transaction="none"` step
/// under `auto_vacuum = FULL` (each of its statements commits, and truncates, on its own), and a step that runs
/// `PRAGMA incremental_vacuum` (pages given back inside the transaction). In WAL mode the database file grows only
/// at a checkpoint, to the size the commit left; what the transaction spilled is in the `-wal`, measured.
final class RehearsalRoomWatch {
    private enum Journal {
        case rollback
        case wal
        case none
    }

    private let copy: RehearsalCopy
    /// The database's directory, whose filesystem `migrate` writes.
    private let directory: String
    private let journal: Journal
    /// The journal mode set on the copy (`persist`, `wal`), or nil when it is left as it was made.
    private let copyMode: String?
    /// Why nothing can be measured (the copy could not be put in the journal mode that measures it), or nil.
    private let unmeasurable: String?
    private let blockSize: Int64
    /// The largest need measured, after which step, with its parts and the free space then.
    private var peak: (step: String, growth: Int64, journal: Int64, need: Int64, free: Int64)?
    /// The first step after which the need was more than the free space, or could not be judged.
    private var firstNotFitting: String?
    /// The largest page count read inside the step now running's transaction (`beforeCommit`), or nil.
    private var peakPages: Int64?
    /// The copy's `auto_vacuum` as the step now running began (0 none, 1 full, 2 incremental).
    private var autoVacuumBefore: Int64 = 0

    /// Nil when there is nothing to judge: the copy is on the database's filesystem (the copy itself takes room
    /// there that `migrate` leaves free), or the database has no file.
    init?(source: Database, copy: RehearsalCopy) throws {
        guard let path = source.path, !path.isEmpty else { return nil }
        let parent = PathComponents.deletingLast(path).isEmpty ? "." : PathComponents.deletingLast(path)
        guard !RehearsalCopy.sameFilesystem(parent, copy.directory) else { return nil }
        self.copy = copy
        directory = parent
        var info = statvfs()
        blockSize = statvfs(parent, &info) == 0 && info.f_frsize > 0 ? Int64(clamping: info.f_frsize) : 4096
        switch (try source.scalar("PRAGMA main.journal_mode", as: String.self) ?? "delete").lowercased() {
        case "wal":
            journal = .wal
            copyMode = "wal"
        case "memory", "off":
            journal = .none
            copyMode = nil
        default:
            journal = .rollback
            copyMode = "persist"
        }
        if let copyMode {
            // Spelled out: an interpolated value would be bound, and a pragma takes no parameter.
            let set = try? copy.database.scalar(copyMode == "wal" ? "PRAGMA main.journal_mode = WAL" : "PRAGMA main.journal_mode = PERSIST",
                                                as: String.self)
            if copyMode == "wal" { try copy.database.execute("PRAGMA wal_autocheckpoint = 0") }
            unmeasurable = set?.lowercased() == copyMode ? nil
                : "the copy could not be put in journal_mode \(copyMode.uppercased()), which measures what a step writes beside the database"
        } else {
            unmeasurable = nil
        }
    }

    /// For the stage's summary: `another filesystem than the database's (/srv/db has 96 KiB free)`.
    var place: String {
        "another filesystem than the database's (\(directory) has \(RehearsalCopy.freeBytes(directory).map(RehearsalCopy.size) ?? "an unknown amount") free)"
    }

    /// Before each step: the journal of the steps before it is let go, so the one measured after is this step's.
    func willRun() throws {
        peakPages = nil
        autoVacuumBefore = try copy.database.scalar("PRAGMA main.auto_vacuum", as: Int64.self) ?? 0
        guard journal == .rollback, unmeasurable == nil, try currentMode() == "persist" else { return }
        // Outside any transaction here: switching away from PERSIST deletes the journal file.
        _ = try copy.database.scalar("PRAGMA main.journal_mode = DELETE", as: String.self)
        _ = try copy.database.scalar("PRAGMA main.journal_mode = PERSIST", as: String.self)
    }

    /// Inside a one-transaction step's transaction, just before it commits: the page count there, pages the step
    /// freed included, which an `auto_vacuum` commit then truncates.
    func beforeCommit() throws {
        guard journal != .wal else { return }
        let pages = try copy.database.scalar("PRAGMA main.page_count", as: Int64.self) ?? 0
        peakPages = max(peakPages ?? 0, pages)
    }

    /// After `step` ran to its end: why `migrate` may not have the room it had here, or nil when it fits.
    /// `incrementalVacuum`: the step ran `PRAGMA incremental_vacuum` (`RehearsalRules`).
    func didRun(_ step: PlanStep, incrementalVacuum: Bool) throws -> String? {
        let reason = try judge(step, incrementalVacuum: incrementalVacuum)
        if reason != nil && firstNotFitting == nil { firstNotFitting = step.id }
        return reason
    }

    private func judge(_ step: PlanStep, incrementalVacuum: Bool) throws -> String? {
        let here = "the copy is on another filesystem than the database's"
        if let unmeasurable {
            return "\(here), and \(unmeasurable), so whether migrate has the room is not known"
        }
        if let copyMode, let mode = try currentMode(), mode != copyMode {
            return "\(here), and the step changed the journal mode to \(mode): what it needs of the database's filesystem is not measured, so whether migrate has the room is not known"
        }
        if let hidden = try peakHidden(step, incrementalVacuum: incrementalVacuum) {
            return "\(here), and \(hidden): the largest the database grows inside the step is not measured, so whether migrate has the room is not known"
        }
        let after = try copy.database.scalar("PRAGMA main.page_count", as: Int64.self) ?? 0
        let pages = max(after, peakPages ?? 0)
        let pageSize = try copy.database.scalar("PRAGMA main.page_size", as: Int64.self) ?? 4096
        let (bytes, overflow) = pages.multipliedReportingOverflow(by: pageSize)
        guard !overflow, let path = copy.database.path else {
            return "\(here), and the copy's size cannot be read, so whether migrate has the room is not known"
        }
        let growth = roundedUp(max(0, bytes - copy.bytes))
        let journalBytes: Int64
        switch journal {
        case .rollback: journalBytes = roundedUp(Self.fileSize(path + "-journal"))
        case .wal: journalBytes = Self.sum(roundedUp(Self.fileSize(path + "-wal")), roundedUp(Self.fileSize(path + "-shm")))
        case .none: journalBytes = 0
        }
        guard let free = RehearsalCopy.freeBytes(directory) else {
            return "\(here), and the free space of \(directory) cannot be read, so whether migrate has the room is not known"
        }
        let need = Self.sum(growth, journalBytes)
        if need >= (peak?.need ?? 0) { peak = (step.id, growth, journalBytes, need, free) }
        guard need <= free else {
            let alone = growth > free ? " (the growth alone is more)" : ""
            return "\(here): the steps up to here grew the database by \(RehearsalCopy.size(growth)) at most and SQLite's \(journal == .wal ? "WAL" : "journal") needs \(RehearsalCopy.size(journalBytes)) beside it, \(RehearsalCopy.size(need)) in all, and \(directory) has \(RehearsalCopy.size(free)) free\(alone): migrate may run out of room there (\"database or disk is full\"), so whether it would succeed is not known"
        }
        return nil
    }

    /// Why the page counts read for `step` may be less than the largest the file was inside it, or nil. Only
    /// outside WAL mode, and only with `auto_vacuum` on (as the step began or as it left it): without it, pages
    /// a step frees stay in the file.
    private func peakHidden(_ step: PlanStep, incrementalVacuum: Bool) throws -> String? {
        guard journal != .wal else { return nil }
        let autoVacuumAfter = try copy.database.scalar("PRAGMA main.auto_vacuum", as: Int64.self) ?? 0
        let modes = [autoVacuumBefore, autoVacuumAfter]
        if case .migration(let migration) = step, !migration.runsInTransaction, modes.contains(1) {
            return "the database has auto_vacuum = FULL, which truncates the file at each commit, and this transaction=\"none\" step's statements commit one by one, each before its size can be read"
        }
        if incrementalVacuum, modes.contains(2) {
            return "the step runs PRAGMA incremental_vacuum, which gives pages back inside its transaction, before its size is read at its commit"
        }
        return nil
    }

    /// `RehearsalReport.room`: what the steps need of the database's filesystem at most, against what it had.
    var summary: String? {
        let start = "the steps ran on another filesystem than the database's; "
        guard let peak else {
            return firstNotFitting.map { start + "from \($0) on, what they need of the database's could not be measured (see \($0)'s note)" }
        }
        let need = RehearsalCopy.size(peak.need)
        let parts = "growth \(RehearsalCopy.size(peak.growth)), \(journal == .wal ? "WAL" : "journal") \(RehearsalCopy.size(peak.journal))"
        if let firstNotFitting {
            return start + "from \(firstNotFitting) on, what they need of the database's is not known to fit it (at most \(need) after \(peak.step): \(parts); \(directory) had \(RehearsalCopy.size(peak.free)) free then)"
        }
        return start + "what they need of the database's, at most \(need) (after \(peak.step): \(parts)), fits the \(RehearsalCopy.size(peak.free)) free in \(directory) then"
    }

    /// `a + b`, or `Int64.max` past it.
    private static func sum(_ a: Int64, _ b: Int64) -> Int64 {
        let (total, overflow) = a.addingReportingOverflow(b)
        return overflow ? Int64.max : total
    }

    private func currentMode() throws -> String? {
        try copy.database.scalar("PRAGMA main.journal_mode", as: String.self)?.lowercased()
    }

    private func roundedUp(_ bytes: Int64) -> Int64 {
        let blocks = bytes / blockSize + (bytes % blockSize == 0 ? 0 : 1)
        let (rounded, overflow) = blocks.multipliedReportingOverflow(by: blockSize)
        return overflow ? Int64.max : rounded
    }

    private static func fileSize(_ path: String) -> Int64 {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : 0
    }
}
