#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A PostgreSQL connection URI as `<database url="…">` holds it: checked when the manifest loads, its `${NAME}`
/// placeholders filled from the environment only when the URI is used, and its password kept out of everything
/// Strata prints (`redacted(_:)`).
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

    // MARK: Display

    /// The keywords libpq knows (PostgreSQL 18's list, a superset of older ones): after a password, a word that is
    /// not one of these may still be part of the password, so it is hidden with it.
    static let libpqKeywords: Set<String> = [
        "service", "user", "password", "passfile", "channel_binding", "connect_timeout", "dbname", "host", "hostaddr",
        "port", "client_encoding", "options", "application_name", "fallback_application_name", "keepalives",
        "keepalives_idle", "keepalives_interval", "keepalives_count", "tcp_user_timeout", "sslmode", "sslnegotiation",
        "sslcompression", "sslcert", "sslkey", "sslcertmode", "sslpassword", "sslrootcert", "sslcrl", "sslcrldir",
        "sslsni", "sslkeylogfile", "requirepeer", "require_auth", "ssl_min_protocol_version", "ssl_max_protocol_version",
        "min_protocol_version", "max_protocol_version", "gssencmode", "krbsrvname", "gsslib", "gssdelegation",
        "replication", "target_session_attrs", "load_balance_hosts", "scram_client_key", "scram_server_key",
        "oauth_issuer", "oauth_client_id", "oauth_client_secret", "oauth_scope",
    ]

    /// Keywords whose values are secrets. Compared in lower case: `PASSWORD=x` is no keyword to libpq, but a
    /// reader sees a password.
    static let secretKeywords: Set<String> = ["password", "sslpassword", "oauth_client_secret", "scram_client_key", "scram_server_key"]

    /// `text` with every secret replaced by `•••`, for messages, logs and JSON: the password of a URI's user
    /// information (`postgresql://app:•••@db/x`, whatever the scheme), and the value of a `password` or
    /// `sslpassword` query parameter or keyword (`host=db password=•••`), also in a keyword's value that is itself a
    /// URI. Text that holds none (a SQLite path) comes back unchanged.
    ///
    /// Where libpq and a reader could split a password differently (an unencoded `@`, `/`, `?`, `&` or space in
    /// it), everything either could take for it is hidden: in a URI from the user name's `:` to the last `@`, after
    /// `password=` every following word or parameter up to the next keyword libpq knows. More than the password
    /// may be hidden, never less.
    public static func redacted(_ text: String) -> String {
        let bytes = Array(text.utf8)
        let ranges = secretRanges(bytes)
        guard !ranges.isEmpty else { return text }
        var output: [UInt8] = []
        var copied = 0
        for range in ranges {
            output += bytes[copied..<range.lowerBound]
            output += Array(redaction.utf8)
            copied = range.upperBound
        }
        output += bytes[copied...]
        return String(decoding: output, as: UTF8.self)
    }

    /// `message` (text a library such as libpq or SQLite wrote about `location`) with every piece of a secret of
    /// `location` replaced by `•••`: libpq quotes what it took from a connection string, a host name, a port, a
    /// user or a database name, and when a password holds an unencoded delimiter those are built from pieces of
    /// it (`could not translate host name "•••@db"` for `postgresql://app:se@cret@db/x`). Each piece is hidden raw,
    /// percent-decoded and unquoted, wherever it stands as a whole word.
    public static func redacted(_ message: String, secretsOf location: String) -> String {
        var text = message
        if !location.isEmpty { text = text.replacingEvery(location, with: redacted(location)) }
        var bytes = Array(text.utf8)
        for piece in secretPieces(of: location) {
            bytes = replacingWords(Array(piece.utf8), in: bytes)
        }
        return redacted(String(decoding: collapsingRedactions(bytes), as: UTF8.self))
    }

    /// Whether `text` reads as a libpq keyword/value connection string: its first word is `name=` (a name of
    /// letters, digits and `_`, spaces allowed around `=`), as in `host=db dbname=app`. libpq reads any such text
    /// as one (refusing a keyword it does not know), never as a file name.
    public static func isKeywordValue(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        var index = 0
        while index < bytes.count && isSpace(bytes[index]) { index += 1 }
        let nameStart = index
        while index < bytes.count && (isASCIILetterOrDigit(bytes[index]) || bytes[index] == UInt8(ascii: "_")) { index += 1 }
        guard index > nameStart, !isASCIIDigit(bytes[nameStart]) else { return false }
        while index < bytes.count && isSpace(bytes[index]) { index += 1 }
        return index < bytes.count && bytes[index] == UInt8(ascii: "=")
    }

    /// The scheme `location` is written with when it looks like a URI Strata does not read: `scheme://…` (spaces
    /// before it allowed) other than libpq's exact `postgresql://` and `postgres://` and SQLite's `file:`, or
    /// `postgres:`/`postgresql:` in any case without them (`PostgreSQL://…`, `postgres:/db`). nil otherwise.
    public static func unreadScheme(of location: String) -> String? {
        if schemes.contains(where: { location.hasPrefix($0) }) || location.hasPrefix("file:") { return nil }
        return writtenScheme(Array(location.utf8))
    }

    /// The scheme of `scheme://…` or of `postgres:…`/`postgresql:…` in any case (spaces before it left out).
    private static func writtenScheme(_ bytes: [UInt8]) -> String? {
        guard let end = schemeEnd(bytes) else { return nil }
        let scheme = bytes[..<end].drop { isSpace($0) }.prefix { $0 != UInt8(ascii: ":") }
        return String(decoding: scheme, as: UTF8.self)
    }

    /// The byte ranges of `bytes` that hold secrets, in order, not overlapping, none empty.
    static func secretRanges(_ bytes: [UInt8]) -> [Range<Int>] {
        let found: [Range<Int>]
        if let restStart = schemeEnd(bytes) {
            found = uriSecretRanges(bytes, restStart: restStart)
        } else if bytes.starts(with: Array("file:".utf8)) {
            // SQLite's URI filename (no `//` needed) takes query parameters too.
            found = bytes.firstIndex(of: UInt8(ascii: "?")).map {
                querySecretRanges(bytes, from: $0 + 1, keys: ["vfs", "mode", "cache", "psow", "nolock", "immutable"])
            } ?? []
        } else {
            found = keywordSecretRanges(bytes)
        }
        var merged: [Range<Int>] = []
        for range in found.filter({ !$0.isEmpty }).sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = merged.last, range.lowerBound <= last.upperBound {
                merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
            } else {
                merged.append(range)
            }
        }
        return merged
    }

    /// The offset just past `scheme://`, for any scheme (a URI's password is hidden whatever its scheme), spaces
    /// before it allowed; or past `postgres:`/`postgresql:` in any case without `//`.
    private static func schemeEnd(_ bytes: [UInt8]) -> Int? {
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

    /// A URI's secrets: the password of its user information, and secret query parameters.
    private static func uriSecretRanges(_ bytes: [UInt8], restStart: Int) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        var afterUserinfo = restStart
        if let end = userinfoEnd(bytes, restStart: restStart) {
            if let colon = bytes[restStart..<end].firstIndex(of: UInt8(ascii: ":")) { ranges.append((colon + 1)..<end) }
            afterUserinfo = end + 1
        }
        if let query = bytes[afterUserinfo...].firstIndex(of: UInt8(ascii: "?")) {
            ranges += querySecretRanges(bytes, from: query + 1)
        }
        return ranges
    }

    /// The `@` that ends a URI's user information; nil when it has none. libpq takes the first `@` before any `/`;
    /// a reader may take the last one. When what follows libpq's is a plain host list, path and query (or there
    /// is no `@` where libpq looks and the whole URI is plain), the two agree; otherwise the last `@` is taken, so
    /// that the password either could read is hidden.
    private static func userinfoEnd(_ bytes: [UInt8], restStart: Int) -> Int? {
        let at = UInt8(ascii: "@")
        guard let lastAt = bytes[restStart...].lastIndex(of: at) else { return nil }
        let slash = bytes[restStart...].firstIndex(of: UInt8(ascii: "/")) ?? bytes.endIndex
        if let libpqAt = bytes[restStart..<slash].firstIndex(of: at) {
            if isPlain(bytes, from: libpqAt + 1) { return libpqAt }
        } else if isPlain(bytes, from: restStart) {
            return nil
        }
        return lastAt
    }

    /// True when the URI from `start` (past any user information) is a list of `host[:port]` with no `@` (a
    /// bracketed IPv6 address allowed), and every later `@` sits in a `key=value` query parameter (`?user=a@b`):
    /// nothing in it can be part of a password.
    private static func isPlain(_ bytes: [UInt8], from start: Int) -> Bool {
        let authorityEnd = bytes[start...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
            ?? bytes.endIndex
        guard !bytes[start..<authorityEnd].contains(UInt8(ascii: "@")) else { return false }
        for host in bytes[start..<authorityEnd].split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
            var name = host[...]
            if name.first == UInt8(ascii: "[") {
                guard let close = name.firstIndex(of: UInt8(ascii: "]")) else { return false }
                name = name[(close + 1)...]
            } else if let colon = name.firstIndex(of: UInt8(ascii: ":")) {
                name = name[colon...]
            } else {
                continue
            }
            if name.isEmpty { continue }
            guard name.first == UInt8(ascii: ":"), name.dropFirst().allSatisfy(isASCIIDigit) else { return false }
        }
        let rest = bytes[authorityEnd...]
        guard let query = rest.firstIndex(of: UInt8(ascii: "?")) else { return !rest.contains(UInt8(ascii: "@")) }
        if bytes[authorityEnd..<query].contains(UInt8(ascii: "@")) { return false }
        for parameter in bytes[(query + 1)...].split(separator: UInt8(ascii: "&")) where parameter.contains(UInt8(ascii: "@")) {
            guard let equals = parameter.firstIndex(of: UInt8(ascii: "=")),
                  let firstAt = parameter.firstIndex(of: UInt8(ascii: "@")), equals < firstAt else { return false }
        }
        return true
    }

    /// The values of secret query parameters. Keys are compared as libpq reads them: percent-decoded, spaces
    /// around them ignored. libpq ends a value at `&`; a reader may not (`password=a&b`), so the parameters after
    /// one, up to the next whose key is one of `keys` (libpq's, or SQLite's for a `file:` URI), are hidden with it.
    private static func querySecretRanges(_ bytes: [UInt8], from start: Int, keys: Set<String> = libpqKeywords.union(["ssl"])) -> [Range<Int>] {
        var parameters: [Range<Int>] = []
        var parameterStart = start
        for index in start...bytes.count where index == bytes.count || bytes[index] == UInt8(ascii: "&") {
            parameters.append(parameterStart..<index)
            parameterStart = index + 1
        }
        func keyOf(_ parameter: Range<Int>) -> String? {
            guard let equals = bytes[parameter].firstIndex(of: UInt8(ascii: "=")) else { return nil }
            return String(decoding: percentDecoded(bytes[parameter.lowerBound..<equals]), as: UTF8.self).trimmingWhitespace()
        }
        var ranges: [Range<Int>] = []
        var index = 0
        while index < parameters.count {
            let parameter = parameters[index]
            index += 1
            guard let key = keyOf(parameter), secretKeywords.contains(key.lowercased()),
                  let equals = bytes[parameter].firstIndex(of: UInt8(ascii: "=")) else { continue }
            var end = parameter.upperBound
            while index < parameters.count, !(keyOf(parameters[index]).map(keys.contains) ?? false) {
                end = parameters[index].upperBound
                index += 1
            }
            ranges.append((equals + 1)..<end)
        }
        return ranges
    }

    /// The secrets of a libpq keyword/value string (`host=db password='a b'`), read leniently so that text libpq
    /// would refuse is hidden too: a secret keyword's value, and the words after it up to the next keyword libpq
    /// knows (`password=a b` is `a` to libpq, which then refuses `b`); a value that is a URI has its own secrets.
    private static func keywordSecretRanges(_ bytes: [UInt8]) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        var secret: Range<Int>?
        var index = 0
        while true {
            while index < bytes.count && isSpace(bytes[index]) { index += 1 }
            guard index < bytes.count else { break }
            if let (keyword, valueStart) = keywordAt(bytes, index) {
                let valueEnd = valueEnd(bytes, from: valueStart)
                if secretKeywords.contains(keyword.lowercased()) {
                    if let open = secret { ranges.append(open) }
                    secret = valueStart..<valueEnd
                } else if let open = secret, !libpqKeywords.contains(keyword) {
                    secret = open.lowerBound..<valueEnd
                } else {
                    if let open = secret { ranges.append(open) }
                    secret = nil
                    ranges += nestedURISecretRanges(bytes, valueStart..<valueEnd)
                }
                index = valueEnd
            } else {
                let end = valueEnd(bytes, from: index)
                if let open = secret { secret = open.lowerBound..<end }
                index = end
            }
        }
        if let open = secret { ranges.append(open) }
        return ranges
    }

    /// `keyword =` at `index`: the keyword and where its value starts.
    private static func keywordAt(_ bytes: [UInt8], _ start: Int) -> (String, Int)? {
        var index = start
        while index < bytes.count && !isSpace(bytes[index]) && bytes[index] != UInt8(ascii: "=") { index += 1 }
        guard index > start else { return nil }
        let keyword = String(decoding: bytes[start..<index], as: UTF8.self)
        while index < bytes.count && isSpace(bytes[index]) { index += 1 }
        guard index < bytes.count, bytes[index] == UInt8(ascii: "=") else { return nil }
        index += 1
        while index < bytes.count && isSpace(bytes[index]) { index += 1 }
        return (keyword, index)
    }

    /// Where a value starting at `start` ends, as libpq reads it: `'…'` with `\` escapes, else up to a space.
    private static func valueEnd(_ bytes: [UInt8], from start: Int) -> Int {
        var index = start
        if index < bytes.count && bytes[index] == UInt8(ascii: "'") {
            index += 1
            while index < bytes.count && bytes[index] != UInt8(ascii: "'") {
                index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
            }
            return min(index + 1, bytes.count)
        }
        while index < bytes.count && !isSpace(bytes[index]) {
            index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
        }
        return min(index, bytes.count)
    }

    /// The secrets of a keyword's value that is a URI (`dbname=postgresql://app:pw@db/x`); a quoted one holding an
    /// escape is hidden whole, as its bytes are not the URI's.
    private static func nestedURISecretRanges(_ bytes: [UInt8], _ value: Range<Int>) -> [Range<Int>] {
        var inner = value
        if bytes[value].first == UInt8(ascii: "'") {
            guard value.count >= 2 else { return [] }
            inner = (value.lowerBound + 1)..<(value.upperBound - 1)
        }
        let text = Array(bytes[inner])
        guard let restStart = schemeEnd(text) else { return [] }
        if value != inner && text.contains(UInt8(ascii: "\\")) { return [value] }
        return uriSecretRanges(text, restStart: restStart).map { ($0.lowerBound + inner.lowerBound)..<($0.upperBound + inner.lowerBound) }
    }

    /// Every piece of `location`'s secrets that a library could quote on its own, longest first: each secret whole
    /// and split at the characters libpq splits a URI or a keyword string at, raw, percent-decoded and unquoted.
    static func secretPieces(of location: String) -> [String] {
        let bytes = Array(location.utf8)
        let delimiters = Set("@:/,?&=[]#'\"\\".utf8)
        var pieces: Set<String> = []
        for range in secretRanges(bytes) {
            let whole = bytes[range]
            for piece in [whole] + whole.split(whereSeparator: { delimiters.contains($0) || isSpace($0) }) {
                pieces.insert(String(decoding: piece, as: UTF8.self))
                pieces.insert(String(decoding: percentDecoded(piece), as: UTF8.self))
                var unquoted = Array(piece)
                if unquoted.count >= 2, unquoted.first == UInt8(ascii: "'"), unquoted.last == UInt8(ascii: "'") {
                    unquoted = Array(unquoted.dropFirst().dropLast())
                }
                var unescaped: [UInt8] = []
                var index = 0
                while index < unquoted.count {
                    if unquoted[index] == UInt8(ascii: "\\"), index + 1 < unquoted.count { index += 1 }
                    unescaped.append(unquoted[index])
                    index += 1
                }
                pieces.insert(String(decoding: unescaped, as: UTF8.self))
            }
        }
        return pieces.filter { !$0.isEmpty }.sorted { ($0.utf8.count, $0) > ($1.utf8.count, $1) }
    }

    /// `text` with every occurrence of `piece` that is a whole word (no ASCII letter or digit glued to an edge that
    /// is one) replaced by `•••`, so a short piece does not eat the words of the message around it.
    private static func replacingWords(_ piece: [UInt8], in text: [UInt8]) -> [UInt8] {
        guard let first = piece.first, let last = piece.last, piece.count <= text.count else { return text }
        var output: [UInt8] = []
        var index = 0
        while index < text.count {
            let end = index + piece.count
            if end <= text.count, text[index..<end].elementsEqual(piece),
               !(isASCIILetterOrDigit(first) && index > 0 && isASCIILetterOrDigit(text[index - 1])),
               !(isASCIILetterOrDigit(last) && end < text.count && isASCIILetterOrDigit(text[end])) {
                output += Array(redaction.utf8)
                index = end
            } else {
                output.append(text[index])
                index += 1
            }
        }
        return output
    }

    /// `•••@•••` → `•••`: pieces hidden one by one would otherwise show the delimiters between them.
    private static func collapsingRedactions(_ text: [UInt8]) -> [UInt8] {
        let mark = Array(redaction.utf8)
        let delimiters = Set("@:/,?&=[]#'\\".utf8)
        var output: [UInt8] = []
        var index = 0
        while index < text.count {
            if output.count >= mark.count, output.suffix(mark.count).elementsEqual(mark) {
                var end = index
                while end < text.count && delimiters.contains(text[end]) { end += 1 }
                if end > index, text[end...].starts(with: mark) {
                    index = end + mark.count
                    continue
                }
            }
            output.append(text[index])
            index += 1
        }
        return output
    }

    private static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || (0x09...0x0D).contains(byte) }

    // MARK: The template

    /// What is wrong with a `<database url>` value, one message each, checked when the manifest loads: a scheme
    /// other than `postgresql://` or `postgres://`, a `${` that does not start a `${NAME}`, and a `%` that is not
    /// followed by two hex digits (which libpq refuses). Messages never quote the text around a password.
    static func problems(inTemplate template: String) -> [String] {
        let bytes = Array(template.utf8)
        let shown = "url=\"\(redacted(template))\""
        var problems: [String] = []
        if !schemes.contains(where: { bytes.starts(with: Array($0.utf8)) }) {
            let what = writtenScheme(bytes).map { "its scheme is '\($0)'" }
                ?? "it is not a URI"
            problems.append("\(shown) is not a PostgreSQL connection URI (\(what)): expected postgresql://… or postgres://… "
                            + "(the scheme written out, not from a variable); for a SQLite file use path=\"…\"")
        }
        switch scan(bytes) {
        case .success: break
        case .failure(let malformed):
            for (offset, kind) in malformed.places {
                let position = "character \(characterPosition(bytes, offset))"
                switch kind {
                case .placeholder:
                    problems.append("\(shown): the '${' at \(position) does not start a ${NAME} (NAME is letters, digits "
                                    + "and _, not starting with a digit, closed by '}'); a literal '{' in a URI is written %7B")
                case .percent:
                    problems.append("\(shown): the '%' at \(position) is not followed by two hex digits; "
                                    + "a literal '%' in a URI is written %25")
                }
            }
        }
        return problems
    }

    /// The template with every `${NAME}` replaced by its percent-encoded value from `environment`; the names that
    /// are unset, or set to the empty string, when any is.
    static func substitute(_ template: String, environment: [String: String]) -> Result<String, Unresolved> {
        let bytes = Array(template.utf8)
        guard case .success(let placeholders) = scan(bytes) else {
            // The loader refuses such a template; one built by hand gets the same answer.
            return .failure(Unresolved(unset: [], empty: [], malformed: true))
        }
        var output: [UInt8] = []
        var unset: [String] = []
        var empty: [String] = []
        var copied = 0
        for placeholder in placeholders {
            output += bytes[copied..<placeholder.range.lowerBound]
            copied = placeholder.range.upperBound
            switch environment[placeholder.name] {
            case nil:
                if !unset.contains(placeholder.name) { unset.append(placeholder.name) }
            case ""?:
                if !empty.contains(placeholder.name) { empty.append(placeholder.name) }
            case let value?:
                output += percentEncoded(value)
            }
        }
        output += bytes[copied...]
        guard unset.isEmpty && empty.isEmpty else { return .failure(Unresolved(unset: unset, empty: empty, malformed: false)) }
        return .success(String(decoding: output, as: UTF8.self))
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

    /// The variables a template could not be filled from.
    struct Unresolved: Error, Equatable {
        let unset: [String]
        let empty: [String]
        /// The template has a `${` that is not a placeholder (only possible for a template the loader did not check).
        let malformed: Bool
    }

    /// One `${NAME}`: the name and the bytes it spans.
    struct Placeholder: Equatable {
        let name: String
        let range: Range<Int>
    }

    enum Malformed: Equatable {
        case placeholder, percent
    }

    /// Every `${NAME}` in order, or where the template has a `${` or `%` that is not well formed. A `$` not
    /// followed by `{` is an ordinary character.
    static func scan(_ bytes: [UInt8]) -> Result<[Placeholder], MalformedTemplate> {
        var placeholders: [Placeholder] = []
        var malformed: [(Int, Malformed)] = []
        var index = 0
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "$") where index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "{"):
                var end = index + 2
                while end < bytes.count && (isASCIILetterOrDigit(bytes[end]) || bytes[end] == UInt8(ascii: "_")) { end += 1 }
                let name = bytes[(index + 2)..<end]
                guard let first = name.first, !isASCIIDigit(first), end < bytes.count, bytes[end] == UInt8(ascii: "}") else {
                    malformed.append((index, .placeholder))
                    index += 2
                    continue
                }
                placeholders.append(Placeholder(name: String(decoding: name, as: UTF8.self), range: index..<(end + 1)))
                index = end + 1
            case UInt8(ascii: "%"):
                guard index + 2 < bytes.count, isHexDigit(bytes[index + 1]), isHexDigit(bytes[index + 2]) else {
                    malformed.append((index, .percent))
                    index += 1
                    continue
                }
                index += 3
            default:
                index += 1
            }
        }
        return malformed.isEmpty ? .success(placeholders) : .failure(MalformedTemplate(places: malformed))
    }

    /// Where a template's `${` or `%` is not well formed: byte offsets, in order.
    struct MalformedTemplate: Error {
        let places: [(Int, Malformed)]
    }

    /// Every byte of the value's UTF-8 but `A–Z a–z 0–9 - . _ ~` as `%XX`.
    static func percentEncoded(_ value: String) -> [UInt8] {
        let hex = Array("0123456789ABCDEF".utf8)
        var output: [UInt8] = []
        for byte in value.utf8 {
            if isASCIILetterOrDigit(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~") {
                output.append(byte)
            } else {
                output += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return output
    }

    private static func percentDecoded(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        var output: [UInt8] = []
        var index = bytes.startIndex
        while index < bytes.endIndex {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.endIndex,
               let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) {
                output.append(high << 4 | low)
                index += 3
            } else {
                output.append(bytes[index])
                index += 1
            }
        }
        return output
    }

    /// 1-based position in characters, as a reader counts along the attribute.
    private static func characterPosition(_ bytes: [UInt8], _ offset: Int) -> Int {
        String(decoding: bytes[..<offset], as: UTF8.self).count + 1
    }

    private static func isASCIIDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    private static func isASCIILetterOrDigit(_ byte: UInt8) -> Bool {
        isASCIIDigit(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20)
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool { hexValue(byte) != nil }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
