/// What a plan id is made of, per step: every input that decides what the step does, so a plan reviewed with
/// `strata plan` is the plan `migrate --plan-id` runs. That is the file's content (a seed's whole file, not its size
/// and time, which reproducible builds, tar and `rsync -a` keep while the bytes change) and every option the
/// manifest gives the step (a seed's `mode` changed from `upsert` to `sync` deletes rows; `foreignKeys="on"` lets
/// `ON DELETE CASCADE` fire).
///
/// The options are read by reflection, every stored property of the step, so an option added later is covered
/// without anyone remembering to add it here. Only where the manifest and its files sit on this machine is left
/// out (`path`, `location`): a plan reviewed in one checkout runs from another.
enum PlanFingerprint {
    /// Properties that say where files are, not what runs.
    static let machineSpecific: Set<String> = ["path", "location"]

    /// The step's options, as canonical text: the same for equal steps in every process (sets are sorted).
    static func options(of step: PlanStep) -> String {
        switch step {
        case .migration(let migration): canonical(migration)
        case .seed(let seed): canonical(seed)
        case .code(let code): canonical(code)
        }
    }

    /// `value` as text that depends only on its contents: struct properties by name in declaration order,
    /// optionals, collections in order, sets and dictionaries sorted, enum cases with their payloads.
    static func canonical(_ value: Any) -> String {
        let mirror = Mirror(reflecting: value)
        guard let style = mirror.displayStyle else { return String(describing: value) }
        switch style {
        case .struct, .class, .tuple:
            let fields = mirror.children.compactMap { child -> String? in
                guard let label = child.label, !machineSpecific.contains(label) else { return nil }
                return label + "=" + canonical(child.value)
            }
            return "{" + fields.joined(separator: ";") + "}"
        case .optional:
            return mirror.children.first.map { canonical($0.value) } ?? "nil"
        case .collection:
            return "[" + mirror.children.map { canonical($0.value) }.joined(separator: ",") + "]"
        case .set:
            return "set[" + mirror.children.map { canonical($0.value) }.sorted().joined(separator: ",") + "]"
        case .dictionary:
            return "dict[" + mirror.children.map { canonical($0.value) }.sorted().joined(separator: ",") + "]"
        case .enum:
            guard let payload = mirror.children.first else { return String(describing: value) }
            return (payload.label ?? "") + "(" + canonical(payload.value) + ")"
        default:
            return String(describing: value)
        }
    }
}
