/// Telling a SQLite file path from a connection string: the scheme a location is written with, and why a
/// `<database path>` that is a URI or a keyword/value string is refused (`problems(inPath:)`).
extension DatabaseURL {
    /// The scheme `location` is written with when it looks like a URI Strata does not read: `scheme://…` (spaces
    /// before it allowed) other than libpq's exact `postgresql://` and `postgres://` and SQLite's `file:`, or
    /// `postgres:`/`postgresql:` in any case without them (`PostgreSQL://…`, `postgres:/db`). nil otherwise.
    public static func unreadScheme(of location: String) -> String? {
        if schemes.contains(where: { location.hasPrefix($0) }) || location.hasPrefix("file:") { return nil }
        return writtenScheme(Array(location.utf8))
    }

    /// The scheme of `scheme://…` or of `postgres:…`/`postgresql:…` in any case (spaces before it left out).
    static func writtenScheme(_ bytes: [UInt8]) -> String? {
        guard let end = schemeEnd(bytes) else { return nil }
        let scheme = bytes[..<end].drop { isSpace($0) }.prefix { $0 != UInt8(ascii: ":") }
        return String(decoding: scheme, as: UTF8.self)
    }

    /// The offset just past `scheme://`, for any scheme (a URI's password is hidden whatever its scheme), spaces
    /// before it allowed; or past `postgres:`/`postgresql:` in any case without `//`.
    static func schemeEnd(_ bytes: [UInt8]) -> Int? {
        var start = 0
        while start < bytes.count && isSpace(bytes[start]) { start += 1 }
        var index = start
        // A scheme is letters, digits, `+`, `-` and `.`; anything else first means this is no URI.
        while index < bytes.count && (isASCIILetterOrDigit(bytes[index]) || bytes[index] == UInt8(ascii: "+")
                                      || bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: ".")) {
            index += 1
        }
        guard index > start else { return nil }
        if bytes[index...].starts(with: Array("://".utf8)) { return index + 3 }
        // `postgresql:user:pw@host`, a URI libpq does not read, still shows where its password is.
        let scheme = String(decoding: bytes[start..<index], as: UTF8.self).lowercased()
        if index < bytes.count, bytes[index] == UInt8(ascii: ":"), scheme == "postgres" || scheme == "postgresql" { return index + 1 }
        return nil
    }

    /// What is wrong with a `<database path>` value: a connection string, where a SQLite file path belongs. A URI
    /// (`postgresql://…`, `PostgreSQL://…`, any `scheme://` but SQLite's `file:`) or a libpq keyword/value string
    /// (`host=db …`) resolved against the manifest's directory would name a file no one meant, created on `migrate`.
    static func problems(inPath path: String) -> [String] {
        let shown = "path=\"\(redacted(path))\""
        if isKeywordValue(path) {
            return ["\(shown) reads as a libpq connection string (keyword=value), not a SQLite file path: name a PostgreSQL "
                    + "database with url=\"postgresql://…\" or --database '…'; for a file whose name starts with 'name=', write ./name=…"]
        }
        if schemes.contains(where: { path.hasPrefix($0) }) {
            return ["\(shown) is a PostgreSQL connection URI, not a SQLite file path: write it as url=\"…\""]
        }
        if let scheme = unreadScheme(of: path) {
            return ["\(shown) is a URI with the scheme '\(scheme)', not a SQLite file path: a PostgreSQL database is named by "
                    + "url=\"postgresql://…\" (lower case, as libpq reads it), a SQLite file by path=\"…\""]
        }
        return []
    }
}
