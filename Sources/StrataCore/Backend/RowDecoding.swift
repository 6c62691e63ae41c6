#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How a backend reads a column of the current row for the mapper: a static function, so each field costs a
/// direct read of the backend's handle (`DecodingContext.columnSource`), not a call through the statement object
/// (which costs a dynamic dispatch and a retain and release per field).
package protocol ColumnSource {
    static func column(in context: DecodingContext, at index: Int32) -> ColumnValue
}

/// A statement whose backend supplies the keyed container its rows decode through: a `RowContainer` over the
/// backend's `ColumnSource`.
package protocol RowDecodingStatement: PreparedStatement {
    /// The handle the backend's `ColumnSource` reads columns through (`DecodingContext.columnSource`).
    var columnSource: OpaquePointer { get }
    func rowContainer<Key: CodingKey>(context: DecodingContext, keyedBy type: Key.Type) -> KeyedDecodingContainer<Key>
}
