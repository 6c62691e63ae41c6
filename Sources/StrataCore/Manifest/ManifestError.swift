/// A place in a manifest file: the path as written, a 1-based line and, where libxml2 knows it, a column.
public struct SourceLocation: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// The manifest's path as written.
    public let path: String
    /// The 1-based line.
    public let line: Int
    /// The 1-based column, where libxml2 knows it.
    public let column: Int?

    /// Creates a location in a file.
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
    /// Where the problem is.
    public let location: SourceLocation
    /// What is wrong and what was expected.
    public let message: String

    /// Creates a problem at a location.
    public init(_ location: SourceLocation, _ message: String) {
        self.location = location
        self.message = message
    }

    /// `path:line:column: message`
    public var description: String { "\(location): \(message)" }
}

/// Every problem found while loading a manifest, not only the first.
public struct ManifestError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Every problem found, in file order.
    public let problems: [ManifestProblem]
    /// What the manifest would have carried in `Manifest.warnings`, so a refusal does not hide them.
    public let warnings: [ManifestProblem]

    /// Creates the error from the problems found and the warnings the manifest would have carried.
    public init(problems: [ManifestProblem], warnings: [ManifestProblem] = []) {
        self.problems = problems
        self.warnings = warnings
    }

    /// Every problem, one a line, each with its place.
    public var description: String {
        problems.map(\.description).joined(separator: "\n")
    }
}
