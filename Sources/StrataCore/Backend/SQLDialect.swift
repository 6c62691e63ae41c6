#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How one database spells SQL, for the code that writes or checks SQL without a connection: placeholders,
/// limits, how declared types classify values, and the rules a migration file is checked against before it runs.
///
/// Identifier quoting is standard SQL's (`quoteIdentifier`), which every backend shares. How `ModelStore` writes
/// rows where databases differ is the `RowWriter` each backend's dialect also adopts.
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
    /// The checksum version (`Checksum`) a migration file's new history record gets here: the one whose rules
    /// read SQL as this database does, so a line ending inside a literal of this dialect is data and one outside
    /// is layout. SQLite's is 2, PostgreSQL's 3. No default: a backend whose literals differ needs rules of its own.
    var checksumVersion: Int { get }
    /// Why this database cannot load `seed` as the manifest asks (a mode it has no statement for), or nil when it
    /// can. Asked when a plan is made, so such a seed is refused before anything runs, never half-way through a
    /// run; and by `validate`, without a database.
    func seedRefusal(_ seed: SeedStep) -> String?
    /// Whether a column of numeric affinity keeps decimal values exactly (PostgreSQL's `numeric`), so a `Decimal`
    /// may live there; SQLite's NUMERIC affinity turns decimal text into an approximate REAL.
    var numericIsExact: Bool { get }
    /// How finely a `Date` is written as a parameter: SQLite stores ISO-8601 text to the millisecond (the
    /// default); PostgreSQL's timestamps keep microseconds, so a date read from one is written back as the same
    /// instant. Every way a date reaches a statement (arguments, `SQL` interpolation, `ModelStore`) goes by it.
    var datePrecision: DatePrecision { get }
    /// How a `Date` is stored: ISO-8601 text at `datePrecision` (the default, and PostgreSQL's only form), or a
    /// number (`DateStorage`). Written dates and numbers read as dates go by it.
    var dateStorage: DateStorage { get }
    /// A value as the mapper encodes it, as the parameter for a column declared `declaredType`, where the database
    /// takes it in another form (PostgreSQL: a Swift array, JSON text, into an array column). Throws a
    /// `.conversion` error saying why it cannot.
    func parameter(_ value: DatabaseValue, forColumnOfType declaredType: String) throws -> DatabaseValue
}

extension SQLDialect {
    /// Every seed the manifest can describe loads as it says.
    public func seedRefusal(_ seed: SeedStep) -> String? { nil }

    /// False by default: SQLite's NUMERIC affinity turns decimal text into an approximate REAL.
    public var numericIsExact: Bool { false }

    /// Milliseconds by default.
    public var datePrecision: DatePrecision { .milliseconds }

    /// ISO-8601 text by default.
    public var dateStorage: DateStorage { .iso8601Text }

    /// `date` as this database stores it (`dateStorage`, `datePrecision`).
    public func databaseValue(of date: Date) -> DatabaseValue {
        dateStorage.databaseValue(of: date, precision: datePrecision)
    }

    /// Every value goes as the mapper encodes it.
    public func parameter(_ value: DatabaseValue, forColumnOfType declaredType: String) throws -> DatabaseValue { value }
}

/// How finely a database is sent a `Date` (`SQLDialect.datePrecision`): as UTC ISO-8601 text, rounded to the
/// nearest millisecond or microsecond.
public enum DatePrecision: Sendable, Equatable {
    /// `2024-05-01T09:30:00.123Z`: SQLite's stored form.
    case milliseconds
    /// `2024-05-01T09:30:00.123457Z`: PostgreSQL's `timestamp` and `timestamptz` resolution.
    case microseconds
}

extension SQLDialect {
    /// `value` as a parameter of this database: a `Date` at `datePrecision`, anything else as it converts itself
    /// (`checkedDatabaseValue`).
    package func checkedParameter(_ value: any DatabaseValueConvertible) -> Result<DatabaseValue, DatabaseError> {
        if let date = value as? Date { return .success(databaseValue(of: date)) }
        return checkedDatabaseValue(value)
    }
}

/// One problem `SQLDialect.lint` found in a migration's text.
public struct LintFinding: Sendable, Equatable {
    /// The 1-based line of the problem in the migration file.
    public let line: Int
    /// The 1-based column of the problem in its line.
    public let column: Int
    /// What is wrong and what to write instead.
    public let message: String

    /// Creates a finding at a place in the file.
    public init(line: Int, column: Int, message: String) {
        self.line = line
        self.column = column
        self.message = message
    }
}

/// A name quoted as a standard SQL identifier (double quotes, doubled inside), safe for any name on every backend.
public func quoteIdentifier(_ name: String) -> String {
    "\"" + name.replacingEvery("\"", with: "\"\"") + "\""
}
