/// Values into rows: the encoder of a type's rows (`Encodable`, or `Mirror` for other values), with the dates and
/// relationships the manifest says, and the columns a row's properties are stored in.
extension ModelStore {
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
    func mirrorRow(_ value: Any, typeName: String) throws -> EncodedRow {
        var related: [(property: String, value: Any?)] = []
        return try MirrorEncoding.encode(value, typeName: typeName, datePrecision: database.dialect.datePrecision,
                                         dateStorage: database.dialect.dateStorage,
                                         dateStorageByProperty: mappings[typeName]?.dateStorage ?? [:],
                                         relationships: Set(mappings[typeName]?.relationships.map(\.property) ?? []),
                                         related: &related)
    }

    /// The row of an `Encodable` value.
    func encode<T: Encodable>(_ value: T) throws -> EncodedRow {
        try rowEncoding(Self.typeName(T.self)).encode(value)
    }

    /// The column each of the row's properties is stored in, in property order.
    func columns(_ layout: ModelLayout, _ row: EncodedRow) -> [String] {
        row.properties.map(layout.column(for:))
    }
}
