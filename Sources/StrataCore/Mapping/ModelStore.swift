#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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
    private let mappings: [String: ModelMapping]
    private var layouts: [String: ModelLayout] = [:]
    /// `RelationshipGraph.cycle` of the mappings, once worked out.
    private var relationshipCycle: [String]??

    public init(database: any DatabaseConnection, manifest: Manifest? = nil) {
        self.database = database
        var mappings: [String: ModelMapping] = [:]
        for model in manifest?.models ?? [] { mappings[model.typeName] = model }
        self.mappings = mappings
    }

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

    // MARK: Reading

    // The reading entry points are inlinable so that a caller's module specializes them for its model type:
    // appending decoded values to an array of a concrete type costs a fraction of the generic path's
    // value-witness calls.

    /// Every row of the type's table.
    @inlinable
    public func fetchAll<T: Decodable>(_ type: T.Type) throws -> [T] {
        try fetchAll(T.self, sql: try selectAll(T.self), .none)
    }

    /// Rows matching an SQL condition, with arguments in the backend's native placeholders.
    @inlinable
    public func fetchAll<T: Decodable>(_ type: T.Type, where condition: String,
                                       _ arguments: StatementArguments) throws -> [T] {
        try fetchAll(T.self, sql: try selectAll(T.self) + " WHERE \(condition)", arguments)
    }

    /// The first row matching an SQL condition, or nil.
    @inlinable
    public func fetchFirst<T: Decodable>(_ type: T.Type, where condition: String,
                                         _ arguments: StatementArguments) throws -> T? {
        try fetchAll(T.self, sql: try selectAll(T.self) + " WHERE \(condition) LIMIT 1", arguments).first
    }

    /// Rows of any query (joins, projections) decoded into `T`; result columns match properties by the same rules.
    @inlinable
    public func fetchAll<T: Decodable>(_ type: T.Type, sql: String, _ arguments: StatementArguments) throws -> [T] {
        var result: [T] = []
        try forEach(T.self, sql: sql, arguments) { result.append($0) }
        return result
    }

    /// Decodes rows one at a time without collecting them.
    @inlinable
    public func forEach<T: Decodable>(_ type: T.Type, sql: String, _ arguments: StatementArguments,
                                      _ body: (T) throws -> Void) throws {
        // Decided once, not per row (and at compile time where `T` is known).
        if DecodingContext.readsRowAsOneValue(T.self) {
            return try forEachValue(T.self, sql: sql, arguments, body)
        }
        try decodeRows(T.self, sql: sql, arguments) { decoder, context in
            while try context.nextRow() {
                try body(try T(from: decoder))
            }
        }
    }

    /// `forEach` for a type the mapper reads from a row's first column itself (`DecodingContext.readsRowAsOneValue`).
    @usableFromInline
    func forEachValue<T: Decodable>(_ type: T.Type, sql: String, _ arguments: StatementArguments,
                                    _ body: (T) throws -> Void) throws {
        try decodeRows(T.self, sql: sql, arguments) { _, context in
            while try context.nextRow() {
                try body(try context.decodeRowAsOneValue(T.self))
            }
        }
    }

    /// `SELECT * FROM` the type's table.
    @usableFromInline
    func selectAll<T>(_ type: T.Type) throws -> String {
        "SELECT * FROM \(quoteIdentifier(try layout(of: T.self).table))"
    }

    @usableFromInline
    func decodeRows<T>(_ type: T.Type, sql: String, _ arguments: StatementArguments,
                       _ body: (any Decoder, DecodingContext) throws -> Void) throws {
        let statement = try database.compileForReading(sql)
        do {
            try statement.bind(arguments)
            // The result's own layout, read next, needs no description of the statement beforehand.
            try statement.start()
        } catch {
            statement.reset()
            throw error
        }
        let layout = try? layout(of: T.self)
        let context: DecodingContext
        if let layout, layout.mapping?.relationships.isEmpty == false {
            // Relationships load for all rows at once before the first is decoded (`GraphReading`).
            try requireAcyclicRelationships()
            let rows = try BufferedStatement(reading: statement)
            context = DecodingContext(statement: rows, typeName: Self.typeName(T.self), layout: layout,
                                      dateStorage: database.dialect.dateStorage)
            context.graph = GraphReading(store: self, typeName: Self.typeName(T.self), layout: layout, rows: rows)
        } else {
            context = DecodingContext(statement: statement, typeName: Self.typeName(T.self), layout: layout,
                                      dateStorage: database.dialect.dateStorage)
        }
        defer {
            context.finish()
            statement.reset()
        }
        // Boxed once here rather than once per row by each `T(from:)` call.
        let decoder: any Decoder = RowDecoder(context: context)
        try body(decoder, context)
    }

    /// Decodes the rows of a query with the value of one of their columns (which `T` need not have): how related
    /// rows are filed under the key they name.
    func decodeGrouped<T: Decodable>(_ type: T.Type, sql: String, _ arguments: StatementArguments, groupColumn: String,
                                     _ body: (DatabaseValue, T) throws -> Void) throws {
        try decodeRows(T.self, sql: sql, arguments) { decoder, context in
            guard let index = context.statement.layout.index(of: groupColumn) else {
                throw MappingError(typeName: Self.typeName(T.self), column: groupColumn,
                                   message: "has no column in the result (columns: \(context.statement.layout.names.joined(separator: ", ")))")
            }
            while try context.nextRow() {
                let group = context.statement.value(at: Int32(index))
                try body(group, try T(from: decoder))
            }
        }
    }

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

    /// The row with this primary key (single-column keys).
    public func find<T: Decodable>(_ type: T.Type, key: any DatabaseValueConvertible) throws -> T? {
        let layout = try layout(of: T.self)
        guard layout.primaryKey.count == 1 else {
            throw MappingError(typeName: layout.typeName, message: layout.primaryKey.isEmpty
                ? "has no primary key (declare one in the table or the manifest's primaryKey)"
                : "has a composite primary key (\(layout.primaryKey.joined(separator: ", "))); pass find(_:key:) a dictionary")
        }
        return try find(T.self, key: [layout.primaryKey[0]: key])
    }

    /// The row with this composite primary key, given by column or property name.
    public func find<T: Decodable>(_ type: T.Type, key: [String: any DatabaseValueConvertible]) throws -> T? {
        let layout = try layout(of: T.self)
        let (condition, arguments) = try keyCondition(layout, key)
        return try fetchAll(T.self, sql: "SELECT * FROM \(quoteIdentifier(layout.table)) WHERE \(condition) LIMIT 1",
                            arguments).first
    }

    public func count<T>(_ type: T.Type) throws -> Int {
        let layout = try layout(of: T.self)
        return try database.scalar("SELECT count(*) FROM \(quoteIdentifier(layout.table))", .none, as: Int.self) ?? 0
    }

    public func count<T>(_ type: T.Type, where condition: String, _ arguments: StatementArguments) throws -> Int {
        let layout = try layout(of: T.self)
        return try database.scalar("SELECT count(*) FROM \(quoteIdentifier(layout.table)) WHERE \(condition)",
                                   arguments, as: Int.self) ?? 0
    }

    // MARK: Writing

    /// Inserts a value; returns the new row's rowid on SQLite (the key, for an integer primary key left nil), and
    /// on PostgreSQL the row's integer key (generated when left nil: an identity or `serial` column), 0 for a table
    /// without a one-column integer key.
    @discardableResult
    public func insert<T: Encodable>(_ value: T) throws -> Int64 {
        let layout = try layout(of: T.self)
        if writesGraph(layout) { return insertedKey(try writeGraph(value, layout: layout, .insert)) }
        return try insert(row: try encode(value), layout: layout)
    }

    /// Inserts a value that is not `Encodable`, reading its properties with `Mirror`.
    @discardableResult
    public func insert<T>(_ value: T) throws -> Int64 {
        let layout = try layout(of: T.self)
        if writesGraph(layout) { return insertedKey(try writeGraph(value, layout: layout, .insert)) }
        return try insert(row: try mirrorRow(value, typeName: Self.typeName(T.self)), layout: layout)
    }

    /// Updates the row with the value's primary key; throws when there is no such row.
    public func update<T: Encodable>(_ value: T) throws {
        let layout = try layout(of: T.self)
        if writesGraph(layout) { _ = try writeGraph(value, layout: layout, .update); return }
        try update(row: try encode(value), layout: layout)
    }

    public func update<T>(_ value: T) throws {
        let layout = try layout(of: T.self)
        if writesGraph(layout) { _ = try writeGraph(value, layout: layout, .update); return }
        try update(row: try mirrorRow(value, typeName: Self.typeName(T.self)), layout: layout)
    }

    /// Inserts the value, or updates the row with its primary key when there is one. With relationships in the
    /// manifest, writes the value's whole graph in one savepoint (see the README's "Relationships").
    public func save<T: Encodable>(_ value: T) throws {
        let layout = try layout(of: T.self)
        if writesGraph(layout) { _ = try writeGraph(value, layout: layout, .save); return }
        try save(row: try encode(value), layout: layout)
    }

    public func save<T>(_ value: T) throws {
        let layout = try layout(of: T.self)
        if writesGraph(layout) { _ = try writeGraph(value, layout: layout, .save); return }
        try save(row: try mirrorRow(value, typeName: Self.typeName(T.self)), layout: layout)
    }

    /// Deletes the row with the value's primary key, and what the manifest says it owns (`onRemove`); returns
    /// whether a row was deleted.
    @discardableResult
    public func delete<T: Encodable>(_ value: T) throws -> Bool {
        try delete(row: try encode(value), layout: try layout(of: T.self))
    }

    @discardableResult
    public func delete<T>(_ value: T) throws -> Bool {
        try delete(row: try mirrorRow(value, typeName: Self.typeName(T.self)), layout: try layout(of: T.self))
    }

    /// Deletes the row with this primary key (a value, or a dictionary for composite keys).
    @discardableResult
    public func delete<T>(_ type: T.Type, key: any DatabaseValueConvertible) throws -> Bool {
        let layout = try layout(of: T.self)
        guard layout.primaryKey.count == 1 else {
            throw MappingError(typeName: layout.typeName, message: "needs a single-column primary key here")
        }
        return try delete(T.self, key: [layout.primaryKey[0]: key])
    }

    @discardableResult
    public func delete<T>(_ type: T.Type, key: [String: any DatabaseValueConvertible]) throws -> Bool {
        try delete(layout: try layout(of: T.self), key: key)
    }

    /// Deletes every row of the type's table; returns how many.
    @discardableResult
    public func deleteAll<T>(_ type: T.Type) throws -> Int {
        try deleteAll(layout: try layout(of: T.self), condition: nil, .none)
    }

    @discardableResult
    public func deleteAll<T>(_ type: T.Type, where condition: String, _ arguments: StatementArguments) throws -> Int {
        try deleteAll(layout: try layout(of: T.self), condition: condition, arguments)
    }

    /// Deletes rows, and first what they own when the manifest says so, in one savepoint.
    private func deleteAll(layout: ModelLayout, condition: String?, _ arguments: StatementArguments) throws -> Int {
        let table = quoteIdentifier(layout.table)
        let filter = condition.map { " WHERE \($0)" } ?? ""
        guard ownsRows(layout) else {
            try database.execute("DELETE FROM \(table)\(filter)", arguments)
            return database.changes
        }
        try requireAcyclicRelationships()
        guard layout.primaryKey.count == 1 else {
            throw MappingError(typeName: layout.typeName, message: "deleting what a \(layout.typeName) owns needs a one-column primary key")
        }
        // The condition is evaluated once, into keys: run again after the owned rows are gone, a condition that
        // reads them (dialogs holding spam) would match other rows, or none.
        try requireUniqueKey(layout)
        let key = quoteIdentifier(layout.primaryKey[0])
        return try database.withSavepoint {
            var keys = try database.rows("SELECT \(key) FROM \(table)\(filter)", arguments).map { $0[0] }
            var deleted = 0
            // A NULL key (SQLite allows one outside an INTEGER PRIMARY KEY) names no row and owns none.
            if keys.contains(.null) {
                guard condition == nil else {
                    throw MappingError(typeName: layout.typeName, column: layout.primaryKey[0],
                                       message: "rows matching the condition have a NULL key, so they cannot be deleted by key with what they own; nothing was deleted")
                }
                keys.removeAll { $0 == .null }
                try database.execute("DELETE FROM \(table) WHERE \(key) IS NULL", .none)
                deleted += database.changes
            }
            for list in KeyList.lists(of: keys, dialect: database.dialect) {
                try deleteOwned(layout, keys: list.placeholders, .positional(list.values))
                try database.execute("DELETE FROM \(table) WHERE \(key) IN (\(list.placeholders))", .positional(list.values))
                deleted += database.changes
            }
            return deleted
        }
    }

    /// Inserts many values in one transaction (a savepoint when one is already open) through one prepared
    /// statement: all are inserted, or none.
    public func insert<S: Sequence>(contentsOf values: S) throws where S.Element: Encodable {
        let layout = try layout(of: S.Element.self)
        if writesGraph(layout) { return try writeGraphs(values, layout: layout, .insert) }
        if writesRowByRow {
            let encoding = rowEncoding(layout.typeName)
            let statements = StatementCache()
            return try batch(layout, values, encode: { try encoding.encode($0) }) {
                _ = try insert(row: $0, layout: layout, statements: statements)
            }
        }
        try database.withSavepoint {
            var binding: BindingEncoding?
            var position = 0
            for value in values {
                position += 1
                try writing(position, of: layout) {
                    if binding == nil {
                        // The first value fixes the columns; every later one binds straight into the statement.
                        let row = try rowEncoding(layout.typeName).encode(value)
                        binding = BindingEncoding(statement: try database.compile(try insertSQL(layout, row)),
                                                  typeName: layout.typeName, properties: row.properties,
                                                  datePrecision: database.dialect.datePrecision,
                                                  dateStorage: database.dialect.dateStorage)
                        binding?.fallback.dateStorageByProperty = mappings[layout.typeName]?.dateStorage ?? [:]
                    }
                    try binding?.bind(value)
                    try binding?.statement.run()
                }
            }
        }
    }

    /// Inserts or updates many values in one transaction, each SQL statement prepared once.
    public func save<S: Sequence>(contentsOf values: S) throws where S.Element: Encodable {
        let layout = try layout(of: S.Element.self)
        if writesGraph(layout) { return try writeGraphs(values, layout: layout, .save) }
        let encoding = rowEncoding(layout.typeName)
        let statements = StatementCache()
        try batch(layout, values, encode: { try encoding.encode($0) }) { try save(row: $0, layout: layout, statements: statements) }
    }

    /// Inserts many values that are not `Encodable`, via `Mirror`, in one transaction.
    public func insert<S: Sequence>(contentsOf values: S) throws {
        let layout = try layout(of: S.Element.self)
        if writesGraph(layout) { return try writeGraphs(values, layout: layout, .insert) }
        if writesRowByRow {
            let statements = StatementCache()
            return try batch(layout, values, encode: { try mirrorRow($0, typeName: layout.typeName) }) {
                _ = try insert(row: $0, layout: layout, statements: statements)
            }
        }
        var statement: (any PreparedStatement)?
        try batch(layout, values, encode: { try mirrorRow($0, typeName: layout.typeName) }) { row in
            let insert = try statement ?? database.compile(try insertSQL(layout, row))
            statement = insert
            for (index, value) in row.values.enumerated() { try insert.bind(value, at: Int32(index + 1)) }
            try insert.run()
        }
    }

    // MARK: SQL

    /// The encoder of a type's rows, writing dates as finely as the database keeps them.
    func rowEncoding(_ typeName: String) -> RowEncoding {
        let encoding = RowEncoding(typeName: typeName, datePrecision: database.dialect.datePrecision,
                                   dateStorage: database.dialect.dateStorage)
        encoding.dateStorageByProperty = mappings[typeName]?.dateStorage ?? [:]
        // Relationship properties are never columns: a graph write takes them from `related`, other writes
        // (a delete by the value's key) leave them out.
        encoding.relationships = Set(mappings[typeName]?.relationships.map(\.property) ?? [])
        return encoding
    }

    /// The row of a value that is not `Encodable`, read with `Mirror`.
    private func mirrorRow(_ value: Any, typeName: String) throws -> EncodedRow {
        var related: [(property: String, value: Any?)] = []
        return try MirrorEncoding.encode(value, typeName: typeName, datePrecision: database.dialect.datePrecision,
                                         dateStorage: database.dialect.dateStorage,
                                         dateStorageByProperty: mappings[typeName]?.dateStorage ?? [:],
                                         relationships: Set(mappings[typeName]?.relationships.map(\.property) ?? []),
                                         related: &related)
    }

    private func encode<T: Encodable>(_ value: T) throws -> EncodedRow {
        try rowEncoding(Self.typeName(T.self)).encode(value)
    }

    private func columns(_ layout: ModelLayout, _ row: EncodedRow) -> [String] {
        row.properties.map(layout.column(for:))
    }

    /// ` OR ABORT` for a table whose constraints carry their own conflict clause: without it, REPLACE would make an
    /// insert or update delete the row it conflicts with (and rows of other tables, by cascade), and IGNORE would
    /// make it do nothing without an error. Only there, since an OR clause also overrides the conflict handling of
    /// statements in the table's triggers.
    private static func orAbort(_ layout: ModelLayout) -> String {
        layout.declaresConflictClause ? " OR ABORT" : ""
    }

    private func insertSQL(_ layout: ModelLayout, _ row: EncodedRow) throws -> String {
        let columns = columns(layout, row)
        return "INSERT\(Self.orAbort(layout)) INTO \(quoteIdentifier(layout.table)) (\(columns.map(quoteIdentifier).joined(separator: ", "))) "
            + "VALUES (\(columns.indices.map { database.dialect.placeholder($0 + 1) }.joined(separator: ", ")))"
    }

    func insert(row: EncodedRow, layout: ModelLayout, statements: StatementCache? = nil) throws -> Int64 {
        switch database.dialect.modelWrites.generatedKeys {
        case .lastRowID:
            try database.execute(try insertSQL(layout, row), .positional(row.values))
            return database.lastInsertRowID
        case .returning:
            return try insertReturningKey(row: row, layout: layout, conflict: "", statements: statements)
        }
    }

    /// Whether a batch writes one statement per value: where the columns an insert names depend on each value's
    /// key (`ModelWrites.GeneratedKeys.returning`) and values go through `SQLDialect.parameter`.
    private var writesRowByRow: Bool {
        database.dialect.modelWrites.generatedKeys == .returning
    }

    /// The row's values as parameters for their columns (`SQLDialect.parameter`); an error names the property.
    private func parameters(_ layout: ModelLayout, _ row: EncodedRow, _ shape: RowShape? = nil) throws -> [DatabaseValue] {
        let dialect = database.dialect
        let shape = shape ?? RowShape(layout, row.properties)
        var values = row.values
        for index in values.indices {
            guard index < shape.declaredTypes.count, let declared = shape.declaredTypes[index] else { continue }
            do {
                values[index] = try dialect.parameter(values[index], forColumnOfType: declared)
            } catch let error as DatabaseError {
                throw MappingError(typeName: layout.typeName, property: row.properties[index], value: "\(values[index])",
                                   message: error.message)
            }
        }
        return values
    }

    /// An insert naming the row's columns except key columns left NULL that the database generates, reading back
    /// a one-column integer key (`ModelWrites.GeneratedKeys.returning`); `conflict` follows the VALUES. In a batch,
    /// where the columns are and what each needs is worked out once per type, and the SQL once per set of columns.
    private func insertReturningKey(row: EncodedRow, layout: ModelLayout, conflict: String,
                                    statements: StatementCache?) throws -> Int64 {
        let shape = statements?.shape(for: row.properties) { RowShape(layout, $0) } ?? RowShape(layout, row.properties)
        let parameters = try self.parameters(layout, row, shape)
        var kept: [Int] = [], values: [DatabaseValue] = []
        kept.reserveCapacity(parameters.count)
        values.reserveCapacity(parameters.count)
        for (index, value) in parameters.enumerated() where !(value == .null && shape.isGeneratedKey[index]) {
            kept.append(index)
            values.append(value)
        }
        let (sql, returnsKey) = statements?.insert(kept: kept, conflict: conflict) {
            insertSQL(layout, shape, kept, conflict)
        } ?? insertSQL(layout, shape, kept, conflict)
        guard let statements else {
            guard returnsKey else {
                try database.execute(sql, .positional(values))
                return 0
            }
            return try database.scalar(sql, .positional(values), as: Int64.self) ?? 0
        }
        // In a batch, the statement for these columns is compiled once and run for every value that names them.
        let statement = try statements.statement(sql) { try database.compile(sql) }
        try statement.bind(.positional(values))
        guard returnsKey else {
            try statement.run()
            return 0
        }
        defer { statement.reset() }
        guard try statement.step(), case .integer(let generated) = statement.value(at: 0) else { return 0 }
        return generated
    }

    /// The INSERT naming the columns at `kept`, and whether it reads a one-column integer key back.
    private func insertSQL(_ layout: ModelLayout, _ shape: RowShape, _ kept: [Int], _ conflict: String) -> (String, Bool) {
        let columns = kept.map { shape.columns[$0] }
        let table = quoteIdentifier(layout.table)
        // A value given for a column the database generates (a key read back, saved again) is the row's, also
        // where the column is GENERATED ALWAYS.
        let overriding = columns.contains { layout.columns.named($0)?.isGenerated == true } ? " OVERRIDING SYSTEM VALUE" : ""
        var sql = columns.isEmpty ? "INSERT INTO \(table) DEFAULT VALUES"
            : "INSERT INTO \(table) (\(columns.map(quoteIdentifier).joined(separator: ", ")))\(overriding) VALUES ("
                + columns.indices.map { database.dialect.placeholder($0 + 1) }.joined(separator: ", ") + ")"
        sql += conflict
        let key = layout.primaryKey.count == 1 ? layout.columns.named(layout.primaryKey[0]) : nil
        let returnsKey = key?.affinity == .integer
        if let key, returnsKey { sql += " RETURNING \(quoteIdentifier(key.name))" }
        return (sql, returnsKey)
    }

    /// Updates the row with the value's key when the key is set and the row exists; inserts otherwise: as one
    /// `INSERT … ON CONFLICT (key) DO UPDATE` where the dialect says so and the value has every column the table
    /// needs for a new row, else as an UPDATE then an INSERT (an upsert would not do: the database checks NOT NULL
    /// columns the type may not have before it looks for the conflict, so saving a value read back would fail).
    /// Returns the key the database generated when it inserted a row, nil when it updated one.
    @discardableResult
    func save(row: EncodedRow, layout: ModelLayout, statements: StatementCache? = nil) throws -> Int64? {
        let columns = columns(layout, row)
        try requireKey(layout, columns)
        let keyIsSet = zip(columns, row.values).allSatisfy { !layout.isPrimaryKey($0.0) || $0.1 != .null }
        let named = Set(columns.map(\.sqliteFolded))
        let coversNewRow = layout.columns.allSatisfy {
            !$0.isNotNull || $0.defaultSQL != nil || $0.isGenerated || named.contains($0.name.sqliteFolded)
        }
        if keyIsSet, coversNewRow, database.dialect.modelWrites.save == .onConflictUpdate {
            let keys = columns.filter(layout.isPrimaryKey).map(quoteIdentifier).joined(separator: ", ")
            let sets = columns.filter { !layout.isPrimaryKey($0) }.map { "\(quoteIdentifier($0)) = EXCLUDED.\(quoteIdentifier($0))" }
            let conflict = " ON CONFLICT (\(keys)) " + (sets.isEmpty ? "DO NOTHING" : "DO UPDATE SET " + sets.joined(separator: ", "))
            _ = try insertReturningKey(row: row, layout: layout, conflict: conflict, statements: statements)
            return nil
        }
        if keyIsSet, try updateRow(row: row, layout: layout) { return nil }
        return try insert(row: row, layout: layout, statements: statements)
    }

    func update(row: EncodedRow, layout: ModelLayout) throws {
        guard try updateRow(row: row, layout: layout) else {
            let columns = columns(layout, row)
            let key = zip(columns, row.values).filter { layout.isPrimaryKey($0.0) }.map { "\($0.0) = \($0.1)" }
            throw MappingError(typeName: layout.typeName, value: key.joined(separator: ", "),
                               message: "no row has this primary key; use insert or save")
        }
    }

    /// True when a row with the value's key exists (and was updated).
    private func updateRow(row: EncodedRow, layout: ModelLayout) throws -> Bool {
        let columns = columns(layout, row)
        try requireKey(layout, columns)
        var sets: [String] = [], setValues: [DatabaseValue] = []
        var keys: [String] = [], keyValues: [DatabaseValue] = []
        for (column, value) in zip(columns, try parameters(layout, row)) {
            if layout.isPrimaryKey(column) {
                keys.append(quoteIdentifier(column))
                keyValues.append(value)
            } else {
                sets.append(quoteIdentifier(column))
                setValues.append(value)
            }
        }
        // Parameters are numbered in the order they are bound: the SET values, then the key's.
        let dialect = database.dialect
        sets = sets.enumerated().map { "\($1) = \(dialect.placeholder($0 + 1))" }
        keys = keys.enumerated().map { "\($1) = \(dialect.placeholder(sets.count + $0 + 1))" }
        if sets.isEmpty {
            // Only key columns: "updating" means the row exists.
            return try database.scalar("SELECT count(*) FROM \(quoteIdentifier(layout.table)) WHERE \(keys.joined(separator: " AND "))",
                                       .positional(keyValues), as: Int.self) ?? 0 > 0
        }
        try database.execute("UPDATE\(Self.orAbort(layout)) \(quoteIdentifier(layout.table)) SET \(sets.joined(separator: ", ")) WHERE \(keys.joined(separator: " AND "))",
                             .positional(setValues + keyValues))
        return database.changes > 0
    }

    private func delete(row: EncodedRow, layout: ModelLayout) throws -> Bool {
        let columns = columns(layout, row)
        try requireKey(layout, columns)
        var key: [String: any DatabaseValueConvertible] = [:]
        for (column, value) in zip(columns, row.values) where layout.isPrimaryKey(column) { key[column] = value }
        return try delete(layout: layout, key: key)
    }

    func delete(layout: ModelLayout, key: [String: any DatabaseValueConvertible]) throws -> Bool {
        if ownsRows(layout) { return try deleteGraph(layout, key: key) }
        return try deleteRow(layout: layout, key: key)
    }

    /// Deletes one row by its key, nothing else.
    func deleteRow(layout: ModelLayout, key: [String: any DatabaseValueConvertible]) throws -> Bool {
        try requireUniqueKey(layout)
        let (condition, arguments) = try keyCondition(layout, key)
        try database.execute("DELETE FROM \(quoteIdentifier(layout.table)) WHERE \(condition)", arguments)
        return database.changes > 0
    }

    /// Refuses to write by a key that several rows may share: one call would change every one of them.
    func requireUniqueKey(_ layout: ModelLayout) throws {
        guard !layout.primaryKey.isEmpty else {
            throw MappingError(typeName: layout.typeName,
                               message: "has no primary key (declare one in table '\(layout.table)' or the manifest's primaryKey)")
        }
        guard layout.keyIsUnique else {
            throw MappingError(typeName: layout.typeName, message: layout.keyNotUniqueMessage)
        }
    }

    func requireKey(_ layout: ModelLayout, _ columns: [String]) throws {
        try requireUniqueKey(layout)
        let lowered = Set(columns.map(\.sqliteFolded))
        let missing = layout.primaryKey.filter { !lowered.contains($0.sqliteFolded) }
        guard missing.isEmpty else {
            throw MappingError(typeName: layout.typeName,
                               message: "has no property for primary key column \(missing.joined(separator: ", "))")
        }
    }

    private func keyCondition(_ layout: ModelLayout, _ key: [String: any DatabaseValueConvertible]) throws
        -> (String, StatementArguments) {
        var values: [DatabaseValue] = []
        var terms: [String] = []
        var named: [String: any DatabaseValueConvertible] = [:]
        for (name, value) in key { named[layout.column(for: name).sqliteFolded] = value }
        for column in layout.primaryKey {
            guard let value = named.removeValue(forKey: column.sqliteFolded) else {
                throw MappingError(typeName: layout.typeName, column: column, message: "the key has no value for this column")
            }
            switch database.dialect.checkedParameter(value) {
            case .success(let checked): values.append(checked)
            case .failure(let error):
                throw MappingError(typeName: layout.typeName, column: column, value: "\(value)", message: error.message)
            }
            terms.append("\(quoteIdentifier(column)) = \(database.dialect.placeholder(values.count))")
        }
        guard named.isEmpty, !terms.isEmpty else {
            throw MappingError(typeName: layout.typeName, value: named.keys.sorted().joined(separator: ", "),
                               message: "is not the primary key (\(layout.primaryKey.joined(separator: ", ")))")
        }
        return (terms.joined(separator: " AND "), .positional(values))
    }

    /// Writes every row inside one savepoint (a transaction when none is open): all or nothing. Each SQL text is
    /// prepared once, through the connection's statement cache.
    private func batch<S: Sequence>(_ layout: ModelLayout, _ values: S, encode: (S.Element) throws -> EncodedRow,
                                    write: (EncodedRow) throws -> Void) throws {
        try database.withSavepoint {
            var position = 0
            for value in values {
                position += 1
                try writing(position, of: layout) { try write(try encode(value)) }
            }
        }
    }

    /// Writes the batch's value at a 1-based `position`; its errors name that position.
    func writing(_ position: Int, of layout: ModelLayout, _ write: () throws -> Void) throws {
        do {
            try write()
        } catch let error as DatabaseError {
            throw MappingError(typeName: layout.typeName, row: position, message: "rejected: \(error.message)")
        } catch let error as MappingError where error.row == nil {
            throw MappingError(typeName: error.typeName, property: error.property, column: error.column,
                               row: position, value: error.value, message: error.message)
        }
    }
}

/// Where a type's properties are stored: each property's column, its declared type where the dialect may need to
/// turn the value into another form (`SQLDialect.parameter`), and whether it is a key the database generates.
struct RowShape {
    let properties: [String]
    let columns: [String]
    let declaredTypes: [String?]
    let isGeneratedKey: [Bool]

    init(_ layout: ModelLayout, _ properties: [String]) {
        self.properties = properties
        columns = properties.map(layout.column(for:))
        let infos = columns.map { layout.columns.named($0) }
        declaredTypes = infos.map { $0?.storageType }
        isGeneratedKey = zip(columns, infos).map { layout.isPrimaryKey($0) && $1?.isGenerated == true }
    }
}

/// The statements a batch compiled, by SQL text, so each runs prepared for every value that needs it; and the
/// row shape and INSERT text it worked out, so each is worked out once.
final class StatementCache {
    private var statements: [String: any PreparedStatement] = [:]
    private var lastShape: RowShape?
    private var inserts: [String: (String, Bool)] = [:]
    // The last INSERT and statement asked for: a batch's values mostly name the same columns, and comparing with the
    // last costs less per row than building and hashing a key.
    private var lastInsert: (kept: [Int], conflict: String, made: (String, Bool))?
    private var lastStatement: (sql: String, statement: any PreparedStatement)?

    func shape(for properties: [String], make: ([String]) -> RowShape) -> RowShape {
        if let lastShape, lastShape.properties == properties { return lastShape }
        let shape = make(properties)
        lastShape = shape
        return shape
    }

    func insert(kept: [Int], conflict: String, make: () -> (String, Bool)) -> (String, Bool) {
        if let lastInsert, lastInsert.kept == kept, lastInsert.conflict == conflict { return lastInsert.made }
        let key = kept.map(String.init).joined(separator: ",") + "|" + conflict
        let made = inserts[key] ?? make()
        inserts[key] = made
        lastInsert = (kept, conflict, made)
        return made
    }

    func statement(_ sql: String, compile: () throws -> any PreparedStatement) throws -> any PreparedStatement {
        if let lastStatement, lastStatement.sql == sql { return lastStatement.statement }
        let statement = try statements[sql] ?? compile()
        statements[sql] = statement
        lastStatement = (sql, statement)
        return statement
    }
}
