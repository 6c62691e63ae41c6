/// Writing many values at once: all inside one savepoint, each value's errors naming its position.
extension ModelStore {
    /// Writes every row inside one savepoint (a transaction when none is open): all or nothing. Each SQL text is
    /// prepared once, through the connection's statement cache.
    func batch<S: Sequence>(_ layout: ModelLayout, _ values: S, encode: (S.Element) throws -> EncodedRow,
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
