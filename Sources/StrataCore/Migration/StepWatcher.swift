/// Sees each step of a run just before it starts and right after it is applied, on the connection the run uses
/// (a rehearsal counts rows and reads locks there). A throw stops the run at once: the step's own outcome stands
/// in the database, and the caller that installed the watcher decides what that means.
protocol StepWatcher {
    func willRun(_ step: PlanStep) throws
    func didRun(_ step: PlanStep, _ applied: AppliedStep) throws
}
