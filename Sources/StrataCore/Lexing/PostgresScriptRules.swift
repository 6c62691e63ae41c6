/// What psql reads of a script beside SQL (`PostgresLexer` has SQL's rules): where the data of `COPY … FROM STDIN`
/// ends, and what a meta-command line says. The script reader (`PostgresScript`, which runs and lints files) and
/// the checksum's literal tracker (`PostgresLiterals`) both go by these, so they agree on which lines are COPY data.
package enum PostgresScriptRules {
    /// Whether a COPY data line is the one that ends the data.
    package enum CopyTerminator: Equatable {
        case yes(length: Int)
        case no
        /// The bytes read so far do not tell.
        case undecided
    }

    /// Whether the line starting at `text[i]` (bytes before `end` read; `isAtEnd`: no byte follows them) ends COPY
    /// data: psql ends it at a line that is exactly `\.` with LF or CRLF; a last line `\.` without a line end ends
    /// it too (the server reads that as its end marker).
    package static func copyTerminator(in text: UnsafeBufferPointer<UInt8>, at i: Int, end: Int,
                                       isAtEnd: Bool) -> CopyTerminator {
        let pattern = [Byte.backslash, Byte.dot]
        for k in 0..<2 {
            guard i + k < end else { return isAtEnd ? .no : .undecided }
            guard text[i + k] == pattern[k] else { return .no }
        }
        guard i + 2 < end else { return isAtEnd ? .yes(length: 2) : .undecided }
        switch text[i + 2] {
        case Byte.lineFeed:
            return .yes(length: 3)
        case Byte.carriageReturn:
            guard i + 3 < end else { return isAtEnd ? .yes(length: 3) : .undecided }
            return text[i + 3] == Byte.lineFeed ? .yes(length: 4) : .no
        default:
            return .no
        }
    }

    /// The name and argument of a meta-command line: `line` is what follows the backslash up to the line's end.
    /// The name runs to the first blank or backslash; the argument is the rest, blanks around it removed.
    package static func metaCommand(_ line: ArraySlice<UInt8>) -> (name: String, argument: String) {
        let isBlank: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0C || $0 == 0x0B }
        let name = line.prefix { !isBlank($0) && $0 != Byte.backslash }
        var argument = line.dropFirst(name.count).drop(while: isBlank)
        while let last = argument.last, isBlank(last) { argument = argument.dropLast() }
        return (String(decoding: name, as: UTF8.self), String(decoding: argument, as: UTF8.self))
    }

    /// Whether a meta-command reads COPY data from the script, from the line after its own: `\copy … from stdin`
    /// (not `pstdin`, psql's own input).
    package static func readsCopyData(name: String, argument: String) -> Bool {
        guard name == "copy" else { return false }
        let words = argument.lowercased().split { " \t(),;".contains($0) }
        return zip(words, words.dropFirst()).contains { $0 == "from" && $1 == "stdin" }
    }
}
