/// How one database spells SQL, for the code that writes or checks SQL without a connection: placeholders,
/// limits, how declared types classify values, and the rules a migration file is checked against before it runs.
///
/// Identifier quoting is standard SQL's (`quoteIdentifier`), which every backend shares.
public protocol SQLDialect: Sendable {
    /// The database's name, for messages ("SQLite").
    var name: String { get }
    /// Which backend this is: it picks the database's plan from the manifest (`Manifest.plan(for:)`), so a
    /// migration marked for another backend never runs here.
    var backend: DatabaseBackend { get }
    /// The placeholder for the 1-based parameter `index` ("?" on SQLite, "$1" on PostgreSQL).
    func placeholder(_ index: Int) -> String
    /// The most parameters one statement may have.
    var maximumParameters: Int { get }
    /// How values of a column declared with this type are classified.
    func affinity(ofDeclaredType declaredType: String) -> Affinity
    /// What a migration may not do, found before it runs, read with the dialect's own script splitter: statements
    /// that cannot run inside a transaction (when `insideTransaction`), writes to Strata's history, and text the
    /// database would not run to its end. Lines and columns are 1-based, within `bytes`.
    func lint(_ bytes: [UInt8], insideTransaction: Bool) -> [LintFinding]
    /// Why this database cannot load `seed` as the manifest asks (a mode it has no statement for), or nil when it
    /// can. Asked when a plan is made, so such a seed is refused before anything runs, never half-way through a
    /// run; and by `validate`, without a database.
    func seedRefusal(_ seed: SeedStep) -> String?
}

extension SQLDialect {
    /// Every seed the manifest can describe loads as it says.
    public func seedRefusal(_ seed: SeedStep) -> String? { nil }
}

/// One problem `SQLDialect.lint` found in a migration's text.
public struct LintFinding: Sendable, Equatable {
    public let line: Int
    public let column: Int
    public let message: String

    public init(line: Int, column: Int, message: String) {
        self.line = line
        self.column = column
        self.message = message
    }
}

/// A name quoted as a standard SQL identifier (double quotes, doubled inside), safe for any name on every backend.
public func quoteIdentifier(_ name: String) -> String {
    "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}
