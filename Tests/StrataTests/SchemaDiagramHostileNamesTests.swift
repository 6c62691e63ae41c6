import Foundation
import Strata
@testable import StrataCore
import XCTest

/// Table and column names with quotes, backslashes, spaces, `<>&{}|`, newlines, Unicode, leading digits, Markdown
/// and the keywords of both languages cannot break a diagram or add to it: every line of the Mermaid is one of the
/// five shapes `SchemaDiagram` writes, with as many entities, attributes and relationships as the schema has
/// tables, columns and foreign keys, each label reading back as its name; Graphviz draws the DOT without a warning,
/// with one node per table, one edge per key, and every name as text of its own.
final class SchemaDiagramHostileNamesTests: XCTestCase {
    static let keywords = ["graph", "node", "edge", "subgraph", "digraph", "strict", "erDiagram", "end", "PK", "FK"]

    /// The same hostile schema on both backends (PostgreSQL needs its parents to exist, takes no empty name and
    /// no column without a type; SQLite's `1leading` references a table that does not exist).
    static func schema(_ backend: TestBackend) -> String {
        let postgres = backend.kind == .postgres
        return """
            CREATE TABLE "graph" ("node" INTEGER PRIMARY KEY, "edge" TEXT, "subgraph" TEXT, "digraph" TEXT, "strict" TEXT);
            \(postgres ? #"CREATE DOMAIN "odd ""domain""" AS TEXT; CREATE SCHEMA "we""ird <schema>";"# : "")
            CREATE TABLE "say ""hi"" it's" ("pk" INTEGER PRIMARY KEY, "FK-x" INTEGER REFERENCES "graph" ("node"), "a b" TEXT UNIQUE,
              "1x" INTEGER NOT NULL, "uk" DOUBLE PRECISION, "t" NUMERIC(10,2), "u" \(postgres ? #""odd ""domain""""# : #""my ""odd"" type""#), "v"\(postgres ? " TEXT" : ""));
            CREATE TABLE "back\\slash <>&{}|" ("new
            line" INTEGER NOT NULL PRIMARY KEY REFERENCES "say ""hi"" it's" ("pk"), "~x~" TEXT, "}" TEXT,
              "end" INTEGER REFERENCES "back\\slash <>&{}|");
            CREATE TABLE \(postgres ? #""we""ird <schema>"."# : "")"café 書籍 😀" ("ünïcödé" TEXT PRIMARY KEY, "PK" TEXT, "FK" TEXT,
              "erDiagram" INTEGER UNIQUE REFERENCES "graph");
            \(postgres ? #"CREATE TABLE "two" (x INTEGER, y INTEGER, PRIMARY KEY (x, y));"# : "")
            CREATE TABLE "1leading" (a INTEGER, b INTEGER, "%%{init: {""theme"":""dark""}}%%" TEXT, PRIMARY KEY (a, b),
              FOREIGN KEY (a, b) REFERENCES "two" (x, y));
            CREATE TABLE "direction TB" ("direction LR" TEXT, "#quot;" TEXT, "ﬂ°lt¶ß" TEXT, "x:#35;y style" TEXT, "\\N" TEXT,
              "]]>" TEXT, "o{" INTEGER, "o}" INTEGER, "a~b~c" TEXT, "tab\there" TEXT, "‮evil⁦" TEXT,
              FOREIGN KEY ("o{", "o}") REFERENCES "1leading" (a, b));
            CREATE TABLE "a b" (x INTEGER UNIQUE);
            CREATE TABLE "a_b" (x INTEGER REFERENCES "a b" (x));
            CREATE TABLE "_x_" ("_id_" INTEGER UNIQUE, "*star*" TEXT, "__v" TEXT, "a__b" TEXT);
            CREATE TABLE "__v__" (x INTEGER REFERENCES "_x_" ("_id_"));
            CREATE TABLE "---" ("- a" TEXT);
            \(keywords.filter { $0 != "graph" }.map { #"CREATE TABLE "\#($0)" (x INTEGER);"# }.joined(separator: "\n"))
            \(postgres ? "" : #"CREATE TABLE "" ("" INTEGER);"#)
            """
    }

    func testHostileNamesCannotBreakOrInjectEitherDiagram() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, files: ["sql/1.sql": Self.schema(backend)])
            let report = try project.migrator().migrate()
            XCTAssertNil(report.failure, "\(String(describing: report.failure))")
            let snapshot = try project.connection().schemaSnapshot()
            XCTAssertEqual(snapshot.tables.count, 21)
            let keys = snapshot.tables.flatMap { table in (table.foreignKeys ?? []).map { (table, $0) } }
            XCTAssertEqual(keys.count, 8)
            // The parent and its columns as the tables spell them; a key naming none references the primary key.
            func foreignKeys(ofTableEndingIn suffix: String) -> [SchemaSnapshot.ForeignKey] {
                snapshot.tables.first { $0.name.hasSuffix(suffix) }?.foreignKeys ?? []
            }
            let (graph, quote) = backend.kind == .sqlite ? ("graph", "") : ("public.graph", "\"")
            XCTAssertEqual(foreignKeys(ofTableEndingIn: "café 書籍 😀" + quote),
                           [SchemaSnapshot.ForeignKey(name: backend.kind == .sqlite ? nil : "café 書籍 😀_erDiagram_fkey", columns: ["erDiagram"],
                                                      referencedTable: graph, referencedColumns: ["node"])])
            XCTAssertEqual(foreignKeys(ofTableEndingIn: "it's" + quote).map(\.referencedColumns), [["node"]])
            XCTAssertEqual(foreignKeys(ofTableEndingIn: "1leading" + quote).map(\.referencedColumns), [["x", "y"]])
            XCTAssertEqual(foreignKeys(ofTableEndingIn: "|" + quote).map(\.referencedColumns), [["new\nline"], ["pk"]])

            let mermaid = try project.strataOnBackend(["schema", "--format", "mermaid"])
            XCTAssertEqual(mermaid.status, 0, mermaid.stderr)
            try MermaidShape.check(mermaid.stdout, against: snapshot)

            let dot = try project.strataOnBackend(["schema", "--format", "dot"])
            XCTAssertEqual(dot.status, 0, dot.stderr)
            let svg = try GraphvizRun.render(dot.stdout, in: project.root)
            XCTAssertEqual(svg.status, 0)
            XCTAssertEqual(svg.stderr, "", "dot -Tsvg warned")
            let plain = try GraphvizRun.render(dot.stdout, format: "plain", in: project.root).svg
            let drawn = plain.split(separator: "\n").map { $0.split(separator: " ").first ?? "" }
            XCTAssertEqual(drawn.filter { $0 == "node" }.count, snapshot.tables.count + (backend.kind == .sqlite ? 1 : 0), "one node per table (and SQLite's missing parent)")
            XCTAssertEqual(drawn.filter { $0 == "edge" }.count, keys.count, "one edge per foreign key")
            let texts = Set(try NSRegularExpression(pattern: "<text[^>]*>([^<]*)</text>")
                .matches(in: svg.svg, range: NSRange(svg.svg.startIndex..., in: svg.svg))
                .compactMap { Range($0.range(at: 1), in: svg.svg).map { Self.unescapeXML(String(svg.svg[$0])) } })
            for table in snapshot.tables {
                XCTAssertTrue(texts.contains(MermaidShape.shown(table.name)), "table \(table.name) drawn as itself")
                for column in table.columns {
                    XCTAssertTrue(texts.contains(MermaidShape.shown(column.name)), "column \(column.name) of \(table.name) drawn as itself")
                }
            }
        }
    }

    static func unescapeXML(_ text: String) -> String {
        var result = text
        for (entity, character) in [("&lt;", "<"), ("&gt;", ">"), ("&quot;", "\""), ("&#39;", "'"), ("&#45;", "-"), ("&amp;", "&")] {
            result = result.replacingOccurrences(of: entity, with: character)
        }
        return result
    }
}

/// What a Mermaid diagram `SchemaDiagram.mermaid(_:)` wrote may hold, line by line, and what its labels say.
enum MermaidShape {
    static let id = "[A-Za-z_][A-Za-z0-9_]*"
    /// A `_` Markdown cannot take for emphasis: inside a word.
    static let wordUnderscore = "(?<=[A-Za-z0-9])_(?=[A-Za-z0-9])"
    /// Quoted text: no quote, `%`, backslash, line break, `:`, `<>&'`, backquote, `{}|~`, `*`, `_` but inside a
    /// word, and `#` only in codes.
    static let quoted = #""(?:[^"%\\\n\r:<>&'`{}|~#*_]|"# + wordUnderscore + #"|#[0-9]+;)*""#
    /// An attribute token: no key word, and no `_` but inside a word or leading.
    static let token = #"(?!(?i:pk|fk|uk)(?![A-Za-z0-9_]))[A-Za-z_](?:[A-Za-z0-9()\[\]-]|"# + wordUnderscore + ")*"
    static let shapes = [
        "erDiagram",
        "    \(id)(?:\\[\(quoted)\\])?(?: \\{)?",
        "        \(token) \(token)(?: (?:PK|FK|UK)(?:, (?:PK|FK|UK))*)?(?: \(quoted))?",
        "    \\}",
        "    (\(id)) (?:\\|\\||\\|o)(?:--|\\.\\.)(?:o\\||o\\{) (\(id)) : \(quoted)",
    ].map { try? NSRegularExpression(pattern: "^(?:\($0))$") }

    /// Control characters as their control pictures, as both diagrams show them.
    static func pictures(_ name: String) -> String {
        String(String.UnicodeScalarView(name.unicodeScalars.map { scalar in
            scalar.value < 0x20 ? Unicode.Scalar(0x2400 + scalar.value) ?? scalar : scalar
        }))
    }

    /// How a table's name shows: `pictures(_:)`, an empty name as `""`.
    static func shown(_ name: String) -> String {
        name.isEmpty ? "\"\"" : pictures(name)
    }

    /// A quoted label read back: codes made characters (in one pass), the word joiners the writer put in left out.
    static func decode(_ label: String) -> String {
        let text = String(label.dropFirst().dropLast()).replacingOccurrences(of: "\u{2060}", with: "")
        guard let code = try? NSRegularExpression(pattern: "#([0-9]+);") else { return text }
        var result = ""
        var rest = text.startIndex
        for match in code.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
            guard let range = Range(match.range, in: text), let digits = Range(match.range(at: 1), in: text),
                  let scalar = UInt32(text[digits]).flatMap(Unicode.Scalar.init) else { continue }
            result += text[rest..<range.lowerBound]
            result.unicodeScalars.append(scalar)
            rest = range.upperBound
        }
        return result + text[rest...]
    }

    static func check(_ diagram: String, against snapshot: SchemaSnapshot, file: StaticString = #filePath, line: UInt = #line) throws {
        let lines = diagram.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        XCTAssertEqual(lines.last, "", "ends in a line break", file: file, line: line)
        var entities: [(id: String, label: String, attributes: [(type: String, name: String, comment: String)])] = []
        var relationships = 0
        for text in lines.dropLast() {
            let range = NSRange(text.startIndex..., in: text)
            guard let shape = shapes.firstIndex(where: { $0?.firstMatch(in: text, range: range) != nil }) else {
                XCTFail("a line SchemaDiagram does not write: \(text.debugDescription)", file: file, line: line)
                continue
            }
            // Mermaid reads `direction TB` anywhere on a line outside an entity's attributes, and `%%` as a comment.
            XCTAssertNil(text.range(of: #"direction\s+(TB|BT|RL|LR)"#, options: [.regularExpression, .caseInsensitive]), text, file: file, line: line)
            XCTAssertFalse(text.contains("%"), text, file: file, line: line)
            // What Mermaid's entity coding renders as `&` and `;`.
            XCTAssertFalse(text.unicodeScalars.indices.contains { index in
                let next = text.unicodeScalars.index(after: index)
                guard next < text.unicodeScalars.endIndex else { return false }
                let pair = (text.unicodeScalars[index], text.unicodeScalars[next])
                return pair == ("\u{FB02}", "\u{B0}") || pair == ("\u{B6}", "\u{DF}")
            }, text, file: file, line: line)
            let comment = text.range(of: #""[^"]*"$"#, options: .regularExpression).map { decode(String(text[$0])) } ?? ""
            switch shape {
            case 1:
                let id = String(text.dropFirst(4).prefix { $0 != "[" && $0 != " " })
                let label = text.range(of: #"\[".*"\]"#, options: .regularExpression).map { decode(String(text[$0].dropFirst().dropLast())) }
                XCTAssertTrue(label != nil || id.range(of: "^[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)*$", options: .regularExpression) != nil,
                              "an unlabelled id shows as itself: \(id)", file: file, line: line)
                entities.append((id, label ?? id, []))
            case 2:
                let words = text.dropFirst(8).split(separator: " ").map(String.init)
                entities[entities.count - 1].attributes.append((words[0], words[1], comment))
            case 4: relationships += 1
            default: break
            }
        }
        let tables = snapshot.tables
        XCTAssertEqual(Set(entities.map { $0.id.lowercased() }).count, entities.count, "ids are unique", file: file, line: line)
        // Words Mermaid's lexer (case-insensitive) or DOT reads as keywords.
        let keywords: Set = ["erdiagram", "end", "class", "classdef", "style", "subgraph", "direction", "one", "many", "to", "u",
                             "graph", "digraph", "node", "edge", "strict", "pk", "fk", "uk"]
        XCTAssertEqual(entities.filter { keywords.contains($0.id.lowercased()) }.map(\.id), [], "no id is a keyword", file: file, line: line)
        XCTAssertEqual(Array(entities.prefix(tables.count).map(\.label)), tables.map { shown($0.name) }, "each table labelled with its name",
                       file: file, line: line)
        XCTAssertEqual(relationships, tables.reduce(0) { $0 + ($1.foreignKeys?.count ?? 0) }, "one relationship per key", file: file, line: line)
        for (table, entity) in zip(tables, entities) {
            XCTAssertEqual(entity.attributes.count, table.columns.count, "one attribute per column of \(table.name)", file: file, line: line)
            // A column whose name or type is not its token is named in its comment (a name quoted as SQL quotes it).
            for (column, attribute) in zip(table.columns, entity.attributes) {
                let quoted = "name \"" + pictures(column.name).replacingOccurrences(of: "\"", with: "\"\"") + "\""
                XCTAssertTrue(attribute.name == column.name || attribute.comment.hasPrefix(quoted),
                              "column \(column.name.debugDescription) of \(table.name): \(attribute)", file: file, line: line)
                XCTAssertTrue(attribute.type == (column.type.isEmpty ? "untyped" : column.type.replacingOccurrences(of: " ", with: "_"))
                              || attribute.comment.contains("type " + column.type), "type of \(column.name.debugDescription): \(attribute)",
                              file: file, line: line)
                XCTAssertEqual(attribute.comment.hasSuffix("NOT NULL"), column.notNull, "\(attribute)", file: file, line: line)
            }
        }
    }
}
