import CSQLite
import Foundation
import XCTest
import Strata
@testable import StrataCore
@testable import StrataSQLite

/// The migration rules only SQLite has, moved here from `MigrationTests` and `MigrationRulesTests` when those became
/// conformance tests run on every backend: foreign keys off while a file runs (SQLite's table rebuild, the
/// `foreign_keys` pragma, `foreign_key_check` and the baseline of violations found by rowid), what SQLite's
/// authorizer refuses and the lint that reads SQL as SQLite does, what a file leaves on the connection (pragmas,
/// temp objects, attachments), and `transaction="none"` outcomes that only SQLite's rollback and busy handler cause.
final class SQLiteMigrationTests: XCTestCase {
    // MARK: Foreign keys off while a migration runs, checked before it commits

    private let authorsAndBooks = """
        CREATE TABLE author (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
        CREATE TABLE book (id INTEGER PRIMARY KEY, title TEXT,
                           author_id INTEGER NOT NULL REFERENCES author(id) ON DELETE CASCADE);
        INSERT INTO author VALUES (1, 'Le Guin'), (2, 'Jemisin');
        INSERT INTO book VALUES (1, 'Earthsea', 1), (2, 'Lathe', 1), (3, 'Fifth Season', 2);
        """

    /// SQLite's documented 12-step table change: create, copy, drop the old table, rename.
    private let rebuildAuthor = """
        CREATE TABLE new_author (id INTEGER PRIMARY KEY, name TEXT NOT NULL, born INTEGER);
        INSERT INTO new_author (id, name) SELECT id, name FROM author;
        DROP TABLE author;
        ALTER TABLE new_author RENAME TO author;
        """

    func testATableRebuildKeepsTheChildRowsOfTheRebuiltTable() throws {
        let project = try Project(self, files: ["sql/1_schema.sql": authorsAndBooks, "sql/2_rebuild.sql": rebuildAuthor])
        let report = try project.migrator().migrate()
        XCTAssertNil(report.failure)
        XCTAssertEqual(report.applied.map(\.id), ["1_schema.sql", "2_rebuild.sql"])
        let db = try project.database()
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM book", as: Int.self), 3, "ON DELETE CASCADE did not fire")
        XCTAssertEqual(try db.foreignKeyViolations().count, 0)
        let migrator = try project.migrator()
        _ = try migrator.migrate()
        XCTAssertEqual(try migrator.sqlite.scalar("PRAGMA foreign_keys", as: Int.self), 1,
                       "the connection's own setting is restored after the migration")
    }

    func testDroppingRelatedTablesRunsAsTheSqlite3CommandLineRunsIt() throws {
        // From a public project's migration set, written for sqlite3's default of foreign keys off.
        let project = try Project(self, files: [
            "sql/1_init.sql": """
                CREATE TABLE repos (id INTEGER PRIMARY KEY, name TEXT);
                CREATE TABLE pullreqs (id INTEGER PRIMARY KEY, repo_id INTEGER REFERENCES repos(id), title TEXT);
                INSERT INTO repos VALUES (1, 'strata');
                INSERT INTO pullreqs VALUES (1, 1, 'first');
                """,
            "sql/2_rebuild.sql": """
                CREATE TABLE repos_new (id INTEGER PRIMARY KEY, name TEXT, stars INTEGER DEFAULT 0);
                INSERT INTO repos_new (id, name) SELECT id, name FROM repos;
                CREATE TABLE pullreqs_new (id INTEGER PRIMARY KEY, repo_id INTEGER REFERENCES repos(id), title TEXT);
                INSERT INTO pullreqs_new SELECT * FROM pullreqs;
                DROP TABLE pullreqs;
                DROP TABLE repos;
                ALTER TABLE repos_new RENAME TO repos;
                ALTER TABLE pullreqs_new RENAME TO pullreqs;
                """,
        ])
        let report = try project.migrator().migrate()
        XCTAssertNil(report.failure, String(describing: report.failure))
        XCTAssertEqual(try project.database().scalar("SELECT title FROM pullreqs WHERE repo_id = 1", as: String.self), "first")
    }

    func testARebuildThatOrphansRowsFailsNamingThemAndLeavesNoTrace() throws {
        let project = try Project(self, files: [
            "sql/1_schema.sql": authorsAndBooks,
            "sql/2_lossy.sql": rebuildAuthor.replacingOccurrences(of: "FROM author;", with: "FROM author WHERE id = 1;"),
        ])
        let report = try project.migrator().migrate()
        let failure = try XCTUnwrap(report.failure)
        XCTAssertEqual(failure.id, "2_lossy.sql")
        XCTAssertTrue(failure.message.contains("foreign key check failed: book row 3 references a missing row in author"),
                      failure.message)
        XCTAssertEqual(failure.aftermath, .rolledBack)
        let db = try project.database()
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM author", as: Int.self), 2)
        XCTAssertFalse(try db.tableExists("new_author"))
    }

    func testForeignKeysOnIsAnExplicitOptionUnderWhichOnDeleteActionsFire() throws {
        let project = try Project(self, manifest: """
            <manifest version="1"><database path="db.sqlite"/>
              <migrations directory="sql"><migration file="2_delete.sql" foreignKeys="on"/></migrations>
            </manifest>
            """, files: ["sql/1_schema.sql": authorsAndBooks, "sql/2_delete.sql": "DELETE FROM author WHERE id = 1;"])
        XCTAssertEqual(try project.manifest().migrations.map(\.enforcesForeignKeys), [false, true])
        XCTAssertNil(try project.migrator().migrate().failure)
        XCTAssertEqual(try project.database().scalar("SELECT count(*) FROM book", as: Int.self), 1, "the cascade fired")
        let invalid = try Project(self, manifest: """
            <manifest version="1"><migrations directory="sql" foreignKeys="maybe"/></manifest>
            """, files: [:])
        XCTAssertThrowsError(try invalid.manifest())
    }

    func testOffByDefaultSoADeleteOfAParentWithChildrenFailsInsteadOfCascading() throws {
        let project = try Project(self, files: ["sql/1_schema.sql": authorsAndBooks,
                                                "sql/2_delete.sql": "DELETE FROM author WHERE id = 1;"])
        let failure = try XCTUnwrap(try project.migrator().migrate().failure)
        XCTAssertTrue(failure.message.contains("foreign key check failed"), failure.message)
        XCTAssertEqual(try project.database().scalar("SELECT count(*) FROM book", as: Int.self), 3)
    }

    func testForeignKeyViolationsThatPredateTheRunAreNotBlamedOnAStep() throws {
        let project = try Project(self, files: ["sql/1_unrelated.sql": "CREATE TABLE unrelated (x);"])
        let db = try project.database()
        try db.execute("PRAGMA foreign_keys = OFF")
        try db.executeScript("CREATE TABLE p (id INTEGER PRIMARY KEY); CREATE TABLE c (id INTEGER PRIMARY KEY, p INTEGER REFERENCES p(id)); INSERT INTO c VALUES (1, 99);")
        var notices: [String] = []
        let report = try project.migrator().migrate { if case .notice(let text) = $0 { notices.append(text) } }
        XCTAssertNil(report.failure, String(describing: report.failure))
        XCTAssertTrue(notices.first?.contains("1 foreign key violation already in the database") ?? false, "\(notices)")
        try project.file("sql/2_more.sql", "INSERT INTO c VALUES (2, 98);")
        let failure = try XCTUnwrap(try project.migrator().migrate().failure)
        XCTAssertTrue(failure.message.contains("c row 2 references a missing row in p"), failure.message)
        XCTAssertFalse(failure.message.contains("c row 1 "), failure.message)
    }

    private func legacyProject(_ legacy: String, files: [String: String], manifest: String? = nil) throws -> Project {
        let project = try Project(self, manifest: manifest, files: files)
        let db = try project.database()
        try db.execute("PRAGMA foreign_keys = OFF")
        try db.executeScript(legacy)
        return project
    }

    func testAnOldViolationDoesNotExcuseANewOneThatReusesItsRowid() throws {
        let project = try legacyProject("""
            CREATE TABLE parent (id INTEGER PRIMARY KEY); CREATE TABLE child (pid INTEGER REFERENCES parent(id), note TEXT);
            INSERT INTO parent VALUES (1); INSERT INTO child VALUES (1, 'ok'), (1, 'ok'), (99, 'legacy orphan');
            """, files: ["sql/1_cleanup.sql": "DELETE FROM child WHERE pid NOT IN (SELECT id FROM parent);",
                         "sql/2_add.sql": "INSERT INTO child VALUES (42, 'new orphan');"])
        let report = try project.migrator().migrate()
        XCTAssertEqual(report.applied.map(\.id), ["1_cleanup.sql"])
        XCTAssertEqual(report.failure?.id, "2_add.sql", "the new orphan got rowid 3, the old one's; it is still new")
        XCTAssertEqual(try project.database().scalar("SELECT count(*) FROM child WHERE pid = 42", as: Int.self), 0)
    }

    func testAViolationInATableWithoutRowidIsNeverExcused() throws {
        let project = try legacyProject("""
            CREATE TABLE parent (id INTEGER PRIMARY KEY);
            CREATE TABLE tag (name TEXT PRIMARY KEY, pid INTEGER REFERENCES parent(id)) WITHOUT ROWID;
            INSERT INTO parent VALUES (1); INSERT INTO tag VALUES ('legacy', 99);
            """, files: ["sql/1.sql": "UPDATE tag SET pid = 1 WHERE name = 'legacy';\nINSERT INTO tag VALUES ('fresh', 7);"])
        let failure = try XCTUnwrap(try project.migrator().migrate().failure)
        XCTAssertTrue(failure.message.contains("tables without rowid cannot be told apart"), failure.message)
        XCTAssertEqual(try project.database().scalar("SELECT count(*) FROM tag", as: Int.self), 1)
    }

    func testARebuildThatMovesAnOldViolationIsNotBlamedForIt() throws {
        let project = try legacyProject("""
            CREATE TABLE parent (id INTEGER PRIMARY KEY); CREATE TABLE child (pid INTEGER REFERENCES parent(id), note TEXT);
            INSERT INTO parent VALUES (1); INSERT INTO child VALUES (99, 'legacy orphan'), (1, 'a'), (1, 'b');
            """, files: ["sql/1_rebuild.sql": """
                CREATE TABLE child_new (pid INTEGER REFERENCES parent(id), note TEXT NOT NULL DEFAULT '');
                INSERT INTO child_new (pid, note) SELECT pid, note FROM child ORDER BY note;
                DROP TABLE child;
                ALTER TABLE child_new RENAME TO child;
                """])
        XCTAssertNil(try project.migrator().migrate().failure, "the same legacy row, now rowid 3")
    }

    func testAFileCannotLeaveForeignKeysOffForTheSeedsAfterIt() throws {
        let project = try Project(self, manifest: """
            <manifest version="1"><database path="db.sqlite"/>
              <migrations directory="sql"><migration file="2_tune.sql" transaction="none" foreignKeys="on"/></migrations>
              <seeds><seed file="csv/child.csv" table="child"/></seeds></manifest>
            """, files: ["sql/1_schema.sql": "CREATE TABLE parent (id INTEGER PRIMARY KEY);\nCREATE TABLE child (id INTEGER PRIMARY KEY, pid INTEGER NOT NULL REFERENCES parent(id));",
                         "sql/2_tune.sql": "PRAGMA foreign_keys = OFF;\nCREATE TABLE log (x);",
                         "csv/child.csv": "id,pid\n1,999\n"])
        let failure = try XCTUnwrap(try project.migrator().migrate().failure)
        XCTAssertEqual(failure.id, "child.csv")
        XCTAssertTrue(failure.message.contains("FOREIGN KEY constraint failed"), failure.message)
        XCTAssertEqual(try project.database().scalar("SELECT count(*) FROM child", as: Int.self), 0)
    }

    func testAnUncheckableSchemaDoesNotStopTheRunThatFixesIt() throws {
        let project = try legacyProject("""
            CREATE TABLE parent (code TEXT); CREATE TABLE child (pcode TEXT REFERENCES parent(code)); INSERT INTO parent VALUES ('a');
            """, files: ["sql/1_fix.sql": "CREATE UNIQUE INDEX parent_code ON parent (code);"])
        var notices: [String] = []
        let report = try project.migrator().migrate { if case .notice(let text) = $0 { notices.append(text) } }
        XCTAssertNil(report.failure, String(describing: report.failure))
        XCTAssertTrue(notices.first?.contains("foreign keys cannot be checked before the run") ?? false, "\(notices)")
    }

    // MARK: What SQLite's authorizer refuses, and the lint that reads SQL as SQLite does

    /// Runs `script` as a migration's statements run, under the authorizer.
    private func runGuarded(_ script: String, insideTransaction: Bool = true, on db: Database) throws {
        try db.withAuthorizer(ScriptRules(insideTransaction: insideTransaction)) { try db.executeScript(script) }
    }

    /// A database holding the history and the tables the statements below use.
    private func historyDatabase() throws -> Database {
        let db = try Database()
        try db.execute(HistoryStore.createSQL, .none)
        try db.executeScript("CREATE TABLE t (x); CREATE TABLE deploy_log (n); CREATE TABLE a (x);")
        return db
    }

    func testEverySpellingOfAForbiddenPragmaIsRefusedAtItsLine() throws {
        for spelling in ["foreign_keys", "\"foreign_keys\"", "[foreign_keys]", "`foreign_keys`", "main.foreign_keys",
                         "'foreign_keys'", "FOREIGN_KEYS", "main.\"Foreign_Keys\""] {
            let script = "CREATE TABLE a (x);\n  PRAGMA \(spelling) = OFF;"
            let db = try Database()
            let error = assertThrows(DatabaseError.self) { try runGuarded(script, on: db) }
            XCTAssertEqual(error?.resultCode, SQLITE_AUTH, spelling)
            XCTAssertEqual([error?.line, error?.column], [2, 3], spelling)
            XCTAssertTrue(error?.message.contains("PRAGMA foreign_keys is silently ignored") ?? false, String(describing: error))
            XCTAssertEqual(SQLLint.findings(in: script).map(\.line), [2], "validate sees \(spelling) too")
        }
        let db = try Database()
        try runGuarded("PRAGMA foreign_keys; PRAGMA user_version = 3;", on: db)
        XCTAssertEqual(try db.scalar("PRAGMA user_version", as: Int.self), 3, "reading it, and other pragmas, are fine")
        for statement in ["PRAGMA journal_mode = WAL", "BEGIN", "COMMIT", "END", "ROLLBACK",
                          "ATTACH ':memory:' AS other"] {
            XCTAssertThrowsError(try runGuarded(statement, on: try Database()), statement)
            XCTAssertEqual(SQLLint.findings(in: statement).count, 1, statement)
        }
        try runGuarded("SAVEPOINT s; CREATE TABLE b (x); ROLLBACK TO s; RELEASE s;", on: try Database())
        try runGuarded("BEGIN; CREATE TABLE b (x); COMMIT; PRAGMA foreign_keys = OFF;", insideTransaction: false, on: try Database())
    }

    func testMigrationsAndSeedsCannotRewriteHistoryHoweverSpelled() throws {
        let db = try Database()
        try db.execute(HistoryStore.createSQL, .none)
        try db.execute("CREATE TABLE t (x)")
        for statement in ["DELETE FROM strata_history", "DELETE FROM \"STRATA_HISTORY\" WHERE 1",
                          "UPDATE main.strata_history SET state = 'failed'",
                          "INSERT INTO [strata_history] (kind) VALUES ('seed')", "DROP TABLE strata_history",
                          "ALTER TABLE strata_history RENAME TO h", "ALTER TABLE strata_history ADD COLUMN c",
                          "CREATE TRIGGER tr AFTER INSERT ON strata_history BEGIN SELECT 1; END",
                          "REPLACE INTO 'strata_history' (kind) VALUES ('seed')"] {
            for insideTransaction in [true, false] {
                let error = assertThrows(DatabaseError.self) {
                    try runGuarded(statement, insideTransaction: insideTransaction, on: db)
                }
                XCTAssertTrue(error?.message.contains("Strata's record of what was applied") ?? false,
                              "\(statement): \(String(describing: error))")
            }
            XCTAssertEqual(SQLLint.findings(in: statement, insideTransaction: false).count, 1, "validate: \(statement)")
        }
        // A trigger made before Strata ran (or by hand) cannot launder a write either.
        try db.execute("CREATE TRIGGER launder AFTER INSERT ON t BEGIN DELETE FROM strata_history; END")
        XCTAssertThrowsError(try runGuarded("INSERT INTO t VALUES (1)", on: db))
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM t", as: Int.self), 0)
        XCTAssertEqual(SQLLint.findings(in: "SELECT * FROM strata_history; CREATE VIEW v AS SELECT 1;"), [],
                       "reading history is fine")
    }

    func testATempTableNamedLikeHistoryCannotTakeItsWrites() throws {
        let shadow = "CREATE TEMP TABLE strata_history (kind, identity, checksum, checksum_version, applied_at, duration_ms, row_count, state, tool_version, applied_sql, runner, error, PRIMARY KEY (kind, identity));"
        let project = try Project(self, files: ["sql/1_a.sql": "CREATE TABLE ledger (amount);\n" + shadow,
                                                "sql/2_b.sql": "INSERT INTO ledger VALUES (100);"])
        XCTAssertEqual(try project.migrator().lint().count, 1, "validate refuses it")
        let db = try Database()
        XCTAssertThrowsError(try runGuarded(shadow, insideTransaction: false, on: db))
        XCTAssertThrowsError(try runGuarded("CREATE TEMP VIEW strata_history AS SELECT 1", on: db))
        // A temp table made on the connection some other way does not take the history's rows either.
        let migrator = try project.migrator()
        try migrator.sqlite.execute(shadow, .none)
        try project.file("sql/1_a.sql", "CREATE TABLE ledger (amount);")
        XCTAssertNil(try migrator.migrate().failure)
        XCTAssertEqual(try migrator.migrate().applied, [], "recorded in main.strata_history, so nothing runs twice")
        XCTAssertEqual(try project.database().scalar("SELECT count(*) FROM ledger", as: Int.self), 1)
        XCTAssertEqual(try project.database().scalar("SELECT count(*) FROM strata_history", as: Int.self), 2)
    }

    func testHistoryThroughAnAttachedAliasOfTheSameFileIsRefused() throws {
        let dir = try makeTemporaryDirectory(self)
        let path = dir.appendingPathComponent("db.sqlite").path
        let db = try Database(path: path)
        try db.execute(HistoryStore.createSQL, .none)
        try db.execute("ATTACH DATABASE ? AS h", [path])
        XCTAssertThrowsError(try runGuarded("DELETE FROM h.strata_history", insideTransaction: false, on: db))
        try db.execute("ATTACH DATABASE ':memory:' AS other")
        try runGuarded("CREATE TABLE other.strata_history (x); INSERT INTO other.strata_history VALUES (1);",
                       insideTransaction: false, on: db)
        for pragma in ["PRAGMA writable_schema = ON", "PRAGMA query_only = 1", "PRAGMA case_sensitive_like = 1",
                       "PRAGMA journal_mode = OFF", "PRAGMA main.journal_mode = memory"] {
            XCTAssertThrowsError(try runGuarded(pragma, insideTransaction: false, on: try Database()), pragma)
            XCTAssertEqual(SQLLint.findings(in: pragma, insideTransaction: false).count, 1, pragma)
        }
        try runGuarded("PRAGMA journal_mode = WAL; PRAGMA journal_mode = DELETE;", insideTransaction: false, on: try Database(path: dir.appendingPathComponent("w.sqlite").path))
    }

    func testIndexesOnHistoryAndTempCreationsAndHeapLimitsAreRefused() throws {
        defer {
            // Should the guard let them through, undo the process-wide limits (the values are harmless anyway).
            sqlite3_soft_heap_limit64(0)
            sqlite3_hard_heap_limit64(0)
        }
        for statement in ["CREATE VIRTUAL TABLE temp.strata_history USING fts5(x)",
                          "CREATE UNIQUE INDEX hi ON strata_history (applied_at)",
                          "CREATE INDEX main.hi ON \"Strata_History\" (state)",
                          "PRAGMA soft_heap_limit = 1125899906842624", "PRAGMA hard_heap_limit = 1125899906842624",
                          "PRAGMA soft_heap_limit(1125899906842624)"] {
            for insideTransaction in [true, false] {
                let error = assertThrows(DatabaseError.self) {
                    try runGuarded(statement, insideTransaction: insideTransaction, on: try historyDatabase())
                }
                XCTAssertEqual(error?.resultCode, SQLITE_AUTH, "\(statement): \(String(describing: error))")
            }
            XCTAssertEqual(SQLLint.findings(in: statement, insideTransaction: false).count, 1, "validate: \(statement)")
        }
        // Dropping an index on the history cannot be seen lexically; the authorizer refuses it.
        let db = try historyDatabase()
        try db.execute("CREATE INDEX made_by_hand ON strata_history (state)")
        let error = assertThrows(DatabaseError.self) { try runGuarded("DROP INDEX made_by_hand", on: db) }
        XCTAssertEqual(error?.resultCode, SQLITE_AUTH, String(describing: error))
        XCTAssertTrue(error?.message.contains("strata_history") ?? false, String(describing: error))
        // Reading the limits, and indexes and virtual tables of other names, are fine.
        try runGuarded("PRAGMA soft_heap_limit; PRAGMA hard_heap_limit; CREATE INDEX ti ON t (x); DROP INDEX ti;"
                       + " CREATE VIRTUAL TABLE temp.search USING fts5(x);", on: try historyDatabase())
        XCTAssertEqual(SQLLint.findings(in: "PRAGMA soft_heap_limit; PRAGMA hard_heap_limit;"), [])
    }

    func testTheLintFlagsWritesToHistoryNotReadsOfItAsTheAuthorizerDoes() throws {
        // Reads of the history: SQLite's authorizer allows them while the file runs, so validate must not refuse them.
        for read in ["INSERT INTO deploy_log SELECT count(*) FROM strata_history;",
                     "INSERT INTO deploy_log SELECT count(*) FROM main.\"STRATA_HISTORY\";",
                     "CREATE TRIGGER tr AFTER INSERT ON t BEGIN INSERT INTO deploy_log SELECT count(*) FROM strata_history; END;",
                     "CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1 FROM a JOIN strata_history ON strata_history.identity = a.x; END;",
                     "WITH h AS (SELECT * FROM strata_history) INSERT INTO deploy_log SELECT identity FROM h;",
                     "UPDATE t SET x = (SELECT max(identity) FROM strata_history);",
                     "DELETE FROM t WHERE x IN (SELECT identity FROM strata_history);",
                     "CREATE VIEW applied AS SELECT * FROM strata_history;",
                     "CREATE TABLE copy AS SELECT * FROM strata_history;",
                     "CREATE INDEX i ON t(x) WHERE x > 0; SELECT * FROM strata_history;",
                     "REPLACE INTO deploy_log SELECT count(*) FROM [strata_history];"] {
            XCTAssertEqual(SQLLint.findings(in: read), [], "a read of history is no finding: \(read)")
            XCTAssertEqual(SQLLint.findings(in: read, insideTransaction: false), [], read)
            XCTAssertNoThrow(try runGuarded(read, on: try historyDatabase()), "the authorizer allows \(read)")
        }
        // Writes whose target is the history, however spelled, at statement level and inside trigger bodies.
        for write in ["INSERT OR IGNORE INTO main.strata_history (kind) VALUES ('x');",
                      "UPDATE OR REPLACE \"Strata_History\" SET state = 'failed';",
                      "DELETE FROM temp.strata_history;",
                      "DROP TABLE IF EXISTS `strata_history`;",
                      "ALTER TABLE main.[strata_history] RENAME TO h;",
                      "ALTER TABLE t RENAME TO strata_history;",
                      "CREATE TEMPORARY TABLE IF NOT EXISTS strata_history (x);",
                      "CREATE VIRTUAL TABLE temp.strata_history USING fts5(x);",
                      "CREATE UNIQUE INDEX hi ON strata_history (applied_at);",
                      "CREATE INDEX IF NOT EXISTS main.hi ON 'strata_history' (state);",
                      "CREATE TRIGGER tr AFTER INSERT ON t BEGIN UPDATE strata_history SET state = 'x'; END;",
                      "CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; INSERT OR REPLACE INTO \"strata_history\" (kind) VALUES ('x'); END;",
                      "CREATE TRIGGER tr AFTER INSERT ON t BEGIN DELETE FROM main.strata_history WHERE 1; END;",
                      "WITH h AS (SELECT 1) DELETE FROM strata_history WHERE identity IN h;"] {
            let findings = SQLLint.findings(in: write, insideTransaction: false)
            XCTAssertEqual(findings.count, 1, write)
            XCTAssertTrue(findings.first?.message.contains("writes to strata_history") ?? false, "\(write): \(findings)")
        }
    }

    func testLintNamesOnlyNamesAndFollowsExplainAsSQLiteDoes() throws {
        XCTAssertEqual(SQLLint.findings(in: "INSERT INTO notes VALUES ('strata_history'); DELETE FROM audit WHERE tbl = 'strata_history';"), [])
        XCTAssertEqual(SQLLint.findings(in: "INSERT INTO 'strata_history' (kind) VALUES ('x');").count, 1)
        let explain = "CREATE TABLE t (x);\nEXPLAIN QUERY PLAN CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; SELECT 2; END;\n"
        XCTAssertEqual(SQLLint.findings(in: explain), [])
        XCTAssertEqual(SQLLint.statements(in: Array(explain.utf8)).statements.count, 2)
    }

    func testLintRefusesTransactionBreakingStatements() throws {
        let project = try Project(self, files: [
            "sql/1_fk.sql": "CREATE TABLE a (x);\nPRAGMA foreign_keys = OFF;",
            "sql/2_vacuum.sql": "-- tidy\n  VACUUM;",
            "sql/3_tx.sql": "BEGIN;\nCREATE TABLE b (x);\nCOMMIT;",
            "sql/4_fine.sql": """
                PRAGMA foreign_keys;
                CREATE TABLE t (x);
                CREATE TRIGGER tr AFTER INSERT ON t BEGIN
                  SELECT CASE WHEN NEW.x > 0 THEN 1 ELSE 0 END;
                  INSERT INTO t SELECT 'begin; commit; vacuum;' WHERE 0;
                END;
                SAVEPOINT s; ROLLBACK TO s; RELEASE s;
                -- VACUUM in a comment
                SELECT 'PRAGMA foreign_keys = OFF';
                """,
        ])
        let problems = try project.migrator().lint()
        XCTAssertEqual(problems.map { "\(($0.location.path as NSString).lastPathComponent):\($0.location.line):\($0.location.column ?? 0)" },
                       ["1_fk.sql:2:1", "2_vacuum.sql:2:3", "3_tx.sql:1:1", "3_tx.sql:3:1"])
        XCTAssertTrue(problems[0].message.contains("foreignKeys=\"on\""), problems[0].message)
        XCTAssertTrue(problems[1].message.contains("transaction=\"none\""), problems[1].message)
        let error = assertThrows(MigrationError.self) { try project.migrator().migrate() }
        guard case .refused(let refusals)? = error else { return XCTFail("expected a refusal") }
        XCTAssertEqual(Set(refusals.map(\.reason)), [.invalidSQL])
        XCTAssertFalse(try project.database().tableExists("a"), "nothing runs")
    }

    func testSQLLintStatementPositions() {
        let statements = SQLLint.statements(in: Array("SELECT 1;\n  -- c\n  SELECT 'a;b';\r\nVACUUM".utf8)).statements
        XCTAssertEqual(statements.map { "\($0.line):\($0.column):\($0.words.first ?? "")" }, ["1:1:SELECT", "3:3:SELECT", "4:1:VACUUM"])
        let lone = SQLLint.statements(in: Array("SELECT 'é';\r  VACUUM;\r\n\r\n BEGIN".utf8)).statements
        XCTAssertEqual(lone.map { "\($0.line):\($0.column)" }, ["1:1", "2:3", "4:2"], "a lone CR ends a line too")
    }

    func testALoneCRInsideALineCommentIsRefusedUpFront() throws {
        // Old Mac line endings: SQLite reads everything after the first `--` as one comment, so nothing after it runs.
        let classic = "CREATE TABLE a (x);\r-- add b\rCREATE TABLE b (x);\rCREATE TABLE c (x);\r"
        let findings = SQLLint.findings(in: classic)
        XCTAssertEqual(findings.map { [$0.line, $0.column] }, [[2, 9]], "\(findings)")
        XCTAssertTrue(findings.first?.message.contains("a lone CR inside a -- comment") ?? false, "\(findings)")
        XCTAssertEqual(SQLLint.findings(in: classic, insideTransaction: false).count, 1)
        // CRLF and LF end a comment; a CR at the very end hides nothing; a CR in a string or a block comment is data.
        for fine in ["-- a\r\nCREATE TABLE a (x);\r\n", "-- a\nCREATE TABLE a (x);\n", "CREATE TABLE a (x); -- end\r",
                     "/* a\rb */ CREATE TABLE a (x);\r", "INSERT INTO t VALUES ('-- a\rb');"] {
            XCTAssertEqual(SQLLint.findings(in: fine), [], fine.debugDescription)
        }
        let project = try Project(self, files: ["sql/1_a.sql": classic])
        XCTAssertEqual(try project.migrator().lint().map { [$0.location.line, $0.location.column ?? 0] }, [[2, 9]])
        XCTAssertThrowsError(try project.migrator().migrate())
        XCTAssertFalse(try project.database().tableExists("a"), "migrate refuses it before anything runs")

        // The up section of another tool's file is linted at the file's own lines.
        let goose = "-- +goose Up\nCREATE TABLE a (x);\n-- add b\rCREATE TABLE b (x);\n-- +goose Down\nDROP TABLE a;\n"
        let gooseProject = try Project(self, manifest: #"<manifest version="1"><database path="db.sqlite"/><migrations directory="sql" format="goose"/></manifest>"#,
                                       files: ["sql/1_a.sql": goose])
        let problems = try gooseProject.migrator().lint()
        XCTAssertEqual(problems.map { [$0.location.line, $0.location.column ?? 0] }, [[3, 9]], "\(problems)")
        XCTAssertTrue(problems.first?.message.contains("lone CR") ?? false, "\(problems)")
    }

    func testAStatementWithParametersInAScriptIsAnError() throws {
        let db = try Database()
        for script in ["CREATE TABLE s (k, v);\nINSERT INTO s VALUES ('rate', ?);", "SELECT :name;", "SELECT @x;", "SELECT $currency;"] {
            let error = assertThrows(DatabaseError.self) { try db.executeScript(script) }
            XCTAssertTrue(error?.message.contains("binds no values") ?? false, String(describing: error))
        }
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM s", as: Int.self), 0)
    }

    // MARK: What a file changes on the connection (pragmas, temp objects, attachments)

    func testWhatAFileChangesOnTheConnectionDoesNotReachTheNextFile() throws {
        let project = try Project(self, manifest: """
            <manifest version="1"><database path="db.sqlite"/>
              <migrations directory="sql"><migration file="2_settings.sql" transaction="none"/></migrations></manifest>
            """, files: [
                "sql/1_t.sql": "CREATE TABLE t (x); CREATE TABLE log (m);",
                "sql/2_settings.sql": """
                    PRAGMA recursive_triggers = ON;
                    PRAGMA ignore_check_constraints = ON;
                    ATTACH DATABASE ':memory:' AS scratch;
                    CREATE TEMP TRIGGER spy AFTER INSERT ON main.t BEGIN INSERT INTO log VALUES ('fired'); END;
                    """,
                "sql/3_insert.sql": "INSERT INTO t VALUES (1);",
            ])
        let migrator = try project.migrator()
        XCTAssertNil(try migrator.migrate().failure)
        let db = migrator.sqlite
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM log", as: Int.self), 0, "the temp trigger did not outlive its file")
        XCTAssertEqual(try db.scalar("PRAGMA recursive_triggers", as: Int.self), 0)
        XCTAssertEqual(try db.scalar("PRAGMA ignore_check_constraints", as: Int.self), 0)
        XCTAssertEqual(try db.query("PRAGMA database_list").all().count, 2, "main and temp only: scratch was detached")
    }

    func testATempAutoincrementTableIsCleanedUpAndLimitsAreReset() throws {
        let project = try Project(self, files: [
            "sql/1_a.sql": "CREATE TABLE t (x);\nCREATE TEMP TABLE scratch (id INTEGER PRIMARY KEY AUTOINCREMENT, v);\nINSERT INTO scratch (v) VALUES (1);\nINSERT INTO t SELECT v FROM scratch;\nPRAGMA max_page_count = 1;",
            "sql/2_b.sql": "CREATE TABLE u (x); INSERT INTO u VALUES (zeroblob(100000));",
        ])
        let migrator = try project.migrator()
        let report = try migrator.migrate()
        XCTAssertNil(report.failure, String(describing: report.failure))
        XCTAssertEqual(report.applied.map(\.id), ["1_a.sql", "2_b.sql"])
        XCTAssertFalse(try migrator.sqlite.query("SELECT name FROM temp.sqlite_schema WHERE name = 'scratch'").all().count > 0)
    }

    // MARK: transaction="none" files and SQLite's own rollback, foreign key check and busy handler

    private func noneProject(_ sql: String) throws -> Project {
        try Project(self, manifest: """
            <manifest version="1"><database path="db.sqlite"/>
              <migrations directory="sql"><migration file="2_none.sql" transaction="none"/></migrations></manifest>
            """, files: ["sql/1_a.sql": "CREATE TABLE a (x);", "sql/2_none.sql": sql, "sql/3_after.sql": "CREATE TABLE c (x);"])
    }

    func testASQLiteRollbackInsideANoneFileIsNotCalledApplied() throws {
        let project = try noneProject("BEGIN;\nINSERT INTO a VALUES (1);\nCOMMIT;\nBEGIN;\nINSERT INTO a VALUES (3);\nINSERT OR ROLLBACK INTO nowhere VALUES (1);\nCOMMIT;\n")
        let failure = try XCTUnwrap(try project.migrator().migrate().failure)
        guard case .partlyApplied(let kept) = failure.aftermath else { return XCTFail("\(failure)") }
        XCTAssertTrue(kept.contains("except those inside the transaction the file had open, which were rolled back"), kept)
        XCTAssertEqual(try project.database().scalar("SELECT group_concat(x) FROM a", as: String.self), "1")
    }

    func testANoneFileWhoseForeignKeyCheckCannotRunIsRecordedFailed() throws {
        let project = try noneProject("CREATE TABLE p (id INTEGER, name TEXT);\nCREATE TABLE c (pname TEXT REFERENCES p(name));\n")
        let result = try project.strata(["migrate", "--format", "json"])
        XCTAssertEqual(result.status, 1, result.stderr)
        XCTAssertTrue(result.stdout.contains("foreign key check could not run"), result.stdout)
        XCTAssertTrue(result.stdout.contains(#""state":"partly-applied""#), result.stdout)
        XCTAssertEqual(try project.database().scalar("SELECT state FROM strata_history WHERE identity = '2_none.sql'", as: String.self), "failed")
        let transactional = try Project(self, files: ["sql/1.sql": "CREATE TABLE p (id INTEGER, name TEXT);\nCREATE TABLE c (pname TEXT REFERENCES p(name));"])
        let failure = try XCTUnwrap(try transactional.migrator().migrate().failure)
        XCTAssertEqual(failure.id, "1.sql")
        XCTAssertTrue(failure.message.contains("foreign key check could not run"), failure.message)
    }

    /// Runs the none-file project whose file calls `grab_lock()`: that hands the write lock to another connection,
    /// so the next statement meets SQLITE_BUSY. The busy handler gives up at once `refusals` times, then lets the
    /// other connection go, so what happens next is decided by a count, not by a clock. The connection's busy
    /// timeout is zero, so each give-up stands for one past the timeout (a busy statement given up on sooner is run
    /// again, as SQLite's no-wait refusals are).
    private func migrateWithLockTakenMidFile(refusals: Int) throws -> (Project, Migrator, MigrationReport, Int) {
        let project = try noneProject("INSERT INTO a VALUES (1);\nSELECT grab_lock();\nINSERT INTO a VALUES (2);\n")
        let migrator = try project.migrator(timeout: .zero)
        let other = try project.database()
        try migrator.sqlite.createFunction("grab_lock", argumentCount: 0, deterministic: false) { _ in
            try other.execute("BEGIN IMMEDIATE")
            return 1
        }
        final class Holder {
            let database: Database
            let refusals: Int
            var calls = 0
            init(_ database: Database, refusals: Int) { self.database = database; self.refusals = refusals }
        }
        let holder = Holder(other, refusals: refusals)
        sqlite3_busy_handler(migrator.sqlite.handle, { context, _ in
            guard let context else { return 0 }
            let holder = Unmanaged<Holder>.fromOpaque(context).takeUnretainedValue()
            holder.calls += 1
            if holder.calls >= holder.refusals, holder.database.isInTransaction { try? holder.database.execute("ROLLBACK") }
            return holder.calls > holder.refusals ? 1 : 0
        }, Unmanaged.passUnretained(holder).toOpaque())
        let report = try withExtendedLifetime(holder) { try migrator.migrate() }
        return (project, migrator, report, holder.calls)
    }

    func testABusyDatabasePartWayThroughANoneFileRecordsTheStepFailed() throws {
        let (_, migrator, report, _) = try migrateWithLockTakenMidFile(refusals: 1)
        let failure = try XCTUnwrap(report.failure)
        XCTAssertEqual([failure.id, failure.line.map(String.init)], ["2_none.sql", "3"])
        XCTAssertTrue(failure.message.contains("database is locked"), failure.message)
        let record = try XCTUnwrap(try migrator.status().first { $0.id == "2_none.sql" }?.record)
        XCTAssertEqual(record.state, .failed)
        XCTAssertTrue(record.error?.contains("sql/2_none.sql:3:1: database is locked") ?? false, String(describing: record.error))
    }

    func testTheOutcomeOfANoneFileIsRecordedEvenWhenTheDatabaseStaysBusyPastTheTimeout() throws {
        // Refused twice: the statement, then the first try to record the failure.
        let (project, _, report, calls) = try migrateWithLockTakenMidFile(refusals: 2)
        XCTAssertEqual(calls, 2, "the first try to record was refused, so the record written is a retry")
        XCTAssertTrue(report.failure?.message.contains("database is locked") ?? false, String(describing: report.failure))
        XCTAssertEqual(try project.database().scalar("SELECT state FROM strata_history WHERE identity = '2_none.sql'", as: String.self), "failed")
    }
}
