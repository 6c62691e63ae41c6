import CLibXML2
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A parsed XML document, read safely: no network, no DTD loading, no entity substitution,
/// and any document whose DOCTYPE declares entities is refused before libxml2 sees it.
final class XMLDocument {
    /// Larger manifests are refused outright; a real one is a few kilobytes.
    static let maximumSize = 8 << 20
    static let maximumDepth = 32

    let pointer: xmlDocPtr
    let path: String

    private init(pointer: xmlDocPtr, path: String) {
        self.pointer = pointer
        self.path = path
    }

    deinit { xmlFreeDoc(pointer) }

    /// Parses `bytes`; problems are reported against `path` (the manifest path as the user wrote it).
    static func parse(_ bytes: [UInt8], path: String) -> Result<XMLDocument, ManifestError> {
        func failure(_ line: Int, _ column: Int?, _ message: String) -> Result<XMLDocument, ManifestError> {
            .failure(ManifestError(problems: [ManifestProblem(SourceLocation(path: path, line: line, column: column), message)]))
        }
        guard bytes.count <= maximumSize else {
            return failure(1, nil, "manifest is \(bytes.count) bytes; the limit is \(maximumSize)")
        }
        if let (line, column) = entityDeclaration(in: bytes) {
            return failure(line, column, "a DOCTYPE that declares entities is refused (entity expansion and external entities are not allowed)")
        }
        if let (line, column) = excessiveNesting(in: bytes) {
            return failure(line, column, "elements nested deeper than \(maximumDepth) levels are refused")
        }
        let collector = ErrorCollector(path: path)
        let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOCDATA.rawValue)
        let document: xmlDocPtr? = collector.capturing {
            bytes.withUnsafeBufferPointer { buffer in
                buffer.baseAddress.map { base in
                    base.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                        xmlReadMemory($0, Int32(buffer.count), nil, nil, options)
                    }
                } ?? nil
            }
        }
        guard let document, collector.problems.isEmpty else {
            if let document { xmlFreeDoc(document) }
            let problems = collector.problems.isEmpty
                ? [ManifestProblem(SourceLocation(path: path, line: 1), "not a well-formed XML document")]
                : collector.problems
            return .failure(ManifestError(problems: problems))
        }
        let parsed = XMLDocument(pointer: document, path: path)
        if let dtd = document.pointee.intSubset, dtd.pointee.entities != nil || dtd.pointee.pentities != nil {
            return failure(Int(xmlGetLineNo(UnsafeMutableRawPointer(dtd).assumingMemoryBound(to: xmlNode.self))), nil,
                           "a DOCTYPE that declares entities is refused")
        }
        return .success(parsed)
    }

    /// Validates against an XML Schema given as text; returns every violation with its line.
    func validate(schema: String) -> [ManifestProblem] {
        let collector = ErrorCollector(path: path)
        var bytes = Array(schema.utf8)
        let problems: [ManifestProblem] = bytes.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return [] }
            let parserContext = base.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                xmlSchemaNewMemParserCtxt($0, Int32(buffer.count))
            }
            defer { xmlSchemaFreeParserCtxt(parserContext) }
            guard let schema = xmlSchemaParse(parserContext) else {
                return [ManifestProblem(SourceLocation(path: "<embedded manifest schema>", line: 1), "the embedded schema does not compile")]
            }
            defer { xmlSchemaFree(schema) }
            guard let validator = xmlSchemaNewValidCtxt(schema) else { return [] }
            defer { xmlSchemaFreeValidCtxt(validator) }
            xmlSchemaSetValidStructuredErrors(validator, ErrorCollector.handler, collector.context)
            _ = collector.capturing { xmlSchemaValidateDoc(validator, pointer) }
            return collector.problems
        }
        return problems
    }

    var root: XMLElement? {
        xmlDocGetRootElement(pointer).map { XMLElement(node: $0, document: self) }
    }

    /// Finds `<!ENTITY` inside a DOCTYPE's internal subset, ignoring comments, with its line and column.
    static func entityDeclaration(in bytes: [UInt8]) -> (Int, Int)? {
        guard let doctype = find(Array("<!DOCTYPE".utf8), in: bytes, from: 0) else { return nil }
        guard let entity = find(Array("<!ENTITY".utf8), in: bytes, from: doctype) else { return nil }
        return position(of: entity, in: bytes)
    }

    /// Refuses a deeply nested document before a tree is built. libxml2's streaming reader does the reading, so
    /// the check sees exactly the elements the parser will: any encoding (UTF-16 too), and nothing inside comments,
    /// CDATA, processing instructions or attribute values. It holds one path from the root, never the tree, and
    /// stops at the first element that is too deep. Errors are left to the real parse, which reports them.
    static func excessiveNesting(in bytes: [UInt8]) -> (Int, Int?)? {
        let collector = ErrorCollector(path: "")
        return collector.capturing {
            bytes.withUnsafeBufferPointer { buffer -> (Int, Int?)? in
                guard let base = buffer.baseAddress, let count = Int32(exactly: buffer.count) else { return nil }
                let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOCDATA.rawValue)
                let reader = base.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                    xmlReaderForMemory($0, count, nil, nil, options)
                }
                guard let reader else { return nil }
                defer { xmlFreeTextReader(reader) }
                let element = Int32(XML_READER_TYPE_ELEMENT.rawValue)
                while xmlTextReaderRead(reader) == 1 {
                    // The root is at depth 0, so depth 32 is the 33rd level.
                    if xmlTextReaderNodeType(reader) == element && xmlTextReaderDepth(reader) >= Int32(maximumDepth) {
                        // The element's own line; the reader's column is where its parser has read ahead to, so
                        // no column is given rather than a wrong one.
                        let line = xmlTextReaderCurrentNode(reader).map { Int(xmlGetLineNo($0)) } ?? 0
                        return (max(line, 1), nil)
                    }
                }
                return nil
            }
        }
    }

    private static func find(_ needle: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard needle.count <= bytes.count else { return nil }
        var index = start
        while index + needle.count <= bytes.count {
            if bytes[index] == needle[0] && Array(bytes[index..<(index + needle.count)]) == needle { return index }
            index += 1
        }
        return nil
    }

    private static func position(of offset: Int, in bytes: [UInt8]) -> (Int, Int) {
        var line = 1
        var column = 1
        for byte in bytes[..<offset] {
            if byte == 0x0A { line += 1; column = 1 } else if byte & 0xC0 != 0x80 { column += 1 }
        }
        return (line, column)
    }
}

/// Collects libxml2's structured errors for one parse or validation.
final class ErrorCollector {
    let path: String
    private(set) var problems: [ManifestProblem] = []

    init(path: String) {
        self.path = path
    }

    /// libxml2's structured-error callback; its context is a collector's `context`.
    static let handler: xmlStructuredErrorFunc = { context, error in
        guard let context, let error else { return }
        Unmanaged<ErrorCollector>.fromOpaque(context).takeUnretainedValue().record(error)
    }

    /// This collector as the callback's context; valid while the collector is alive.
    var context: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    /// Routes libxml2's errors on this thread to the collector while `body` runs.
    func capturing<T>(_ body: () -> T) -> T {
        xmlSetStructuredErrorFunc(context, Self.handler)
        defer { xmlSetStructuredErrorFunc(nil, nil) }
        return body()
    }

    func record(_ error: xmlErrorPtr) {
        let raw = error.pointee.message.map { String(cString: $0) } ?? "XML error"
        let message = raw.trimmingWhitespace(newlines: true)
            .replacingEvery("Element '", with: "element '")
        let line = max(Int(error.pointee.line), 1)
        let column = error.pointee.domain == Int32(XML_FROM_PARSER.rawValue) && error.pointee.int2 > 0
            ? Int(error.pointee.int2) : nil
        problems.append(ManifestProblem(SourceLocation(path: path, line: line, column: column), message))
    }
}

/// An element node, read without copying the tree.
struct XMLElement {
    let node: xmlNodePtr
    let document: XMLDocument

    var name: String { String(cString: node.pointee.name) }
    var line: Int { Int(xmlGetLineNo(node)) }
    var location: SourceLocation { SourceLocation(path: document.path, line: line) }

    /// The attribute's value, or nil when absent.
    func attribute(_ name: String) -> String? {
        var attribute = node.pointee.properties
        while let current = attribute {
            if String(cString: current.pointee.name) == name {
                var value = ""
                var child = current.pointee.children
                while let text = child {
                    if let content = text.pointee.content { value += String(cString: content) }
                    child = text.pointee.next
                }
                return value
            }
            attribute = current.pointee.next
        }
        return nil
    }

    var children: [XMLElement] {
        var result: [XMLElement] = []
        var child = node.pointee.children
        while let current = child {
            if current.pointee.type == XML_ELEMENT_NODE { result.append(XMLElement(node: current, document: document)) }
            child = current.pointee.next
        }
        return result
    }
}
