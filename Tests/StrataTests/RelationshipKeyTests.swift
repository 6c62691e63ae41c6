import Foundation
import Strata
@testable import StrataCore
@testable import StrataSQLite
import XCTest

/// Relationships where keys compare loosely or conflict (found by hostile review 7): collations, canonically equivalent
/// text, affinity, keys SQLite does not generate, one child in two arrays, conditions that read owned rows, the
/// Mirror path, PostgreSQL timestamptz keys. Each test failed before its fix.
final class RelationshipKeyTests: XCTestCase {
    struct Message: Codable, Equatable { var id: Int64?; var text: String }
    struct Dialog: Codable, Equatable { var id: Int64?; var title: String; var messages: [Message] }

    /// A SQLite store over `schema`, with `models` as the manifest's `<models>` body.
    func store(_ schema: String, models: String) throws -> ModelStore {
        let directory = try makeTemporaryDirectory(self)
        let manifest = try Manifest.load(xml: """
            <manifest version="1"><database path="h.sqlite"/><models>\(models)</models></manifest>
            """, directory: directory.path)
        let db = try Database(path: directory.appendingPathComponent("h.sqlite").path)
        try db.executeScript(schema)
        return ModelStore(database: db, manifest: manifest)
    }

    func count(_ sql: String, _ store: ModelStore, _ arguments: StatementArguments = .none) throws -> Int {
        try store.database.scalar(sql, arguments, as: Int.self) ?? -1
    }

    static let dialogModels = """
        <model type="Dialog" table="dialogs">
          <hasMany property="messages" model="Message" foreignKey="dialog_id" onRemove="delete"/>
        </model>
        <model type="Message" table="messages"/>
        """

    // MARK: 1. deleteAll(where:) over the owned table

    /// `deleteAll(where:)` deletes the owned rows first, then runs the same condition again on the parents: a
    /// condition that looks at the owned rows (delete the dialogs holding spam) no longer matches, so the
    /// children are gone and the parents stay.
    func testDeleteAllWhereOverOwnedRowsDeletesTheChildrenAndKeepsTheParents() throws {
        let store = try self.store("""
            CREATE TABLE dialogs (id INTEGER PRIMARY KEY, title TEXT NOT NULL);
            CREATE TABLE messages (id INTEGER PRIMARY KEY, dialog_id INTEGER NOT NULL REFERENCES dialogs(id), text TEXT NOT NULL);
            """, models: Self.dialogModels)
        try store.save(Dialog(id: nil, title: "spammed", messages: [Message(id: nil, text: "spam"), Message(id: nil, text: "hello")]))
        try store.save(Dialog(id: nil, title: "clean", messages: [Message(id: nil, text: "ok")]))

        let deleted = try store.deleteAll(Dialog.self, where: "EXISTS (SELECT 1 FROM messages m WHERE m.dialog_id = dialogs.id AND m.text = ?)",
                                          .positional([.text("spam")]))
        let remaining = try store.fetchAll(Dialog.self)
        XCTAssertEqual(deleted, 1, "the dialog holding spam should be deleted")
        XCTAssertEqual(remaining.map(\.title), ["clean"], "left: \(remaining)")
        // What happens instead: 0 deleted, and 'spammed' is still there with no messages at all.
    }

    // MARK: 2. a NOCASE foreign key column

    struct CodedDialog: Codable, Equatable { var code: String; var title: String; var messages: [Message] }
    static let nocaseSchema = """
        CREATE TABLE dialogs (code TEXT NOT NULL PRIMARY KEY, title TEXT NOT NULL);
        CREATE TABLE messages (id INTEGER PRIMARY KEY, dialog_code TEXT COLLATE NOCASE REFERENCES dialogs(code), text TEXT NOT NULL);
        """
    static let nocaseModels = """
        <model type="CodedDialog" table="dialogs" primaryKey="code">
          <hasMany property="messages" model="Message" foreignKey="dialog_code" onRemove="delete"/>
        </model>
        <model type="Message" table="messages"/>
        """

    /// The children "no longer in the array" are looked up with `dialog_code = ?`, which compares with the column's
    /// collation: saving dialog 'A' deleted dialog 'a''s messages, and `check` approved the schema. Now `check`
    /// reports the collation, and a save that would remove rows by it is refused, changing nothing.
    func testSavingAParentDeletesTheChildrenOfAParentWhoseKeyDiffersOnlyInCase() throws {
        let store = try self.store(Self.nocaseSchema, models: Self.nocaseModels)
        XCTAssertTrue(try store.check(CodedDialog.self).contains { $0.message.contains("collation that folds case") })
        try store.database.execute("INSERT INTO dialogs VALUES ('a', 'lower')", .none)
        try store.database.execute("INSERT INTO messages (dialog_code, text) VALUES ('a', 'of a')", .none)
        XCTAssertThrowsError(try store.save(CodedDialog(code: "A", title: "upper", messages: [Message(id: nil, text: "of A")]))) { error in
            XCTAssertTrue("\(error)".contains("collation that folds case"), "\(error)")
        }
        XCTAssertEqual(try count("SELECT count(*) FROM messages WHERE text = 'of a'", store), 1,
                       "saving dialog 'A' must not delete a message of dialog 'a'")
        XCTAssertEqual(try count("SELECT count(*) FROM dialogs", store), 1, "the refused save wrote nothing")
    }

    /// `delete(v)` deletes owned rows with `dialog_code IN (?)`, again under the column's collation: deleting
    /// dialog 'a' deletes dialog 'A''s messages too.
    func testDeletingAParentDeletesTheChildrenOfAParentWhoseKeyDiffersOnlyInCase() throws {
        let store = try self.store(Self.nocaseSchema, models: Self.nocaseModels)
        try (store.database as! Database).executeScript("""
            INSERT INTO dialogs VALUES ('a', 'lower'), ('A', 'upper');
            INSERT INTO messages (dialog_code, text) VALUES ('a', 'of a'), ('A', 'of A');
            """)
        XCTAssertThrowsError(try store.delete(CodedDialog.self, key: "a")) { error in
            XCTAssertTrue("\(error)".contains("collation that folds case"), "\(error)")
        }
        XCTAssertEqual(try count("SELECT count(*) FROM messages WHERE text = 'of A'", store), 1,
                       "deleting dialog 'a' must not delete dialog 'A''s message")
        XCTAssertEqual(try count("SELECT count(*) FROM dialogs", store), 2, "the refused delete deleted nothing")
    }

    /// Loading one of the two dialogs fails saying the column stores "another type" than the key: both are TEXT;
    /// it is the column's collation that matched the other dialog's row.
    func testLoadingUnderANocaseForeignKeyBlamesATypeMismatchThatIsNotThere() throws {
        let store = try self.store(Self.nocaseSchema, models: Self.nocaseModels)
        try (store.database as! Database).executeScript("""
            INSERT INTO dialogs VALUES ('a', 'lower'), ('A', 'upper');
            INSERT INTO messages (dialog_code, text) VALUES ('a', 'of a'), ('A', 'of A');
            """)
        do {
            let found = try store.find(CodedDialog.self, key: "a")
            XCTAssertEqual(found?.messages.map(\.text), ["of a"])
        } catch {
            XCTAssertFalse("\(error)".contains("another type"), "the message blames the type, not the collation: \(error)")
        }
    }

    // MARK: 3. keys Swift's String calls equal

    /// Swift compares `String`s by canonical equivalence, so `DatabaseValue.text("café")` (NFC) and
    /// `.text("café")` (NFD) are one dictionary key, though the database keeps them as two keys. The NFD dialog
    /// is given the NFC dialog's messages; its own are never loaded.
    func testAParentWhoseTextKeyIsCanonicallyEquivalentToAnothersGetsTheOthersChildren() throws {
        let store = try self.store(Self.nocaseSchema.replacingOccurrences(of: " COLLATE NOCASE", with: ""),
                                   models: Self.nocaseModels)
        let composed = "caf\u{E9}", decomposed = "cafe\u{301}"
        XCTAssertNotEqual(Array(composed.utf8), Array(decomposed.utf8))
        try store.database.execute("INSERT INTO dialogs VALUES (?, 'composed'), (?, 'decomposed')",
                                   .positional([.text(composed), .text(decomposed)]))
        try store.database.execute("INSERT INTO messages (dialog_code, text) VALUES (?, 'of composed'), (?, 'of decomposed')",
                                   .positional([.text(composed), .text(decomposed)]))
        let dialogs = try store.fetchAll(CodedDialog.self)
        XCTAssertEqual(dialogs.map(\.title), ["composed", "decomposed"])
        XCTAssertEqual(dialogs.map { $0.messages.map(\.text) }, [["of composed"], ["of decomposed"]])
    }

    struct Member: Codable, Equatable { var handle: String; var name: String }
    struct Post: Codable, Equatable { var id: Int64?; var text: String; var author: Member? }

    /// The same for a belongsTo: a post by the NFD member is read as written by the NFC member.
    func testABelongsToWhoseKeyIsCanonicallyEquivalentToAnotherNamesTheOtherRow() throws {
        let store = try self.store("""
            CREATE TABLE members (handle TEXT PRIMARY KEY, name TEXT NOT NULL);
            CREATE TABLE posts (id INTEGER PRIMARY KEY, author_handle TEXT REFERENCES members(handle), text TEXT NOT NULL);
            """, models: """
            <model type="Post" table="posts"><belongsTo property="author" model="Member" foreignKey="author_handle"/></model>
            <model type="Member" table="members" primaryKey="handle"/>
            """)
        let composed = "jos\u{E9}", decomposed = "jose\u{301}"
        try store.database.execute("INSERT INTO members VALUES (?, 'José Composed'), (?, 'José Decomposed')",
                                   .positional([.text(composed), .text(decomposed)]))
        try store.database.execute("INSERT INTO posts (author_handle, text) VALUES (?, 'by composed'), (?, 'by decomposed')",
                                   .positional([.text(composed), .text(decomposed)]))
        let posts = try store.fetchAll(Post.self, where: "1 = 1 ORDER BY id", .none)
        XCTAssertEqual(posts.map { $0.author?.name }, ["José Composed", "José Decomposed"])
    }

    // MARK: 4. a key that is not the rowid

    /// `BIGINT PRIMARY KEY` is not SQLite's rowid alias: a nil key inserts NULL. The graph writer takes the
    /// rowid SQLite returns as the parent's key ("affinity integer") and files the children under a key no
    /// dialog has; the saved dialog loads with no messages, and a later dialog with id 1 gets them.
    func testAParentWithANonRowidIntegerKeyHasItsChildrenWrittenUnderTheRowid() throws {
        let store = try self.store("""
            CREATE TABLE dialogs (id BIGINT PRIMARY KEY, title TEXT NOT NULL);
            CREATE TABLE messages (id INTEGER PRIMARY KEY, dialog_id BIGINT, text TEXT NOT NULL);
            CREATE INDEX messages_dialog ON messages(dialog_id);
            """, models: Self.dialogModels)
        XCTAssertEqual(try store.check(Dialog.self), [])
        do {
            try store.insert(Dialog(id: nil, title: "first", messages: [Message(id: nil, text: "hello")]))
        } catch {
            return   // refusing a key the database does not generate is a correct outcome
        }
        let loaded = try store.fetchAll(Dialog.self)
        XCTAssertEqual(loaded.first?.messages.map(\.text), ["hello"], "saved graph loads as \(loaded)")
        XCTAssertEqual(try count("SELECT count(*) FROM messages m JOIN dialogs d ON d.id = m.dialog_id", store), 1,
                       "the message names a dialog key no dialog has")
    }

    // MARK: 5. integer column, text key

    /// With a TEXT key and an INTEGER child column (which `check` reports, but which `save` does not refuse as
    /// `fetch` does), keys '1' and '01' both store 1: saving dialog '01' deletes dialog '1''s messages.
    func testSavingATextKeyedParentDeletesChildrenOfAnotherParentThroughIntegerAffinity() throws {
        let store = try self.store("""
            CREATE TABLE dialogs (code TEXT PRIMARY KEY, title TEXT NOT NULL);
            CREATE TABLE messages (id INTEGER PRIMARY KEY, dialog_code INTEGER REFERENCES dialogs(code), text TEXT NOT NULL);
            """, models: Self.nocaseModels)
        try store.database.execute("PRAGMA foreign_keys = OFF", .none)
        do {
            try store.save(CodedDialog(code: "1", title: "one", messages: [Message(id: nil, text: "of 1")]))
            try store.save(CodedDialog(code: "01", title: "zero one", messages: [Message(id: nil, text: "of 01")]))
        } catch {
            return   // refused, as fetch refuses: fine
        }
        XCTAssertEqual(try count("SELECT count(*) FROM messages WHERE text = 'of 1'", store), 1,
                       "saving dialog '01' must not delete dialog '1''s message")
    }

    // MARK: 6. the Mirror path

    final class MirrorMessage { var id: Int64?; var text: String; init(id: Int64?, text: String) { self.id = id; self.text = text } }
    final class MirrorDialog {
        var id: Int64?; var title: String; var messages: [MirrorMessage]
        init(id: Int64?, title: String, messages: [MirrorMessage]) { self.id = id; self.title = title; self.messages = messages }
    }

    /// A value that is not `Encodable` saves as a graph through `Mirror`, but `delete(v)` reads it without its
    /// relationships and fails on the array ("has no database form"): the graph can be written, not deleted.
    func testDeletingANonEncodableGraphFailsOnItsRelationshipProperty() throws {
        let store = try self.store("""
            CREATE TABLE dialogs (id INTEGER PRIMARY KEY, title TEXT NOT NULL);
            CREATE TABLE messages (id INTEGER PRIMARY KEY, dialog_id INTEGER NOT NULL REFERENCES dialogs(id), text TEXT NOT NULL);
            """, models: """
            <model type="MirrorDialog" table="dialogs">
              <hasMany property="messages" model="MirrorMessage" foreignKey="dialog_id" onRemove="delete"/>
            </model>
            <model type="MirrorMessage" table="messages"/>
            """)
        let dialog = MirrorDialog(id: 1, title: "t", messages: [MirrorMessage(id: nil, text: "x")])
        try store.save(dialog)
        XCTAssertEqual(try count("SELECT count(*) FROM messages", store), 1)
        XCTAssertNoThrow(try store.delete(dialog))
        XCTAssertEqual(try count("SELECT count(*) FROM dialogs", store), 0)
    }

    // MARK: 7. both backends, the native placeholders

    /// A store on `backend` over `schema`, with `models` as the manifest's `<models>` body.
    func store(_ backend: TestBackend, _ schema: String, models: String) throws -> ModelStore {
        let project = try Project(self, backend: backend, manifestBody: "<models>\(models)</models>", files: [:])
        let db = try project.connection()
        try db.runScript(Array(schema.utf8), startLine: 1, insideTransaction: false, afterEach: nil)
        return ModelStore(database: db, manifest: try project.manifest())
    }

    /// Finding 1 on both backends, with a bound argument (`?` on SQLite, `$1` on PostgreSQL) and three levels.
    func testDeleteAllWhereWithAnArgumentOverOwnedRowsKeepsTheParentsOnEveryBackend() throws {
        struct Reaction: Codable { var id: Int64?; var emoji: String }
        struct Message: Codable { var id: Int64?; var text: String; var reactions: [Reaction] }
        struct Dialog: Codable { var id: Int64?; var title: String; var messages: [Message] }
        try forEachBackend(needing: .models) { backend in
            let key = backend.autoIncrementingKey
            let store = try self.store(backend, """
                CREATE TABLE dialogs (id \(key), title TEXT NOT NULL);
                CREATE TABLE messages (id \(key), dialog_id INTEGER NOT NULL REFERENCES dialogs(id), text TEXT NOT NULL);
                CREATE TABLE reactions (id \(key), message_id INTEGER NOT NULL REFERENCES messages(id), emoji TEXT NOT NULL);
                """, models: """
                <model type="Dialog" table="dialogs"><hasMany property="messages" model="Message" foreignKey="dialog_id" onRemove="delete"/></model>
                <model type="Message" table="messages"><hasMany property="reactions" model="Reaction" foreignKey="message_id" onRemove="delete"/></model>
                <model type="Reaction" table="reactions"/>
                """)
            try store.save(Dialog(id: nil, title: "flagged", messages: [
                Message(id: nil, text: "x", reactions: [Reaction(id: nil, emoji: "🚩")]),
                Message(id: nil, text: "y", reactions: [Reaction(id: nil, emoji: "👍")]),
            ]))
            let placeholder = store.database.dialect.placeholder(1)
            let deleted = try store.deleteAll(Dialog.self, where: """
                id IN (SELECT m.dialog_id FROM messages m JOIN reactions r ON r.message_id = m.id WHERE r.emoji = \(placeholder))
                """, .positional([.text("🚩")]))
            XCTAssertEqual(deleted, 1, "on \(backend)")
            XCTAssertEqual(try self.count("SELECT count(*) FROM dialogs", store), 0, "on \(backend): the flagged dialog stays, emptied")
            XCTAssertEqual(try self.count("SELECT count(*) FROM messages", store), 0, "on \(backend)")
        }
    }

    // MARK: 8. the same child in two arrays

    /// One batch holding the same message (same key) in two dialogs' arrays: no error; the message ends under
    /// whichever dialog was written last, and the first dialog, saved with that message in its array, reads back
    /// without it. A child whose own foreign key property names another parent is refused; this is the same
    /// conflict and passes.
    func testTheSameChildInTwoParentsArraysOfOneBatchIsSilentlyFiledUnderTheLast() throws {
        let store = try self.store("""
            CREATE TABLE dialogs (id INTEGER PRIMARY KEY, title TEXT NOT NULL);
            CREATE TABLE messages (id INTEGER PRIMARY KEY, dialog_id INTEGER NOT NULL REFERENCES dialogs(id), text TEXT NOT NULL);
            """, models: Self.dialogModels)
        let shared = Message(id: 10, text: "shared")
        do {
            try store.save(contentsOf: [Dialog(id: 1, title: "a", messages: [shared]), Dialog(id: 2, title: "b", messages: [shared])])
        } catch {
            return   // refusing the conflict is the right outcome
        }
        let saved = try store.fetchAll(Dialog.self)
        XCTAssertEqual(saved.map { $0.messages.map(\.text) }, [["shared"], ["shared"]],
                       "both values were saved holding the message; the batch succeeded, yet: \(saved)")
    }

    // MARK: 9. PostgreSQL Date keys

    struct Event: Codable { var at: Date; var text: String }
    struct Calendar: Codable { var id: Int64?; var name: String; var events: [Event] }

    /// The README: on PostgreSQL a `Date` key is saved, updated, found and deleted by the `Date` it was read
    /// with. A hasMany of rows keyed by `timestamptz` with onRemove="delete" cannot be saved at all: the key
    /// written (Strata's text) is compared with the key read back (the server's text) and they differ.
    func testAGraphWhoseChildrenHaveTimestamptzKeysCannotBeSavedOnPostgreSQL() throws {
        guard let backend = TestBackend.available.first(where: { $0.kind == .postgres && !$0.everyStatementPrepared }) else {
            throw XCTSkip("PostgreSQL is not available")
        }
        let store = try self.store(backend, """
            CREATE TABLE calendars (id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, name text NOT NULL);
            CREATE TABLE events (at timestamptz PRIMARY KEY, calendar_id bigint NOT NULL REFERENCES calendars(id), text text NOT NULL);
            """, models: """
            <model type="Calendar" table="calendars"><hasMany property="events" model="Event" foreignKey="calendar_id" onRemove="delete"/></model>
            <model type="Event" table="events" primaryKey="at"/>
            """)
        let at = Date(timeIntervalSince1970: 1_700_000_000.25)
        XCTAssertNoThrow(try store.save(Calendar(id: nil, name: "work", events: [Event(at: at, text: "standup")])))
        XCTAssertEqual(try self.count("SELECT count(*) FROM events", store), 1)
    }
}
