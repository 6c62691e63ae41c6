extension SchemaDiagram {
    /// The diagram as Mermaid (`erDiagram`, Mermaid 10.5 or later: an entity whose name is not its id is written
    /// `id["name"]`, the entity alias syntax of 10.5). One entity per table with an attribute per column,
    /// `type name PK, FK, UK "comment"`; the comment says `NOT NULL`, and the exact name and type when they had to be
    /// changed to be one attribute token. Then one relationship per foreign key, `parent ||..o{ child : "a → b"`:
    /// the parent's end `||` (every referencing column NOT NULL) or `|o`; the child's end `o|` (the referencing
    /// columns hold its primary key or a UNIQUE constraint's columns) or `o{`; `--` when the referencing columns
    /// are part of the child's primary key (identifying), else `..`.
    ///
    /// Names, since Mermaid cannot quote every character: ids are words (see `SchemaDiagram`). Attribute types and
    /// names keep ASCII letters, digits and `_ - ( ) [ ]`, the rest made `_`, then every `_` not inside a word but a
    /// leading one made `-` (Markdown emphasis); a leading `_` is added before a digit and before a word Mermaid
    /// reads as a key (`pk`, `fk`, `uk`); a type of none is written `untyped`. Labels and
    /// comments are quoted; in them each character Mermaid or the HTML it renders to would read (`" # % & ' : ;
    /// < > \ { } | ~` and the backquote), and the one space after `direction` that Mermaid would read as a
    /// direction statement, are Mermaid entity codes (`#34;`), which render as the character itself; so are
    /// whitespace other than the space, invisible format characters, and `_` and `*` where Markdown would take them
    /// for emphasis (Mermaid renders labels as Markdown). Control characters show as their Unicode control pictures
    /// (`␊` for a line feed), as a rendered label has no line breaks; a word joiner (U+2060) is put between `ﬂ°`
    /// and `¶ß`, which Mermaid would render as `&` and `;`; a table with an empty name is labelled `""`.
    public static func mermaid(_ snapshot: SchemaSnapshot) throws -> String {
        let model = try Model(snapshot)
        var lines = ["erDiagram"]
        for entity in model.entities {
            let head = entity.id == entity.name && Model.isBareID(entity.name)
                ? entity.id : "\(entity.id)[\"\(MermaidText.label(entity.name))\"]"
            guard let table = entity.table, !table.columns.isEmpty else {
                lines.append("    " + head)
                continue
            }
            lines.append("    \(head) {")
            let keys = model.keyColumns(of: table)
            for column in table.columns {
                let name = model.key(column.name)
                var kinds: [String] = []
                if column.primaryKeyPosition > 0 { kinds.append("PK") }
                if keys.foreign.contains(name) { kinds.append("FK") }
                if keys.unique.contains(name) { kinds.append("UK") }
                lines.append("        " + MermaidText.attribute(column, keys: kinds))
            }
            lines.append("    }")
        }
        for relationship in model.relationships {
            let line = (relationship.parentRequired ? "||" : "|o") + (relationship.identifying ? "--" : "..")
                + (relationship.childUnique ? "o|" : "o{")
            lines.append("    \(model.entities[relationship.parent].id) \(line) \(model.entities[relationship.child].id) : "
                + "\"\(MermaidText.label(relationship.label))\"")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

/// How text goes into Mermaid: the quoted text of labels and comments, and the bare tokens of attributes.
enum MermaidText {
    /// ASCII that stays itself in quoted text; every other ASCII character but the space and `_` is an entity code.
    static let plainPunctuation = Set("-.,()[]/+=?!@$^".unicodeScalars)

    static func isAlphanumeric(_ scalar: Unicode.Scalar?) -> Bool {
        scalar.map { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) } ?? false
    }

    /// `text` for inside double quotes (see `SchemaDiagram.mermaid(_:)`); never empty (Mermaid's quoted entity
    /// label must not be).
    static func label(_ text: String) -> String {
        if text.isEmpty { return "#34;#34;" }
        var result = ""
        let scalars = Array(text.unicodeScalars)
        let direction = Array("direction".unicodeScalars)
        for (position, scalar) in scalars.enumerated() {
            let value = scalar.value
            if isAlphanumeric(scalar) || plainPunctuation.contains(scalar) {
                result.unicodeScalars.append(scalar)
            } else if scalar == "_" {
                // Mermaid renders labels as Markdown: a `_` inside a word cannot start or end emphasis, another can.
                let inWord = position > 0 && isAlphanumeric(scalars[position - 1])
                    && isAlphanumeric(position + 1 < scalars.count ? scalars[position + 1] : nil)
                result += inWord ? "_" : "#95;"
            } else if scalar == " " {
                // Mermaid reads a line holding `direction TB` (any case) as a direction statement.
                let before = scalars[max(0, position - direction.count)..<position]
                    .map { $0.properties.lowercaseMapping.unicodeScalars.first ?? $0 }
                result += before == direction ? "#32;" : " "
            } else if value < 0x20 || value == 0x7F {
                result.unicodeScalars.append(controlPicture(scalar))
            } else if scalar.isASCII || needsCode(scalar) {
                result += "#\(value);"
            } else if scalar.properties.isNoncharacterCodePoint {
                result += "\u{FFFD}"
            } else {
                result.unicodeScalars.append(scalar)
            }
            // Mermaid turns `ﬂ°` and `¶ß` in what it renders into `&` and `;` (its entity coding, decoded twice),
            // whether they came as characters or as codes; an invisible word joiner keeps them apart.
            if let next = position + 1 < scalars.count ? scalars[position + 1] : nil,
               scalar == "\u{FB02}" && next == "\u{B0}" || scalar == "\u{B6}" && next == "\u{DF}" {
                result += "\u{2060}"
            }
        }
        return result
    }

    /// Non-ASCII that would not stay itself as a character of the source: C1 controls, whitespace, format
    /// characters, line and paragraph separators.
    static func needsCode(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .format, .spaceSeparator, .lineSeparator, .paragraphSeparator: return true
        default: return false
        }
    }

    /// The Unicode control picture of a C0 control or DEL (`␊` for a line feed).
    static func controlPicture(_ scalar: Unicode.Scalar) -> Unicode.Scalar {
        Unicode.Scalar(scalar.value == 0x7F ? 0x2421 : 0x2400 + scalar.value) ?? "\u{FFFD}"
    }

    /// One attribute line: `type name KEYS "comment"`.
    static func attribute(_ column: SchemaSnapshot.Column, keys: [String]) -> String {
        let type = column.type.isEmpty ? "untyped" : token(column.type)
        let name = token(column.name)
        var notes: [String] = []
        if name != column.name { notes.append("name \"" + column.name.replacingEvery("\"", with: "\"\"") + "\"") }
        // A type whose spaces became `_` (`DOUBLE_PRECISION`) reads as itself; one that lost more is noted.
        if !column.type.isEmpty && type != column.type.replacingEvery(" ", with: "_") { notes.append("type " + column.type) }
        if column.notNull { notes.append("NOT NULL") }
        var line = type + " " + name
        if !keys.isEmpty { line += " " + keys.joined(separator: ", ") }
        if !notes.isEmpty { line += " \"" + label(notes.joined(separator: ", ")) + "\"" }
        return line
    }

    /// `text` as one attribute token: what Mermaid's documentation allows (ASCII letters, digits, `_ - ( ) [ ]`,
    /// starting with a letter or `_`), other characters made `_`, not read as a key word, and with no `_` that
    /// Markdown could take for emphasis (one not inside a word becomes `-`, but a leading one, which then has
    /// nothing to close it).
    static func token(_ text: String) -> String {
        var scalars = text.unicodeScalars.map { scalar in
            isAlphanumeric(scalar) || "_-()[]".unicodeScalars.contains(scalar) ? scalar : "_"
        }
        if !(scalars.first.map { $0 == "_" || $0.isASCII && $0.properties.isAlphabetic } ?? false) { scalars.insert("_", at: 0) }
        let lowered = String(String.UnicodeScalarView(scalars)).lowercased().unicodeScalars.map { $0 }
        // `\b(PK|FK|UK)\b` at the token's start is a key to Mermaid's lexer.
        if lowered.count >= 2, ["pk", "fk", "uk"].contains(String(String.UnicodeScalarView(lowered[0..<2]))),
           !(lowered.count > 2 && (isAlphanumeric(lowered[2]) || lowered[2] == "_")) {
            scalars.insert("_", at: 0)
        }
        for position in scalars.indices.dropFirst() where scalars[position] == "_" {
            let inWord = isAlphanumeric(scalars[position - 1]) && isAlphanumeric(position + 1 < scalars.count ? scalars[position + 1] : nil)
            if !inWord { scalars[position] = "-" }
        }
        return String(String.UnicodeScalarView(scalars))
    }
}
