#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Column values of a value that is not `Encodable`, read from its stored properties with `Mirror`.
/// Slower than the `Encodable` path (about 7× per value), so it is the fallback, not the hot path.
enum MirrorEncoding {
    static func encode(_ value: Any, typeName: String, datePrecision: DatePrecision,
                       dateStorage: DateStorage = .iso8601Text) throws -> EncodedRow {
        var related: [(property: String, value: Any?)] = []
        return try encode(value, typeName: typeName, datePrecision: datePrecision, dateStorage: dateStorage,
                          dateStorageByProperty: [:], relationships: [], related: &related)
    }

    /// `encode`, with the values of relationship properties put in `related` (nil for a nil optional) rather than
    /// written as columns.
    static func encode(_ value: Any, typeName: String, datePrecision: DatePrecision, dateStorage: DateStorage,
                       dateStorageByProperty: [String: DateStorage], relationships: Set<String>, related: inout [(property: String, value: Any?)]) throws -> EncodedRow {
        var row = EncodedRow()
        var mirror: Mirror? = Mirror(reflecting: value)
        var levels: [Mirror] = []
        while let current = mirror {
            levels.insert(current, at: 0) // superclass properties first, as they are declared
            mirror = current.superclassMirror
        }
        guard let style = levels.last?.displayStyle, style == .struct || style == .class else {
            throw MappingError(typeName: typeName, message: "only structs and classes map to rows")
        }
        for level in levels {
            for child in level.children {
                guard var label = child.label else { continue }
                // Property wrappers store their value as `_name`.
                if label.hasPrefix("_") { label.removeFirst() }
                if relationships.contains(label) {
                    related.append((label, unwrapped(child.value)))
                    continue
                }
                row.properties.append(label)
                row.values.append(try databaseValue(child.value, typeName: typeName, property: label,
                                                    datePrecision: datePrecision,
                                                    dateStorage: dateStorageByProperty[label] ?? dateStorage))
            }
        }
        return row
    }

    /// The value an optional holds (nil for none), or the value itself.
    static func unwrapped(_ value: Any) -> Any? {
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .optional else { return value }
        return mirror.children.first.flatMap { unwrapped($0.value) }
    }

    static func databaseValue(_ value: Any, typeName: String, property: String,
                              datePrecision: DatePrecision,
                              dateStorage: DateStorage = .iso8601Text) throws -> DatabaseValue {
        let mirror = Mirror(reflecting: value)
        if mirror.displayStyle == .optional {
            guard let wrapped = mirror.children.first?.value else { return .null }
            return try databaseValue(wrapped, typeName: typeName, property: property, datePrecision: datePrecision, dateStorage: dateStorage)
        }
        if let date = value as? Date { return dateStorage.databaseValue(of: date, precision: datePrecision) }
        if let convertible = value as? any DatabaseValueConvertible { return convertible.databaseValue }
        if let raw = value as? any RawRepresentable {
            return try databaseValue(raw.rawValue, typeName: typeName, property: property, datePrecision: datePrecision, dateStorage: dateStorage)
        }
        if let encodable = value as? any Encodable {
            do {
                return .text(String(decoding: try RowEncoding.jsonEncoder().encode(encodable), as: UTF8.self))
            } catch {
                throw MappingError(typeName: typeName, property: property, message: "cannot be stored as JSON: \(error)")
            }
        }
        throw MappingError(typeName: typeName, property: property, value: "\(type(of: value))",
                           message: "has no database form: adopt DatabaseValueConvertible or Codable")
    }
}
