/// libpq's keyword/value connection strings (`host=db dbname=app password='a b'`), read as libpq reads them: the
/// keywords it knows, which of them hold secrets, where a value ends, and whether a text is one at all.
extension DatabaseURL {
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

    /// The secrets of a libpq keyword/value string (`host=db password='a b'`), read leniently so that text libpq
    /// would refuse is hidden too: a secret keyword's value, and the words after it up to the next keyword libpq
    /// knows (`password=a b` is `a` to libpq, which then refuses `b`); a value that is a URI has its own secrets.
    static func keywordSecretRanges(_ bytes: [UInt8]) -> [Range<Int>] {
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
}
