import Foundation
import Strata
@testable import StrataCore
@testable import StrataPostgres
import XCTest

/// Drift on PostgreSQL is judged by PostgreSQL's lexical rules (checksum version 3): a line ending inside a dollar
/// quote, or inside a string that follows an `E'…'` constant, is data, and an editor's line endings outside
/// literals (COPY data and comments included) are not drift. Records written under version 2 still compare as made.
final class PostgresChecksumTests: XCTestCase {
    /// A project on the test server with `files` under its root and `2_v.sql` (and `3_none.sql` when given) in
    /// the manifest, `3_none.sql` marked `transaction="none"`.
    func project(_ files: [String: String]) throws -> Project {
        _ = try PostgresServer.shared()
        let none = files["sql/3_none.sql"] == nil ? "" : #"<migration file="3_none.sql" transaction="none"/>"#
        return try Project(self, backend: .postgres, manifestBody: #"<migrations directory="sql">\#(none)</migrations>"#,
                           files: files)
    }

    /// Migrates the project, checks what the literals stored, then writes `edited` over `file`: `status` must
    /// say that file drifted and `migrate` must refuse for drift.
    func assertEditIsDrift(_ files: [String: String], stored: [String], edit file: String, to edited: String,
                           line: UInt = #line) throws {
        let project = try project(files)
        let migrate = try project.strataOnBackend(["migrate"])
        XCTAssertEqual(migrate.status, 0, migrate.stderr, line: line)
        XCTAssertEqual(try project.connection().rows("SELECT v FROM t ORDER BY v COLLATE \"C\"").map { try $0.get(0, as: String.self) },
                       stored, line: line)
        XCTAssertEqual(try project.connection().scalar("SELECT DISTINCT checksum_version FROM strata_history", as: Int.self),
                       3, line: line)
        try project.file(file, edited)
        let id = String(file.dropFirst("sql/".count))
        let status = try project.migrator().status()
        XCTAssertEqual(status.first { $0.id == id }?.state, .drifted, "the value a database built from the file stores changed", line: line)
        let command = try project.strataOnBackend(["status"])
        XCTAssertEqual(command.status, 3, command.stdout + command.stderr, line: line)
        XCTAssertTrue(command.stdout.contains("drifted"), command.stdout, line: line)
        let refused = try project.strataOnBackend(["migrate", "--format", "json"])
        XCTAssertEqual(refused.status, 3, refused.stderr, line: line)
        XCTAssertTrue(refused.stdout.contains(#""reason":"drift""#), refused.stdout, line: line)
    }

    func testALineEndingInsideADollarQuoteIsData() throws {
        let original = "INSERT INTO t VALUES ($$line1\r\nline2$$);\r\n"
        try assertEditIsDrift(["sql/1_t.sql": "CREATE TABLE t (v text);", "sql/2_v.sql": original],
                              stored: ["line1\r\nline2"], edit: "sql/2_v.sql", to: "INSERT INTO t VALUES ($$line1\nline2$$);\r\n")
        // The same in a function body, where SQLite's rules see the quote in `it's` open a string.
        let function = "CREATE FUNCTION f() RETURNS text LANGUAGE sql AS $body$ SELECT 'it''s' $body$;\r\n"
            + "INSERT INTO t VALUES ($q$it's$q$), ('a\r\nb');\r\n"
        try assertEditIsDrift(["sql/1_t.sql": "CREATE TABLE t (v text);", "sql/2_v.sql": function],
                              stored: ["a\r\nb", "it's"], edit: "sql/2_v.sql",
                              to: function.replacingOccurrences(of: "'a\r\nb'", with: "'a\nb'"))
    }

    func testALineEndingInAStringAfterAnEscapeStringIsData() throws {
        // SQLite's rules end `E'it\'s'` at `\'` and read `s'…('` as a string, so `'a\r\nb'` looked like layout.
        let original = "INSERT INTO t VALUES (E'it\\'s');\r\nINSERT INTO t VALUES ('a\r\nb');\r\n"
        try assertEditIsDrift(["sql/1_t.sql": "CREATE TABLE t (v text);", "sql/2_v.sql": original],
                              stored: ["a\r\nb", "it's"], edit: "sql/2_v.sql",
                              to: "INSERT INTO t VALUES (E'it\\'s');\r\nINSERT INTO t VALUES ('a\nb');\r\n")
    }

    func testATransactionNoneFileIsRecordedUnderPostgreSQLsRulesToo() throws {
        // The claim's checksum (read before the run) and the final one (hashed as it ran) both.
        let none = "INSERT INTO t VALUES ($$x\r\ny$$);\r\n"
        try assertEditIsDrift(["sql/1_t.sql": "CREATE TABLE t (v text);", "sql/2_v.sql": "SELECT 1;", "sql/3_none.sql": none],
                              stored: ["x\r\ny"], edit: "sql/3_none.sql", to: "INSERT INTO t VALUES ($$x\ny$$);\r\n")
    }

    /// A file whose line endings are CRLF everywhere, literals, a COPY block whose data holds a quote, and a
    /// comment holding one.
    static let crlfFile = "-- it's the schema\r\n"
        + "CREATE FUNCTION f() RETURNS text LANGUAGE sql AS $$ SELECT 'a\r\nb' $$;\r\n"
        + "INSERT INTO t VALUES (E'it\\'s'), ($q$x\r\ny$q$), (f());\r\n"
        + "COPY t (v) FROM stdin;\r\n"
        + "O'Brien\r\n"
        + "\\.\r\n"
        + "/* don't */ INSERT INTO t VALUES ('c\r\nd'), (U&'e\r\nf'), (E'g\\\r\nh');\r\n"

    func testAnEditorChangingLineEndingsOutsideLiteralsIsNotDrift() throws {
        let project = try project(["sql/1_t.sql": "CREATE TABLE t (v text);", "sql/2_v.sql": Self.crlfFile])
        XCTAssertNil(try project.migrator().migrate().failure)
        XCTAssertEqual(try project.connection().rows("SELECT v FROM t ORDER BY v COLLATE \"C\"").map { try $0.get(0, as: String.self) },
                       ["O'Brien", "a\r\nb", "c\r\nd", "e\r\nf", "g\r\nh", "it's", "x\r\ny"])
        // What an editor does: a BOM, and LF for every line ending that is not inside a literal.
        let edited = "\u{FEFF}-- it's the schema\n"
            + "CREATE FUNCTION f() RETURNS text LANGUAGE sql AS $$ SELECT 'a\r\nb' $$;\n"
            + "INSERT INTO t VALUES (E'it\\'s'), ($q$x\r\ny$q$), (f());\n"
            + "COPY t (v) FROM stdin;\n"
            + "O'Brien\n"
            + "\\.\n"
            + "/* don't */ INSERT INTO t VALUES ('c\r\nd'), (U&'e\r\nf'), (E'g\\\r\nh');\n"
        try project.file("sql/2_v.sql", edited)
        XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .applied])
        XCTAssertEqual(try project.strataOnBackend(["status"]).status, 0)
        // And the literals are still data: each of them changed is drift.
        for literal in ["'a\r\nb'", "$q$x\r\ny$q$", "'c\r\nd'", "U&'e\r\nf'", "E'g\\\r\nh'"] {
            try project.file("sql/2_v.sql", edited.replacingOccurrences(of: literal, with: literal.replacingOccurrences(of: "\r\n", with: "\n")))
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .drifted], literal)
        }
    }

    func testAVersionTwoRecordOfAnUnchangedFileStillReadsApplied() throws {
        let project = try project(["sql/1_t.sql": "CREATE TABLE t (v text);", "sql/2_v.sql": Self.crlfFile])
        XCTAssertNil(try project.migrator().migrate().failure)
        // As the Strata before version 3 recorded it on PostgreSQL: SQLite's rules, version 2.
        let db = try project.connection()
        let path = project.root.appendingPathComponent("sql/2_v.sql").path
        let v2 = try Checksum.ofFile(atPath: path, content: .sql, version: 2)
        XCTAssertNotEqual(v2, try Checksum.ofFile(atPath: path, content: .sql, version: 3))
        let recorded = try XCTUnwrap(try db.history.record(kind: .migration, identity: "2_v.sql"))
        try db.history.write(recorded.with(checksum: v2, version: 2))
        XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .applied])
        XCTAssertEqual(try project.migrator().migrate().applied, [], "nothing runs again")
        try project.file("sql/2_v.sql", Self.crlfFile.replacingOccurrences(of: "O'Brien", with: "O'Neil"))
        XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .drifted])
        XCTAssertEqual(try project.migrator().repair().realigned, ["2_v.sql"])
        XCTAssertEqual(try db.scalar("SELECT checksum_version FROM strata_history WHERE identity = '2_v.sql'", as: Int.self),
                       3, "repair re-records under PostgreSQL's version")
        XCTAssertEqual(try project.migrator().status().map(\.state), [.applied, .applied])
    }
}
