/// The backup `migrate` would take before its first step (`MigrationOptions.backup`), as a rehearsal judged it:
/// a rehearsal takes none, so what it judges is whether one would fit where it goes (`RehearsalReport.backup`).
public struct RehearsedBackup: Sendable, Equatable {
    /// Whether the backup would fit; the raw value is the JSON `outcome`.
    public enum Outcome: String, Sendable, Equatable {
        /// The copy fits the free space of the backup directory's filesystem.
        case fits
        /// migrate could not take it (no room, a directory it cannot use, nothing to copy), so it would fail
        /// before its first step, applying nothing.
        case wouldFail = "would-fail"
        /// Whether it fits cannot be told (the size or the free space cannot be read, or the room is too close).
        case notKnown = "not-known"
    }

    /// The backup directory, as the options give it.
    public let directory: String
    /// Whether the backup would fit.
    public let outcome: Outcome
    /// The copy's size in bytes, where it can be read.
    public let bytes: Int64?
    /// The free space of the directory's filesystem (or of the nearest directory above it that exists, where
    /// migrate would create it), where it can be read.
    public let free: Int64?
    /// What was judged, for people: `a copy of app.sqlite (4.5 MiB) needs 4.5 MiB in /srv/backups, which has
    /// 1.0 MiB free: …`.
    public let note: String

    /// Creates the judgement of a backup.
    public init(directory: String, outcome: Outcome, bytes: Int64?, free: Int64?, note: String) {
        self.directory = directory
        self.outcome = outcome
        self.bytes = bytes
        self.free = free
        self.note = note
    }
}
