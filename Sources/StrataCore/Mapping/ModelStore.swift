#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// This file holds the store itself: its connection, its mappings and the layouts worked out from them. What it does
// is in one file a job: ModelStore+Fetching.swift, +SQL.swift (the `SQL` fragment entry points), +Inserting.swift,
// +Saving.swift (update and save), +Deleting.swift, +Keys.swift (writes by primary key), +Encoding.swift (values
// into rows), +Batches.swift; values with relationships in GraphReading.swift and GraphWriting.swift. Where databases
// write rows differently, the store asks the dialect's RowWriter (RowWriter.swift).

/// Reads and writes Swift values as table rows, with no per-model code.
///
/// ```swift
/// struct Book: Codable { var isbn: String; var title: String; var publishedOn: Date?; var inPrint: Bool }
/// let store = ModelStore(database: db, manifest: manifest)       // manifest optional
/// var books = try store.fetchAll(Book.self, where: "author_id = \(authorID)")   // bound, never spliced
/// books[0].title = "A Wizard of Earthsea (50th anniversary)"
/// try store.save(books[0])
/// ```
/// Any `Decodable` struct or final class reads rows; `Encodable` values write through a fast encoder, and other
/// values through `Mirror`. Names follow `ModelLayout`'s rules unless the manifest's `<model>` says otherwise.
public final class ModelStore {
    /// The connection it reads and writes through (any backend's).
    public let database: any DatabaseConnection
    let mappings: [String: ModelMapping]
    private var layouts: [String: ModelLayout] = [:]
    /// `RelationshipGraph.cycle` of the mappings, once worked out.
    private var relationshipCycle: [String]??

    /// Creates a store on a connection, with the manifest's model mappings (none: the default naming rules).
    public init(database: any DatabaseConnection, manifest: Manifest? = nil) {
        self.database = database
        var mappings: [String: ModelMapping] = [:]
        for model in manifest?.models ?? [] { mappings[model.typeName] = model }
        self.mappings = mappings
    }

    /// Creates a store on a connection with the given model mappings.
    public init(database: any DatabaseConnection, mappings: [ModelMapping]) {
        self.database = database
        var byType: [String: ModelMapping] = [:]
        for model in mappings { byType[model.typeName] = model }
        self.mappings = byType
    }

    /// Where a type lives: table, primary key, columns. Cached per type.
    public func layout<T>(of type: T.Type) throws -> ModelLayout {
        try layout(named: Self.typeName(T.self))
    }

    /// The layout of a model the store has a mapping for, nil for another.
    func mappedLayout(named name: String) throws -> ModelLayout? {
        mappings[name] == nil ? nil : try layout(named: name)
    }

    /// The layout of a type by its name, as the manifest's `<model type="…">` gives it.
    func layout(named name: String) throws -> ModelLayout {
        if let cached = layouts[name] { return cached }
        let layout = try ModelLayout(typeName: name, mapping: mappings[name], database: database)
        layouts[name] = layout
        return layout
    }

    /// Forgets cached layouts, after a migration changed tables.
    public func invalidateLayouts() {
        layouts.removeAll()
    }

    static func typeName<T>(_ type: T.Type) -> String {
        String(describing: type)
    }

    // MARK: Relationships

    /// The layout of the type a relationship holds, which must be the model the manifest names.
    func relatedLayout<T>(_ type: T.Type, _ relationship: Relationship, from owner: String) throws -> ModelLayout {
        let name = Self.typeName(T.self)
        guard name == relationship.model else {
            throw MappingError(typeName: owner, property: relationship.property,
                               message: "holds \(name) values but the manifest's \(relationship.kind.rawValue) names model \(relationship.model)")
        }
        let layout = try self.layout(of: T.self)
        guard !layout.columns.isEmpty else {
            throw MappingError(typeName: owner, property: relationship.property,
                               message: "table '\(layout.table)' of model \(relationship.model) does not exist")
        }
        return layout
    }

    /// Refuses relationships that nest in a cycle: loading or saving them would never end. Found once per store.
    func requireAcyclicRelationships() throws {
        if relationshipCycle == nil {
            relationshipCycle = .some(RelationshipGraph.cycle(in: Array(mappings.values)))
        }
        if case .some(.some(let cycle)) = relationshipCycle {
            throw MappingError(typeName: String(cycle.first?.prefix { $0 != "." } ?? ""),
                               message: "relationships nest in a cycle (\(RelationshipGraph.describe(cycle))); drop one side")
        }
    }
}
