import Foundation
import Strata
@testable import StrataCore
@testable import StrataSQLite
import XCTest

/// Hostile review 9: `migrate --backup`, `restore` and `diff` / `SchemaSnapshot` / `SchemaDifference`, as merged to
/// main at e689863. Each test reproduces one finding and fails until it is fixed; the library is not changed here.
///
/// Findings:
/// 1. (critical) `testDiffTellsADoubleQuotedStringFromTheBareWordItUnquotesTo`: `SchemaText.normalized` writes a
///    double-quoted token that is one plain lower-case non-keyword word bare (`"true"` → `true`), as if it were
///    always a name. SQLite reads a double-quoted token that names no column as a string literal (DQS, on by default),
///    so `DEFAULT "true"` (the text 'true') and `DEFAULT true` (the integer 1) normalise the same and `diff` says the
///    schemas are equal. Same for a trigger body `VALUES ("true")` vs `VALUES (true)`, a CHECK or a partial index.
/// 2. (high) `testDiffTellsABlobLiteralFromAColumnWithAnAlias`: the normaliser puts a space between every word and
///    the string after it, so the blob literal `x'41'` and the column `x` with the alias `'41'` (`x '41'`) are both
///    `x '41'`: two views returning different columns and values compare equal.
/// 3. (medium) `testATableChangeInAColumnDoesNotHideItsOtherChanges`: `SchemaDifference` lists a table's (and an
///    index's) `definition` only when no column/constraint (index: columns/unique) aspect differs, so a table that
///    also became WITHOUT ROWID / STRICT / got a CHECK literal changed shows only its column change, and an index whose
///    partial WHERE changed along with its columns shows only the columns: the diff hides real differences. CHECK
///    constraints are also matched by the case-folded key, so a CHECK differing only in a literal's case is never a
///    constraint change.
/// 4. (medium) `testTheDiffCommandSaysWhichConstraintWasAddedOrDropped`: `strata diff`'s text output prints a
///    constraint change as `added    constraint on t` with no constraint text: `Diff.line` omits the definition when it
///    equals the change's name, and a constraint's name is its definition. The operator sees that something changed
///    on a table but not what (JSON has it).
final class HostileReview9Tests: XCTestCase {
    /// The difference from a database built by `old` to one built by `new`, both SQLite in memory.
    private func sqliteDifference(_ old: String, _ new: String) throws -> SchemaDifference {
        let (a, b) = (try Database(), try Database())
        try a.executeScript(old)
        try b.executeScript(new)
        return try SchemaDifference(from: a.schemaSnapshot(), to: b.schemaSnapshot())
    }

    private func summary(_ difference: SchemaDifference) -> [String] {
        difference.changes.map { "\($0.kind) \($0.action.rawValue) \($0.table ?? "-") \($0.name) \($0.aspects.map(\.aspect))" }
    }

    // MARK: diff

    func testDiffTellsADoubleQuotedStringFromTheBareWordItUnquotesTo() throws {
        // SQLite itself: the two defaults are different values.
        let db = try Database()
        try db.executeScript("""
            CREATE TABLE quoted (flag DEFAULT "true"); CREATE TABLE bare (flag DEFAULT true);
            INSERT INTO quoted DEFAULT VALUES; INSERT INTO bare DEFAULT VALUES;
            """)
        XCTAssertEqual(try db.scalar("SELECT typeof(flag) FROM quoted", as: String.self), "text")
        XCTAssertEqual(try db.scalar("SELECT typeof(flag) FROM bare", as: String.self), "integer")

        let defaults = try sqliteDifference(#"CREATE TABLE t (flag DEFAULT "true");"#, "CREATE TABLE t (flag DEFAULT true);")
        XCTAssertFalse(defaults.isEmpty, "DEFAULT \"true\" (text) and DEFAULT true (integer 1) reported equal")

        let triggers = try sqliteDifference("""
            CREATE TABLE a (id); CREATE TABLE log (v);
            CREATE TRIGGER tr AFTER INSERT ON a BEGIN INSERT INTO log VALUES ("true"); END;
            """, """
            CREATE TABLE a (id); CREATE TABLE log (v);
            CREATE TRIGGER tr AFTER INSERT ON a BEGIN INSERT INTO log VALUES (true); END;
            """)
        XCTAssertFalse(triggers.isEmpty, "a trigger inserting 'true' and one inserting 1 reported equal")
    }

    func testDiffTellsABlobLiteralFromAColumnWithAnAlias() throws {
        let old = "CREATE TABLE t (x); CREATE VIEW v AS SELECT x'41' FROM t;"
        let new = "CREATE TABLE t (x); CREATE VIEW v AS SELECT x '41' FROM t;"
        // SQLite itself: the first view returns the blob X'41', the second the column x.
        let (a, b) = (try Database(), try Database())
        try a.executeScript(old + "INSERT INTO t VALUES ('column');")
        try b.executeScript(new + "INSERT INTO t VALUES ('column');")
        XCTAssertEqual(try a.rows("SELECT * FROM v", .none).map(\.values), [[.blob(Data("A".utf8))]])
        XCTAssertEqual(try b.rows("SELECT * FROM v", .none).map(\.values), [[.text("column")]])

        let difference = try sqliteDifference(old, new)
        XCTAssertFalse(difference.isEmpty, "a view of a blob literal and a view of a column reported equal")
    }

    func testATableChangeInAColumnDoesNotHideItsOtherChanges() throws {
        let table = try sqliteDifference(
            "CREATE TABLE t (id INTEGER PRIMARY KEY, kind TEXT CHECK (kind IN ('Book', 'Film')), n INTEGER);",
            "CREATE TABLE t (id INTEGER PRIMARY KEY, kind TEXT CHECK (kind IN ('book', 'film')), n TEXT) WITHOUT ROWID;")
        XCTAssertTrue(table.changes.contains { $0.kind == .table || $0.kind == .constraint },
                      "only the column's type is listed; the CHECK and WITHOUT ROWID changes are hidden: \(summary(table))")

        let index = try sqliteDifference(
            "CREATE TABLE t (a, b, c); CREATE INDEX i ON t (a) WHERE c = 'live';",
            "CREATE TABLE t (a, b, c); CREATE INDEX i ON t (a, b) WHERE c = 'dead';")
        XCTAssertTrue(index.changes.contains { $0.aspects.contains { $0.aspect == "definition" } },
                      "only the index's columns are listed; its WHERE changed from 'live' to 'dead': \(summary(index))")
    }

    func testTheDiffCommandSaysWhichConstraintWasAddedOrDropped() throws {
        let directory = try makeTemporaryDirectory(self)
        for (name, check) in [("a.sqlite", "price > 0"), ("b.sqlite", "price >= 0")] {
            let db = try Database(path: directory.appendingPathComponent(name).path)
            try db.executeScript("CREATE TABLE items (price INTEGER CHECK (\(check)));")
            db.close()
        }
        let diff = try runStrata(["diff", "--database", "a.sqlite", "--database", "b.sqlite"], in: directory)
        XCTAssertEqual(diff.status, 3, diff.stderr)
        XCTAssertTrue(diff.stdout.contains("price >= 0") && diff.stdout.contains("price > 0"),
                      "the lines do not say which constraint: \(diff.stdout)")
    }
}
