/// Reading `<include>`: another manifest read in place, its paths resolved against its own directory, a cycle of
/// includes refused.
extension ManifestLoader {
    mutating func readInclude(_ element: XMLElement, _ context: Context) {
        guard let relative = element.attribute("manifest") else { return }
        let resolved = context.resolve(relative)
        let identity = FileCheck.identity(of: resolved)
        if let start = includeStack.firstIndex(where: { $0.path == resolved || (identity != nil && $0.identity == identity) }) {
            let names = includeStack[start...].map { PathComponents.last($0.path) }
            let same = includeStack[start].path == resolved ? "" : " (the same file as \(names[0]))"
            problem(element, "include cycle: \((names + [relative]).joined(separator: " → "))\(same)")
            return
        }
        let bytes: [UInt8]
        switch FileCheck.read(resolved, limit: XMLDocument.maximumSize) {
        case .success(let read):
            bytes = read
        case .failure(let failure):
            problem(element, Self.message(failure, "included manifest '\(relative)' cannot be read"))
            return
        }
        includeStack.append((resolved, identity))
        read(bytes, path: context.written(relative), directory: PathComponents.deletingLast(resolved),
             isTop: false)
        includeStack.removeLast()
    }
}
