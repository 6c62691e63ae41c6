/// A lock an earlier step of a PostgreSQL rehearsal took that was still held while a later step ran. The rehearsal
/// runs every step in one transaction, so a lock stays held from the step that took it to the rollback, and
/// PostgreSQL shows no lock a statement asks for again while its transaction holds it: whether the later step asked
/// for it cannot be read. `migrate` commits each step before the next, so it takes again, for the later step, each
/// of these that step needs.
public struct HeldLock: Sendable, Equatable {
    /// The relation, schema-qualified, as it was named when the later step began.
    public let relation: String
    /// The lock mode, as PostgreSQL names it (`AccessExclusiveLock`).
    public let mode: String
    /// What it keeps other sessions from doing while it is held (as `TableLock.blocks`).
    public let blocks: String
    /// The step that took it.
    public let takenBy: String
    /// What the later step was seen doing to the relation that needs a lock of this kind: `changed its definition`
    /// (its catalog rows: table, columns, defaults, constraints, indexes, triggers, rules, policies; or it was
    /// dropped), for a mode from `ShareUpdateExclusiveLock` up; `read or wrote its rows` (PostgreSQL's scan and row
    /// counts of this transaction), for a weaker one. Nil when nothing was seen: the step may still have asked for it
    /// (an explicit `LOCK TABLE`, a statement that neither changes the catalog nor is counted).
    public var seen: String?

    /// Creates the description of a lock a step held.
    public init(relation: String, mode: String, blocks: String, takenBy: String, seen: String? = nil) {
        self.relation = relation
        self.mode = mode
        self.blocks = blocks
        self.takenBy = takenBy
        self.seen = seen
    }
}
