import Foundation

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

    /// `text` with any password replaced by `•••`, for messages, logs and JSON: the password of a URI's user
    /// information (`postgresql://app:•••@db/x`), and the value of a `password` or `sslpassword` query parameter
    /// or keyword (`host=db password=•••`). Text that is neither (a SQLite path) comes back unchanged.
    ///
    /// A URI that is not well formed (a password holding an unencoded `/`, `?` or `#`, which libpq would misread)
    /// is redacted from the first `:` after the scheme to the last `@`: more than the password may be hidden, never
    /// less.
    public static func redacted(_ text: String) -> String {
        let bytes = Array(text.utf8)
        let output: [UInt8]
        if let restStart = schemeEnd(bytes) {
            output = redactedURI(bytes, restStart: restStart)
        } else {
            output = redactedKeywords(bytes) ?? bytes
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The offset just past `scheme://`, for any scheme (a URI's password is hidden whatever its scheme).
    private static func schemeEnd(_ bytes: [UInt8]) -> Int? {
        let separator = Array("://".utf8)
        guard bytes.count >= separator.count else { return nil }
        for start in 0...(bytes.count - separator.count) {
            let byte = bytes[start]
            if Array(bytes[start..<(start + separator.count)]) == separator { return start > 0 ? start + separator.count : nil }
            // A scheme is letters, digits, `+`, `-` and `.`; anything else first means this is no URI.
            guard isASCIILetterOrDigit(byte) || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-")
                    || byte == UInt8(ascii: ".") else { return nil }
        }
        return nil
    }

    private static func redactedURI(_ bytes: [UInt8], restStart: Int) -> [UInt8] {
        let at = UInt8(ascii: "@")
        let authorityEnd = bytes[restStart...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
            ?? bytes.endIndex
        var output = Array(bytes[..<restStart])
        var hostStart = restStart
        if let userinfoEnd = bytes[restStart..<authorityEnd].lastIndex(of: at) {
            output += redactedUserinfo(bytes[restStart..<userinfoEnd])
            output.append(at)
            hostStart = userinfoEnd + 1
        } else if let lastAt = bytes[restStart...].lastIndex(of: at),
                  !isWellFormedWithoutUserinfo(bytes, restStart: restStart, authorityEnd: authorityEnd) {
            // An `@` after a delimiter that a well-formed URI would not hold there: a password with an unencoded
            // `/`, `?` or `#`. Everything from the user name's colon to the last `@` goes.
            if let colon = bytes[restStart..<lastAt].firstIndex(of: UInt8(ascii: ":")) {
                output += bytes[restStart...colon]
            }
            output += Array(redaction.utf8)
            output.append(at)
            hostStart = lastAt + 1
        }
        if let query = bytes[hostStart...].firstIndex(of: UInt8(ascii: "?")) {
            output += bytes[hostStart...query]
            output += redactedQuery(Array(bytes[(query + 1)...]))
        } else {
            output += bytes[hostStart...]
        }
        return output
    }

    /// `user:password` → `user:•••`; a user alone is kept.
    private static func redactedUserinfo(_ userinfo: ArraySlice<UInt8>) -> [UInt8] {
        guard let colon = userinfo.firstIndex(of: UInt8(ascii: ":")) else { return Array(userinfo) }
        return Array(userinfo[...colon]) + Array(redaction.utf8)
    }

    /// True when a URI with no `@` in its authority still reads as libpq would read it: the authority is a list of
    /// `host[:port]` (a bracketed IPv6 address allowed), and every later `@` sits in a `key=value` query parameter
    /// (`?user=a@b`). Otherwise a password's unencoded delimiter may have ended the authority early.
    private static func isWellFormedWithoutUserinfo(_ bytes: [UInt8], restStart: Int, authorityEnd: Int) -> Bool {
        for host in bytes[restStart..<authorityEnd].split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
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

    /// A query with the values of `password` and `sslpassword` replaced. Keys are compared as libpq reads them:
    /// percent-decoded, spaces around them ignored.
    private static func redactedQuery(_ query: [UInt8]) -> [UInt8] {
        let parameters = query.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: false).map { parameter -> [UInt8] in
            guard let equals = parameter.firstIndex(of: UInt8(ascii: "=")) else { return Array(parameter) }
            let key = String(decoding: percentDecoded(parameter[..<equals]), as: UTF8.self).trimmingCharacters(in: .whitespaces)
            guard isPasswordKeyword(key) else { return Array(parameter) }
            return Array(parameter[...equals]) + Array(redaction.utf8)
        }
        return Array(parameters.joined(separator: [UInt8(ascii: "&")]))
    }

    /// A libpq keyword/value string (`host=db password='a b'`) with password values replaced; nil when the text is
    /// not one (a keyword without `=`), so a file path is left alone.
    private static func redactedKeywords(_ bytes: [UInt8]) -> [UInt8]? {
        var output: [UInt8] = []
        var index = 0
        var sawKeyword = false
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || (0x09...0x0D).contains(byte) }
        while index < bytes.count {
            let start = index
            while index < bytes.count && isSpace(bytes[index]) { index += 1 }
            guard index < bytes.count else { output += bytes[start...]; break }
            let keywordStart = index
            while index < bytes.count && !isSpace(bytes[index]) && bytes[index] != UInt8(ascii: "=") { index += 1 }
            let keyword = String(decoding: bytes[keywordStart..<index], as: UTF8.self)
            while index < bytes.count && isSpace(bytes[index]) { index += 1 }
            guard index < bytes.count, bytes[index] == UInt8(ascii: "="), !keyword.isEmpty else { return nil }
            index += 1
            while index < bytes.count && isSpace(bytes[index]) { index += 1 }
            let valueStart = index
            if index < bytes.count && bytes[index] == UInt8(ascii: "'") {
                index += 1
                while index < bytes.count && bytes[index] != UInt8(ascii: "'") {
                    index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
                }
                index = min(index + 1, bytes.count)
            } else {
                while index < bytes.count && !isSpace(bytes[index]) {
                    index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
                }
                index = min(index, bytes.count)
            }
            sawKeyword = true
            output += bytes[start..<valueStart]
            output += isPasswordKeyword(keyword) ? Array(redaction.utf8) : Array(bytes[valueStart..<index])
        }
        return sawKeyword ? output : nil
    }

    private static func isPasswordKeyword(_ keyword: String) -> Bool {
        ["password", "sslpassword"].contains(keyword.lowercased())
    }

    // MARK: The template

    /// What is wrong with a `<database url>` value, one message each, checked when the manifest loads: a scheme
    /// other than `postgresql://` or `postgres://`, a `${` that does not start a `${NAME}`, and a `%` that is not
    /// followed by two hex digits (which libpq refuses). Messages never quote the text around a password.
    static func problems(inTemplate template: String) -> [String] {
        let bytes = Array(template.utf8)
        let shown = "url=\"\(redacted(template))\""
        var problems: [String] = []
        if !schemes.contains(where: { bytes.starts(with: Array($0.utf8)) }) {
            let what = schemeEnd(bytes).map { "its scheme is '\(String(decoding: bytes[..<($0 - 3)], as: UTF8.self))'" }
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
