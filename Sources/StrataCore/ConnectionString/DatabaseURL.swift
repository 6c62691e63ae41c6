// One job a file: DatabaseURL+Template.swift (the placeholders), +Redaction.swift (secrets hidden in a location),
// +MessageRedaction.swift (a location's secrets hidden in a message about it), +KeywordValue.swift (libpq's
// keyword/value syntax), +PathOrURL.swift (a SQLite path told from a connection string), +Bytes.swift (the byte
// classes they share). What only libpq can say, whether it accepts a string (PostgresURL.problem(with:)), is in the
// PostgreSQL backend.

/// A database location as `<database>` and `--database` give it: a PostgreSQL connection URI (`<database url>`,
/// checked when the manifest loads, its `${NAME}` placeholders filled from the environment only when the URI is
/// used), a libpq keyword/value string, or a SQLite file path; and its secrets kept out of everything Strata
/// prints (`redacted(_:)`).
///
/// Each `${NAME}` is replaced by the variable's value percent-encoded: every byte but the unreserved characters
/// `A–Z a–z 0–9 - . _ ~` becomes `%XX`. libpq decodes every part of a URI (user, password, host, port, database
/// name, parameter values), so the value arrives as written wherever the placeholder stands, and a password
/// holding `@`, `:`, `/`, `?`, `#` or `%` cannot change what the URI says. The price: a variable is one value
/// and cannot add URI syntax (`host:port`, `?sslmode=…`); write each part as its own variable.
public enum DatabaseURL {
    /// The schemes libpq reads as a URI. libpq compares them case-sensitively, so Strata does too.
    public static let schemes = ["postgresql://", "postgres://"]

    /// What stands in place of a password in printed text.
    public static let redaction = "•••"
}
