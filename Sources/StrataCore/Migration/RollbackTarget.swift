/// Which applied steps `Migrator.rollback` undoes, newest first in plan order.
public enum RollbackTarget: Sendable, Equatable {
    /// The last `n` applied migrations (and code steps).
    case steps(Int)
    /// Every applied migration (and code step) after this one; the one named stays applied.
    case to(String)
}
