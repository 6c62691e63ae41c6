#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Every row of a statement's result, read into memory and read again through the statement protocol.
///
/// The mapper reads a type with relationships this way: the children of all the rows are loaded with one query
/// per relationship before the first row is decoded, which needs every row's key first, and the connection must
/// be free to run those queries (PostgreSQL reads one result at a time).
final class BufferedStatement: PreparedStatement {
    let sql: String
    let layout: RowLayout
    private let width: Int
    private var cells: [Cell] = []
    /// Text and blob bytes of every row, at a fixed address for the statement's life: `column(at:)` lends them.
    private let bytes: UnsafeMutableBufferPointer<UInt8>
    private(set) var rowCount = 0
    /// 0-based index of the current row; -1 before the first step.
    private(set) var current = -1

    private enum Cell {
        case null
        case integer(Int64)
        case real(Double)
        case text(Int, Int)
        case blob(Int, Int)
    }

    /// Reads every remaining row of `statement`, then resets it.
    init(reading statement: any PreparedStatement) throws {
        sql = statement.sql
        layout = statement.layout
        width = layout.names.count
        var stored: [UInt8] = []
        defer { statement.reset() }
        while try statement.step() {
            rowCount += 1
            for index in 0..<width {
                switch statement.column(at: Int32(index)) {
                case .null: cells.append(.null)
                case .integer(let value): cells.append(.integer(value))
                case .real(let value): cells.append(.real(value))
                case .text(let text):
                    cells.append(.text(stored.count, text.count))
                    stored.append(contentsOf: text)
                case .blob(let blob):
                    cells.append(.blob(stored.count, blob.count))
                    stored.append(contentsOf: blob)
                }
            }
        }
        bytes = .allocate(capacity: max(stored.count, 1))
        _ = bytes.initialize(from: stored)
    }

    deinit { bytes.deallocate() }

    /// A column's value in any row, by 0-based row index.
    func value(row: Int, column: Int) -> DatabaseValue {
        guard row >= 0, row < rowCount, column >= 0, column < width else { return .null }
        return Self.value(of: borrowed(cells[row * width + column]))
    }

    private func borrowed(_ cell: Cell) -> ColumnValue {
        switch cell {
        case .null: .null
        case .integer(let value): .integer(value)
        case .real(let value): .real(value)
        case .text(let start, let count): .text(UnsafeBufferPointer(rebasing: bytes[start..<start + count]))
        case .blob(let start, let count): .blob(UnsafeBufferPointer(rebasing: bytes[start..<start + count]))
        }
    }

    private static func value(of column: ColumnValue) -> DatabaseValue {
        switch column {
        case .null: .null
        case .integer(let value): .integer(value)
        case .real(let value): .real(value)
        case .text(let text): .text(String(decoding: text, as: UTF8.self))
        case .blob(let blob): .blob(Data(blob))
        }
    }

    func bind(_ arguments: StatementArguments) throws { try refuseBinding() }
    func bind(_ value: DatabaseValue, at index: Int32) throws { try refuseBinding() }
    func bindNull(at index: Int32) {}
    func bind(int64 value: Int64, at index: Int32) {}
    func bind(double value: Double, at index: Int32) {}
    func bind(text bytes: UnsafeBufferPointer<UInt8>, at index: Int32, copying: Bool) {}
    func bind(blob bytes: UnsafeBufferPointer<UInt8>, at index: Int32) {}

    private func refuseBinding() throws {
        throw DatabaseError(kind: .misuse, message: "rows read into memory take no parameters", sql: sql)
    }

    func run() throws { current = rowCount }

    func step() throws -> Bool {
        guard current < rowCount else { return false }
        current += 1
        return current < rowCount
    }

    func reset() { current = -1 }

    func column(at index: Int32) -> ColumnValue {
        guard current >= 0, current < rowCount, index >= 0, Int(index) < width else { return .null }
        return borrowed(cells[current * width + Int(index)])
    }

    func value(at index: Int32) -> DatabaseValue {
        Self.value(of: column(at: index))
    }
}
