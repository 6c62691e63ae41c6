import Foundation

/// PostgreSQL connection URIs as Strata shows them: with the password taken out, wherever it was written.
public enum PostgresURL {
    /// Whether `location` is a PostgreSQL connection URI rather than a SQLite path.
    public static func isPostgres(_ location: String) -> Bool {
        let lower = location.lowercased()
        return lower.hasPrefix("postgres://") || lower.hasPrefix("postgresql://")
    }

    /// The URI with the password in the user-info part and any `password=` parameter replaced by `•••`.
    public static func redacted(_ url: String) -> String {
        var text = url
        if let scheme = text.range(of: "://") {
            let authorityEnd = text[scheme.upperBound...].firstIndex { $0 == "/" || $0 == "?" } ?? text.endIndex
            let authority = text[scheme.upperBound..<authorityEnd]
            if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") {
                text.replaceSubrange(text.index(after: colon)..<at, with: "•••")
            }
        }
        return redactingParameters(text)
    }

    /// `message` with every password `url` holds replaced, for errors libpq words with the value in them.
    public static func redacting(_ message: String, url: String) -> String {
        var message = message
        for password in passwords(in: url) where !password.isEmpty {
            message = message.replacingOccurrences(of: password, with: "•••")
        }
        return message
    }

    private static func redactingParameters(_ text: String) -> String {
        guard let query = text.firstIndex(of: "?") else { return text }
        let parameters = text[text.index(after: query)...].split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
            pair.lowercased().hasPrefix("password=") ? "password=•••" : String(pair)
        }
        return String(text[...query]) + parameters.joined(separator: "&")
    }

    /// The passwords written in a URI, raw and percent-decoded.
    static func passwords(in url: String) -> [String] {
        var found: [String] = []
        if let scheme = url.range(of: "://") {
            let authorityEnd = url[scheme.upperBound...].firstIndex { $0 == "/" || $0 == "?" } ?? url.endIndex
            let authority = url[scheme.upperBound..<authorityEnd]
            if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") {
                found.append(String(authority[authority.index(after: colon)..<at]))
            }
        }
        if let query = url.firstIndex(of: "?") {
            for pair in url[url.index(after: query)...].split(separator: "&") where pair.lowercased().hasPrefix("password=") {
                found.append(String(pair.dropFirst("password=".count)))
            }
        }
        return found + found.compactMap { $0.removingPercentEncoding }.filter { !found.contains($0) }
    }
}
