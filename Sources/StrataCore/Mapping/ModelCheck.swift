#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One way a Swift type and its table disagree.
public struct ModelMismatch: Sendable, Equatable, CustomStringConvertible {
    /// What disagrees.
    public enum Kind: String, Sendable, Equatable {
        /// The table does not exist.
        case missingTable
        /// A property has no column.
        case missingColumn
        /// The column's declared type cannot hold the property's type.
        case typeMismatch
        /// The column allows NULL but the property is not optional, so a NULL would fail to load.
        case nullability
        /// The property's type could not be inspected (an enum that is not `CaseIterable`), nor those after it.
        case notInspectable
        /// A relationship (`<hasMany>`, `<belongsTo>`) does not fit the schema or the property's type, or
        /// relationships nest in a cycle.
        case relationship
    }

    /// What disagrees.
    public let kind: Kind
    /// The Swift type.
    public let typeName: String
    /// The property, where one is at fault.
    public let property: String?
    /// The column, where one is at fault.
    public let column: String?
    /// What disagrees and how to settle it.
    public let message: String

    /// The type, then the message.
    public var description: String {
        "\(typeName)\(property.map { "." + $0 } ?? "")\(column.map { " (column '\($0)')" } ?? ""): \(message)"
    }
}

extension ModelStore {
    /// Compares a type's properties with the live table: every property has a column, the column's affinity can
    /// hold the property's type, and NULLable columns map to optionals. Returns every mismatch.
    public func check<T: Decodable>(_ type: T.Type) throws -> [ModelMismatch] {
        let layout = try layout(of: T.self)
        let name = layout.typeName
        guard !layout.columns.isEmpty else {
            return [ModelMismatch(kind: .missingTable, typeName: name, property: nil, column: nil,
                                  message: "table '\(layout.table)' does not exist")]
        }
        let probe = Probe()
        do {
            _ = try T(from: ProbeDecoder(probe: probe))
        } catch let stop as ProbeStop {
            probe.stoppedAt = stop.key
        } catch {
            probe.stoppedAt = probe.fields.last?.key ?? "(first property)"
        }
        var mismatches: [ModelMismatch] = []
        if let mapping = layout.mapping, !mapping.relationships.isEmpty {
            mismatches += try relationshipMismatches(mapping, layout: layout, fields: probe.fields)
        }
        for field in probe.fields where layout.mapping?.relationship(field.key) == nil {
            let columnName = layout.column(for: field.key)
            guard let column = layout.columns.named(columnName) else {
                mismatches.append(ModelMismatch(kind: .missingColumn, typeName: name, property: field.key, column: columnName,
                    message: "table '\(layout.table)' has no such column (it has: \(layout.columns.map(\.name).joined(separator: ", ")))"))
                continue
            }
            var accepted = Self.affinities(for: field.type)
            if field.type is Decimal.Type, database.dialect.numericIsExact { accepted.insert(.numeric) }
            let untyped = column.declaredType.isEmpty
            if !untyped && !accepted.contains(column.affinity) {
                mismatches.append(ModelMismatch(kind: .typeMismatch, typeName: name, property: field.key, column: column.name,
                    message: "declared \(column.declaredType) (\(column.affinity.rawValue) affinity) cannot hold \(field.type); expected \(accepted.map(\.rawValue).sorted().joined(separator: " or "))"))
            }
            let neverNull = column.isNotNull || (column.primaryKeyPosition > 0 && column.affinity == .integer
                                                 && column.declaredType.uppercased() == "INTEGER")
            if !field.optional && !neverNull {
                mismatches.append(ModelMismatch(kind: .nullability, typeName: name, property: field.key, column: column.name,
                    message: "the column allows NULL but the property is not optional; make it \(field.type)? or the column NOT NULL"))
            }
        }
        if let stopped = probe.stoppedAt {
            mismatches.append(ModelMismatch(kind: .notInspectable, typeName: name, property: stopped, column: nil,
                message: "could not be inspected (make enums CaseIterable); properties after it were not checked"))
        }
        return mismatches
    }

    /// The relationships' problems: a cycle, the schema (`relationshipProblems`), and each property's Swift type.
    private func relationshipMismatches(_ mapping: ModelMapping, layout: ModelLayout,
                                        fields: [(key: String, type: Any.Type, optional: Bool)]) throws -> [ModelMismatch] {
        var mismatches: [ModelMismatch] = []
        do {
            try requireAcyclicRelationships()
        } catch let error as MappingError {
            mismatches.append(ModelMismatch(kind: .relationship, typeName: layout.typeName, property: nil, column: nil,
                                            message: error.message))
        }
        for message in try relationshipProblems(mapping, layout: layout, layoutOf: { try self.mappedLayout(named: $0) }, database: database) {
            let property = message.prefix { $0 != ":" }.split(separator: ".").last.map(String.init)
            mismatches.append(ModelMismatch(kind: .relationship, typeName: layout.typeName, property: property, column: nil,
                                            message: String(message.drop { $0 != ":" }.dropFirst(2))))
        }
        for relationship in mapping.relationships {
            guard let field = fields.first(where: { $0.key == relationship.property }) else { continue }
            let held: String?
            switch relationship.kind {
            case .hasMany:
                held = (field.type as? any RelatedArray.Type)?.elementTypeName
                if held == nil {
                    mismatches.append(ModelMismatch(kind: .relationship, typeName: layout.typeName, property: field.key, column: nil,
                                                    message: "is a hasMany of \(relationship.model) but its type is \(field.type); declare it as [\(relationship.model)]"))
                    continue
                }
            case .belongsTo:
                held = String(describing: field.type)
            }
            if let held, held != relationship.model {
                mismatches.append(ModelMismatch(kind: .relationship, typeName: layout.typeName, property: field.key, column: nil,
                                                message: "holds \(held) values but the manifest's \(relationship.kind.rawValue) names model \(relationship.model)"))
            }
        }
        return mismatches
    }

    static func affinities(for type: Any.Type) -> Set<Affinity> {
        switch type {
        case is Bool.Type, is Int.Type, is Int8.Type, is Int16.Type, is Int32.Type, is Int64.Type,
             is UInt.Type, is UInt8.Type, is UInt16.Type, is UInt32.Type, is UInt64.Type:
            return [.integer, .numeric]
        case is Double.Type, is Float.Type:
            return [.real, .numeric]
        case is String.Type, is URL.Type:
            return [.text]
        case is UUID.Type:
            return [.text, .blob]
        case is Data.Type:
            return [.blob]
        case is Date.Type:
            return [.text, .integer, .real, .numeric]
        case is Decimal.Type:
            // Not NUMERIC: its affinity turns decimal text into an approximate REAL (DECIMAL(20,4) is NUMERIC).
            return [.text]
        default:
            if let raw = type as? any RawRepresentable.Type { return affinities(for: rawType(raw)) }
            return [.text] // nested Codable values are JSON text
        }
    }

    private static func rawType<R: RawRepresentable>(_ type: R.Type) -> Any.Type { R.RawValue.self }
}

/// Checks that every `<model>` of a manifest names an existing table and existing columns (what the CLI can check
/// without the Swift types). Problems carry the model's manifest location.
public func checkModels(of manifest: Manifest, in database: any DatabaseConnection) throws -> [ManifestProblem] {
    var problems: [ManifestProblem] = []
    for model in manifest.models {
        let location = model.location ?? SourceLocation(path: manifest.path, line: 1)
        let layout = try ModelLayout(typeName: model.typeName, mapping: model, database: database)
        guard !layout.columns.isEmpty else {
            problems.append(ManifestProblem(location, "model \(model.typeName): table '\(layout.table)' does not exist"))
            continue
        }
        let names = Set(layout.columns.map(\.name.sqliteFolded))
        for (property, column) in model.columns.sorted(by: { $0.key < $1.key }) where !names.contains(column.sqliteFolded) {
            problems.append(ManifestProblem(location,
                "model \(model.typeName): property \(property) maps to column '\(column)', which table '\(layout.table)' does not have"))
        }
        let missingKeyColumns = model.primaryKey.filter { !names.contains($0.sqliteFolded) }
        for column in missingKeyColumns {
            problems.append(ManifestProblem(location,
                "model \(model.typeName): primary key column '\(column)' is not in table '\(layout.table)'"))
        }
        if !layout.primaryKey.isEmpty && missingKeyColumns.isEmpty && !layout.keyIsUnique {
            problems.append(ManifestProblem(location, "model \(model.typeName): \(layout.keyNotUniqueMessage)"))
        }
        let byType = Dictionary(manifest.models.map { ($0.typeName, $0) }, uniquingKeysWith: { first, _ in first })
        for message in try relationshipProblems(model, layout: layout, layoutOf: { name in
            try byType[name].map { try ModelLayout(typeName: name, mapping: $0, database: database) }
        }, database: database) {
            problems.append(ManifestProblem(model.relationships.first { message.hasPrefix("\(model.typeName).\($0.property):") }?.location ?? location,
                                            "model \(message)"))
        }
    }
    return problems
}

// MARK: Probing a Decodable type's properties

final class Probe {
    var fields: [(key: String, type: Any.Type, optional: Bool)] = []
    var stoppedAt: String?
}

struct ProbeStop: Error {
    let key: String
}

/// A decoder that answers every request with a placeholder and records which keys a type reads, with their
/// types and whether they are optional.
struct ProbeDecoder: Decoder {
    let probe: Probe
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(ProbeContainer<Key>(probe: probe))
    }
    /// Empty: a nested array (or set) decodes as one with no elements, so a nested value holding one has a
    /// placeholder too.
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { EmptyProbeArray() }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { throw ProbeStop(key: "") }
}

/// An array with no elements, for `ProbeDecoder`.
struct EmptyProbeArray: UnkeyedDecodingContainer {
    var codingPath: [any CodingKey] { [] }
    var count: Int? { 0 }
    var isAtEnd: Bool { true }
    var currentIndex: Int { 0 }

    private func empty() -> DecodingError {
        DecodingError.valueNotFound(Any.self, DecodingError.Context(codingPath: [], debugDescription: "no elements"))
    }

    mutating func decodeNil() throws -> Bool { throw empty() }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { throw empty() }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        throw empty()
    }
    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { throw empty() }
    mutating func superDecoder() throws -> any Decoder { throw empty() }
}

struct ProbeContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let probe: Probe
    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { [] }

    func contains(_ key: Key) -> Bool { true }
    func decodeNil(forKey key: Key) throws -> Bool { false }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        probe.fields.append((key.stringValue, T.self, false))
        guard let value = Self.placeholder(T.self) else { throw ProbeStop(key: key.stringValue) }
        return value
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        probe.fields.append((key.stringValue, T.self, true))
        return nil
    }

    // The concrete requirements route to the generic ones.
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decode(type, forKey: key, generic: ()) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try decode(type, forKey: key, generic: ()) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try decode(type, forKey: key, generic: ()) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try decode(type, forKey: key, generic: ()) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decode(type, forKey: key, generic: ()) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try decode(type, forKey: key, generic: ()) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try decode(type, forKey: key, generic: ()) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try decode(type, forKey: key, generic: ()) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try decode(type, forKey: key, generic: ()) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try decode(type, forKey: key, generic: ()) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try decode(type, forKey: key, generic: ()) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try decode(type, forKey: key, generic: ()) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try decode(type, forKey: key, generic: ()) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try decode(type, forKey: key, generic: ()) }
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try decodeIfPresent(type, forKey: key, generic: ()) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try decodeIfPresent(type, forKey: key, generic: ()) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try decodeIfPresent(type, forKey: key, generic: ()) }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try decodeIfPresent(type, forKey: key, generic: ()) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try decodeIfPresent(type, forKey: key, generic: ()) }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try decodeIfPresent(type, forKey: key, generic: ()) }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try decodeIfPresent(type, forKey: key, generic: ()) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try decodeIfPresent(type, forKey: key, generic: ()) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try decodeIfPresent(type, forKey: key, generic: ()) }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try decodeIfPresent(type, forKey: key, generic: ()) }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try decodeIfPresent(type, forKey: key, generic: ()) }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try decodeIfPresent(type, forKey: key, generic: ()) }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try decodeIfPresent(type, forKey: key, generic: ()) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try decodeIfPresent(type, forKey: key, generic: ()) }

    private func decode<T: Decodable>(_ type: T.Type, forKey key: Key, generic: Void) throws -> T {
        try decode(type, forKey: key)
    }
    private func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key, generic: Void) throws -> T? {
        try decodeIfPresent(type, forKey: key)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        throw ProbeStop(key: key.stringValue)
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { throw ProbeStop(key: key.stringValue) }
    func superDecoder() throws -> any Decoder { ProbeDecoder(probe: probe) }
    func superDecoder(forKey key: Key) throws -> any Decoder { ProbeDecoder(probe: probe) }

    /// Some value of `T` to hand back, so decoding proceeds to the next property.
    static func placeholder<T: Decodable>(_ type: T.Type) -> T? {
        switch T.self {
        case is Bool.Type: return false as? T
        case is String.Type: return "" as? T
        case is Double.Type: return 0.0 as? T
        case is Float.Type: return Float(0) as? T
        case is Int.Type: return 0 as? T
        case is Int8.Type: return Int8(0) as? T
        case is Int16.Type: return Int16(0) as? T
        case is Int32.Type: return Int32(0) as? T
        case is Int64.Type: return Int64(0) as? T
        case is UInt.Type: return UInt(0) as? T
        case is UInt8.Type: return UInt8(0) as? T
        case is UInt16.Type: return UInt16(0) as? T
        case is UInt32.Type: return UInt32(0) as? T
        case is UInt64.Type: return UInt64(0) as? T
        default: break
        }
        if let convertible = T.self as? any DatabaseValueConvertible.Type {
            let candidates: [DatabaseValue] = [.integer(0), .real(0), .text("00000000-0000-0000-0000-000000000000"),
                                               .text("1970-01-01"), .text("0"), .text("x:"), .blob(Data())]
            for candidate in candidates {
                if let value = convertible.fromDatabaseValue(candidate) as? T { return value }
            }
        }
        if let cases = T.self as? any CaseIterable.Type, let first = firstCase(cases) as? T { return first }
        return try? T(from: ProbeDecoder(probe: Probe()))
    }

    private static func firstCase<C: CaseIterable>(_ type: C.Type) -> Any? { C.allCases.first }
}
