extension SchemaDiagram {
    /// The diagram as Graphviz DOT: a `digraph` laid out left to right with one node per table, an HTML-like label
    /// holding a table of its columns (name, type, `PK`/`FK`/`UK`, `NOT NULL`; the first and last cells of a
    /// column's row are the ports `cN` and `cNr`, N its position), and one edge per foreign key from the right of
    /// the referencing table's first key column to the left of the referenced table's first referenced column,
    /// labelled with the columns on both ends. Renders with `dot` without warnings.
    ///
    /// Names: node ids are the diagram's ids (see `SchemaDiagram`), always quoted; every name and type is text of an
    /// HTML-like label (edge labels too), with `& < > " '` as XML character references, a backslash doubled
    /// (Graphviz would read `\N` in a name as the node's id, `\l` as a line break), control characters as their
    /// Unicode control pictures (`␊` for a line feed: XML cannot hold most of them), and noncharacters as U+FFFD. So
    /// no name can end its label or its cell. An empty name shows as `""`.
    public static func dot(_ snapshot: SchemaSnapshot) throws -> String {
        let model = try Model(snapshot)
        var lines = ["digraph schema {", "    graph [rankdir=LR];", "    node [shape=plaintext];"]
        for entity in model.entities {
            let header = "<TR><TD COLSPAN=\"4\" BGCOLOR=\"lightgrey\"><B>\(DOTText.name(entity.name))</B></TD></TR>"
            var rows: [String] = []
            if let table = entity.table {
                let keys = model.keyColumns(of: table)
                for (position, column) in table.columns.enumerated() {
                    let name = model.key(column.name)
                    var kinds: [String] = []
                    if column.primaryKeyPosition > 0 { kinds.append("PK") }
                    if keys.foreign.contains(name) { kinds.append("FK") }
                    if keys.unique.contains(name) { kinds.append("UK") }
                    rows.append("<TR><TD PORT=\"c\(position + 1)\" ALIGN=\"LEFT\">\(DOTText.name(column.name))</TD>"
                        + "<TD ALIGN=\"LEFT\">\(DOTText.html(column.type))</TD><TD>\(kinds.joined(separator: ", "))</TD>"
                        + "<TD PORT=\"c\(position + 1)r\">\(column.notNull ? "NOT NULL" : "")</TD></TR>")
                }
            } else {
                rows.append("<TR><TD COLSPAN=\"4\"><I>not in the schema</I></TD></TR>")
            }
            lines.append("    \"\(entity.id)\" [label=<<TABLE BORDER=\"0\" CELLBORDER=\"1\" CELLSPACING=\"0\" CELLPADDING=\"4\">")
            lines += ([header] + rows).map { "        " + $0 }
            lines.append("    </TABLE>>];")
        }
        for relationship in model.relationships {
            // Out of the referencing column's right side, into the referenced column's left: the layout runs left
            // to right, referencing tables first.
            func end(_ entity: Int, _ port: String?, _ side: String) -> String {
                "\"\(model.entities[entity].id)\"" + (port.map { ":\"\($0)\":\(side)" } ?? "")
            }
            let tail = end(relationship.child, relationship.childColumn.map { "c\($0 + 1)r" }, "e")
            let head = end(relationship.parent, relationship.parentColumn.map { "c\($0 + 1)" }, "w")
            lines.append("    \(tail) -> \(head)"
                + " [label=<\(DOTText.html(relationship.label))>];")
        }
        lines.append("}")
        return lines.joined(separator: "\n") + "\n"
    }
}

/// How text goes into an HTML-like Graphviz label.
enum DOTText {
    /// A table's or column's name as `html(_:)`, an empty one as `""` (an empty `<B></B>` is not a label).
    static func name(_ text: String) -> String {
        text.isEmpty ? "&quot;&quot;" : html(text)
    }

    /// `text` as XML character data that stays in its cell (see `SchemaDiagram.dot(_:)`).
    static func html(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            // Graphviz reads `\N`, `\G`, `\l`, … in label text, HTML-like labels too (after character references).
            case "\\": result += "\\\\"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    result.unicodeScalars.append(MermaidText.controlPicture(scalar))
                } else if scalar.properties.isNoncharacterCodePoint {
                    result += "\u{FFFD}"
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        return result
    }
}
