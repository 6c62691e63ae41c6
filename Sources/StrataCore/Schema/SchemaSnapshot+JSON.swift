#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A schema file that cannot be read as a snapshot: what is wrong, naming the file.
public struct SchemaFileError: Error, Sendable, CustomStringConvertible {
    /// What is wrong, naming the file.
    public let message: String

    /// Creates the error from its message.
    public init(_ message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}

extension SchemaSnapshot: Codable {
    enum CodingKeys: String, CodingKey {
        case format, backend, tables, indexes, views, triggers, others
    }

    /// Reads a snapshot from the JSON form `jsonData()` writes.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let format = try container.decode(Int.self, forKey: .format)
        guard format == Self.formatVersion else {
            throw DecodingError.dataCorruptedError(forKey: .format, in: container, debugDescription:
                "format \(format) is not one this version of Strata reads (\(Self.formatVersion)); write the file again with this version's 'strata schema --format json'")
        }
        backend = try container.decode(DatabaseBackend.self, forKey: .backend)
        tables = try container.decode([Table].self, forKey: .tables)
        indexes = try container.decode([Index].self, forKey: .indexes)
        views = try container.decode([View].self, forKey: .views)
        triggers = try container.decode([Trigger].self, forKey: .triggers)
        others = try container.decode([Other].self, forKey: .others)
    }

    /// Writes the snapshot in its JSON form, with its format version.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.formatVersion, forKey: .format)
        try container.encode(backend, forKey: .backend)
        try container.encode(tables, forKey: .tables)
        try container.encode(indexes, forKey: .indexes)
        try container.encode(views, forKey: .views)
        try container.encode(triggers, forKey: .triggers)
        try container.encode(others, forKey: .others)
    }
}

extension SchemaSnapshot {
    /// The largest schema file `load(path:)` reads: far beyond any real schema, short of filling memory.
    static let maximumFileSize = 256 << 20

    /// The snapshot as compact JSON with sorted keys (the same schema gives the same bytes), as `strata schema
    /// --format json` writes it under `"snapshot"`.
    public func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }

    /// Reads a snapshot from JSON: either the snapshot object itself (`jsonData()`) or the object `strata schema
    /// --format json` prints, which holds it under `"snapshot"`. `source` names the text in errors.
    public init(json data: Data, source: String) throws {
        let decoder = JSONDecoder()
        do {
            // A "snapshot" key that is there but wrong reports its own error, not that of the object around it.
            if let snapshot = try decoder.decode(SchemaOutput.self, from: data).snapshot {
                self = snapshot
                return
            }
            self = try decoder.decode(SchemaSnapshot.self, from: data)
        } catch let error as DecodingError {
            let problem = Self.describe(error)
            let hint = problem.contains("strata schema --format json") ? "" : "; write one with 'strata schema --format json'"
            throw SchemaFileError("\(source): not a schema snapshot: \(problem)\(hint)")
        }
    }

    /// Reads the snapshot a file holds (see `init(json:source:)`). A file that cannot be read, is not a regular
    /// file, is larger than 256 MiB, or is not such JSON throws a `SchemaFileError` naming it.
    public static func load(path: String) throws -> SchemaSnapshot {
        var bytes: [UInt8] = []
        do {
            let file = try RegularFile(path: path)
            guard file.size <= maximumFileSize else {
                throw SchemaFileError("\(path): \(file.size) bytes, more than a schema file holds (at most \(maximumFileSize))")
            }
            while true {
                let chunk = try file.read(upTo: 1 << 20)
                if chunk.isEmpty { break }
                bytes += chunk
                guard bytes.count <= maximumFileSize else {
                    throw SchemaFileError("\(path): more than \(maximumFileSize) bytes, more than a schema file holds")
                }
            }
        } catch let error as RegularFile.OpenError {
            throw SchemaFileError(error.description)
        }
        return try SchemaSnapshot(json: Data(bytes), source: path)
    }

    /// A decoding error in a line: what was wrong and where (`tables[2].columns[0]: key 'name' is missing`).
    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            var text = ""
            for key in context.codingPath {
                if let index = key.intValue { text += "[\(index)]" } else { text += (text.isEmpty ? "" : ".") + key.stringValue }
            }
            return text.isEmpty ? "" : "at \(text): "
        }
        switch error {
        case .keyNotFound(let key, let context):
            return "\(path(context))the key '\(key.stringValue)' is missing"
        case .typeMismatch(let type, let context), .valueNotFound(let type, let context):
            return "\(path(context))expected \(Self.describe(type))"
        case .dataCorrupted(let context):
            // The underlying parser's message says where the JSON is broken.
            var message = context.debugDescription
            if message.hasSuffix(".") { message.removeLast() }
            if let underlying = context.underlyingError { message += " (\(underlying))" }
            return path(context) + message
        @unknown default:
            return "\(error)"
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Int.Type: "a number"
        case is Bool.Type: "true or false"
        case is [String: Any].Type: "a JSON object"
        case is [Any].Type: "a JSON array"
        default: "a value of type \(type)"
        }
    }
}

/// The object `strata schema --format json` prints; only its snapshot is read.
private struct SchemaOutput: Decodable {
    let snapshot: SchemaSnapshot?

    enum CodingKeys: String, CodingKey { case snapshot }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        snapshot = try container.decodeIfPresent(SchemaSnapshot.self, forKey: .snapshot)
    }
}
