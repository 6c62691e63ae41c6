/// Sees each step of a run just before it starts and right after it is applied, on the connection the run uses
/// (a rehearsal counts rows and reads locks there). A throw stops the run at once: the step's own outcome stands
/// in the database, and the caller that installed the watcher decides what that means.
protocol StepWatcher {
    func willRun(_ step: PlanStep) throws
    /// Called by the executors of steps that run in one transaction (a transactional file, a seed, a code step),
    /// inside it, after the step and its history row are written and just before the commit: what the commit
    /// then gives back (SQLite's `auto_vacuum` truncating the file) can still be read. A throw rolls the step back.
    func beforeCommit(_ step: PlanStep) throws
    func didRun(_ step: PlanStep, _ applied: AppliedStep) throws
}

extension StepWatcher {
    func beforeCommit(_ step: PlanStep) throws {}
}
