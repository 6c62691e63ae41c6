import Foundation
import XCTest
import Strata
@testable import StrataCore
@testable import StrataSQLite

/// Running SQL text: the whole text runs or the call fails naming the place, in linear time, from regular files only.
final class ScriptTests: XCTestCase {
    private func scriptFile(_ text: [UInt8]) throws -> String {
        let path = try makeTemporaryDirectory(self).appendingPathComponent("s.sql").path
        try Data(text).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// SQLite refuses `PRAGMA journal_mode = WAL` at once, without waiting the busy timeout, while another
    /// connection holds the write lock; the script runs it again until that lock is gone. The other connection lets
    /// go only after the pragma's first attempt has failed (seen by the trace hook), so without the retry the
    /// script fails every time.
    func testABusyStatementOutsideATransactionRunsAgainOnceTheLockIsFree() throws {
        let path = try makeTemporaryDirectory(self).appendingPathComponent("busy.sqlite").path
        let runner = try Database(path: path, configuration: Database.Configuration(busyTimeout: .seconds(60)))
        try runner.execute("CREATE TABLE t (x)")
        let held = DispatchSemaphore(value: 0)
        let attempted = DispatchSemaphore(value: 0)
        let released = DispatchSemaphore(value: 0)
        let holderError = Locked<String?>(nil)
        Thread.detachNewThread {
            do {
                let holder = try Database(path: path)
                try holder.execute("BEGIN IMMEDIATE")
                held.signal()
                _ = attempted.wait(timeout: .now() + 60)
                try holder.execute("COMMIT")
            } catch {
                holderError.set("\(error)")
                held.signal()
            }
            released.signal()
        }
        XCTAssertEqual(held.wait(timeout: .now() + 60), .success)
        runner.trace { event in if event.sql.hasPrefix("PRAGMA journal_mode") { attempted.signal() } }
        XCTAssertNoThrow(try runner.executeScript("PRAGMA journal_mode = WAL;"))
        runner.trace(nil)
        attempted.signal()   // the holder lets go in any case, so the test ends
        XCTAssertEqual(released.wait(timeout: .now() + 60), .success)
        XCTAssertNil(holderError.get())
        XCTAssertEqual(try runner.scalar("PRAGMA journal_mode", as: String.self), "wal")
    }

    /// Inside a transaction a busy statement is not repeated: SQLite may have rolled the transaction back.
    func testABusyStatementInsideATransactionFailsAtOnce() throws {
        let path = try makeTemporaryDirectory(self).appendingPathComponent("busy.sqlite").path
        let runner = try Database(path: path, configuration: Database.Configuration(busyTimeout: .seconds(2)))
        try runner.execute("CREATE TABLE t (x)")
        let holder = try Database(path: path)
        try holder.execute("BEGIN IMMEDIATE")
        defer { try? holder.execute("COMMIT") }
        let inserts = Locked(0)
        runner.trace { event in if event.sql.hasPrefix("INSERT") { inserts.update { $0 += 1 } } }
        // The INSERT wants the write lock while its transaction reads: SQLite refuses it at once (deadlock).
        let error = assertThrows(DatabaseError.self) {
            try runner.executeScript("BEGIN;\nSELECT count(*) FROM t;\nINSERT INTO t VALUES (1);\nCOMMIT;")
        }
        runner.trace(nil)
        XCTAssertEqual(error?.kind, .busy)
        XCTAssertEqual(error?.line, 3)
        XCTAssertEqual(inserts.get(), 1, "the INSERT was run again inside its transaction")
        _ = try? runner.execute("ROLLBACK")
    }

    func testANULByteIsAnErrorNamingItsPlaceNotASilentEnd() throws {
        let text = Array("CREATE TABLE a (x);\n  \0INSERT INTO a VALUES (1);\n".utf8)
        let db = try Database()
        let error = assertThrows(DatabaseError.self) { try db.executeScript(String(decoding: text, as: UTF8.self)) }
        XCTAssertEqual([error?.line, error?.column], [2, 3])
        XCTAssertTrue(error?.message.contains("NUL byte") ?? false, String(describing: error))
        let path = try scriptFile(text)
        for chunk in [1, 3, 7, 1 << 20] {
            let db = try Database()
            let error = assertThrows(DatabaseError.self) { try db.executeScript(contentsOfFile: path, chunkSize: chunk) }
            XCTAssertEqual([error?.line, error?.column], [2, 3], "chunk \(chunk)")
            let rows = try db.tableExists("a") ? try db.scalar("SELECT count(*) FROM a", as: Int.self) : 0
            XCTAssertEqual(rows, 0, "chunk \(chunk): nothing after the NUL ran")
        }
        let inside = Array("INSERT INTO t VALUES ('a".utf8) + [0] + Array("b');".utf8)
        XCTAssertEqual(SQLLint.findings(in: inside).map(\.line), [1], "validate reports it too")
    }

    func testTextEndingInsideALiteralOrCommentIsAnErrorAtItsStart() throws {
        // Statements before the open literal run (a migration's transaction rolls them back); none after it.
        let cases: [(String, [Int], String, Int)] = [
            ("CREATE TABLE a (x);\nINSERT INTO a VALUES ('never closed);\nINSERT INTO a VALUES (2);", [2, 23], "string", 0),
            ("CREATE TABLE a (x);\nINSERT INTO a VALUES (1); /* open\nINSERT INTO a VALUES (2);", [2, 27], "/* comment", 1),
            ("CREATE TABLE a (x);\n INSERT INTO \"a VALUES (3);", [2, 14], "quoted identifier", 0),
            ("CREATE TABLE a (x);\nSELECT [x FROM a;", [2, 8], "[identifier]", 0),
        ]
        for (script, place, what, rows) in cases {
            for chunk in [2, 1 << 20] {
                let db = try Database()
                let error = assertThrows(DatabaseError.self) {
                    try db.executeScript(contentsOfFile: try scriptFile(Array(script.utf8)), chunkSize: chunk)
                }
                XCTAssertEqual([error?.line, error?.column], place, script)
                XCTAssertTrue(error?.message.contains("ends inside a \(what)") ?? false, String(describing: error))
                XCTAssertEqual(try db.scalar("SELECT count(*) FROM a", as: Int.self), rows, "\(script): nothing after it ran")
            }
            XCTAssertEqual(SQLLint.findings(in: script).map { [$0.line, $0.column] }, [place], script)
        }
    }

    func testOnlyRegularFilesAreRead() throws {
        let dir = try makeTemporaryDirectory(self)
        let fifo = dir.appendingPathComponent("fifo.sql").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let db = try Database()
        for (path, kind) in [(fifo, "a FIFO"), (dir.path, "a directory"), ("/dev/zero", "a character device")] {
            let error = assertThrows(DatabaseError.self) { try db.executeScript(contentsOfFile: path) }
            XCTAssertTrue(error?.message.contains("it is \(kind), not a regular file") ?? false, String(describing: error))
            XCTAssertThrowsError(try Checksum.ofFile(atPath: path, content: .sql), "a checksum never reads \(kind) either")
        }
    }

    func testALongStatementWithSemicolonsInItsStringsRunsOnceInOnePass() throws {
        // 3 MB: the old chunk-by-chunk re-preparation took minutes on this; a single pass takes well under a second.
        let value = String(repeating: "a;b'';c", count: 3 << 17)
        let script = "CREATE TABLE t (v);\nINSERT INTO t VALUES ('" + value + "');\nSELECT 1;\n"
        let path = try scriptFile(Array(script.utf8))
        let db = try Database()
        var chunks = 0
        try db.executeScript(contentsOfFile: path, chunkSize: 1 << 16, progress: { _, _ in chunks += 1 })
        XCTAssertGreaterThan(chunks, 40)
        XCTAssertEqual(try db.scalar("SELECT length(v) FROM t", as: Int.self), 6 * (3 << 17), "a doubled quote is one")
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM t", as: Int.self), 1)
    }

    func testTriggerBodiesAndWordsThatLookLikeKeywordsSplitAsSQLiteSplitsThem() throws {
        let script = """
            CREATE TABLE t ("begin" INT, "end" INT, [trigger] INT);
            CREATE TABLE log (b, e);
            CREATE TEMPORARY TRIGGER tr AFTER INSERT ON t BEGIN
              INSERT INTO log (b, e) VALUES (NEW."begin", CASE WHEN NEW."end" > 1 THEN 'x;END;' ELSE NEW."end" END);
            END;
            INSERT INTO t VALUES (1, 2, 3); -- end;
            """
        let db = try Database()
        try db.executeScript(script)
        XCTAssertEqual(try db.query("SELECT b, e FROM log").all().map { [$0[0], $0[1]] }, [[.integer(1), .text("x;END;")]])
        XCTAssertEqual(SQLLint.findings(in: script), [], "no statement here ends a transaction")
        let walkAround = "CREATE TABLE trigger (begin INT);\nCOMMIT;\n"
        XCTAssertEqual(SQLLint.findings(in: walkAround).map(\.line), [2], "CREATE TABLE trigger is not a trigger: COMMIT is seen")
    }

    func testScannerAgreesWithSQLiteAtEveryChunkBoundary() throws {
        // Every split point of a text full of near-misses (keywords in strings, `-` and `/` operators, doubled
        // quotes, a trigger) gives the same statements as the whole text.
        let script = "SELECT 1-1, 4/2, 'it''s; fine', \"a\"\"b\";\nCREATE TRIGGER x AFTER INSERT ON t BEGIN SELECT 1; END;\n/* ; */ SELECT `q;`--;\n"
        let bytes = Array(script.utf8)
        func boundaries(_ parts: [ArraySlice<UInt8>]) -> [Range<Int>] {
            var scanner = SQLScanner()
            var found: [Range<Int>] = []
            var base = 0
            for part in parts {
                let array = Array(part)
                array.withUnsafeBufferPointer { buffer in
                    var index = 0
                    while index < buffer.count {
                        if let range = scanner.nextStatement(in: buffer, base: base, index: &index) { found.append(range) }
                    }
                }
                base += array.count
            }
            if let last = scanner.finish(at: base) { found.append(last) }
            return found
        }
        let whole = boundaries([bytes[...]])
        XCTAssertEqual(whole.map { String(decoding: bytes[$0], as: UTF8.self) }, [
            "SELECT 1-1, 4/2, 'it''s; fine', \"a\"\"b\";",
            "CREATE TRIGGER x AFTER INSERT ON t BEGIN SELECT 1; END;",
            "SELECT `q;`--;\n",
        ])
        for split in 0...bytes.count {
            XCTAssertEqual(boundaries([bytes[..<split], bytes[split...]]), whole, "split at \(split)")
        }
    }

    // MARK: executeScript(_:onRow:)

    func testEachStatementsRowsReachTheCallbackWithItsColumnNames() throws {
        let db = try Database()
        var seen: [String] = []
        try db.executeScript("""
            CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT);
            INSERT INTO t (name) VALUES ('a'), ('b');
            SELECT id, name FROM t ORDER BY id;
            UPDATE t SET name = upper(name) WHERE id = 2;
            SELECT count(*) AS total FROM t;
            """) { row in
            seen.append(row.columnNames.joined(separator: ",") + "=" + row.values.map { "\($0)" }.joined(separator: ","))
            return .proceed
        }
        XCTAssertEqual(seen.count, 3, "\(seen)")
        XCTAssertEqual(seen.first?.hasPrefix("id,name="), true)
        XCTAssertEqual(seen.last?.hasPrefix("total="), true)
        XCTAssertEqual(try db.scalar("SELECT name FROM t WHERE id = 2", as: String.self), "B", "statements without rows ran too")
    }

    func testRowsReadByNameAndAStatementWithoutRowsCallsNothing() throws {
        let db = try Database()
        var names: [String] = []
        var totals: [Int] = []
        try db.executeScript("CREATE TABLE t (name TEXT); INSERT INTO t VALUES ('x'), ('y'); SELECT name FROM t; SELECT count(*) AS n FROM t;") { row in
            if row.columnNames == ["name"] { names.append(try row.get("NAME")) } else { totals.append(try row.get("n")) }
            return .proceed
        }
        XCTAssertEqual(names, ["x", "y"])
        XCTAssertEqual(totals, [2])
    }

    func testStopEndsTheScriptWithoutAnErrorAndLaterStatementsDoNotRun() throws {
        let db = try Database()
        try db.execute("CREATE TABLE t (x)")
        var rows = 0
        try db.executeScript("""
            WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100) SELECT x FROM c;
            INSERT INTO t VALUES (1);
            """) { row in
            rows += 1
            return try row.get(0, as: Int.self) == 3 ? .stop : .proceed
        }
        XCTAssertEqual(rows, 3)
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM t", as: Int.self), 0, "the INSERT after the stop did not run")
        XCTAssertEqual(try db.scalar("SELECT 1", as: Int.self), 1, "the connection is free for the next statement")
    }

    func testAThrowFromTheCallbackEndsTheScriptWithThatError() throws {
        struct Enough: Error, Equatable {}
        let db = try Database()
        try db.execute("CREATE TABLE t (x)")
        XCTAssertEqual(assertThrows(Enough.self) {
            try db.executeScript("SELECT 1; INSERT INTO t VALUES (1);") { _ in throw Enough() }
        }, Enough())
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM t", as: Int.self), 0)
        let error = assertThrows(DatabaseError.self) {
            try db.executeScript("SELECT 1;\n  SELECT 'not a number';") { row in
                _ = try row.get(0, as: Int.self)
                return .proceed
            }
        }
        XCTAssertEqual([error?.line, error?.column], [2, 3], "a conversion error names the statement that returned the row")
    }

    func testASQLErrorNamesTheStatementsLineAfterRowsWereHandedOver() throws {
        let db = try Database()
        var rows = 0
        let error = assertThrows(DatabaseError.self) {
            try db.executeScript("SELECT 1;\nSELECT 2;\n\nSELECT missing FROM nowhere;\nSELECT 4;") { _ in
                rows += 1
                return .proceed
            }
        }
        XCTAssertEqual(rows, 2)
        XCTAssertEqual(error?.kind, .syntax)
        XCTAssertEqual([error?.line, error?.column], [4, 1])
        XCTAssertTrue(error?.message.contains("nowhere") ?? false, String(describing: error))
    }
}
