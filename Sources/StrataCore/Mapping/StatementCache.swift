/// The statements a batch compiled, by SQL text, so each runs prepared for every value that needs it; and the
/// row shape and INSERT text it worked out, so each is worked out once.
package final class StatementCache {
    private var statements: [String: any PreparedStatement] = [:]
    private var lastShape: RowShape?
    private var inserts: [String: (String, Bool)] = [:]
    // The last INSERT and statement asked for: a batch's values mostly name the same columns, and comparing with the
    // last costs less per row than building and hashing a key.
    private var lastInsert: (kept: [Int], conflict: String, made: (String, Bool))?
    private var lastStatement: (sql: String, statement: any PreparedStatement)?

    package init() {}

    package func shape(for properties: [String], make: ([String]) -> RowShape) -> RowShape {
        if let lastShape, lastShape.properties == properties { return lastShape }
        let shape = make(properties)
        lastShape = shape
        return shape
    }

    package func insert(kept: [Int], conflict: String, make: () -> (String, Bool)) -> (String, Bool) {
        if let lastInsert, lastInsert.kept == kept, lastInsert.conflict == conflict { return lastInsert.made }
        let key = kept.map(String.init).joined(separator: ",") + "|" + conflict
        let made = inserts[key] ?? make()
        inserts[key] = made
        lastInsert = (kept, conflict, made)
        return made
    }

    package func statement(_ sql: String, compile: () throws -> any PreparedStatement) throws -> any PreparedStatement {
        if let lastStatement, lastStatement.sql == sql { return lastStatement.statement }
        let statement = try statements[sql] ?? compile()
        statements[sql] = statement
        lastStatement = (sql, statement)
        return statement
    }
}
