/// A place in a manifest file: the path as written, a 1-based line and, where libxml2 knows it, a column.
public struct SourceLocation: Sendable, Equatable, Hashable, CustomStringConvertible {
    public let path: String
    public let line: Int
    public let column: Int?

    public init(path: String, line: Int, column: Int? = nil) {
        self.path = path
        self.line = line
        self.column = column
    }

    /// `path:line:column` (or `path:line` without a column).
    public var description: String {
        "\(path):\(line)" + (column.map { ":\($0)" } ?? "")
    }
}

/// One thing wrong with a manifest or a file it names.
public struct ManifestProblem: Sendable, Equatable, CustomStringConvertible {
    public let location: SourceLocation
    public let message: String

    public init(_ location: SourceLocation, _ message: String) {
        self.location = location
        self.message = message
    }

    /// `path:line:column: message`
    public var description: String { "\(location): \(message)" }
}

/// Every problem found while loading a manifest, not only the first.
public struct ManifestError: Error, Sendable, Equatable, CustomStringConvertible {
    public let problems: [ManifestProblem]
    /// What the manifest would have carried in `Manifest.warnings`, so a refusal does not hide them.
    public let warnings: [ManifestProblem]

    public init(problems: [ManifestProblem], warnings: [ManifestProblem] = []) {
        self.problems = problems
        self.warnings = warnings
    }

    public var description: String {
        problems.map(\.description).joined(separator: "\n")
    }
}
