import XCTest
@testable import StrataCore
@testable import StrataPostgres

/// What a PostgreSQL migration may not hold, found before anything runs, with words read by the script reader.
final class PostgresLintTests: XCTestCase {
    private func findings(_ text: String, insideTransaction: Bool = true) -> [LintFinding] {
        PostgresLint.findings(in: Array(text.utf8), insideTransaction: insideTransaction)
    }

    /// The 1-based lines that have findings.
    private func lines(_ text: String, insideTransaction: Bool = true) -> [Int] {
        findings(text, insideTransaction: insideTransaction).map(\.line)
    }

    func testMetaCommandsOtherThanRestrictAreReported() {
        let text = "\\restrict K\nSELECT 1;\n\\connect other\n\\set x 1\n\\unrestrict K\n"
        let found = findings(text)
        XCTAssertEqual(found.map(\.line), [3, 4])
        XCTAssertEqual(found.first?.message,
                       "psql meta-command \\connect is not SQL; Strata runs files with libpq, not psql — remove it")
        XCTAssertTrue(found.last?.message.contains("\\set") ?? false)
        XCTAssertTrue(findings("\\copy t from stdin\n1\n\\.\n").first?.message.contains("COPY … FROM STDIN") ?? false)
    }

    func testStatementsRefusedInATransactionBlockAreReportedOnlyInTransactionalFiles() {
        let refused = [
            "CREATE INDEX CONCURRENTLY i ON t (a)",
            "CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS i ON t (a)",
            "DROP INDEX CONCURRENTLY i",
            "REINDEX TABLE CONCURRENTLY t",
            "REINDEX (CONCURRENTLY, VERBOSE) INDEX i",
            "REINDEX SCHEMA public",
            "REINDEX DATABASE app",
            "VACUUM",
            "vacuum (analyze) t",
            "CREATE DATABASE other",
            "DROP DATABASE IF EXISTS other",
            "CREATE TABLESPACE fast LOCATION '/ssd'",
            "DROP TABLESPACE fast",
            "ALTER SYSTEM SET work_mem = '64MB'",
            "ALTER DATABASE app SET TABLESPACE fast",
            "CLUSTER",
            "CLUSTER VERBOSE",
            "DISCARD ALL",
            "ALTER TABLE parent DETACH PARTITION child CONCURRENTLY",
            "CREATE SUBSCRIPTION s CONNECTION 'host=a' PUBLICATION p",
        ]
        for statement in refused {
            let found = findings("SELECT 1;\n" + statement + ";\n")
            XCTAssertEqual(found.map(\.line), [2], statement)
            XCTAssertTrue(found.first?.message.contains("cannot run inside a transaction block") ?? false, statement)
            XCTAssertTrue(found.first?.message.contains("transaction=\"none\"") ?? false, statement)
            XCTAssertEqual(lines(statement, insideTransaction: false), [], statement)
        }
        let allowed = [
            "ALTER TYPE mood ADD VALUE 'meh'", // allowed in a transaction block since PostgreSQL 12
            "CREATE INDEX i ON t (a)",
            "REINDEX TABLE t",
            "REINDEX (CONCURRENTLY false) TABLE t",
            "CLUSTER t USING i",
            "CLUSTER (VERBOSE) t",
            "ANALYZE t",
            "ALTER DATABASE app SET work_mem = '8MB'",
            "DISCARD PLANS",
            "REFRESH MATERIALIZED VIEW CONCURRENTLY v",
            "CREATE SUBSCRIPTION s CONNECTION 'host=a' PUBLICATION p WITH (create_slot = false)",
            "SELECT 'VACUUM'",
            "-- VACUUM\nSELECT 1",
            "COMMENT ON TABLE t IS 'CREATE DATABASE x'",
        ]
        for statement in allowed { XCTAssertEqual(lines(statement + ";"), [], statement) }
    }

    func testTransactionControlIsReportedInEveryFile() {
        let control = [
            "BEGIN", "BEGIN ISOLATION LEVEL SERIALIZABLE", "START TRANSACTION", "COMMIT", "COMMIT AND CHAIN", "END",
            "ROLLBACK", "ABORT", "SAVEPOINT s", "RELEASE SAVEPOINT s", "RELEASE s", "ROLLBACK TO SAVEPOINT s",
            "ROLLBACK WORK TO s", "PREPARE TRANSACTION 'x'", "COMMIT PREPARED 'x'", "ROLLBACK PREPARED 'x'",
        ]
        for statement in control {
            for inside in [true, false] {
                XCTAssertEqual(lines("SELECT 1;\n  " + statement + ";", insideTransaction: inside), [2], "\(statement), inside \(inside)")
            }
        }
        XCTAssertTrue(findings("COMMIT;").first?.message.contains("breaking all-or-nothing") ?? false)
        XCTAssertTrue(findings("COMMIT;", insideTransaction: false).first?.message.contains("commits on its own") ?? false)
        XCTAssertTrue(findings("BEGIN;", insideTransaction: false).first?.message.contains("a file of their own") ?? false)
        XCTAssertTrue(findings("SAVEPOINT a;").first?.message.contains("first failing statement") ?? false)

        let notControl = """
            CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; END;
            CREATE OR REPLACE PROCEDURE p() LANGUAGE sql BEGIN ATOMIC COMMIT; END;
            DO $$ BEGIN PERFORM 1; COMMIT; END $$;
            PREPARE q AS SELECT 1;
            SELECT 'COMMIT'; -- ROLLBACK;
            /* BEGIN; */ SELECT "end" FROM t;
            """
        XCTAssertEqual(findings(notControl), [])
    }

    func testChangesToTheHistorysGuardAreReported() {
        for statement in [
            "DROP TRIGGER strata_history_guard ON public.something_else",
            "DROP FUNCTION IF EXISTS public.strata_history_guard() CASCADE",
            "ALTER FUNCTION \"strata_history_guard\"() RENAME TO off",
            "CREATE OR REPLACE FUNCTION Strata_History_Guard() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$",
            "ALTER TRIGGER strata_history_guard_truncate ON x RENAME TO y",
        ] {
            let found = findings("SELECT 1;\n" + statement + ";")
            XCTAssertEqual(found.map(\.line), [2], statement)
            XCTAssertTrue(found.first?.message.contains("strata_history's guard") ?? false, statement)
            XCTAssertEqual(lines(statement + ";", insideTransaction: false), [1], "\(statement): in every file")
        }
        XCTAssertEqual(findings("SELECT 'strata_history_guard'; CREATE TABLE strata_history_guarded_not (x int);"), [],
                       "a string, or a name that only starts alike, is not the guard")
    }

    func testWritesToTheHistoryTableAreReported() {
        let writes: [(String, String)] = [
            ("INSERT INTO strata_history VALUES (1)", "writes to"),
            ("insert into PUBLIC.Strata_History (kind) VALUES ('x')", "writes to"),
            ("UPDATE \"strata_history\" SET state = 'applied'", "writes to"),
            ("UPDATE ONLY public.\"strata_history\" SET state = 'applied'", "writes to"),
            ("DELETE FROM app.public.strata_history", "writes to"),
            ("DELETE FROM ONLY strata_history WHERE true", "writes to"),
            ("MERGE INTO strata_history h USING x ON true WHEN MATCHED THEN DELETE", "writes to"),
            ("WITH d AS (DELETE FROM strata_history RETURNING *) SELECT * FROM d", "writes to"),
            ("COPY strata_history FROM '/tmp/h.csv'", "writes to"),
            ("TRUNCATE a, strata_history CASCADE", "truncates"),
            ("TRUNCATE TABLE ONLY public.strata_history", "truncates"),
            ("DROP TABLE IF EXISTS other, strata_history", "drops"),
            ("ALTER TABLE IF EXISTS ONLY strata_history ADD COLUMN x int", "alters"),
            ("ALTER TABLE old RENAME TO strata_history", "creates another"),
            ("CREATE TABLE IF NOT EXISTS strata_history (x int)", "creates another"),
            ("CREATE OR REPLACE TEMP VIEW strata_history AS SELECT 1", "creates another"),
            ("CREATE TRIGGER t BEFORE INSERT ON strata_history FOR EACH ROW EXECUTE FUNCTION f()", "puts a trigger on"),
            ("CREATE UNIQUE INDEX i ON strata_history (identity)", "indexes"),
            ("CREATE FUNCTION f() RETURNS void LANGUAGE sql BEGIN ATOMIC DELETE FROM strata_history; END", "writes to"),
        ]
        for (statement, verb) in writes {
            let found = findings("SELECT 1;\n" + statement + ";")
            XCTAssertEqual(found.map(\.line), [2], statement)
            XCTAssertEqual(found.first?.message, HistoryRecord.refusal(verb: verb, table: "strata_history"), statement)
            XCTAssertEqual(lines(statement + ";", insideTransaction: false), [1], "\(statement): in every file")
        }
        let reads = [
            "SELECT * FROM strata_history",
            "INSERT INTO log SELECT identity FROM public.strata_history",
            "UPDATE t SET a = strata_history.x FROM strata_history",
            "DELETE FROM t USING strata_history h WHERE t.id = h.id",
            "INSERT INTO \"STRATA_HISTORY\" VALUES (1)", // another table: quoted names keep their case
            "INSERT INTO strata_history_archive VALUES (1)",
            "COPY strata_history TO STDOUT",
            "CREATE TABLE t (id int REFERENCES strata_history)",
            "SELECT 'DELETE FROM strata_history'",
            "DO $$ BEGIN DELETE FROM t; END $$",
            "ALTER TABLE strata_history_old RENAME COLUMN a TO strata_history",
        ]
        for statement in reads { XCTAssertEqual(lines(statement + ";"), [], statement) }
    }

    func testCopyDataIsNotReadAsSQLAndAMissingEndIsReported() {
        XCTAssertEqual(findings("COPY t FROM stdin;\nCOMMIT;\n\\connect x\n\\.\nSELECT 1;\n"), [])
        let found = findings("SELECT 1;\nCOPY t FROM stdin;\n1\n2\n")
        XCTAssertEqual(found.map { [$0.line, $0.column] }, [[2, 1]])
        XCTAssertTrue(found.first?.message.contains("a line holding only \\.") ?? false)
        XCTAssertEqual(findings("COPY strata_history FROM stdin;\n1\n\\.\n").map(\.line), [1])
    }

    func testUnterminatedTextNULAndInvalidUTF8AreFindingsAtTheirPlace() {
        let open = findings("SELECT 1;\nCOMMIT;\nSELECT $f$ never closed;\n")
        XCTAssertEqual(open.map { [$0.line, $0.column] }, [[2, 1], [3, 8]])
        XCTAssertTrue(open.last?.message.contains("ends inside a dollar-quoted string ($f$)") ?? false)
        let nul = PostgresLint.findings(in: Array("SELECT 1;\n  \0SELECT 2;".utf8), insideTransaction: true)
        XCTAssertEqual(nul.map { [$0.line, $0.column] }, [[2, 3]])
        XCTAssertTrue(nul.first?.message.contains("NUL byte") ?? false)
        let latin1 = PostgresLint.findings(in: Array("SELECT 'caf".utf8) + [0xE9] + Array("';".utf8), insideTransaction: true)
        XCTAssertEqual(latin1.map { [$0.line, $0.column] }, [[1, 12]])
    }

    func testFindingsComeInTextOrder() {
        let text = """
            \\connect db
            VACUUM;
            SELECT 1
              \\gset
            ;
            DELETE FROM strata_history;
            SET standard_conforming_strings = off;
            SET standard_conforming_strings TO on;
            ALTER DATABASE app SET standard_conforming_strings = 'off';
            """
        let found = findings(text)
        XCTAssertEqual(found.map { [$0.line, $0.column] }, [[1, 1], [2, 1], [4, 3], [6, 1], [7, 1], [9, 1]])
        XCTAssertTrue(found[2].message.contains("backslash outside a string"))
        XCTAssertTrue(found[4].message.contains("standard_conforming_strings off"))
    }
}
