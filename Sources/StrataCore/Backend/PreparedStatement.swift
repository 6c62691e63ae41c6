/// One compiled statement of a backend, run many times: what seeds, the mapper and the runner bind, step and read.
///
/// Parameters are 1-based, columns 0-based. The typed binds never fail on their own; a failed bind is reported by
/// the next `run()` or `step()`, so a loop binding millions of fields checks once per row.
public protocol PreparedStatement: AnyObject {
    /// The SQL text of this one statement.
    var sql: String { get }
    /// The result's column names and their case-insensitive index.
    var layout: RowLayout { get }

    /// Binds all parameters at once; checks count and names before anything runs.
    func bind(_ arguments: StatementArguments) throws
    /// Binds one value; fails for a value the database cannot hold unchanged.
    func bind(_ value: DatabaseValue, at index: Int32) throws
    /// Binds NULL to the 1-based parameter `index`.
    func bindNull(at index: Int32)
    /// Binds an integer to the 1-based parameter `index`.
    func bind(int64 value: Int64, at index: Int32)
    /// Binds a floating-point number to the 1-based parameter `index`.
    func bind(double value: Double, at index: Int32)
    /// Binds UTF-8 text; without `copying`, the bytes must stay valid until the statement has run.
    func bind(text bytes: UnsafeBufferPointer<UInt8>, at index: Int32, copying: Bool)
    /// Binds bytes to the 1-based parameter `index`; the bytes are copied.
    func bind(blob bytes: UnsafeBufferPointer<UInt8>, at index: Int32)

    /// Runs the statement once with its current bindings and resets it, keeping the bindings.
    func run() throws
    /// Runs a statement about to be read, unless it has run since it was bound, so that `layout` is its result's;
    /// the next `step()` reads the first row. Where a statement describes its result before it runs (SQLite), nothing.
    func start() throws
    /// Advances one row; true while a row is available.
    func step() throws -> Bool
    /// Ends reading: the statement can be bound and run again.
    func reset()

    /// A column of the current row, its storage class and value read at once: the mapper's per-field read.
    func column(at index: Int32) -> ColumnValue
    /// A column of the current row as a value.
    func value(at index: Int32) -> DatabaseValue
}

extension PreparedStatement {
    /// Does nothing: a backend that runs the statement before the first step has no work to do here.
    public func start() throws {}
}

/// One column of a statement's current row, borrowed: text and blob bytes stay valid only until the statement
/// steps, resets or is finalized. What the mapper reads each field through, with one call into the backend.
@frozen
public enum ColumnValue {
    /// SQL NULL.
    case null
    /// A 64-bit integer.
    case integer(Int64)
    /// A double-precision floating-point number.
    case real(Double)
    /// UTF-8 bytes.
    case text(UnsafeBufferPointer<UInt8>)
    /// Bytes.
    case blob(UnsafeBufferPointer<UInt8>)

    /// The value's storage class.
    @inlinable public var storageClass: StorageClass {
        switch self {
        case .null: .null
        case .integer: .integer
        case .real: .real
        case .text: .text
        case .blob: .blob
        }
    }
}
