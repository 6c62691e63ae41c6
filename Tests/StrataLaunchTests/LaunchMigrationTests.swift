import Foundation
import Strata
import XCTest

/// `Strata.migrate(manifest:database:)` as an app calls it at launch: the manifest, SQL and CSV files are this
/// target's resources, the database lives where the "app" chooses (never in its bundle).
final class LaunchMigrationTests: XCTestCase {
    static let firstInstall = ["001_create_notes.sql", "tags.csv", "002_create_settings.sql", "003_wal.sql", "settings.csv"]

    func testTheFirstLaunchMigratesAFreshDatabaseFromTheBundle() throws {
        let manifest = try LaunchFixture.bundledManifest()
        let bundle = LaunchFixture.bundleDirectory(of: manifest)
        let before = try FileSnapshot(bundle)
        let support = try LaunchFixture.temporaryDirectory(self).appendingPathComponent("Application Support/Notes", isDirectory: true)
        let database = support.appendingPathComponent("notes.sqlite").path

        let report = try Strata.migrate(manifest: manifest, database: database)

        XCTAssertEqual(report.applied.map(\.id), Self.firstInstall)
        XCTAssertEqual(report.applied.compactMap(\.rowCount), [3, 2])
        let db = try Database(path: database)
        XCTAssertEqual(try db.scalar("SELECT group_concat(name, ',') FROM (SELECT name FROM tags ORDER BY id)", as: String.self),
                       "work,home,ideas")
        XCTAssertEqual(try db.scalar("SELECT value FROM settings WHERE name = 'theme'", as: String.self), "light")
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM notes", as: Int.self), 0)
        XCTAssertEqual(try db.scalar("PRAGMA journal_mode", as: String.self), "wal", "003_wal.sql ran")
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM strata_history WHERE state = 'applied' AND length(checksum) = 64", as: Int.self), 5)
        let statuses = try Migrator(manifest: try Manifest.load(path: manifest.path), database: db).status()
        XCTAssertEqual(statuses.map(\.state), Array(repeating: .applied, count: 5), "every step recorded with its file's checksum")

        // The manifest's own <database path="../notes.sqlite"> is in the bundle too: not created, not touched.
        XCTAssertEqual(try FileSnapshot(bundle), before, "the run wrote inside the resource bundle")
    }

    func testASecondLaunchDoesNothing() throws {
        let manifest = try LaunchFixture.bundledManifest()
        let database = try LaunchFixture.temporaryDirectory(self).appendingPathComponent("notes.sqlite").path
        try Strata.migrate(manifest: manifest, database: database)
        let history = try LaunchFixture.history(database)

        let again = try Strata.migrate(manifest: manifest, database: database)

        XCTAssertEqual(again.applied, [])
        XCTAssertEqual(again.alreadyApplied, [])
        XCTAssertEqual(try LaunchFixture.history(database), history)
        XCTAssertEqual(try Database(path: database).scalar("SELECT count(*) FROM tags", as: Int.self), 3, "the seed loaded once")
    }

    /// A signed or system-installed app bundle cannot be written: the run reads its files and writes only the
    /// database and the files SQLite and Strata keep beside it (its WAL, and the lock of the `transaction="none"`
    /// step). The path has a space and a non-ASCII letter, which a file URL percent-encodes.
    func testALaunchFromAReadOnlyBundleWritesOnlyBesideTheDatabase() throws {
        let root = try LaunchFixture.temporaryDirectory(self)
        let app = root.appendingPathComponent("Notes Café.app", isDirectory: true)
        let manifest = try LaunchFixture.install(into: app.appendingPathComponent("Contents/Resources", isDirectory: true))
        try LaunchFixture.makeReadOnly(app)
        if geteuid() != 0 {
            XCTAssertFalse(FileManager.default.isWritableFile(atPath: manifest.deletingLastPathComponent().path))
        }
        let before = try FileSnapshot(app)
        let data = root.appendingPathComponent("Library/Application Support", isDirectory: true)
        let database = data.appendingPathComponent("notes.sqlite").path

        XCTAssertEqual(try Strata.migrate(manifest: manifest, database: database).applied.map(\.id), Self.firstInstall)
        XCTAssertEqual(try Strata.migrate(manifest: manifest, database: database).applied.map(\.id), [])

        XCTAssertEqual(try FileSnapshot(app), before, "the run wrote inside the read-only bundle")
        let written = try FileManager.default.contentsOfDirectory(atPath: data.path).sorted()
        XCTAssertTrue(written.allSatisfy { $0.hasPrefix("notes.sqlite") }, "files the run left: \(written)")
        XCTAssertTrue(written.contains { $0.hasPrefix("notes.sqlite-strata-runner-") && $0.hasSuffix(".lock") },
                      "the lock of 003_wal.sql (transaction=\"none\") is beside the database: \(written)")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: root.path).sorted(), ["Library", "Notes Café.app"])
    }

    /// An update installs the app at a new path with every file of the old version and some new ones: the launch
    /// after it applies the new migration and reapplies the seed whose file changed (`onChange="reapply"`), and
    /// leaves every other record as the first launch wrote it.
    func testALaunchAfterAnUpdateAppliesOnlyWhatTheUpdateAdds() throws {
        let root = try LaunchFixture.temporaryDirectory(self)
        let database = root.appendingPathComponent("Data/notes.sqlite").path
        let version1 = try LaunchFixture.install(into: root.appendingPathComponent("1.0/Notes.app"))
        try Strata.migrate(manifest: version1, database: database)
        let history = try LaunchFixture.history(database)

        let update = root.appendingPathComponent("1.1/Notes.app")
        let version2 = try LaunchFixture.install(into: update)
        try LaunchFixture.write("ALTER TABLE notes ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;\n",
                                to: update.appendingPathComponent("sql/004_add_pinned.sql"))
        try LaunchFixture.write("name,value\ntheme,light\nsync,on\nfont,serif\n", to: update.appendingPathComponent("csv/settings.csv"))
        try LaunchFixture.makeReadOnly(update)
        try FileManager.default.removeItem(at: root.appendingPathComponent("1.0"))    // the old version is gone

        let report = try Strata.migrate(manifest: version2, database: database)

        XCTAssertEqual(report.applied.map(\.id), ["004_add_pinned.sql", "settings.csv"])
        XCTAssertEqual(report.applied.map(\.reason), [.pending, .reapply])
        let db = try Database(path: database)
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM pragma_table_info('notes') WHERE name = 'pinned'", as: Int.self), 1)
        XCTAssertEqual(try db.scalar("SELECT value FROM settings WHERE name = 'font'", as: String.self), "serif")
        let after = try LaunchFixture.history(database)
        XCTAssertEqual(after.filter { !$0.contains("settings.csv") && !$0.contains("004_add_pinned.sql") },
                       history.filter { !$0.contains("settings.csv") }, "records of steps the update did not change were rewritten")
        XCTAssertEqual(try Strata.migrate(manifest: version2, database: database).applied, [])
    }

    func testAnUpdateThatEditsAnAppliedFileIsRefusedBeforeAnythingRuns() throws {
        let root = try LaunchFixture.temporaryDirectory(self)
        let database = root.appendingPathComponent("notes.sqlite").path
        try Strata.migrate(manifest: try LaunchFixture.install(into: root.appendingPathComponent("1.0")), database: database)
        let history = try LaunchFixture.history(database)
        let update = root.appendingPathComponent("1.1")
        let version2 = try LaunchFixture.install(into: update)
        try LaunchFixture.write("CREATE TABLE settings (name TEXT PRIMARY KEY, value TEXT);\n",
                                to: update.appendingPathComponent("sql/002_create_settings.sql"))
        try LaunchFixture.write("ALTER TABLE notes ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;\n",
                                to: update.appendingPathComponent("sql/004_add_pinned.sql"))

        let error = assertThrows(MigrationError.self) { try Strata.migrate(manifest: version2, database: database) }

        guard case .refused(let refusals)? = error else { return XCTFail("expected a refusal, got \(String(describing: error))") }
        XCTAssertEqual(refusals.map(\.reason), [.drift])
        XCTAssertEqual(refusals.map(\.id), ["002_create_settings.sql"])
        XCTAssertEqual(try LaunchFixture.history(database), history, "a refused launch ran something")
    }

    func testAFailingMigrationNamesItsResourceFileAndLine() throws {
        let root = try LaunchFixture.temporaryDirectory(self)
        let app = root.appendingPathComponent("Notes.app")
        let manifest = try LaunchFixture.install(into: app)
        try LaunchFixture.write("-- 1.1: pin notes\nALTER TABLE notes ADD COLUMN pinned INTEGER;\nUPDATE note SET pinned = 0;\n",
                                to: app.appendingPathComponent("sql/004_add_pinned.sql"))
        let database = root.appendingPathComponent("notes.sqlite").path

        let failure = assertThrows(StepFailure.self) { try Strata.migrate(manifest: manifest, database: database) }

        XCTAssertEqual(failure?.id, "004_add_pinned.sql")
        XCTAssertEqual(failure?.file, app.appendingPathComponent("sql/004_add_pinned.sql").path)
        XCTAssertEqual(failure?.line, 3)
        XCTAssertTrue(failure?.description.contains("no such table: note") ?? false, failure?.description ?? "")
        XCTAssertEqual(failure?.aftermath, .rolledBack)
        let db = try Database(path: database)
        XCTAssertEqual(try db.scalar("SELECT count(*) FROM pragma_table_info('notes') WHERE name = 'pinned'", as: Int.self), 0,
                       "the failed file was not rolled back")
        XCTAssertEqual(try LaunchFixture.history(database).map { $0.split(separator: " ")[1] },
                       ["001_create_notes.sql", "002_create_settings.sql", "003_wal.sql", "tags.csv"],
                       "the steps before the failing file stay applied; the seed after it did not run")
    }

    /// A bundle built without a file the manifest lists (a resource left out of Package.swift): the error names
    /// the manifest's line and the file, and no database (nor its folder) is created.
    func testABundleWithoutAListedFileIsRefusedNamingTheManifestLine() throws {
        let root = try LaunchFixture.temporaryDirectory(self)
        let manifest = try LaunchFixture.install(into: root.appendingPathComponent("Notes.app"))
        try FileManager.default.removeItem(at: root.appendingPathComponent("Notes.app/csv/tags.csv"))
        let data = root.appendingPathComponent("Data")

        let error = assertThrows(ManifestError.self) {
            try Strata.migrate(manifest: manifest, database: data.appendingPathComponent("notes.sqlite").path)
        }

        let problem = try XCTUnwrap(error?.problems.first)
        XCTAssertEqual(problem.location.path, manifest.path)
        XCTAssertEqual(problem.location.line, 10, "\(problem)")
        XCTAssertTrue(problem.description.contains("tags.csv"), "\(problem)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: data.path))
    }

    func testAManifestTheBundleLacksIsRefusedNamingIt() throws {
        let root = try LaunchFixture.temporaryDirectory(self)
        XCTAssertNil(Bundle.module.url(forResource: "gone", withExtension: "xml", subdirectory: "manifests"),
                     "the app's own check: a resource the bundle lacks has no URL")
        let missing = LaunchFixture.bundleDirectory(of: try LaunchFixture.bundledManifest()).appendingPathComponent("manifests/gone.xml")
        let database = root.appendingPathComponent("notes.sqlite").path

        let error = assertThrows(ManifestError.self) { try Strata.migrate(manifest: missing, database: database) }

        XCTAssertEqual(error?.description, "\(missing.path):1: cannot read the manifest (no such file: \(missing.path))")
        XCTAssertFalse(FileManager.default.fileExists(atPath: database))
    }

    func testAManifestURLThatIsNotAFileIsRefused() throws {
        let url = try XCTUnwrap(URL(string: "https://example.com/manifests/notes.xml"))
        let directory = try LaunchFixture.temporaryDirectory(self)
        let database = directory.appendingPathComponent("notes.sqlite").path
        let error = assertThrows(ManifestError.self) { try Strata.migrate(manifest: url, database: database) }
        XCTAssertEqual(error?.problems.first?.location.path, "https://example.com/manifests/notes.xml")
        XCTAssertTrue(error?.description.contains("is not a file URL") ?? false, error?.description ?? "")
        XCTAssertFalse(FileManager.default.fileExists(atPath: database))
    }

    func testADatabaseNameThatKeepsNoFileIsRefused() throws {
        let manifest = try LaunchFixture.bundledManifest()
        for name in ["", ":memory:", "file:notes.sqlite?mode=memory"] {
            assertThrows(DatabaseLocationError.self) { try Strata.migrate(manifest: manifest, database: name) }
        }
    }

    /// The program supplies the bodies of the manifest's code steps; a pending one without a body is refused
    /// before the database is created.
    func testCodeStepsRunOnceFromTheBodiesGiven() throws {
        let root = try LaunchFixture.temporaryDirectory(self)
        let app = root.appendingPathComponent("Notes.app")
        let manifest = try LaunchFixture.install(into: app)
        let text = try String(contentsOf: manifest, encoding: .utf8)
        try LaunchFixture.write(text.replacingOccurrences(of: "<migration file=\"003_wal.sql\" transaction=\"none\"/>",
            with: "<migration file=\"003_wal.sql\" transaction=\"none\"/>\n    <code name=\"welcome_note\" after=\"002_create_settings.sql\" version=\"1\"/>"),
            to: manifest)
        let data = root.appendingPathComponent("Data")
        let database = data.appendingPathComponent("notes.sqlite").path

        let error = assertThrows(MigrationError.self) { try Strata.migrate(manifest: manifest, database: database) }
        guard case .refused(let refusals)? = error else { return XCTFail("expected a refusal, got \(String(describing: error))") }
        XCTAssertEqual(refusals.map(\.reason), [.codeStep])
        XCTAssertFalse(FileManager.default.fileExists(atPath: data.path), "a refused launch created the database's folder")

        var runs = 0
        let welcome: Migrator.CodeBody = { db in
            runs += 1
            try db.execute("INSERT INTO notes (title, created_at) VALUES ('Welcome', '2024-01-01T00:00:00Z')")
        }
        let report = try Strata.migrate(manifest: manifest, database: database, codeSteps: ["welcome_note": welcome])
        XCTAssertEqual(report.applied.map(\.id),
                       ["001_create_notes.sql", "tags.csv", "002_create_settings.sql", "code:welcome_note", "003_wal.sql", "settings.csv"])
        XCTAssertEqual(try Strata.migrate(manifest: manifest, database: database, codeSteps: ["welcome_note": welcome]).applied, [])
        XCTAssertEqual(runs, 1)
        XCTAssertEqual(try Database(path: database).scalar("SELECT title FROM notes", as: String.self), "Welcome")
    }

    /// An app and its extension starting together: each step is applied by one of them, once.
    func testLaunchesAtTheSameTimeApplyEachStepOnce() throws {
        let manifest = try LaunchFixture.bundledManifest()
        let database = try LaunchFixture.temporaryDirectory(self).appendingPathComponent("Shared/notes.sqlite").path
        let lock = NSLock()
        nonisolated(unsafe) var applied: [String] = []
        nonisolated(unsafe) var errors: [String] = []
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            do {
                let report = try Strata.migrate(manifest: manifest, database: database)
                lock.withLock { applied += report.applied.map(\.id) }
            } catch {
                lock.withLock { errors.append("\(error)") }
            }
        }
        XCTAssertEqual(errors, [])
        XCTAssertEqual(applied.sorted(), Self.firstInstall.sorted())
        XCTAssertEqual(try LaunchFixture.history(database).count, 5)
    }
}

/// Asserts that `body` throws an error of type `E` and returns it for further checks.
@discardableResult
func assertThrows<E: Error, T>(_ expected: E.Type, file: StaticString = #filePath, line: UInt = #line,
                               _ body: () throws -> T) -> E? {
    do {
        _ = try body()
        XCTFail("expected \(E.self) to be thrown", file: file, line: line)
    } catch let error as E {
        return error
    } catch {
        XCTFail("expected \(E.self), got \(type(of: error)): \(error)", file: file, line: line)
    }
    return nil
}
