import StrataCore

/// Finds, before anything runs, what a PostgreSQL migration file may not hold: psql meta-commands, transaction
/// control, statements PostgreSQL refuses inside the transaction Strata wraps around a file, writes to Strata's
/// history table, and text that cannot run to its end (an unterminated literal or comment, a NUL byte, invalid
/// UTF-8).
///
/// Statements and their words come from `PostgresScript`, the reader that splits files for execution, so a
/// keyword inside a string, a comment or a dollar-quoted body (`DO $$ BEGIN … END $$`) is no statement, and
/// `BEGIN ATOMIC` inside a function definition is part of it.
///
/// Transaction control is refused in every file. In a transactional file a COMMIT or ROLLBACK would end Strata's
/// transaction before the file is recorded, breaking all-or-nothing; a BEGIN does nothing but warn. In a file
/// marked `transaction="none"` Strata records the step's state on the same connection between statements, so a
/// BEGIN left open would pull that record into the file's transaction, and a failure inside it would leave the
/// session unable to record the failure. Statements that must run together belong in a file of their own, which
/// Strata runs in one transaction and records with it. Savepoints have no use in a file: its first failing
/// statement fails it whole.
enum PostgresLint {
    /// Strata's history table on PostgreSQL.
    static let historyTable = "strata_history"
    /// The trigger and function guarding it (`PostgresHistory`): the function shares the row trigger's name.
    static let guardNames: Set<String> = ["strata_history_guard", "strata_history_guard_truncate"]

    /// Findings for a file that runs inside a transaction (`insideTransaction`) or with `transaction="none"`, in
    /// text order.
    static func findings(in bytes: [UInt8], insideTransaction: Bool) -> [LintFinding] {
        var script = PostgresScript(bytes: bytes)
        script.recordsTokens = true
        var findings: [LintFinding] = []
        do {
            while let piece = try script.next() {
                switch piece {
                case .metaCommand(let command):
                    if let message = message(for: command) {
                        findings.append(LintFinding(line: command.line, column: command.column, message: message))
                    }
                case .statement(let statement):
                    findings += self.findings(for: statement, in: script, insideTransaction: insideTransaction)
                case .copy(let statement, _):
                    findings += self.findings(for: statement, in: script, insideTransaction: insideTransaction)
                    while try script.nextCopyData() != nil {}
                    if script.copyDataLackedTerminator {
                        findings.append(LintFinding(line: statement.line, column: statement.column,
                            message: "COPY … FROM STDIN reads the lines after it up to a line \\. and the file ends before one, so every line to its end would load as data; end the data with a line holding only \\."))
                    }
                }
            }
        } catch let error as DatabaseError {
            findings.append(LintFinding(line: error.line ?? 1, column: error.column ?? 1, message: error.message))
        } catch {
            findings.append(LintFinding(line: 1, column: 1, message: "\(error)"))
        }
        return findings
    }

    /// The first statement of `sql` that would end the transaction it runs in (`Statement.endsTransaction`), if any.
    static func transactionEnd(in sql: String) -> String? {
        // Most statements name none of the words, and are not tokenized.
        let upper = sql.uppercased()
        guard ["COMMIT", "END", "ROLLBACK", "ABORT", "PREPARE"].contains(where: upper.contains) else { return nil }
        var script = PostgresScript(bytes: Array(sql.utf8))
        script.recordsTokens = true
        while let piece = try? script.next() {
            switch piece {
            case .statement, .copy:
                if let command = Statement(script.tokens).endsTransaction { return command }
            case .metaCommand:
                continue
            }
        }
        return nil
    }

    private static func findings(for statement: PostgresStatementText, in script: PostgresScript,
                                 insideTransaction: Bool) -> [LintFinding] {
        var findings: [LintFinding] = []
        if let message = message(for: Statement(script.tokens), insideTransaction: insideTransaction) {
            findings.append(LintFinding(line: statement.line, column: statement.column, message: message))
        }
        if let at = script.strayBackslash {
            findings.append(LintFinding(line: at.line, column: at.column,
                message: "a backslash outside a string: psql would start a meta-command here, and PostgreSQL does not accept one in SQL; remove it"))
        }
        return findings
    }

    private static func message(for command: PostgresMetaCommand) -> String? {
        // Current pg_dump releases write \restrict and \unrestrict around a dump; they guard psql, and mean
        // nothing to a libpq client.
        switch command.name {
        case "restrict", "unrestrict":
            return nil
        case ".":
            return "a \\. line ends COPY data, but no COPY … FROM STDIN reads data here; remove it"
        case "copy":
            return "psql meta-command \\copy is not SQL; Strata runs files with libpq, not psql — write COPY … FROM STDIN; with the data lines and a \\. line after it"
        default:
            return "psql meta-command \\\(command.name) is not SQL; Strata runs files with libpq, not psql — remove it"
        }
    }

    private static func message(for statement: Statement, insideTransaction: Bool) -> String? {
        if let verb = statement.historyWrite {
            return HistoryRecord.refusal(verb: verb, table: historyTable)
        }
        if statement.changesHistoryGuard {
            return "this statement changes strata_history's guard (the trigger and function that refuse every write but Strata's own); migrations may not drop, replace or disable it"
        }
        if let message = statement.transactionControl(insideTransaction: insideTransaction) {
            return message
        }
        if insideTransaction, let command = statement.refusedInTransactionBlock {
            return "\(command) cannot run inside a transaction block, and Strata runs this file in one; mark the file transaction=\"none\" in the manifest"
        }
        if let encoding = statement.setsClientEncodingOtherThanUTF8 {
            return "this sets client_encoding to \(encoding); Strata sends every file as UTF-8 (it refuses files that are not), so the server would read what follows in another encoding and store other characters than the file holds — remove it (pg_dump writes it; a dump of a UTF8 database says UTF8, which is accepted)"
        }
        if statement.turnsOffStandardConformingStrings {
            return "this turns standard_conforming_strings off, under which PostgreSQL reads a backslash in '…' as an escape; Strata splits files as PostgreSQL's default (on) reads them, so the two would disagree on where strings end — leave it on and write E'…' where a string needs escapes"
        }
        return nil
    }

    /// One statement's tokens, with the questions the rules ask of them.
    struct Statement {
        let tokens: [PostgresToken]
        /// The tokens outside parentheses, which name the command.
        let top: [PostgresToken]

        init(_ tokens: [PostgresToken]) {
            self.tokens = tokens
            top = tokens.filter { $0.depth == 0 }
        }

        /// Whether the statement starts with these key words.
        func starts(with words: String...) -> Bool {
            top.count >= words.count && zip(top, words).allSatisfy { $0.isWord($1) }
        }

        // MARK: Transaction control

        /// The command, when the statement ends the transaction it runs in: `COMMIT`, `END`, `ROLLBACK` or `ABORT`
        /// (with or without `AND CHAIN`, which opens another at once), or `PREPARE TRANSACTION`.
        var endsTransaction: String? {
            guard let first = top.first, first.kind == .word else { return nil }
            let second = top.dropFirst().first
            switch first.text {
            case "ROLLBACK" where top.prefix(3).contains(where: { $0.isWord("TO") }): return nil
            case "COMMIT" where second?.isWord("PREPARED") == true, "ROLLBACK" where second?.isWord("PREPARED") == true: return nil
            case "COMMIT", "END", "ROLLBACK", "ABORT": return first.text
            case "PREPARE" where second?.isWord("TRANSACTION") == true: return "PREPARE TRANSACTION"
            default: return nil
            }
        }

        /// Why the statement may not run, when it is BEGIN, COMMIT, a savepoint or two-phase commit.
        func transactionControl(insideTransaction: Bool) -> String? {
            guard let first = top.first, first.kind == .word else { return nil }
            let second = top.dropFirst().first
            enum Kind { case start, end, savepoint, twoPhase }
            let kind: Kind
            let command: String
            switch first.text {
            case "BEGIN":
                (kind, command) = (.start, "BEGIN")
            case "START" where second?.isWord("TRANSACTION") == true:
                (kind, command) = (.start, "START TRANSACTION")
            case "COMMIT" where second?.isWord("PREPARED") == true, "ROLLBACK" where second?.isWord("PREPARED") == true:
                (kind, command) = (.twoPhase, "\(first.text) PREPARED")
            case "PREPARE" where second?.isWord("TRANSACTION") == true:
                (kind, command) = (.twoPhase, "PREPARE TRANSACTION")
            case "ROLLBACK" where top.prefix(3).contains(where: { $0.isWord("TO") }):
                (kind, command) = (.savepoint, "ROLLBACK TO SAVEPOINT")
            case "COMMIT", "END", "ROLLBACK", "ABORT":
                (kind, command) = (.end, first.text)
            case "SAVEPOINT":
                (kind, command) = (.savepoint, "SAVEPOINT")
            case "RELEASE":
                (kind, command) = (.savepoint, "RELEASE SAVEPOINT")
            default:
                return nil
            }
            switch (kind, insideTransaction) {
            case (.start, true):
                return "\(command) starts no transaction here: Strata already runs the file in one, and PostgreSQL only warns; remove it"
            case (.start, false):
                return "\(command) would open a transaction Strata does not manage in a file marked transaction=\"none\"; put the statements that belong together in a file of their own, which Strata runs in one transaction"
            case (.end, true):
                return "\(command) would end the transaction Strata wraps around the file before the file is recorded, breaking all-or-nothing; remove it"
            case (.end, false):
                return "\(command) is transaction control, which a file marked transaction=\"none\" may not use: each of its statements commits on its own, and Strata records the file on the same connection; remove it"
            case (.savepoint, _):
                return "\(command) is transaction control a migration has no use for: the first failing statement fails the whole file, so there is nothing to return to; remove it"
            case (.twoPhase, _):
                return "\(command) is two-phase commit, which a migration may not use: Strata commits each file itself; remove it"
            }
        }

        // MARK: Refused inside a transaction block

        /// The command, when PostgreSQL refuses it inside a transaction block whatever the database holds
        /// (`PreventInTransactionBlock`). Forms refused only for some objects (REINDEX of a partitioned table,
        /// DROP SUBSCRIPTION of one with a replication slot) are left to the server.
        var refusedInTransactionBlock: String? {
            guard let first = top.first, first.kind == .word else { return nil }
            let words = top.filter { $0.kind == .word }.map(\.text)
            switch first.text {
            case "VACUUM":
                return "VACUUM"
            case "CREATE":
                let kind = words.dropFirst().first { $0 != "UNIQUE" }
                if kind == "INDEX", words.dropFirst(2).prefix(2).contains("CONCURRENTLY") {
                    return "CREATE INDEX CONCURRENTLY"
                }
                if kind == "DATABASE" || kind == "TABLESPACE" { return "CREATE \(kind ?? "")" }
                if kind == "SUBSCRIPTION" && !disablesOption("CREATE_SLOT") && !disablesOption("CONNECT") {
                    return "CREATE SUBSCRIPTION (which creates a replication slot unless create_slot = false)"
                }
            case "DROP":
                if starts(with: "DROP", "INDEX", "CONCURRENTLY") { return "DROP INDEX CONCURRENTLY" }
                if starts(with: "DROP", "DATABASE") || starts(with: "DROP", "TABLESPACE") {
                    return "DROP \(top[1].text)"
                }
            case "ALTER":
                if starts(with: "ALTER", "SYSTEM") { return "ALTER SYSTEM" }
                if starts(with: "ALTER", "DATABASE"), top.count > 4, top[3].isWord("SET"), top[4].isWord("TABLESPACE") {
                    return "ALTER DATABASE … SET TABLESPACE"
                }
                if starts(with: "ALTER", "TABLE"), words.contains("DETACH"), isEnabled("CONCURRENTLY") {
                    return "ALTER TABLE … DETACH PARTITION … CONCURRENTLY"
                }
            case "REINDEX":
                // REINDEX [(options)] {INDEX|TABLE|SCHEMA|DATABASE|SYSTEM} [CONCURRENTLY] name; the options
                // may say CONCURRENTLY [boolean].
                if isEnabled("CONCURRENTLY") { return "REINDEX … CONCURRENTLY" }
                if let kind = words.dropFirst().first, ["SCHEMA", "DATABASE", "SYSTEM"].contains(kind) {
                    return "REINDEX \(kind)"
                }
            case "CLUSTER":
                // Without a table it clusters every table, each in a transaction of its own.
                let rest = top.dropFirst().filter { !$0.isWord("VERBOSE") && $0.kind != .symbol }
                if rest.isEmpty { return "CLUSTER without a table name" }
            case "DISCARD":
                if starts(with: "DISCARD", "ALL") { return "DISCARD ALL" }
            default:
                break
            }
            return nil
        }

        /// Whether the key word appears without a false value after it (`CONCURRENTLY`, `CONCURRENTLY true`, not
        /// `CONCURRENTLY false`).
        private func isEnabled(_ word: String) -> Bool {
            tokens.indices.contains { index in
                tokens[index].isWord(word) && !(index + 1 < tokens.count && Self.isFalse(tokens[index + 1]))
            }
        }

        /// Whether an option list says `name = false` (or `off`, `0`).
        private func disablesOption(_ name: String) -> Bool {
            tokens.indices.contains { index in
                guard tokens[index].isWord(name), index + 1 < tokens.count else { return false }
                var value = index + 1
                if tokens[value].kind == .symbol && tokens[value].text == "=" { value += 1 }
                return value < tokens.count && Self.isFalse(tokens[value])
            }
        }

        /// Whether a value token is one of PostgreSQL's spellings of false.
        static func isFalse(_ token: PostgresToken) -> Bool {
            switch token.kind {
            case .word: return ["FALSE", "OFF", "NO"].contains(token.text)
            case .string: return ["false", "off", "no", "0", "f", "n"].contains(token.text.lowercased())
            case .number: return token.text == "0"
            default: return false
            }
        }

        // MARK: The history table

        /// How the statement changes the history table, as the verb of `HistoryRecord.refusal`; nil when it only
        /// reads it or does not name it. A name counts where a statement writes, alters, drops, truncates,
        /// indexes, puts a trigger, rule or policy on, or creates a table: `strata_history` in any case unquoted,
        /// `"strata_history"` quoted (PostgreSQL folds only unquoted names), with or without a schema.
        var historyWrite: String? {
            for index in tokens.indices where isHistoryName(tokens[index]) {
                // A name followed by `.` is a schema's (or database's).
                if index + 1 < tokens.count, tokens[index + 1].kind == .symbol, tokens[index + 1].text == "." {
                    continue
                }
                if let verb = verb(forTableAt: index) { return verb }
            }
            return nil
        }

        /// Whether a `CREATE`, `ALTER` or `DROP` names the history's guard trigger or function (`DROP TRIGGER
        /// strata_history_guard ON …`, `ALTER TABLE … DISABLE TRIGGER`, `CREATE OR REPLACE FUNCTION …`): without it
        /// every later statement could write the history.
        var changesHistoryGuard: Bool {
            guard starts(with: "DROP") || starts(with: "ALTER") || starts(with: "CREATE") else { return false }
            return tokens.contains { token in
                switch token.kind {
                case .word: PostgresLint.guardNames.contains(token.text.lowercased())
                case .quotedIdentifier: PostgresLint.guardNames.contains(token.text)
                default: false
                }
            }
        }

        private func isHistoryName(_ token: PostgresToken) -> Bool {
            switch token.kind {
            case .word: return token.text == PostgresLint.historyTable.uppercased()
            case .quotedIdentifier: return token.text == PostgresLint.historyTable
            default: return false
            }
        }

        /// What the statement does to the table named at `index`, if it changes it.
        private func verb(forTableAt index: Int) -> String? {
            // Step back over `schema.` (and `database.schema.`) qualifiers.
            var before = index - 1
            while before >= 2, tokens[before].kind == .symbol, tokens[before].text == ".",
                  tokens[before - 1].kind == .word || tokens[before - 1].kind == .quotedIdentifier {
                before -= 2
            }
            func word(_ offset: Int) -> String? {
                let at = before - offset
                return at >= 0 && tokens[at].kind == .word ? tokens[at].text : nil
            }
            if starts(with: "TRUNCATE") { return "truncates" }
            if starts(with: "DROP", "TABLE") { return "drops" }
            if starts(with: "ALTER", "TABLE"), ["TABLE", "EXISTS", "ONLY"].contains(word(0)) { return "alters" }
            if starts(with: "COPY"), word(0) == "COPY" || (word(0) == "BINARY" && word(1) == "COPY") {
                return top.contains { $0.isWord("FROM") } ? "writes to" : nil
            }
            switch word(0) {
            case "INTO", "UPDATE": // INSERT INTO, MERGE INTO, SELECT … INTO, UPDATE
                return "writes to"
            case "ONLY" where word(1) == "UPDATE" || (word(1) == "FROM" && word(2) == "DELETE"):
                return "writes to"
            case "FROM" where word(1) == "DELETE":
                return "writes to"
            case "TO" where word(1) == "RENAME": // ALTER TABLE … RENAME TO strata_history
                return "creates another"
            case "ON":
                // The first ON of CREATE TRIGGER, RULE, INDEX or POLICY names its table.
                guard starts(with: "CREATE"), tokens.firstIndex(where: { $0.isWord("ON") }) == before else { return nil }
                let words = top.prefix(while: { !$0.isWord("ON") }).map(\.text)
                if words.contains("TRIGGER") { return "puts a trigger on" }
                if words.contains("RULE") { return "puts a rule on" }
                if words.contains("INDEX") { return "indexes" }
                if words.contains("POLICY") { return "puts a policy on" }
                return nil
            default:
                break
            }
            // CREATE [OR REPLACE] [TEMP|UNLOGGED|MATERIALIZED …] TABLE|VIEW [IF NOT EXISTS] strata_history
            guard starts(with: "CREATE") else { return nil }
            let kind = word(0) == "EXISTS" && word(1) == "NOT" && word(2) == "IF" ? word(3) : word(0)
            return kind == "TABLE" || kind == "VIEW" ? "creates another" : nil
        }

        // MARK: standard_conforming_strings

        /// `SET [SESSION|LOCAL] standard_conforming_strings {=|TO} off` (also in ALTER DATABASE/ROLE … SET).
        var turnsOffStandardConformingStrings: Bool {
            settingValue("STANDARD_CONFORMING_STRINGS").map(Self.isFalse) ?? false
        }

        /// The encoding a `SET client_encoding` or `SET NAMES` asks for, when it is not UTF-8 (`DEFAULT` included:
        /// the server's default may be another).
        var setsClientEncodingOtherThanUTF8: String? {
            guard let value = settingValue("CLIENT_ENCODING") ?? (starts(with: "SET", "NAMES") && top.count > 2 ? top[2] : nil)
            else { return nil }
            let name = value.text.uppercased().replacingEvery("-", with: "").replacingEvery("_", with: "")
            return name == "UTF8" || name == "UNICODE" ? nil : (value.kind == .string ? "'\(value.text)'" : value.text)
        }

        /// The value token of `SET [SESSION | LOCAL] name {TO | =} value` (or `ALTER … SET name …`), nil when the
        /// statement does not set `name`.
        private func settingValue(_ name: String) -> PostgresToken? {
            guard starts(with: "SET") || starts(with: "ALTER") else { return nil }
            for index in top.indices where top[index].isWord(name) && index > 0
                && (top[index - 1].isWord("SET") || top[index - 1].isWord("SESSION") || top[index - 1].isWord("LOCAL")) {
                var value = index + 1
                if value < top.count, top[value].isWord("TO") || (top[value].kind == .symbol && top[value].text == "=") {
                    value += 1
                }
                if value < top.count { return top[value] }
            }
            return nil
        }
    }
}
