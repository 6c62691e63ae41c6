import Foundation
import Strata
@testable import StrataCore
@testable import StrataPostgres
@testable import StrataSQLite
import XCTest

/// `SchemaSnapshot` and `SchemaDifference` on each backend: the four differences the issue names (a column added,
/// an index dropped, a view and a trigger changed) and nothing else, nothing between two databases built by the same
/// manifest, formatting that does not count, the aspects a changed column names, snapshots read inside a
/// transaction (what `rehearse` reads), and snapshot files. The command is tested in `DiffCommandTests`.
final class SchemaDiffTests: XCTestCase {
    /// The first migration, and the second, which adds a column, drops an index and changes a view and a trigger.
    struct Scenario: Sendable {
        let first: String
        let second: String
        /// How the backend's snapshot names a table (`books`, `public.books`).
        let qualified: @Sendable (String) -> String
    }

    static let sqlite = Scenario(
        first: """
            CREATE TABLE authors (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
            CREATE TABLE books (id INTEGER PRIMARY KEY, title TEXT NOT NULL, author_id INTEGER REFERENCES authors (id));
            CREATE INDEX books_title ON books (title);
            CREATE VIEW titles AS SELECT title FROM books;
            CREATE TRIGGER books_trim AFTER INSERT ON books BEGIN UPDATE books SET title = trim(title) WHERE id = new.id; END;
            """,
        second: """
            ALTER TABLE books ADD COLUMN isbn TEXT;
            DROP INDEX books_title;
            DROP VIEW titles;
            CREATE VIEW titles AS SELECT title, isbn FROM books;
            DROP TRIGGER books_trim;
            CREATE TRIGGER books_trim AFTER UPDATE OF title ON books BEGIN UPDATE books SET title = trim(title) WHERE id = new.id; END;
            """,
        qualified: { $0 })

    static let postgres = Scenario(
        first: """
            CREATE TABLE authors (id integer PRIMARY KEY, name text NOT NULL);
            CREATE TABLE books (id integer PRIMARY KEY, title text NOT NULL, author_id integer REFERENCES authors (id));
            CREATE INDEX books_title ON books (title);
            CREATE VIEW titles AS SELECT title FROM books;
            CREATE FUNCTION trim_title() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.title := trim(NEW.title); RETURN NEW; END $$;
            CREATE TRIGGER books_trim BEFORE INSERT ON books FOR EACH ROW EXECUTE FUNCTION trim_title();
            """,
        second: """
            ALTER TABLE books ADD COLUMN isbn text;
            DROP INDEX books_title;
            CREATE OR REPLACE VIEW titles AS SELECT title, isbn FROM books;
            DROP TRIGGER books_trim ON books;
            CREATE TRIGGER books_trim BEFORE INSERT OR UPDATE ON books FOR EACH ROW EXECUTE FUNCTION trim_title();
            """,
        qualified: { "public." + $0 })

    /// A database built by a manifest of `migrations` (file name → SQL), migrated with the command.
    func database(_ backend: TestBackend, _ migrations: [String: String]) throws -> Project {
        let project = try Project(self, backend: backend, files: migrations.reduce(into: [:]) { $0["sql/" + $1.key] = $1.value })
        let migrate = try project.strataOnBackend(["migrate"])
        XCTAssertEqual(migrate.status, 0, migrate.stderr)
        return project
    }

    /// (kind, action, table, name) of each change, for comparing with what a test expects.
    func summary(_ difference: SchemaDifference) -> [String] {
        difference.changes.map { "\($0.kind) \($0.action.rawValue) \($0.table ?? "-") \($0.name)" }
    }

    func checkTheFourDifferences(_ backend: TestBackend, _ scenario: Scenario) throws {
        let before = try database(backend, ["001_books.sql": scenario.first])
        let after = try database(backend, ["001_books.sql": scenario.first, "002_change.sql": scenario.second])
        let (old, new) = (try before.connection().schemaSnapshot(), try after.connection().schemaSnapshot())
        let books = scenario.qualified("books")
        let difference = try SchemaDifference(from: old, to: new)
        XCTAssertEqual(summary(difference), [
            "column added \(books) isbn",
            "index dropped \(books) \(scenario.qualified("books_title"))",
            "view changed - \(scenario.qualified("titles"))",
            "trigger changed \(books) books_trim",
        ])
        let column = try XCTUnwrap(difference.changes.first)
        XCTAssertEqual(column.definition, backend.kind == .sqlite ? "isbn TEXT" : "isbn text")
        let view = try XCTUnwrap(difference.changes.first { $0.kind == .view })
        XCTAssertEqual(view.aspects.map(\.aspect), ["definition"])
        XCTAssertFalse(view.aspects[0].old?.contains("isbn") ?? true, view.aspects[0].old ?? "")
        XCTAssertTrue(view.aspects[0].new?.contains("isbn") ?? false, view.aspects[0].new ?? "")
        let trigger = try XCTUnwrap(difference.changes.last)
        XCTAssertTrue(trigger.aspects.first?.new?.lowercased().contains("update") ?? false, "\(trigger)")
        // The other way round, the column is dropped and the index added.
        XCTAssertEqual(Array(summary(try SchemaDifference(from: new, to: old)).prefix(2)),
                       ["column dropped \(books) isbn", "index added \(books) \(scenario.qualified("books_title"))"])

        // Two databases built by the same manifest have the same schema; so does one compared with itself.
        let again = try database(backend, ["001_books.sql": scenario.first, "002_change.sql": scenario.second])
        XCTAssertEqual(summary(try SchemaDifference(from: new, to: try again.connection().schemaSnapshot())), [])
        XCTAssertEqual(summary(try SchemaDifference(from: old, to: old)), [])
        // Strata's history is no part of the schema.
        XCTAssertFalse(new.tables.contains { $0.name.hasSuffix("strata_history") }, "\(new.tables.map(\.name))")
        XCTAssertFalse(new.others.contains { $0.definition.contains("strata_history") }, "\(new.others.map(\.name))")
    }

    func testTheFourDifferencesAndNothingElseOnSQLite() throws {
        try checkTheFourDifferences(.sqlite, Self.sqlite)
    }

    func testTheFourDifferencesAndNothingElseOnPostgreSQL() throws {
        _ = try PostgresServer.shared()
        try checkTheFourDifferences(.postgres, Self.postgres)
    }

    /// What `rehearse` reads: a snapshot taken inside a transaction sees that transaction's changes, which a
    /// rollback then undoes.
    func checkASnapshotInsideATransactionSeesItsChanges(_ backend: TestBackend, _ scenario: Scenario) throws {
        let project = try database(backend, ["001_books.sql": scenario.first])
        let db = try project.connection()
        let before = try db.schemaSnapshot()
        var inside: SchemaSnapshot?
        do {
            _ = try db.withTransaction { () throws -> Int in
                try db.execute("ALTER TABLE books ADD COLUMN isbn TEXT", .none)
                throw Rollback(snapshot: try db.schemaSnapshot())
            }
        } catch let rollback as Rollback {
            inside = rollback.snapshot
        }
        XCTAssertEqual(summary(try SchemaDifference(from: before, to: try XCTUnwrap(inside))),
                       ["column added \(scenario.qualified("books")) isbn"])
        XCTAssertEqual(try db.schemaSnapshot(), before, "rolled back")
    }

    struct Rollback: Error {
        let snapshot: SchemaSnapshot
    }

    func testASnapshotInsideATransactionSeesItsChangesOnSQLite() throws {
        try checkASnapshotInsideATransactionSeesItsChanges(.sqlite, Self.sqlite)
    }

    func testASnapshotInsideATransactionSeesItsChangesOnPostgreSQL() throws {
        _ = try PostgresServer.shared()
        try checkASnapshotInsideATransactionSeesItsChanges(.postgres, Self.postgres)
    }

    /// On SQLite definitions are compared as tokens: whitespace, comments, keyword case and brackets or backticks
    /// around a plain name do not count; a string's case does, and so do double quotes (a double-quoted word that
    /// names no column is a string in SQLite).
    func testFormattingDoesNotCountOnSQLite() throws {
        let a = try Database(.inMemory), b = try Database(.inMemory)
        try a.executeScript("""
            CREATE TABLE t (id INTEGER PRIMARY KEY, `name` TEXT CHECK (name <> ''));
            CREATE VIEW v AS SELECT id, name FROM t WHERE name <> 'x';
            CREATE INDEX t_name ON t (name);
            """)
        try b.executeScript("""
            create table T (
                id integer primary key,  -- the key
                [name] text check(name<>'')
            );
            create   view [v] as /* named */ select ID,name from `t` where NAME <> 'x';
            CREATE INDEX `t_name` ON t(name);
            """)
        XCTAssertEqual(summary(try SchemaDifference(from: try a.schemaSnapshot(), to: try b.schemaSnapshot())), [])
        XCTAssertEqual(SchemaText.normalized("SELECT a<>b, \"Mixed\", [plain], 'Str''ing' -- c\n FROM t(x)"),
                       "select a <> b, \"Mixed\", plain, 'Str''ing' from t (x)")
        try b.executeScript("DROP VIEW v; CREATE VIEW v AS SELECT id, name FROM t WHERE name <> 'X'")
        XCTAssertEqual(summary(try SchemaDifference(from: try a.schemaSnapshot(), to: try b.schemaSnapshot())),
                       ["view changed - v"])
    }

    /// A changed column names each aspect that changed; a CHECK is a constraint (added and dropped, by its text);
    /// what only a table's definition holds is named `definition`.
    func testAChangedColumnNamesWhatChangedOnSQLite() throws {
        let a = try Database(.inMemory), b = try Database(.inMemory)
        try a.executeScript("""
            CREATE TABLE t (id INTEGER PRIMARY KEY, code TEXT, price REAL NOT NULL DEFAULT 0, kind TEXT CHECK (kind <> ''));
            CREATE TABLE g (n INT, twice INT GENERATED ALWAYS AS (n * 2));
            CREATE UNIQUE INDEX t_code ON t (code);
            """)
        try b.executeScript("""
            CREATE TABLE t (id INTEGER, code TEXT COLLATE NOCASE UNIQUE, price NUMERIC(10, 2) DEFAULT 1, kind TEXT CHECK (kind IN ('a', 'b')));
            CREATE TABLE g (n INT, twice INT GENERATED ALWAYS AS (n * 3));
            CREATE INDEX t_code ON t (code DESC);
            """)
        let difference = try SchemaDifference(from: try a.schemaSnapshot(), to: try b.schemaSnapshot())
        XCTAssertEqual(summary(difference), [
            "table changed - g",
            "column changed t code", "column changed t id", "column changed t price",
            "constraint dropped t check (kind <> '')", "constraint added t check (kind in ('a', 'b'))",
            "constraint added t UNIQUE (code)",
            "index changed t t_code",
        ])
        func aspects(_ name: String) -> [String] {
            difference.changes.first { $0.name == name }?.aspects.map { "\($0.aspect): \($0.old ?? "none") → \($0.new ?? "none")" } ?? []
        }
        XCTAssertEqual(aspects("price"), ["type: REAL → NUMERIC(10,2)", "not null: yes → no", "default: 0 → 1"])
        XCTAssertEqual(aspects("id"), ["primary key: column 1 → none"])
        XCTAssertEqual(aspects("code"), ["collation: none → NOCASE"])
        XCTAssertEqual(aspects("t_code"), ["columns: code → code DESC", "unique: yes → no"])
        XCTAssertEqual(aspects("g").map { $0.prefix(11) }, ["definition:"])
    }

    /// A snapshot written as JSON reads back equal, bare or inside the `strata schema --format json` object; a
    /// file that is not one is refused naming it and what is wrong.
    func testSnapshotFilesReadBackAndBadOnesAreRefused() throws {
        let db = try Database(.inMemory)
        try db.executeScript(Self.sqlite.first)
        let snapshot = try db.schemaSnapshot()
        let json = try snapshot.jsonData()
        XCTAssertEqual(try SchemaSnapshot(json: json, source: "x"), snapshot)
        XCTAssertEqual(try snapshot.jsonData(), json, "the same schema gives the same bytes")
        let dir = try makeTemporaryDirectory(self)
        let wrapped = dir.appendingPathComponent("schema.json")
        try write(#"{"command":"schema","database":"db","schema":"…","snapshot":"# + String(decoding: json, as: UTF8.self) + "}", to: wrapped)
        XCTAssertEqual(try SchemaSnapshot.load(path: wrapped.path), snapshot)

        func refusal(_ text: String?) -> String {
            let path = dir.appendingPathComponent("bad-\(UUID().uuidString).json").path
            if let text { try? write(text, to: URL(fileURLWithPath: path)) }
            return assertThrows(SchemaFileError.self) { try SchemaSnapshot.load(path: path) }?.message.replacingOccurrences(of: path, with: "F") ?? ""
        }
        XCTAssertTrue(refusal(nil).hasPrefix("cannot read F: No such file"), refusal(nil))
        XCTAssertTrue(refusal("CREATE TABLE t (x);").hasPrefix("F: not a schema snapshot: "), refusal("CREATE TABLE t (x);"))
        XCTAssertEqual(refusal(#"{"command":"schema","schema":""}"#),
                       "F: not a schema snapshot: the key 'format' is missing; write one with 'strata schema --format json'")
        XCTAssertEqual(refusal(#"{"snapshot":{"format":1,"backend":"sqlite","tables":[{"name":1}]}}"#),
                       "F: not a schema snapshot: at snapshot.tables[0].name: expected a string; write one with 'strata schema --format json'")
        XCTAssertTrue(refusal(#"{"format":2}"#).contains("format 2 is not one this version of Strata reads (1)"), refusal(#"{"format":2}"#))
        XCTAssertTrue(refusal("[1]").contains("expected a JSON object"), refusal("[1]"))
        let directory = assertThrows(SchemaFileError.self) { try SchemaSnapshot.load(path: dir.path) }
        XCTAssertEqual(directory?.message, "cannot read \(dir.path): it is a directory, not a regular file")

        // Snapshots of two backends are not compared.
        var postgres = snapshot
        postgres.backend = .postgresql
        XCTAssertEqual(assertThrows(SchemaComparisonError.self) { try SchemaDifference(from: snapshot, to: postgres) }?.description
                        .hasPrefix("cannot compare a SQLite schema with a PostgreSQL schema"), true)
    }
}
