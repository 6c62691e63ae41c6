import Foundation
import Strata
@testable import StrataCore
@testable import StrataSQLite
import XCTest

/// Relationships declared in the manifest (`<hasMany>`, `<belongsTo>`): loading a graph with one query per
/// relationship, saving it in one savepoint, deleting what a row owns, the checks against the schema and the
/// Swift types, and the manifest's own rules (a cycle is refused).
final class RelationshipTests: XCTestCase {
    // A three-level graph: a dialog holds messages, each message holds reactions and names its sender.
    struct Member: Codable, Equatable { var id: Int64?; var name: String }
    struct Reaction: Codable, Equatable { var id: Int64?; var emoji: String }
    struct Message: Codable, Equatable {
        var id: Int64?
        var text: String
        var sentAt: Int
        var sender: Member?
        var reactions: [Reaction]
    }
    struct Dialog: Codable, Equatable { var id: Int64?; var title: String; var messages: [Message] }

    /// The same tables read without the relationships' properties.
    enum Plain {
        struct Dialog: Codable, Equatable { var id: Int64?; var title: String }
        struct Message: Codable, Equatable { var id: Int64?; var dialogId: Int64?; var text: String }
    }

    static func schema(_ backend: TestBackend, messageKey: String = "INTEGER REFERENCES dialogs(id)") -> String {
        let key = backend.autoIncrementingKey
        return """
        CREATE TABLE members (id \(key), name TEXT NOT NULL);
        CREATE TABLE dialogs (id \(key), title TEXT NOT NULL);
        CREATE TABLE messages (id \(key), dialog_id \(messageKey), sender_id INTEGER REFERENCES members(id),
                               text TEXT NOT NULL CHECK (length(text) > 0), sent_at INTEGER NOT NULL);
        CREATE INDEX messages_dialog ON messages(dialog_id);
        CREATE TABLE reactions (id \(key), message_id INTEGER REFERENCES messages(id), emoji TEXT NOT NULL);
        """
    }

    static func models(onRemove: String = "keep") -> String {
        """
        <models>
          <model type="Dialog" table="dialogs">
            <hasMany property="messages" model="Message" foreignKey="dialog_id" orderBy="sent_at" onRemove="\(onRemove)"/>
          </model>
          <model type="Message" table="messages">
            <belongsTo property="sender" model="Member" foreignKey="sender_id"/>
            <hasMany property="reactions" model="Reaction" foreignKey="message_id" onRemove="\(onRemove == "detach" ? "delete" : onRemove)"/>
          </model>
          <model type="Member" table="members"/>
          <model type="Reaction" table="reactions"/>
        </models>
        """
    }

    /// A store over a fresh database on `backend` with the schema and the manifest's models.
    func store(_ backend: TestBackend, schema: String? = nil, onRemove: String = "keep") throws -> ModelStore {
        let project = try Project(self, backend: backend, manifestBody: Self.models(onRemove: onRemove), files: [:])
        let db = try project.connection()
        try db.runScript(Array((schema ?? Self.schema(backend)).utf8), startLine: 1, insideTransaction: false, afterEach: nil)
        return ModelStore(database: db, manifest: try project.manifest())
    }

    func count(_ table: String, _ store: ModelStore) throws -> Int {
        try store.database.scalar("SELECT count(*) FROM \(table)", .none, as: Int.self) ?? -1
    }

    func sampleDialog(_ title: String, sender: Member?, messages: Int) -> Dialog {
        Dialog(id: nil, title: title, messages: (0..<messages).map { index in
            // Sent in reverse, so the array's order comes from orderBy, not from insertion.
            Message(id: nil, text: "\(title) #\(index)", sentAt: 100 - index, sender: index % 2 == 0 ? sender : nil,
                    reactions: index == 0 ? [Reaction(id: nil, emoji: "👍"), Reaction(id: nil, emoji: "🎉")] : [])
        })
    }

    /// Drops the keys the database gave, to compare with a value before it was saved.
    func withoutKeys(_ dialog: Dialog) -> Dialog {
        var copy = dialog
        copy.id = nil
        copy.messages = dialog.messages.map { message in
            var message = message
            message.id = nil
            message.reactions = message.reactions.map { Reaction(id: nil, emoji: $0.emoji) }
            return message
        }
        return copy
    }

    // MARK: The manifest

    func testTheManifestDeclaresRelationships() throws {
        let manifest = try Manifest.load(xml: "<manifest version=\"1\"><database path=\"x.sqlite\"/>\(Self.models(onRemove: "delete"))</manifest>",
                                         directory: NSTemporaryDirectory())
        let dialog = try XCTUnwrap(manifest.models.first { $0.typeName == "Dialog" })
        XCTAssertEqual(dialog.relationships, [Relationship(kind: .hasMany, property: "messages", model: "Message", foreignKey: "dialog_id",
                                                           orderBy: [Relationship.Order(column: "sent_at", descending: false)],
                                                           onRemove: .delete, location: dialog.relationships.first?.location)])
        let message = try XCTUnwrap(manifest.models.first { $0.typeName == "Message" })
        XCTAssertEqual(message.relationship("sender")?.kind, .belongsTo)
        XCTAssertEqual(message.relationship("sender")?.foreignKey, "sender_id")
        XCTAssertEqual(Relationship.orderTerms("sent_at DESC, id"), [Relationship.Order(column: "sent_at", descending: true),
                                                                     Relationship.Order(column: "id", descending: false)])
    }

    func testTheManifestRefusesRelationshipsThatCannotWork() throws {
        func problems(_ models: String) -> String {
            do {
                _ = try Manifest.load(xml: "<manifest version=\"1\"><database path=\"x.sqlite\"/><models>\(models)</models></manifest>",
                                      directory: NSTemporaryDirectory())
                return "(loaded)"
            } catch {
                return "\(error)"
            }
        }
        // A cycle, named.
        let cycle = problems("""
            <model type="Dialog"><hasMany property="messages" model="Message" foreignKey="dialog_id"/></model>
            <model type="Message"><belongsTo property="dialog" model="Dialog" foreignKey="dialog_id"/></model>
            """)
        XCTAssertTrue(cycle.contains("Dialog.messages → Message.dialog → Dialog"), cycle)
        let selfCycle = problems(#"<model type="Category"><hasMany property="children" model="Category" foreignKey="parent_id"/></model>"#)
        XCTAssertTrue(selfCycle.contains("Category.children → Category"), selfCycle)
        // A model nobody maps.
        let unknown = problems(#"<model type="Dialog"><hasMany property="messages" model="Mesage" foreignKey="dialog_id"/></model>"#)
        XCTAssertTrue(unknown.contains("names model Mesage, which no <model type=\"Mesage\"> maps"), unknown)
        // orderBy that is not a list of columns; onRemove not a known value (the XSD).
        let order = problems("""
            <model type="Dialog"><hasMany property="messages" model="Message" foreignKey="dialog_id" orderBy="sent_at; DROP TABLE x"/></model>
            <model type="Message"/>
            """)
        XCTAssertTrue(order.contains("is not a list of columns"), order)
        let onRemove = problems("""
            <model type="Dialog"><hasMany property="messages" model="Message" foreignKey="dialog_id" onRemove="cascade"/></model>
            <model type="Message"/>
            """)
        XCTAssertTrue(onRemove.contains("onRemove"), onRemove)
        XCTAssertFalse(onRemove.contains("(loaded)"))
        // A property that is both a column and a relationship.
        let both = problems("""
            <model type="Dialog"><property name="messages" column="messages_json"/><hasMany property="messages" model="Message" foreignKey="dialog_id"/></model>
            <model type="Message"/>
            """)
        XCTAssertTrue(both.contains("is mapped to a column and is a relationship"), both)
    }

    // MARK: Reading and writing graphs

    func testAThreeLevelGraphRoundTripsThroughSaveAndFetchAll() throws {
        try forEachBackend(needing: .models) { backend in
            let store = try self.store(backend)
            var ada = Member(id: nil, name: "Ada")
            ada.id = try store.insert(ada)
            let first = sampleDialog("first", sender: ada, messages: 3)
            let second = sampleDialog("second", sender: nil, messages: 0)
            try store.save(first)
            try store.save(second)
            XCTAssertEqual(try count("messages", store), 3)
            XCTAssertEqual(try count("reactions", store), 2)

            let loaded = try store.fetchAll(Dialog.self, where: "1 = 1 ORDER BY id", .none)
            XCTAssertEqual(loaded.count, 2)
            var expected = first
            expected.messages.reverse() // orderBy sent_at
            XCTAssertEqual(loaded.map(withoutKeys), [expected, second])
            XCTAssertEqual(loaded[0].messages.map(\.sender), [ada, nil, ada])
            XCTAssertNotNil(loaded[0].messages.first?.id)

            // Saving what was loaded after a change updates children in place and inserts the new one.
            var changed = loaded[0]
            changed.messages[0].text = "edited"
            changed.messages.append(Message(id: nil, text: "new", sentAt: 200, sender: ada, reactions: [Reaction(id: nil, emoji: "✅")]))
            try store.save(changed)
            XCTAssertEqual(try count("messages", store), 4)
            XCTAssertEqual(try count("reactions", store), 3)
            let again = try XCTUnwrap(store.find(Dialog.self, key: try XCTUnwrap(changed.id)))
            XCTAssertEqual(again.messages.map(\.text), ["edited", "first #1", "first #0", "new"])
            XCTAssertEqual(again.messages.last?.reactions.map(\.emoji), ["✅"])

            // insert and update take the graph too.
            let key = try store.insert(sampleDialog("third", sender: ada, messages: 1))
            XCTAssertEqual(try store.find(Dialog.self, key: key)?.messages.map(\.text), ["third #0"])
            var third = try XCTUnwrap(store.find(Dialog.self, key: key))
            third.messages[0].text = "third, updated"
            try store.update(third)
            XCTAssertEqual(try store.find(Dialog.self, key: key)?.messages.map(\.text), ["third, updated"])
        }
    }

    func testLoadingTakesOneQueryPerRelationshipFor1000Parents() throws {
        let store = try self.store(.sqlite)
        let db = try XCTUnwrap(store.database as? Database)
        let ada = Member(id: try store.insert(Member(id: nil, name: "Ada")), name: "Ada")
        try store.save(contentsOf: (0..<1000).map { sampleDialog("d\($0)", sender: ada, messages: 2) })
        XCTAssertEqual(try count("messages", store), 2000)

        let statements = Locked<[String]>([])
        db.trace { event in statements.update { $0.append(event.sql) } }
        let dialogs = try store.fetchAll(Dialog.self)
        db.trace(nil)
        XCTAssertEqual(dialogs.count, 1000)
        XCTAssertEqual(dialogs.reduce(0) { $0 + $1.messages.count }, 2000)
        XCTAssertTrue(dialogs.allSatisfy { $0.messages.count == 2 && $0.messages[0].title(in: $0) })
        // Message #0 (sent last, so last in sent_at order) has the sender and the reactions.
        XCTAssertEqual(dialogs[999].messages.last?.sender, ada)
        XCTAssertEqual(dialogs[999].messages.last?.reactions.count, 2)
        XCTAssertEqual(dialogs[999].messages.first?.sender, nil)
        // dialogs, then messages, members and reactions: one query each, never one per parent.
        let queried = statements.update { $0 }
        XCTAssertEqual(queried.count, 4, queried.map { String($0.prefix(60)) }.joined(separator: "\n"))

        // A type without the relationship's property (mapped by the same <model>) never loads it.
        let plainStatements = Locked<Int>(0)
        db.trace { _ in plainStatements.update { $0 += 1 } }
        XCTAssertEqual(try store.fetchAll(Plain.Dialog.self).count, 1000)
        db.trace(nil)
        XCTAssertEqual(plainStatements.update { $0 }, 1)
    }

    func testMoreKeysThanOneQueryNamesAreLoadedKeptAndDeletedInSeveralQueries() throws {
        let parents = KeyList.maximumCount + 1
        try forEachBackend(needing: .models) { backend in
            let store = try self.store(backend, onRemove: "delete")
            // Written by SQL (both backends read this): saving them one graph at a time would take minutes.
            try store.database.execute("""
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(parents))
                INSERT INTO dialogs (id, title) SELECT 1000000 + i, 'd' || i FROM n
                """, .none)
            try store.database.execute("""
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(parents))
                INSERT INTO messages (id, dialog_id, text, sent_at) SELECT 1000000 + i, 1000000 + i, 'm' || i, i FROM n
                """, .none)
            // Loading: the messages come in two IN lists, and each dialog gets exactly its own message.
            let dialogs = try store.fetchAll(Dialog.self)
            XCTAssertEqual(dialogs.count, parents)
            XCTAssertTrue(dialogs.allSatisfy { $0.messages.map(\.text) == ["m" + $0.title.dropFirst()] })
            if let db = store.database as? Database {
                let statements = Locked<Int>(0)
                db.trace { _ in statements.update { $0 += 1 } }
                _ = try store.fetchAll(Dialog.self)
                db.trace(nil)
                // dialogs; messages in 2 lists; reactions of those messages in 2 lists; no members (no sender).
                XCTAssertEqual(statements.update { $0 }, 5)
            }
            // Keeping: one dialog with more children than one list, one of them dropped from the array.
            try store.database.execute("INSERT INTO dialogs (id, title) VALUES (1, 'big')", .none)
            try store.database.execute("""
                WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < \(parents))
                INSERT INTO messages (id, dialog_id, text, sent_at) SELECT 2000000 + i, 1, 'b' || i, i FROM n
                """, .none)
            var big = try XCTUnwrap(store.fetchFirst(Dialog.self, where: "title = 'big'", .none))
            XCTAssertEqual(big.messages.count, parents + 1)
            big.messages.remove(at: 5_000)
            try store.save(big)
            XCTAssertEqual(try count("messages", store), 2 * parents)
            XCTAssertEqual(try store.database.scalar("SELECT count(*) FROM messages WHERE text = 'b5000'", .none, as: Int.self), 0)
            // Deleting: every dialog's messages go, across both lists.
            XCTAssertEqual(try store.deleteAll(Dialog.self), parents + 1)
            XCTAssertEqual(try count("messages", store), 0)
        }
    }

    func testAFailingChildRollsTheWholeGraphBackAndNamesItsPath() throws {
        try forEachBackend(needing: .models) { backend in
            let store = try self.store(backend)
            var dialog = sampleDialog("doomed", sender: nil, messages: 5)
            dialog.messages[3].text = "" // the CHECK refuses it
            XCTAssertThrowsError(try store.save(dialog)) { error in
                XCTAssertTrue("\(error)".hasPrefix("Dialog.messages[3]: rejected:"), "\(error)")
            }
            XCTAssertEqual(try count("dialogs", store), 0)
            XCTAssertEqual(try count("messages", store), 0)
            XCTAssertEqual(try count("reactions", store), 0)

            // A belongsTo names a row; it does not write one.
            var unsaved = sampleDialog("unsaved sender", sender: nil, messages: 3)
            unsaved.messages[2].sender = Member(id: nil, name: "Nobody")
            XCTAssertThrowsError(try store.save(unsaved)) { error in
                XCTAssertTrue("\(error)".hasPrefix("Dialog.messages[2].sender: has no key: save the Member first"), "\(error)")
            }
            // In a batch, the value's position too; still nothing written.
            XCTAssertThrowsError(try store.save(contentsOf: [sampleDialog("fine", sender: nil, messages: 1), dialog])) { error in
                XCTAssertTrue("\(error)".contains("Dialog.messages[3]"), "\(error)")
                XCTAssertTrue("\(error)".contains("row 2"), "\(error)")
            }
            XCTAssertEqual(try count("dialogs", store), 0)
            XCTAssertEqual(try count("messages", store), 0)
        }
    }

    func testAChildWhoseOwnKeyNamesAnotherParentIsRefused() throws {
        struct Message: Codable { var id: Int64?; var dialogId: Int64?; var text: String; var sentAt: Int }
        struct Dialog: Codable { var id: Int64?; var title: String; var messages: [Message] }
        try forEachBackend(needing: .models) { backend in
            let store = try self.store(backend)
            let other = try store.insert(Plain.Dialog(id: nil, title: "other"))
            let dialog = Dialog(id: nil, title: "mine", messages: [Message(id: nil, dialogId: other, text: "moved?", sentAt: 1)])
            XCTAssertThrowsError(try store.save(dialog)) { error in
                XCTAssertTrue("\(error)".contains("Dialog.messages[0].dialogId"), "\(error)")
                XCTAssertTrue("\(error)".contains("set both to the same value"), "\(error)")
            }
            XCTAssertEqual(try count("messages", store), 0)
            XCTAssertEqual(try count("dialogs", store), 1)
        }
    }

    func testChildrenMissingFromTheArrayAreKeptUnlessTheManifestOptsIn() throws {
        try forEachBackend(needing: .models) { backend in
            for onRemove in ["keep", "delete", "detach"] {
                let store = try self.store(backend, onRemove: onRemove)
                try store.save(sampleDialog("d", sender: nil, messages: 3))
                var dialog = try XCTUnwrap(store.fetchAll(Dialog.self).first)
                let dropped = dialog.messages.removeLast() // "d #0", which has the reactions
                try store.save(dialog)
                let rows = try store.fetchAll(Plain.Message.self, sql: "SELECT * FROM messages ORDER BY id", .none)
                switch onRemove {
                case "keep":
                    XCTAssertEqual(rows.count, 3)
                    XCTAssertTrue(rows.allSatisfy { $0.dialogId == dialog.id })
                    XCTAssertEqual(try count("reactions", store), 2)
                case "delete":
                    XCTAssertEqual(rows.map(\.text), ["d #1", "d #2"])
                    XCTAssertEqual(try count("reactions", store), 0, "what the removed message owned goes with it")
                default:
                    XCTAssertEqual(rows.count, 3)
                    XCTAssertEqual(rows.first { $0.id == dropped.id }?.dialogId, nil)
                    XCTAssertEqual(try count("reactions", store), 2)
                }
                // A value read without the children's property never removes them.
                let before = try count("messages", store)
                try store.save(Plain.Dialog(id: dialog.id, title: "renamed"))
                XCTAssertEqual(try count("messages", store), before)
            }
        }
    }

    func testDeleteRemovesWhatTheManifestSaysTheParentOwns() throws {
        try forEachBackend(needing: .models) { backend in
            let store = try self.store(backend, onRemove: "delete")
            try store.save(sampleDialog("gone", sender: nil, messages: 2))
            try store.save(sampleDialog("kept", sender: nil, messages: 2))
            let gone = try XCTUnwrap(store.fetchFirst(Dialog.self, where: "title = 'gone'", .none))
            XCTAssertTrue(try store.delete(gone))
            XCTAssertEqual(try count("dialogs", store), 1)
            XCTAssertEqual(try count("messages", store), 2)
            XCTAssertEqual(try count("reactions", store), 2, "the kept dialog's first message keeps its two")
            XCTAssertEqual(try store.deleteAll(Dialog.self), 1)
            XCTAssertEqual(try count("messages", store), 0)
            XCTAssertEqual(try count("reactions", store), 0)
        }
    }

    func testBelongsToReadsNilForNullAndRefusesADanglingKey() throws {
        struct Note: Codable { var id: Int64?; var author: Member? }
        struct StrictNote: Codable { var id: Int64?; var author: Member }
        try forEachBackend(needing: .models) { backend in
            let project = try Project(self, backend: backend, files: [:])
            let db = try project.connection()
            try db.runScript(Array("""
                CREATE TABLE members (id \(backend.autoIncrementingKey), name TEXT NOT NULL);
                CREATE TABLE notes (id \(backend.autoIncrementingKey), author_id INTEGER);
                INSERT INTO members (id, name) VALUES (1, 'Ada');
                INSERT INTO notes (id, author_id) VALUES (1, 1), (2, NULL);
                """.utf8), startLine: 1, insideTransaction: false, afterEach: nil)
            let mappings = [ModelMapping(typeName: "Note", table: "notes", relationships: [
                                Relationship(kind: .belongsTo, property: "author", model: "Member", foreignKey: "author_id")]),
                            ModelMapping(typeName: "StrictNote", table: "notes", relationships: [
                                Relationship(kind: .belongsTo, property: "author", model: "Member", foreignKey: "author_id")]),
                            ModelMapping(typeName: "Member", table: "members")]
            let store = ModelStore(database: db, mappings: mappings)
            let notes = try store.fetchAll(Note.self, where: "1 = 1 ORDER BY id", .none)
            XCTAssertEqual(notes.map(\.author?.name), ["Ada", nil])
            XCTAssertThrowsError(try store.fetchAll(StrictNote.self, where: "1 = 1 ORDER BY id", .none)) { error in
                XCTAssertTrue("\(error)".contains("is NULL but author is not optional"), "\(error)")
            }
            try db.execute("INSERT INTO notes (id, author_id) VALUES (3, 99)", .none)
            XCTAssertThrowsError(try store.fetchAll(Note.self)) { error in
                XCTAssertTrue("\(error)".contains("holds 99, but no Member row has that key"), "\(error)")
            }
        }
    }

    func testAKeyOfAnotherTypeIsRefusedNotDropped() throws {
        // SQLite matches text '1' to integer 1 in the query; filing the child under no parent would lose it.
        let store = try self.store(.sqlite, schema: Self.schema(.sqlite, messageKey: "TEXT"))
        try store.database.execute("INSERT INTO dialogs (id, title) VALUES (1, 'd')", .none)
        try store.database.execute("INSERT INTO messages (dialog_id, text, sent_at) VALUES ('1', 'x', 1)", .none)
        XCTAssertThrowsError(try store.fetchAll(Dialog.self)) { error in
            XCTAssertTrue("\(error)".contains("compares otherwise than the key's"), "\(error)")
        }
        // and check says so before anything runs.
        let mismatches = try store.check(Dialog.self)
        XCTAssertTrue(mismatches.contains { $0.kind == .relationship && $0.message.contains("make them the same type") }, "\(mismatches)")
    }

    func testTypesThatNestInACycleAreRefusedAtRunTime() throws {
        struct Dialog: Codable { var id: Int64?; var messages: [Message] }
        struct Message: Codable { var id: Int64?; var dialog: Dialog? }
        let store = try self.store(.sqlite)
        let cyclic = ModelStore(database: store.database, mappings: [
            ModelMapping(typeName: "Dialog", table: "dialogs", relationships: [
                Relationship(kind: .hasMany, property: "messages", model: "Message", foreignKey: "dialog_id")]),
            ModelMapping(typeName: "Message", table: "messages", relationships: [
                Relationship(kind: .belongsTo, property: "dialog", model: "Dialog", foreignKey: "dialog_id")]),
        ])
        XCTAssertThrowsError(try cyclic.fetchAll(Dialog.self)) { error in
            XCTAssertTrue("\(error)".contains("Dialog.messages → Message.dialog → Dialog"), "\(error)")
        }
        XCTAssertThrowsError(try cyclic.save(Dialog(id: nil, messages: []))) { error in
            XCTAssertTrue("\(error)".contains("cycle"), "\(error)")
        }
        XCTAssertTrue(try cyclic.check(Dialog.self).contains { $0.kind == .relationship && $0.message.contains("cycle") })
    }

    // MARK: Checks against the schema

    func testCheckVerifiesRelationshipsAgainstTheSchemaAndTheTypes() throws {
        try forEachBackend(needing: .models) { backend in
            let store = try self.store(backend)
            XCTAssertEqual(try store.check(Dialog.self), [])
            XCTAssertEqual(try store.check(Message.self), [])

            // The same relationships over a schema without a foreign key or index on the child's column.
            let bare = try self.store(backend, schema: """
                CREATE TABLE members (id \(backend.autoIncrementingKey), name TEXT NOT NULL);
                CREATE TABLE dialogs (id \(backend.autoIncrementingKey), title TEXT NOT NULL);
                CREATE TABLE messages (id \(backend.autoIncrementingKey), dialog_id INTEGER, sender_ref INTEGER,
                                       text TEXT NOT NULL, sent_at INTEGER NOT NULL);
                CREATE TABLE reactions (id \(backend.autoIncrementingKey), message_id INTEGER REFERENCES messages(id), emoji TEXT NOT NULL);
                """)
            let dialogProblems = try bare.check(Dialog.self)
            XCTAssertTrue(dialogProblems.contains { $0.property == "messages" && $0.message.contains("neither a foreign key nor an index") },
                          "\(dialogProblems)")
            let messageProblems = try bare.check(Message.self)
            XCTAssertTrue(messageProblems.contains { $0.property == "sender" && $0.message.contains("has no column 'sender_id'") },
                          "\(messageProblems)")
            // What the command checks without the Swift types.
            let manifestProblems = try checkModels(of: try Manifest.load(xml: "<manifest version=\"1\"><database path=\"x.sqlite\"/>\(Self.models())</manifest>",
                                                                         directory: NSTemporaryDirectory()), in: bare.database)
            XCTAssertEqual(manifestProblems.count, 2, "\(manifestProblems)")

            // A property whose Swift type is not what the manifest names.
            struct Wrong: Codable { var id: Int64?; var title: String; var messages: [Reaction] }
            let wrong = ModelStore(database: store.database, mappings: [
                ModelMapping(typeName: "Wrong", table: "dialogs", relationships: [
                    Relationship(kind: .hasMany, property: "messages", model: "Message", foreignKey: "dialog_id")]),
                ModelMapping(typeName: "Message", table: "messages"),
            ])
            XCTAssertTrue(try wrong.check(Wrong.self).contains { $0.message.contains("holds Reaction values but the manifest's hasMany names model Message") })
            try store.database.execute("INSERT INTO dialogs (title) VALUES ('one')", .none)
            XCTAssertThrowsError(try wrong.fetchAll(Wrong.self)) { error in
                XCTAssertTrue("\(error)".contains("holds Reaction values"), "\(error)")
            }
        }
    }

    func testStrataCheckReportsARelationshipWithoutAnIndex() throws {
        let project = try Project(self, backend: .sqlite, manifestBody: "<migrations directory=\"sql\"/>" + Self.models(), files: [
            "sql/001_schema.sql": """
                CREATE TABLE members (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
                CREATE TABLE dialogs (id INTEGER PRIMARY KEY, title TEXT NOT NULL);
                CREATE TABLE messages (id INTEGER PRIMARY KEY, dialog_id INTEGER, sender_id INTEGER REFERENCES members(id),
                                       text TEXT NOT NULL, sent_at INTEGER NOT NULL);
                CREATE TABLE reactions (id INTEGER PRIMARY KEY, message_id INTEGER REFERENCES messages(id), emoji TEXT NOT NULL);
                """,
        ])
        XCTAssertEqual(try project.strataOnBackend(["migrate"]).status, 0)
        let check = try project.strataOnBackend(["check"])
        XCTAssertNotEqual(check.status, 0)
        XCTAssertTrue((check.stdout + check.stderr).contains("Dialog.messages: column 'messages.dialog_id' has neither a foreign key nor an index"), (check.stdout + check.stderr))
        try project.file("sql/002_index.sql", "CREATE INDEX messages_dialog ON messages(dialog_id);")
        XCTAssertEqual(try project.strataOnBackend(["migrate"]).status, 0)
        let fixed = try project.strataOnBackend(["check"])
        XCTAssertEqual(fixed.status, 0, (fixed.stdout + fixed.stderr))
    }
}

extension RelationshipTests.Message {
    /// Whether the message belongs to the dialog by its text (`title #n`).
    func title(in dialog: RelationshipTests.Dialog) -> Bool { text.hasPrefix(dialog.title + " #") }
}
