/// Hiding the secrets of a connection string in the string itself (`redacted(_:)`): a URI's password and secret
/// query parameters, a keyword/value string's secret values (`DatabaseURL+KeywordValue.swift`), a SQLite `file:`
/// URI's parameters. Where libpq and a reader could split a secret differently, everything either could take for
/// it is hidden.
extension DatabaseURL {
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

    /// The secrets of a keyword's value that is a URI (`dbname=postgresql://app:pw@db/x`); a quoted one holding an
    /// escape is hidden whole, as its bytes are not the URI's.
    static func nestedURISecretRanges(_ bytes: [UInt8], _ value: Range<Int>) -> [Range<Int>] {
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
}
