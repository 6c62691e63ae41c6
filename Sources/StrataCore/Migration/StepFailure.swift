/// The step that failed, with the place in its file where it failed.
public struct StepFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// Whether the step is a migration or a seed.
    public let kind: StepKind
    /// The step's id.
    public let id: String
    /// The file that failed.
    public let file: String
    /// The 1-based line in the file where it failed, where known.
    public let line: Int?
    /// The 1-based column in that line, where known.
    public let column: Int?
    /// What went wrong, as the database or the loader said it.
    public let message: String
    /// What the failed step left in the database.
    public var aftermath = Aftermath.rolledBack
    /// The database's error that failed the step, when it was one: its kind tells what could help (a step that
    /// failed with `.lockNotAvailable` or `.deadlock` may succeed when run again), its code what the database said.
    /// Nil for failures Strata found itself (a foreign key violation, an unreadable file).
    public var databaseError: DatabaseError?
    /// The failure happened in a rehearsal (`Migrator.rehearse`): what it left is gone with the copy or the
    /// rollback, and nothing was recorded; the text says what `migrate` would leave.
    public internal(set) var rehearsed = false
    /// In a rehearsal, the rehearsal's own rules stopped the step (a statement `migrate` would run).
    public internal(set) var stoppedByRehearsal = false

    /// What a failed step left behind.
    public enum Aftermath: Sendable, Equatable {
        /// Rolled back: the database is exactly as it was before the step.
        case rolledBack
        /// A `transaction="none"` file stopped part-way: what it says stayed applied, and the step is recorded
        /// `failed` until a human settles it with `strata resolve`.
        case partlyApplied(String)
        /// The step itself was applied and recorded; what failed came after it (the run stopped there).
        case kept
        /// A `transaction="none"` file ran (wholly or in part) and its outcome could not be written to history:
        /// what it says stayed applied and what history holds now (its `running` row, or no history at all).
        case unrecorded(String)
    }

    /// `file:line:column: message`, and for a partly applied step what stayed and what to do.
    public var description: String {
        switch aftermath {
        case .rolledBack, .kept, .unrecorded:
            return summary
        case .partlyApplied where stoppedByRehearsal:
            return summary + " (in the rehearsal, where nothing is kept or recorded; the rehearsal stopped the file at a statement migrate would run)"
        case .partlyApplied where rehearsed:
            return summary + " (in the rehearsal, where nothing is kept or recorded; migrate would leave the same applied and record the step failed)"
        case .partlyApplied:
            return summary
                + "; it is recorded failed: check the database, then run 'strata resolve \(id) --applied' or 'strata resolve \(id) --rolled-back'"
        }
    }

    /// `file:line:column: message` and what stayed applied, as history's `error` column keeps it.
    var summary: String {
        switch aftermath {
        case .rolledBack: placeDescription(file, line, column, message)
        case .kept: placeDescription(file, line, column, message) + "; the step itself was applied and recorded"
        case .partlyApplied(let kept), .unrecorded(let kept): placeDescription(file, line, column, message) + "; " + kept
        }
    }

    func partlyApplied(_ kept: String) -> StepFailure {
        var failure = self
        failure.aftermath = .partlyApplied(kept)
        return failure
    }

    /// The same failure with another message (place, aftermath and database error kept).
    func with(message: String) -> StepFailure {
        var failure = StepFailure(kind: kind, id: id, file: file, line: line, column: column, message: message)
        failure.aftermath = aftermath
        failure.databaseError = databaseError
        return failure
    }
}

/// `file:line:column: message`, leaving out what is unknown.
func placeDescription(_ file: String, _ line: Int?, _ column: Int?, _ message: String) -> String {
    var place = file
    if let line { place += ":\(line)" }
    if let column { place += ":\(column)" }
    return "\(place): \(message)"
}

extension StepFailure {
    /// A failure of `step` in its file, at `line` and `column` where known.
    init(_ step: PlanStep, message: String, line: Int? = nil, column: Int? = nil, databaseError: DatabaseError? = nil) {
        self.init(kind: step.kind, id: step.id, file: displayPath(step.filePath), line: line, column: column,
                  message: message, databaseError: databaseError)
    }

    /// A failure of a code step's body, placed at its `<code>` element.
    init(code: CodeStep, message: String, databaseError: DatabaseError? = nil) {
        self.init(kind: .code, id: code.id, file: code.location.path, line: code.location.line, column: nil,
                  message: message, databaseError: databaseError)
    }
}
