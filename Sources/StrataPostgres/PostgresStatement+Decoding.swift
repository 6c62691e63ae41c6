import StrataCore

/// Rows of a PostgreSQL statement decode through a `RowContainer` that reads each field from the statement's
/// `PostgresResultCursor`, instead of a dynamic call through `PreparedStatement`.
extension PostgresStatement: RowDecodingStatement {
    package var columnSource: OpaquePointer { OpaquePointer(cursor) }

    package func rowContainer<Key: CodingKey>(context: DecodingContext, keyedBy type: Key.Type) -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(RowContainer<Key, PostgresColumns>(context: context))
    }
}

/// Reads a column of the result a decoding context's statement is on.
enum PostgresColumns: ColumnSource {
    @inline(__always) static func column(in context: DecodingContext, at index: Int32) -> ColumnValue {
        // Present: the context was made for a `PostgresStatement`, which supplies it.
        PostgresResultCursor.column(of: UnsafeMutablePointer(context.columnSource.unsafelyUnwrapped), at: index)
    }
}
