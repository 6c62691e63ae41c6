import Foundation
import StrataCore

/// PostgreSQL connection URIs as Strata takes them: told from SQLite paths by their scheme, and with their
/// password kept out of what libpq says about them (`DatabaseURL.redacted` hides it in the URI itself).
public enum PostgresURL {
    /// Whether `location` is a PostgreSQL connection URI rather than a SQLite path (case-sensitive, as libpq is).
    public static func isPostgres(_ location: String) -> Bool {
        DatabaseURL.schemes.contains { location.hasPrefix($0) }
    }

    /// `message` with every password `url` holds replaced, raw and percent-decoded: libpq's messages quote what
    /// they were given.
    static func redacting(_ message: String, url: String) -> String {
        var message = DatabaseURL.redacted(message)
        for password in passwords(in: url) where password.count >= 1 {
            message = message.replacingOccurrences(of: password, with: DatabaseURL.redaction)
        }
        return message
    }

    /// The passwords written in a URI's user information and `password=` parameters, raw and percent-decoded.
    private static func passwords(in url: String) -> [String] {
        var found: [String] = []
        if let scheme = url.range(of: "://") {
            let rest = url[scheme.upperBound...]
            let authorityEnd = rest.lastIndex(of: "@") ?? rest.startIndex
            if let colon = rest[..<authorityEnd].firstIndex(of: ":") {
                found.append(String(rest[rest.index(after: colon)..<authorityEnd]))
            }
        }
        if let query = url.firstIndex(of: "?") {
            for pair in url[url.index(after: query)...].split(separator: "&") {
                let lower = pair.lowercased()
                if lower.hasPrefix("password=") || lower.hasPrefix("sslpassword=") {
                    found.append(String(pair.drop { $0 != "=" }.dropFirst()))
                }
            }
        }
        return found + found.compactMap { $0.removingPercentEncoding }.filter { !found.contains($0) }
    }
}
