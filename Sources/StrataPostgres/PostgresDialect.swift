import StrataCore

/// How PostgreSQL spells SQL: `$n` placeholders (`?` is a `jsonb` operator there), up to 65,535 parameters a
/// statement, and its type names classified for seeds and `check`.
public struct PostgresDialect: SQLDialect {
    public init() {}

    public var name: String { "PostgreSQL" }

    public var backend: DatabaseBackend { .postgresql }

    public func placeholder(_ index: Int) -> String { "$\(index)" }

    /// The protocol's limit: a Bind message counts parameters in 16 bits.
    public var maximumParameters: Int { 65_535 }

    /// Integers (and `boolean`, read as 0 and 1) are integer, floating types real, `numeric` numeric (exact),
    /// `bytea` blob, and everything else (text, dates and times, uuid, json, enums) text for the server to parse.
    public func affinity(ofDeclaredType declaredType: String) -> Affinity {
        var type = declaredType.lowercased()
        if let parenthesis = type.firstIndex(of: "(") { type = String(type[..<parenthesis]) }
        type = type.trimmingWhitespace()
        if type.hasSuffix("[]") { return .text }
        switch type {
        case "smallint", "integer", "bigint", "int", "int2", "int4", "int8", "smallserial", "serial", "bigserial",
             "serial2", "serial4", "serial8", "boolean", "bool", "oid":
            return .integer
        case "real", "double precision", "float", "float4", "float8":
            return .real
        case "numeric", "decimal":
            return .numeric
        case "bytea":
            return .blob
        default:
            return .text
        }
    }

    public func lint(_ bytes: [UInt8], insideTransaction: Bool) -> [LintFinding] {
        PostgresLint.findings(in: bytes, insideTransaction: insideTransaction)
    }
}
