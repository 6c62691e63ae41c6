/// Reading `<code>`: a step a Swift function runs, placed right after a migration of its `<migrations>`.
extension ManifestLoader {
    /// A `<code>` step: its name well formed (`codeNameProblem`), its `after` a migration of the same
    /// `<migrations>`, whose backends it takes, and a version (the schema refuses an empty one).
    mutating func readCode(_ element: XMLElement, following migrations: [MigrationStep]) {
        guard let name = element.attribute("name"), let after = element.attribute("after"),
              let version = element.attribute("version") else { return }
        if let reason = Self.codeNameProblem(name) { problem(element, "code step name '\(name)' \(reason)") }
        // By identity (file name, or id where given). Files of several backends may share one (one per backend): the
        // step follows each, so it is in every plan one of them is in.
        let targets = migrations.filter { $0.id == after }
        guard !targets.isEmpty else {
            let ids = migrations.map(\.id).sorted(by: NaturalOrder.areInIncreasingOrder)
            let known = ids.isEmpty ? "it has none" : "its migrations are " + ids.prefix(8).joined(separator: ", ") + (ids.count > 8 ? ", …" : "")
            problem(element, "code step '\(name)': after=\"\(after)\" names no migration of this <migrations> (\(known)); a code step follows a file of the <migrations> it is in")
            return
        }
        // A repeatable migration runs after every versioned one, and again whenever it changes: nothing runs once after it.
        if targets.contains(where: \.repeatable) {
            problem(element, "code step '\(name)': after=\"\(after)\" names a repeatable migration, which runs after the versioned ones and again whenever it changes; place the code step after a versioned migration")
            return
        }
        let backends: Set<DatabaseBackend>? = targets.contains { $0.backends == nil } ? nil
            : targets.reduce(into: Set<DatabaseBackend>()) { $0.formUnion($1.backends ?? []) }
        codeSteps.append(CodeStep(name: name, after: after, version: version, location: element.location,
                                  backends: backends))
    }

    /// Why a code step's name is not one (nil when it is): 1 to 128 ASCII letters, digits, `_`, `-` and `.`,
    /// starting with a letter, digit or `_`, so it reads the same in the manifest, in Swift and in history.
    static func codeNameProblem(_ name: String) -> String? {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty else { return "is empty" }
        func allowed(_ byte: UInt8, first: Bool) -> Bool {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"): true
            case UInt8(ascii: "-"), UInt8(ascii: "."): !first
            default: false
            }
        }
        guard bytes.count <= 128 else { return "is \(bytes.count) bytes long; at most 128" }
        for (offset, byte) in bytes.enumerated() where !allowed(byte, first: offset == 0) {
            return "is not a code step name: use ASCII letters, digits, '_', '-' and '.', starting with a letter, digit or '_'"
        }
        return nil
    }
}
