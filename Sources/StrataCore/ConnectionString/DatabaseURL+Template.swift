/// The `${NAME}` placeholders of a `<database url>`: checked when the manifest loads (`problems(inTemplate:)`),
/// filled from the environment, percent-encoded, only when the URI is used (`substitute`).
extension DatabaseURL {
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

    /// 1-based position in characters, as a reader counts along the attribute.
    private static func characterPosition(_ bytes: [UInt8], _ offset: Int) -> Int {
        String(decoding: bytes[..<offset], as: UTF8.self).count + 1
    }
}
