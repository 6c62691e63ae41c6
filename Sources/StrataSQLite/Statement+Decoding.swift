import StrataCore

/// Rows of a SQLite statement decode through a `RowContainer` that reads each field with
/// `Statement.column(of:at:)` on the `sqlite3_stmt`, instead of a dynamic call through `PreparedStatement`.
extension Statement: RowDecodingStatement {
    package var columnSource: OpaquePointer { handle }

    package func rowContainer<Key: CodingKey>(context: DecodingContext, keyedBy type: Key.Type) -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(RowContainer<Key, SQLiteColumns>(context: context))
    }
}

/// Reads a column of the `sqlite3_stmt` a decoding context was made for.
enum SQLiteColumns: ColumnSource {
    @inline(__always) static func column(in context: DecodingContext, at index: Int32) -> ColumnValue {
        // Present: the context was made for a `Statement`, which supplies it.
        Statement.column(of: context.columnSource.unsafelyUnwrapped, at: index)
    }
}
