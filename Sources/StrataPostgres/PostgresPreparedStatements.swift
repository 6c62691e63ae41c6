import CLibPQ
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import StrataCore

/// The server-side prepared statements of one session, by SQL text.
///
/// A SQL text run a second time on a session (by the same statement object, such as a batch's insert, or by
/// another, such as a program's repeated query) is prepared and described once, then executed by name: parsed and
/// planned once, and its result asked for in binary when every column has a binary reading (`PostgresBinary`). As
/// pgJDBC does after its prepare threshold. Bounded: past `capacity` statements, new SQL runs unprepared.
struct PostgresPreparedStatements {
    struct Entry {
        let name: String
        /// The parameter types it was prepared with: a run binding other types runs unprepared, as it would have.
        let parameterTypes: [Oid]
        /// Whether every result column has a binary reading.
        let binaryResult: Bool
        /// Whether a result column is a date or timestamp, whose binary reading is the text of a UTC, ISO session.
        let readsDates: Bool
    }

    private var entries: [String: Entry] = [:]
    /// SQL texts run once on the session, unprepared; forgotten in bulk past `capacity * 4`.
    private var seen: Set<String> = []
    private var count = 0
    static let capacity = 256

    func entry(for sql: String) -> Entry? { entries[sql] }

    /// Notes a run of `sql`; true when it ran before on this session, so it is worth preparing.
    mutating func isRepeated(_ sql: String) -> Bool {
        if entries[sql] != nil { return true }
        if seen.contains(sql) { return entries.count < Self.capacity }
        if seen.count >= Self.capacity * 4 { seen.removeAll(keepingCapacity: true) }
        seen.insert(sql)
        return false
    }

    /// A name no statement of this session has had.
    mutating func newName() -> String {
        count += 1
        return "strata_\(count)"
    }

    mutating func add(_ entry: Entry, for sql: String) { entries[sql] = entry }

    mutating func forget(_ sql: String) { entries[sql] = nil }

    /// After `DISCARD ALL`, `DEALLOCATE` or a session reset: the server has dropped them.
    mutating func forgetAll() { entries.removeAll() }

    /// Whether a statement's command tag, or (for several statements run at once, of which libpq returns the last
    /// result) its text, may have deallocated the session's prepared statements. A function that deallocates them
    /// is caught when a name is then missing (`PostgresConnection.runPrepared`).
    static func mayDeallocate(tag: String, sql: String, severalStatements: Bool) -> Bool {
        if tag.hasPrefix("DEALLOCATE") || tag == "DISCARD ALL" { return true }
        guard severalStatements else { return false }
        let upper = sql.uppercased()
        return upper.contains("DEALLOCATE") || upper.contains("DISCARD")
    }
}

extension PostgresConnection {
    /// Runs a statement that ran before on this session as a prepared statement (`PostgresPreparedStatements`),
    /// preparing and describing it first if it is not yet. A name the server no longer knows (deallocated by a
    /// function Strata could not see) or whose result type changed since it was prepared (a table altered: the server
    /// refuses, SQLSTATE 0A000) is forgotten; outside a transaction block, where the failed run did nothing, the
    /// statement is prepared and run again at once; inside one the error stands, since the server has aborted that
    /// transaction.
    func runPrepared(_ sql: String, _ parameters: PostgresParameters) throws -> PostgresResult {
        try confirmTransactionOpen(sql: sql)
        guard let entry = try preparedEntry(sql, parameters) else { return try run(sql, parameters) }
        var result = executePrepared(entry, parameters)
        if Self.isStalePreparedStatement(result) {
            prepared.forget(sql)
            if transactionStatus == PQTRANS_IDLE, let fresh = try preparedEntry(sql, parameters) {
                result = executePrepared(fresh, parameters)
            }
        }
        try check(result, sql: sql)
        try confirmTransactionKept(result, sql: sql)
        noteDeallocation(result, sql: sql, severalStatements: false)
        changes = result.changes
        return result
    }

    private func executePrepared(_ entry: PostgresPreparedStatements.Entry, _ parameters: PostgresParameters) -> PostgresResult {
        // Binary timestamps and dates are printed as a UTC, ISO session prints them; a session a body set to another
        // zone or style reads them as text, as the server prints them there.
        let binary: Int32 = entry.binaryResult && (!entry.readsDates || sessionPrintsDatesAsStrata) ? 1 : 0
        return parameters.withPointers { count, _, values, lengths, formats in
            PostgresResult(PQexecPrepared(handle, entry.name, count, values, lengths, formats, binary))
        }
    }

    /// The entry for `sql`, prepared and described now if needed; nil when it was prepared with other parameter types.
    private func preparedEntry(_ sql: String, _ parameters: PostgresParameters) throws -> PostgresPreparedStatements.Entry? {
        if let entry = prepared.entry(for: sql) {
            return entry.parameterTypes == parameters.types ? entry : nil
        }
        let name = prepared.newName()
        let preparation = parameters.withPointers { count, types, _, _, _ in
            PostgresResult(PQprepare(handle, name, sql, count, types))
        }
        try check(preparation, sql: sql)
        let description = PostgresResult(PQdescribePrepared(handle, name))
        try check(description, sql: sql)
        let columns = description.handle.map { handle in (0..<PQnfields(handle)).map { PQftype(handle, $0) } } ?? []
        let entry = PostgresPreparedStatements.Entry(name: name, parameterTypes: parameters.types,
                                                     binaryResult: !columns.isEmpty && columns.allSatisfy(PostgresBinary.isReadable),
                                                     readsDates: columns.contains { [PostgresType.date, PostgresType.timestamp, PostgresType.timestamptz].contains($0) })
        prepared.add(entry, for: sql)
        return entry
    }

    /// Whether the session prints dates and timestamps as every Strata session does (UTC, ISO), as the server reports
    /// its settings to libpq.
    private var sessionPrintsDatesAsStrata: Bool {
        guard let zone = PQparameterStatus(handle, "TimeZone"), let style = PQparameterStatus(handle, "DateStyle") else { return false }
        return strcmp(zone, "UTC") == 0 && strncmp(style, "ISO,", 4) == 0
    }

    /// "prepared statement … does not exist" (26000), or "cached plan must not change result type" (0A000).
    private static func isStalePreparedStatement(_ result: PostgresResult) -> Bool {
        guard let code = PQresultErrorField(result.handle, Int32(UInt8(ascii: "C"))) else { return false }
        switch String(cString: code) {
        case "26000": return true
        case "0A000":
            let message = PQresultErrorField(result.handle, Int32(UInt8(ascii: "M"))).map { String(cString: $0) } ?? ""
            return message.contains("cached plan must not change result type")
        default: return false
        }
    }

    /// Forgets the session's prepared statements after a statement that may have deallocated them.
    func noteDeallocation(_ result: PostgresResult, sql: String, severalStatements: Bool) {
        let tag = PQcmdStatus(result.handle).map { String(cString: $0) } ?? ""
        if PostgresPreparedStatements.mayDeallocate(tag: tag, sql: sql, severalStatements: severalStatements) {
            prepared.forgetAll()
        }
    }
}
