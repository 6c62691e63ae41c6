import CLibPQ
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataCore

/// PostgreSQL connection strings as Strata takes them: told from SQLite paths as libpq tells them, and with their
/// secrets kept out of what libpq says about them (`DatabaseURL.redacted` hides them in the string itself).
public enum PostgresURL {
    /// Whether `location` names a PostgreSQL database rather than a SQLite file: a connection URI
    /// (`postgresql://`, `postgres://`, case-sensitive as libpq reads them) or a libpq keyword/value string
    /// (`host=db dbname=app`, `DatabaseURL.isKeywordValue`). A keyword/value string libpq refuses is still one:
    /// `problem(with:)` says why, and it never becomes a file name.
    public static func isPostgres(_ location: String) -> Bool {
        isURI(location) || DatabaseURL.isKeywordValue(location)
    }

    /// Whether `location` starts with a scheme libpq reads as a URI.
    public static func isURI(_ location: String) -> Bool {
        DatabaseURL.schemes.contains { location.hasPrefix($0) }
    }

    /// Why libpq refuses `location` as a connection string (its own message, with every secret hidden), nil when
    /// it parses: `PQconninfoParse`, which reads it as `PQconnectdb` does and connects nowhere.
    public static func problem(with location: String) -> String? {
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(location, &error) else {
            defer { if let error { PQfreemem(error) } }
            let message = error.map { String(cString: $0).trimmingWhitespace() } ?? "libpq could not parse it (out of memory)"
            return redacting(message, url: location)
        }
        PQconninfoFree(options)
        return nil
    }

    /// `message` with every piece of a secret `url` holds replaced, raw, percent-decoded and unquoted: libpq's
    /// messages quote what they were given, and what it took for a host or a user may be part of a password.
    static func redacting(_ message: String, url: String) -> String {
        DatabaseURL.redacted(message, secretsOf: url)
    }
}
