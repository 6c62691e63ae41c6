import CLibPQ
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataCore

/// The runner on PostgreSQL. Each step runs in its own transaction with its history row (PostgreSQL's DDL is
/// transactional), and deployers serialise on a transaction-level advisory lock taken first in that transaction:
/// polled with `pg_try_advisory_xact_lock` in short transactions that hold nothing while they wait (so another's
/// `CREATE INDEX CONCURRENTLY` never waits for a waiting deployer), and released by the step's own COMMIT or ROLLBACK,
/// so no lock outlives its transaction on a server session a pooler shares, and a file cannot release it
/// (`pg_advisory_unlock_all()` releases session locks only). `transaction="none"` steps are claimed with their own
/// advisory locks (`PostgresStepLocks`). After each migration the session is reset (`PostgresSessionReset`), so
/// `SET search_path` and the like in one file do not reach the next.
extension PostgresConnection: MigrationDatabase {
    /// The history table, `strata_history`, in the manifest's schema or `search_path`'s first.
    public var history: any HistoryStorage { PostgresHistory(connection: self) }

    /// Step locks taken with advisory locks.
    public var stepLocks: any StepLocking { PostgresStepLocks(connection: self) }

    /// Runs `body` in a transaction holding the runner's advisory lock, so one runner writes at a time.
    public func withWriteLock<T>(_ body: () throws -> T) throws -> T {
        // A rehearsal holds the deployers' lock and one transaction for the whole plan: each step is a savepoint,
        // ended as the step's commit would end it (`checkDeferredAsCommitWould`).
        if isRehearsing {
            return try withSavepoint {
                let result = try body()
                try checkDeferredAsCommitWould()
                return result
            }
        }
        guard !isInTransaction else {
            throw DatabaseError(kind: .misuse, code: nil, message: "a transaction is already open; use withSavepoint to nest")
        }
        try beginHoldingDeployLock()
        defer {
            holdsDeployLock = false
            forgetStatementTimeout(transactionEnded: true)
        }
        let value: T
        do {
            value = try owningTransaction("withTransaction", body)
            // Through a pooler, what the file set for the session (`SET search_path`, `SET ROLE`, a cursor, a listener)
            // is undone in its own transaction: after the COMMIT the pooler may hand this server session to the
            // application, before the reset after the step could reach it.
            if reachesServerThroughPooler { try resetSessionInTransaction() }
        } catch {
            rollBack()
            throw error
        }
        try commit()
        return value
    }

    /// Through a connection pooler: puts back what a step's file set for the session, inside the step's transaction
    /// (so it commits with the step on the server session that ran it), and Strata's own settings after it.
    func resetSessionInTransaction() throws {
        guard transactionStatus == PQTRANS_INTRANS else { return }
        // Also what outlives a transaction on the server session: temporary tables, prepared statements, session
        // advisory locks (Strata holds none on a pooled connection: its deployers' lock is the transaction's).
        try executeSimple("SET SESSION AUTHORIZATION DEFAULT; RESET ALL; CLOSE ALL; UNLISTEN *; DISCARD TEMP; DEALLOCATE ALL; SELECT pg_catalog.pg_advisory_unlock_all(); " + localSettings)
        prepared.forgetAll()
        floatTextIsExact = true
    }

    /// Opens the step's transaction holding the deployers' lock, polling until `lockTimeout`; the error names the
    /// session holding it.
    func beginHoldingDeployLock() throws {
        let deadline = ContinuousClock.now + lockTimeout
        var pause = Duration.milliseconds(10)
        while true {
            try begin("BEGIN")
            let taken: Bool
            do {
                taken = try takeDeployLockOnce()
            } catch {
                rollBack()
                throw error
            }
            if taken { return }
            rollBack()
            guard ContinuousClock.now < deadline else {
                throw DatabaseError(kind: .busy, code: nil, message: "another deployer held Strata's lock on \(name) for longer than \(lockTimeout)\(try deployLockHolder())")
            }
            sleepBlocking(for: pause)
            pause = min(pause * 2, .milliseconds(200))
        }
    }

    /// In a rehearsal's open transaction: takes the deployers' lock for the rest of it, polling until `lockTimeout`
    /// (a transaction in READ COMMITTED holds no snapshot between its statements while it waits).
    func acquireDeployLockInTransaction() throws {
        let deadline = ContinuousClock.now + lockTimeout
        var pause = Duration.milliseconds(10)
        while try !takeDeployLockOnce() {
            guard ContinuousClock.now < deadline else {
                throw DatabaseError(kind: .busy, code: nil, message: "another deployer held Strata's lock on \(name) for longer than \(lockTimeout)\(try deployLockHolder())")
            }
            sleepBlocking(for: pause)
            pause = min(pause * 2, .milliseconds(200))
        }
    }

    /// One try for the deployers' lock in the open transaction, noting the server session that took it.
    private func takeDeployLockOnce() throws -> Bool {
        let row = try rows("SELECT pg_try_advisory_xact_lock($1::int4, $2::int4) AS taken, pg_catalog.pg_backend_pid()::int8 AS pid",
                           [PostgresLocks.namespace, PostgresLocks.deploy]).first
        guard let row, try row.get("taken", as: Bool.self) else { return false }
        holdsDeployLock = true
        deployLockSession = try row.get("pid", as: Int64?.self)
        return true
    }

    /// The deployers' lock ends with the transaction that holds it; this only notes that it is gone.
    func releaseDeployLock() {
        holdsDeployLock = false
    }

    /// In a rehearsal, what the step's own COMMIT does in `migrate` with deferred constraints and constraint
    /// triggers: they fire now (`SET CONSTRAINTS ALL IMMEDIATE`), so a violation fails the step as at its COMMIT
    /// and what a deferred trigger writes is the step's and there for the next. No `SET CONSTRAINTS` can give a
    /// transaction back the modes a new one starts with, so from here on every constraint is checked at once: a
    /// later step passes only what `migrate` would pass too, and one failing on a constraint may be failing only
    /// for that (`PostgresRehearsalStage.stoppedByStage` says so).
    func checkDeferredAsCommitWould() throws {
        do {
            try executeSimple("SET CONSTRAINTS ALL IMMEDIATE")
        } catch let error as DatabaseError {
            // Reported as migrate reports it: the step's COMMIT failed. The step's own savepoint is rolled back.
            throw error.from(sql: "COMMIT TRANSACTION")
        }
    }

    /// Refuses to record a step whose transaction no longer holds the deployers' lock. A file cannot release a
    /// transaction-level lock, so this means the transaction is not the one that took it: the server session changed
    /// under the step (a connection pooler hands each transaction a server session of its choosing), or the
    /// transaction was ended. Called by the history's writes inside `withWriteLock`, so the step is rolled back.
    func confirmDeployLockHeld() throws {
        let row = try rows("""
            SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_locks
                           WHERE \(PostgresLocks.grantedCondition()) AND pid = pg_catalog.pg_backend_pid()) AS held,
                   pg_catalog.pg_backend_pid()::int8 AS pid
            """, [PostgresLocks.namespace, PostgresLocks.deploy]).first
        guard (try? row?.get("held", as: Bool.self)) != true else { return }
        holdsDeployLock = false
        let now: Int64? = (try? row?.get("pid", as: Int64?.self)) ?? nil
        var sessions = ""
        if let taken = deployLockSession, let now {
            sessions = now == taken ? " (server process \(taken))" : " (server process \(taken) took it, \(now) runs the step)"
        }
        throw DatabaseError(kind: .misuse, code: nil, message: "Strata's deployers' lock, taken in this step's transaction, is no longer held by the server session writing its history row\(sessions): the session or the transaction changed under the step (a connection pooler between transactions, or a statement that ended the transaction), so another deployer could be running it at the same time; it was rolled back. Nothing a file runs can release this lock")
    }

    /// ": held by process N (application A, running for S s)", or nothing when it cannot be told.
    private func deployLockHolder() throws -> String {
        let rows = try rows("""
            SELECT a.pid, a.application_name, round(extract(epoch FROM now() - a.backend_start))::int8 AS seconds
            FROM pg_catalog.pg_locks l JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
            WHERE \(PostgresLocks.grantedCondition("l"))
            """, [PostgresLocks.namespace, PostgresLocks.deploy])
        guard let row = rows.first, let pid: Int64 = try row.get("pid") else { return "" }
        let application: String = (try row.get("application_name", as: String?.self)) ?? ""
        let seconds: Int64 = (try row.get("seconds", as: Int64?.self)) ?? 0
        return ": held by server process \(pid)\(application.isEmpty ? "" : " (\(application))"), connected for \(seconds) s"
    }

    /// Runs a migration file's statements, read a chunk at a time, inside the step's transaction or without one.
    public func runScript(contentsOfFile path: String, insideTransaction: Bool,
                          progress: ((_ bytesRead: Int, _ totalBytes: Int) -> Void)?,
                          observe: (UnsafeBufferPointer<UInt8>) -> Void, afterEach: (() -> Void)?) throws {
        try withoutActuallyEscaping(observe) { observe in
            var script = try PostgresScript(path: path)
            script.onRead = observe
            script.onProgress = progress
            try run(&script, afterEach: afterEach)
        }
    }

    /// Runs SQL text whose first line is the file's `startLine`, for a section of a file.
    public func runScript(_ bytes: [UInt8], startLine: Int, insideTransaction: Bool, afterEach: (() -> Void)?) throws {
        // Inside a transaction Strata opened for a body (a pool's `write`), a script may not end it either.
        if transactionOwner != nil { try confirmTransactionOpen(sql: String(decoding: bytes, as: UTF8.self)) }
        var script = PostgresScript(bytes: bytes, startLine: startLine)
        try run(&script, afterEach: afterEach)
    }

    /// Runs each piece of a script: statements one at a time, `COPY … FROM stdin` with the data that follows it,
    /// and the two meta-commands `pg_dump` writes (`\restrict`, `\unrestrict`), which need nothing from a runner.
    private func run(_ script: inout PostgresScript, afterEach: (() -> Void)?) throws {
        while let piece = try script.next() {
            switch piece {
            case .statement(let statement):
                rehearsalStatementWatch?(statement)
                let result = executeWatchingLocks(statement.sql)
                try check(result, statement)
                try confirmSessionReadsFileAsSent(statement)
            case .copy(let statement, _):
                rehearsalStatementWatch?(statement)
                try copy(statement, from: &script)
            case .metaCommand(let command):
                guard command.name == "restrict" || command.name == "unrestrict" else {
                    throw DatabaseError(kind: .syntax, code: nil,
                                        message: "psql meta-command \\\(command.name) is not SQL; Strata runs files with libpq, not psql — remove it",
                                        line: command.line, column: command.column)
                }
            }
            afterEach?()
        }
    }

    /// Stops a file that changed how the server reads what Strata sends (by `set_config` or an `UPDATE pg_settings`,
    /// which the lint cannot see; it refuses `SET`): `standard_conforming_strings` off, under which the server reads
    /// backslashes in `'…'` as escapes while the splitter, like `pg_dump`'s output, reads them as characters; or a
    /// `client_encoding` other than UTF-8, the encoding of every file Strata runs. Either would store values other
    /// than written, Strata's history row included.
    private func confirmSessionReadsFileAsSent(_ statement: PostgresStatementText) throws {
        if let value = PQparameterStatus(handle, "standard_conforming_strings"), String(cString: value) != "on" {
            throw DatabaseError(kind: .syntax, code: nil,
                                message: "this statement turned standard_conforming_strings off; Strata reads every file with it on (a backslash in '…' is a plain character, as pg_dump writes them), so the rest would be read other than the server reads it. Leave the setting on and write escapes as E'…'",
                                line: statement.line, column: statement.column)
        }
        if let value = PQparameterStatus(handle, "client_encoding"), String(cString: value) != "UTF8" {
            throw DatabaseError(kind: .syntax, code: nil,
                                message: "this statement set client_encoding to \(String(cString: value)); Strata sends every file as UTF-8, so the server would read the rest, and Strata's history row, in another encoding. Remove it",
                                line: statement.line, column: statement.column)
        }
    }

    /// A statement's failure placed at the file line and column PostgreSQL's error position points to.
    private func check(_ result: PostgresResult, _ statement: PostgresStatementText) throws {
        do {
            try check(result, sql: statement.sql)
        } catch let error as DatabaseError where error.code?.value == "42601"
                    && error.message.contains("cannot insert multiple commands into a prepared statement") {
            throw error.with(message: "PostgreSQL found several statements where Strata's splitter found one, starting here; nothing of them ran. Strata splits files as psql does, and psql counts every word begin, case and end inside CREATE FUNCTION or CREATE PROCEDURE as opening or closing a block: a column or other name spelled begin, case or end in a BEGIN ATOMIC body makes it read past the body's END. Quote that name (\"begin\") or write the body as a string ($$…$$)")
                .at(line: statement.line, column: statement.column)
        } catch let error as DatabaseError {
            var line = statement.line
            var column = statement.column
            if let handle = result.handle, let position = PQresultErrorField(handle, Int32(UInt8(ascii: "P"))),
               let offset = Int(String(cString: position)) {
                (line, column) = statement.location(ofPosition: offset)
            }
            throw explainingWait(error.at(line: line, column: column))
        }
    }

    /// Streams a `COPY … FROM stdin` block's data lines to the server.
    private func copy(_ statement: PostgresStatementText, from script: inout PostgresScript) throws {
        let started = PostgresResult(PQexec(handle, statement.sql))
        guard PQresultStatus(started.handle) == PGRES_COPY_IN else {
            try check(started, statement)
            throw DatabaseError(kind: .syntax, code: nil, message: "COPY did not start reading data", sql: statement.sql,
                                line: statement.line, column: statement.column)
        }
        var failure: DatabaseError?
        while let chunk = try script.nextCopyData() {
            guard failure == nil else { continue }   // read to the end of the block so the script stays in step
            let sent = chunk.withUnsafeBufferPointer { bytes in
                bytes.baseAddress.map { base in
                    PQputCopyData(handle, UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self), Int32(bytes.count))
                } ?? 1
            }
            if sent != 1 { failure = connectionError(sql: statement.sql).at(line: statement.line, column: statement.column) }
        }
        if PQputCopyEnd(handle, failure == nil ? nil : "the script could not be sent") != 1, failure == nil {
            failure = connectionError(sql: statement.sql).at(line: statement.line, column: statement.column)
        }
        // The COPY's own result, then the end of results.
        var outcome: DatabaseError?
        while let next = PQgetResult(handle) {
            let result = PostgresResult(next)
            if outcome == nil, PQresultStatus(next) != PGRES_COMMAND_OK {
                outcome = error(of: result, sql: statement.sql).at(line: statement.line, column: statement.column)
            }
        }
        if let failure = failure ?? outcome { throw failure }
    }

    /// Seeds and their triggers cannot reach Strata's history on PostgreSQL other than by naming it, which the
    /// lint refuses in migrations; a seed's rows go only to its own table.
    public func withSeedRules<T>(_ body: () throws -> T) throws -> T {
        try body()
    }

    /// PostgreSQL always enforces foreign keys (and checks deferred ones at commit): there is no switch to set.
    public func withForeignKeys<T>(enforced: Bool, _ body: () throws -> T) throws -> T {
        try body()
    }

    /// No violations can be committed on PostgreSQL, so none are excused and none are found.
    public func foreignKeyBaseline(excusingCurrent: Bool) throws -> any ForeignKeyBaseline {
        EnforcedForeignKeys()
    }

    /// The session's settings, to reset after a migration.
    public func sessionSnapshot() throws -> any SessionSnapshot {
        PostgresSessionReset(connection: self)
    }

    /// Rolls back a transaction a failed step left open; returns whether there was one.
    public func rollBackOpenTransaction() -> Bool {
        guard isInTransaction else { return false }
        _ = try? executeSimple("ROLLBACK")
        return true
    }

    /// PostgreSQL has rolled back by the time a failed statement returns.
    public func finishRollback() throws {}

    /// INVALID indexes of tables in every user schema, leaving out those a `CREATE INDEX CONCURRENTLY` or `REINDEX`
    /// is building now (they are invalid until it finishes, and listed in `pg_stat_progress_create_index`) and
    /// those of partitioned tables (`CREATE INDEX … ON ONLY` is invalid by design until every partition's index is
    /// attached; no build was interrupted).
    public func unfinishedObjects() throws -> [UnfinishedObject] {
        try rows("""
            SELECT format('%I.%I', n.nspname, c.relname) AS name, format('%I.%I', tn.nspname, t.relname) AS "table",
                   c.relname ~ '_cc(new|old)[0-9]*$' AS reindex_copy
            FROM pg_catalog.pg_index i
            JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_catalog.pg_class t ON t.oid = i.indrelid JOIN pg_catalog.pg_namespace tn ON tn.oid = t.relnamespace
            WHERE NOT i.indisvalid AND c.relkind = 'i' AND n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%'
              AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_stat_progress_create_index p WHERE p.index_relid = i.indexrelid)
            ORDER BY 1
            """).map { row in
            let name: String = try row.get("name")
            // A `REINDEX … CONCURRENTLY` interrupted leaves its copy (`…_ccnew`, or the old index as `…_ccold`) beside
            // the index it was rebuilding, which is intact: the copy is only dropped; rebuilt, it would stay a duplicate.
            let copy: Bool = try row.get("reindex_copy")
            return UnfinishedObject(kind: "index", name: name, table: try row.get("table"),
                                    fixes: copy ? ["DROP INDEX CONCURRENTLY \(name)"]
                                        : ["DROP INDEX CONCURRENTLY \(name)", "REINDEX INDEX CONCURRENTLY \(name)"])
        }
    }

    /// Every other schema's `strata_history` and the checksums it records (those marked `deleted` left out).
    public func otherHistories() throws -> [OtherHistory] {
        // Every one, those this role may not read included: one skipped would be taken for none.
        let schemas = try rows("""
            SELECT pg_catalog.quote_ident(n.nspname) AS name,
                   pg_catalog.has_schema_privilege(n.oid, 'USAGE') AND pg_catalog.has_table_privilege(c.oid, 'SELECT') AS readable
            FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relname = 'strata_history' AND c.relkind IN ('r', 'p') AND n.nspname <> $1
              AND n.nspname NOT LIKE 'pg\\_temp%'
            ORDER BY 1
            """, [historySchema]).map { (name: try $0.get("name", as: String.self), readable: try $0.get("readable", as: Bool.self)) }
        // Names as the server quotes them: `public`, `"Deploy"`.
        return try schemas.map { (schema, readable) in
            guard readable else { return OtherHistory(location: "strata_history in schema \(schema)", checksums: nil) }
            var checksums: [String: String] = [:]
            for row in try rows("""
                SELECT kind || '/' || identity AS step, checksum_version || ':' || checksum AS checksum
                FROM \(schema).strata_history WHERE state <> 'deleted'
                """, .none) {
                checksums[try row.get("step")] = try row.get("checksum")
            }
            return OtherHistory(location: "strata_history in schema \(schema)", checksums: checksums)
        }
    }

    /// Through a connection pooler, a `transaction="none"` step runs only with a direct connection for its claim
    /// (`directURL`): the claim is a session lock that must be held, on one server session, for as long as the step
    /// runs and be released on that session, which a pooler does not promise (in transaction mode each transaction
    /// may get another session, and a lock left on one stays there for the application's next transaction), and a
    /// second pooled session would wait for a slot the deployers hold.
    /// A direct connection given is opened here, before anything runs (and kept for the claims), so one that is
    /// itself pooled, reaches another database or cannot be opened refuses the plan rather than fail the step.
    public func noneStepRefusal(id: String?) -> String? {
        guard directURL == nil else {
            if let open = claimSession, PQstatus(open.handle) == CONNECTION_OK { return nil }
            do {
                claimSession = try PostgresStepLocks.claimSession(for: self)
                return nil
            } catch {
                return (id.map { "\($0) is transaction=\"none\", and " } ?? "") + ((error as? DatabaseError)?.message ?? "\(error)") + "; nothing ran"
            }
        }
        guard reachesServerThroughPooler else { return nil }
        return "\(id.map { "\($0) is" } ?? "a step is") transaction=\"none\", and \(name) reaches the server through a connection pooler (the server's process id for the session is not the one the connection was given): the step's claim needs a server session of its own for as long as it runs, which a pooler does not keep; nothing ran. Give a direct connection to the same database for the claim (strata migrate --direct-database URL; a program sets PostgresConnection.directURL), or run this migration with --database pointing at the server itself"
    }

    /// A rollback removes each undone step's history row and writes an audit row: it needs DELETE and INSERT on
    /// `strata_history` (a table that does not exist yet holds nothing to roll back).
    public func rollbackRefusal() throws -> String? {
        let row = try rows("""
            SELECT pg_catalog.quote_ident(current_user) AS role, c.oid IS NOT NULL AS present,
                   coalesce(pg_catalog.has_table_privilege(c.oid, 'DELETE'), false) AS may_delete,
                   coalesce(pg_catalog.has_table_privilege(c.oid, 'INSERT'), false) AS may_insert
            FROM (SELECT 1) AS one
            LEFT JOIN pg_catalog.pg_namespace n ON n.nspname = $1
            LEFT JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = 'strata_history'
            """, [historySchema]).first
        guard let row, try row.get("present", as: Bool.self) else { return nil }
        let lacking = [("DELETE", try row.get("may_delete", as: Bool.self)), ("INSERT", try row.get("may_insert", as: Bool.self))]
            .filter { !$0.1 }.map(\.0)
        guard !lacking.isEmpty else { return nil }
        let role: String = try row.get("role")
        let table = quoteIdentifier(historySchema) + ".strata_history"
        return "role \(role) may not \(lacking.map { $0.lowercased() }.joined(separator: " or ")) rows of \(table), which a rollback does to record what it undid; nothing ran (GRANT \(lacking.joined(separator: ", ")) ON \(table) TO \(role))"
    }

    /// Through a connection pooler, a `transaction="none"` file runs on a direct connection of its own (`directURL`,
    /// checked before anything ran by `noneStepRefusal`), closed when the step is done, so nothing the file sets for
    /// its session (`SET search_path`, `SET lock_timeout`, a session advisory lock) reaches the next step or the
    /// pooler's sessions, and its statements all run on one server session.
    public func noneStepRunner() throws -> (any MigrationDatabase)? {
        guard reachesServerThroughPooler, let directURL else { return nil }
        return try PostgresConnection(url: directURL, schema: historySchema, lockTimeout: lockTimeout)
    }

    /// Seeds load with `COPY` (`PostgresSeedSink`), inside the step's transaction.
    public func seedTarget(_ seed: SeedStep) throws -> any SeedTarget {
        try PostgresSeedTarget(connection: self, step: seed)
    }
}

/// The baseline on a database that enforces every foreign key: nothing to excuse, nothing to find.
final class EnforcedForeignKeys: ForeignKeyBaseline {
    var count: Int { 0 }
    func newViolations() throws -> [ForeignKeyViolation] { [] }
}

/// Puts a session back as Strata opened it: session authorization and every setting reset, temporary tables,
/// cursors, listeners and prepared statements gone (a later file's `EXECUTE x` must not run an earlier file's `x`),
/// Strata's own settings applied again. Advisory locks are left alone: the deployer's and a step's claim are
/// Strata's own.
struct PostgresSessionReset: SessionSnapshot {
    let connection: PostgresConnection

    func restore() throws {
        // Through a pooler the next statement may run on another server session, and this one may be the
        // application's by now: each step's transaction undid what its file set (`resetSessionInTransaction`).
        if connection.reachesServerThroughPooler && !connection.isRehearsing {
            connection.prepared.forgetAll()
            connection.forgetStatementTimeout(transactionEnded: false)
            return
        }
        // A rehearsal's transaction holds every step: the session is reset inside it (each statement here may run in
        // a transaction block), and the rollback at its end undoes the rest.
        if connection.isInTransaction && !connection.isRehearsing { _ = try? connection.executeSimple("ROLLBACK") }
        if let kept = connection.rehearsalKeeps {
            // The rollback at the rehearsal's end undoes the rest, not closing a cursor or deallocating a statement:
            // only the steps' own go, and the program's (open before the rehearsal) stay.
            try connection.executeSimple("SET SESSION AUTHORIZATION DEFAULT; RESET ALL; DISCARD TEMP; UNLISTEN *")
            // By name and the time it was made: a step's own under a name the program used is not the program's.
            let open = try PostgresSessionObjects(connection)
            for (cursor, made) in open.cursors.sorted(by: { $0.key < $1.key }) where kept.cursors[cursor] != made {
                try connection.executeSimple("CLOSE \(quoteIdentifier(cursor))")
            }
            for (statement, made) in open.statements.sorted(by: { $0.key < $1.key }) where kept.statements[statement] != made {
                try connection.executeSimple("DEALLOCATE \(quoteIdentifier(statement))")
            }
        } else {
            try connection.executeSimple("SET SESSION AUTHORIZATION DEFAULT; RESET ALL; DISCARD TEMP; CLOSE ALL; UNLISTEN *; DEALLOCATE ALL")
        }
        connection.prepared.forgetAll()
        connection.forgetStatementTimeout(transactionEnded: false)
        // Through a pooler the rehearsal's transaction, whose `RESET ALL` ran inside it, gets them as `SET LOCAL`.
        try connection.executeSimple(connection.reachesServerThroughPooler ? connection.localSettings : connection.sessionSettings)
        connection.floatTextIsExact = true
    }
}

/// The cursors and prepared statements a session has open, by name, with the time each was made (text): what a
/// rehearsal leaves as it found them.
struct PostgresSessionObjects {
    let cursors: [String: String]
    let statements: [String: String]

    init(_ connection: PostgresConnection) throws {
        cursors = try Self.made(connection, "SELECT name, creation_time::text FROM pg_catalog.pg_cursors")
        statements = try Self.made(connection, "SELECT name, prepare_time::text FROM pg_catalog.pg_prepared_statements")
    }

    private static func made(_ connection: PostgresConnection, _ sql: String) throws -> [String: String] {
        var made: [String: String] = [:]
        for row in try connection.rows(sql, .none) { made[try row.get(0, as: String.self)] = try row.get(1, as: String.self) }
        // The unnamed portal and statement are the protocol's, made anew by every statement run: no one's to keep.
        made[""] = nil
        return made
    }
}
