/// One token of a statement as the lint reads it (and the checksum reads a COPY statement's options). Recorded only
/// when asked (`PostgresLexer.recordsTokens`): running a script needs none.
package struct PostgresToken: Equatable, Sendable {
    package enum Kind: Equatable, Sendable {
        /// A key word or unquoted identifier; `text` is upper-cased (ASCII letters only, which is all PostgreSQL
        /// folds in UTF-8).
        case word
        /// A `"quoted"` or `U&"quoted"` identifier; `text` is the name, a doubled `""` read as one `"`.
        case quotedIdentifier
        /// A string constant in any quoting; `text` is the content of a short `'…'` constant (as written, for
        /// the lint's few value checks), otherwise empty.
        case string
        /// A number, with what PostgreSQL reads as part of it (`1e5`, `0x1F`, `1abc`); `text` as written.
        case number
        /// A positional parameter, `$1`.
        case parameter
        /// One punctuation or operator character.
        case symbol
    }

    package let kind: Kind
    package let text: String
    /// How many parentheses are open around the token (0: the statement's own level).
    package let depth: Int
    /// Where the token stands in the text, as absolute byte offsets. A string constant continued across a line
    /// break is one token per part, each from its own opening quote.
    package let range: Range<Int>

    /// Whether this is the (upper-case) key word or unquoted name `word`.
    package func isWord(_ word: String) -> Bool { kind == .word && text == word }
}

/// The ASCII bytes the lexer and reader name.
package enum Byte {
    package static let minus = UInt8(ascii: "-")
    package static let plus = UInt8(ascii: "+")
    package static let slash = UInt8(ascii: "/")
    package static let star = UInt8(ascii: "*")
    package static let semicolon = UInt8(ascii: ";")
    package static let quote = UInt8(ascii: "'")
    package static let doubleQuote = UInt8(ascii: "\"")
    package static let dollar = UInt8(ascii: "$")
    package static let backslash = UInt8(ascii: "\\")
    package static let dot = UInt8(ascii: ".")
    package static let ampersand = UInt8(ascii: "&")
    package static let openParenthesis = UInt8(ascii: "(")
    package static let closeParenthesis = UInt8(ascii: ")")
    package static let lineFeed: UInt8 = 0x0A
    package static let carriageReturn: UInt8 = 0x0D
}
