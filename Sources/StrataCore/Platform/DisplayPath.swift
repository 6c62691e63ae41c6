#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A path relative to the current directory when it lies below it, for readable messages.
public func displayPath(_ path: String) -> String {
    let cwd = FileManager.default.currentDirectoryPath
    let prefix = cwd.hasSuffix("/") ? cwd : cwd + "/"
    return path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : path
}
