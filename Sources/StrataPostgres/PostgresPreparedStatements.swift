import CLibPQ
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import StrataCore

/// The server-side prepared statements of one session, by SQL text, and which SQL texts read in binary.
///
/// A statement object run a second time (a batch's insert) runs as a prepared statement, prepared and described once:
/// parsed and planned once for the batch, not per row, its result in binary when every column has a binary reading.
/// Any other run is parsed anew; its result comes in binary when an earlier text run of the same SQL on the session
/// was a `SELECT` whose columns all have a binary reading (`learn(from:sql:)`).
struct PostgresPreparedStatements {
    /// The most parameters a statement may have to be prepared. Describing a prepared statement brings its
    /// parameter types in one message of 6 + 4 per parameter bytes, and libpq (through at least 15) takes such a
    /// message longer than 30,000 bytes for lost synchronization and drops the connection; a statement with more
    /// runs unprepared, which needs no description.
    static let maximumParameters = 7_498

    struct Entry {
        let name: String
        /// The parameter types it was prepared with: a run binding other types runs unprepared, as it would have.
        let parameterTypes: [Oid]
        let reading: BinaryReading?
    }

    /// What a result read in binary holds that the session's settings decide the text of.
    struct BinaryReading {
        /// A date or timestamp, whose binary reading is the text of a UTC, ISO session.
        let readsDates: Bool
        /// A `double precision`, whose text is exact only while `extra_float_digits` is above 0.
        let readsFloats: Bool

        /// A result that may hold any type.
        static let everything = BinaryReading(readsDates: true, readsFloats: true)

        private init(readsDates: Bool, readsFloats: Bool) {
            self.readsDates = readsDates
            self.readsFloats = readsFloats
        }

        /// Nil unless every column of `types` has a binary reading.
        init?(_ types: [Oid]) {
            guard !types.isEmpty, types.allSatisfy(PostgresBinary.isReadable) else { return nil }
            readsDates = types.contains { [PostgresType.date, PostgresType.timestamp, PostgresType.timestamptz].contains($0) }
            readsFloats = types.contains(PostgresType.float8)
        }
    }

    private var entries: [String: Entry] = [:]
    /// SQL texts whose last text run was a `SELECT` with every column readable in binary.
    private var readableInBinary: Set<String> = []
    private var count = 0
    /// Set apart from names a program prepares itself.
    private let prefix = "strata_\(UInt32.random(in: 0...UInt32.max))_"
    static let capacity = 256

    func entry(for sql: String) -> Entry? { entries[sql] }

    /// A name no statement of this session has had.
    mutating func newName() -> String {
        count += 1
        let name = prefix + String(count)
        namesOfTransaction.append(name)
        return name
    }

    /// The statements prepared in the open transaction, kept or not: deallocated when it ends.
    private var namesOfTransaction: [String] = []

    /// `DEALLOCATE` of every statement prepared in the open transaction, as one text ("" when there are none).
    func deallocationOfTransaction() -> String {
        namesOfTransaction.map { "DEALLOCATE " + quoteIdentifier($0) }.joined(separator: "; ")
    }

    /// Keeps a prepared statement; past `capacity` a new one is not kept (and is prepared again when next needed).
    mutating func add(_ entry: Entry, for sql: String) {
        if entries.count < Self.capacity { entries[sql] = entry }
    }

    mutating func forget(_ sql: String) { entries[sql] = nil }

    /// After `DISCARD ALL`, `DEALLOCATE` or a session reset (the server has dropped them), and, through a connection
    /// pooler, when a transaction begins or ends: a statement is then prepared and run inside one transaction only,
    /// since a pooler in transaction mode may run the next on another server session (where the name is missing).
    mutating func forgetAll() {
        entries.removeAll()
        namesOfTransaction.removeAll()
    }

    /// Notes from a text run's result whether its SQL may read in binary from now on: a `SELECT` (run again, it has
    /// no effect a retry in text would repeat) whose columns all have a binary reading.
    mutating func learn(from result: PostgresResult, sql: String) {
        guard let handle = result.handle, PQfformat(handle, 0) == 0,
              let tag = PQcmdStatus(handle), strncmp(tag, "SELECT ", 7) == 0 else { return }
        guard BinaryReading((0..<PQnfields(handle)).map { PQftype(handle, $0) }) != nil else {
            readableInBinary.remove(sql)
            return
        }
        if readableInBinary.count >= Self.capacity * 4 { readableInBinary.removeAll(keepingCapacity: true) }
        readableInBinary.insert(sql)
    }

    mutating func forgetBinary(_ sql: String) { readableInBinary.remove(sql) }

    /// Whether a run of `sql` asks for its result in binary: learned so, and the session prints what it holds as
    /// every Strata session does.
    func readsInBinary(_ sql: String, connection: PostgresConnection) -> Bool {
        // What was learned may be stale (a date or double column added since), so the session must print every
        // type as Strata's sessions do, not only the ones learned.
        readableInBinary.contains(sql) && connection.printsAsStrata(.everything)
    }

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
        // Through a pooler, outside a transaction, preparing and running are two round trips it may send to two server
        // sessions.
        guard !reachesServerThroughPooler || transactionStatus == PQTRANS_INTRANS, let entry = try preparedEntry(sql, parameters) else { return try run(sql, parameters) }
        var result = executePrepared(entry, parameters)
        if Self.isStalePreparedStatement(result) {
            prepared.forget(sql)
            if transactionStatus == PQTRANS_IDLE, let fresh = try preparedEntry(sql, parameters) {
                result = executePrepared(fresh, parameters)
            }
        }
        try check(result, sql: sql)
        try confirmTransactionKept(result, sql: sql)
        noteSessionChanges(result, sql: sql, severalStatements: false)
        changes = result.changes
        return result
    }

    private func executePrepared(_ entry: PostgresPreparedStatements.Entry, _ parameters: PostgresParameters) -> PostgresResult {
        // Binary timestamps and dates are printed as a UTC, ISO session prints them; a session a body set to another
        // zone or style reads them as text, as the server prints them there.
        let binary: Int32 = entry.reading.map(printsAsStrata) == true ? 1 : 0
        return parameters.withPointers { count, _, values, lengths, formats in
            PostgresResult(PQexecPrepared(handle, entry.name, count, values, lengths, formats, binary))
        }
    }

    /// The entry for `sql`, prepared and described now if needed; nil when it was prepared with other parameter types,
    /// or has too many parameters to be described.
    private func preparedEntry(_ sql: String, _ parameters: PostgresParameters) throws -> PostgresPreparedStatements.Entry? {
        guard parameters.count <= PostgresPreparedStatements.maximumParameters else { return nil }
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
                                                     reading: PostgresPreparedStatements.BinaryReading(columns))
        prepared.add(entry, for: sql)
        return entry
    }

    /// Whether the session prints what a binary result holds as every Strata session does: dates in UTC and ISO (as
    /// the server reports its settings to libpq), doubles exactly (`extra_float_digits` above 0).
    func printsAsStrata(_ reading: PostgresPreparedStatements.BinaryReading) -> Bool {
        if reading.readsFloats && !floatTextIsExact { return false }
        guard reading.readsDates else { return true }
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

    /// Forgets the session's prepared statements after a statement that may have deallocated them, and reads
    /// `extra_float_digits` again after one that may have changed it (the server does not report it to libpq).
    func noteSessionChanges(_ result: PostgresResult, sql: String, severalStatements: Bool) {
        let tag = PQcmdStatus(result.handle).map { String(cString: $0) } ?? ""
        if PostgresPreparedStatements.mayDeallocate(tag: tag, sql: sql, severalStatements: severalStatements) {
            prepared.forgetAll()
        }
        // Not reported to libpq, and a SET LOCAL or a rolled-back SET changes it back later without a word: once a
        // statement may have changed it, doubles read as text on this session (until a session reset sets it again).
        if tag == "RESET" || tag == "DISCARD ALL" || Self.mentionsFloatDigits(sql) {
            floatTextIsExact = false
        }
    }

    /// Whether `sql` names `extra_float_digits`, in any case. Runs after every statement (each row of a batch), so it
    /// reads the text's bytes in place rather than copying them.
    private static func mentionsFloatDigits(_ sql: String) -> Bool {
        let needle: StaticString = "extra_float_digits"
        let length = needle.utf8CodeUnitCount
        var sql = sql
        return sql.withUTF8 { bytes in
            guard bytes.count >= length else { return false }
            let target = UnsafeBufferPointer(start: needle.utf8Start, count: length)
            for start in 0...(bytes.count - length) where bytes[start] | 0x20 == target[0] {
                if (0..<length).allSatisfy({ bytes[start + $0] | 0x20 == target[$0] || (target[$0] == UInt8(ascii: "_") && bytes[start + $0] == target[$0]) }) {
                    return true
                }
            }
            return false
        }
    }
}
