import StrataCore

/// A lazy cursor over the rows of a query: each `next()` steps the statement once.
public final class RowCursor {
    let statement: Statement
    private var finished = false

    init(statement: Statement) {
        self.statement = statement
    }

    deinit { statement.reset() }

    /// The column names, in result order.
    public var columnNames: [String] { statement.layout.names }

    /// The next row, or nil after the last one.
    public func next() throws -> Row? {
        guard !finished else { return nil }
        do {
            guard try statement.step() else {
                finish()
                return nil
            }
        } catch {
            finish()
            throw error
        }
        return statement.currentRow()
    }

    /// All remaining rows.
    public func all() throws -> [Row] {
        var rows: [Row] = []
        while let row = try next() { rows.append(row) }
        return rows
    }

    /// Calls `body` for each remaining row.
    public func forEach(_ body: (Row) throws -> Void) throws {
        while let row = try next() { try body(row) }
    }

    private func finish() {
        finished = true
        statement.reset()
    }
}
