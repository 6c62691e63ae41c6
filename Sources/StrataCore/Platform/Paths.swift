/// File path components as NSString's path methods compute them, for the paths Strata builds (NSString is
/// Foundation's, not FoundationEssentials').
package enum PathComponents {
    /// "/a/b/" → "b"; "/" → "/"; "" → "".
    package static func last(_ path: String) -> String {
        let trimmed = trimmingTrailingSlashes(path)
        if trimmed.isEmpty { return path.isEmpty ? "" : "/" }
        guard let slash = trimmed.lastIndex(of: "/") else { return trimmed }
        return String(trimmed[trimmed.index(after: slash)...])
    }

    /// "/a/b" → "/a"; "/a" → "/"; "a" → ""; "a//b" → "a"; "/" → "/".
    package static func deletingLast(_ path: String) -> String {
        let trimmed = trimmingTrailingSlashes(path)
        if trimmed.isEmpty { return path.isEmpty ? "" : "/" }
        guard let slash = trimmed.lastIndex(of: "/") else { return "" }
        let parent = trimmingTrailingSlashes(String(trimmed[..<slash]))
        return parent.isEmpty ? "/" : parent
    }

    /// "a" + "b" → "a/b"; "a/" + "b" → "a/b"; "" + "b" → "b".
    package static func appending(_ component: String, to path: String) -> String {
        if path.isEmpty { return component }
        return path.hasSuffix("/") ? path + component : path + "/" + component
    }

    private static func trimmingTrailingSlashes(_ path: String) -> String {
        var result = Substring(path)
        while result.hasSuffix("/") { result = result.dropLast() }
        return String(result)
    }
}
