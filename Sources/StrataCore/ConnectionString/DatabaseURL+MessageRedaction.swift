/// Hiding a connection string's secrets in a message about it (`redacted(_:secretsOf:)`): libpq and SQLite quote
/// pieces of what they were given, and a piece of a password may stand alone in their text.
extension DatabaseURL {
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
}
