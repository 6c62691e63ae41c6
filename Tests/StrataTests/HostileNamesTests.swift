import Foundation
import XCTest
import Strata
@testable import StrataCore
@testable import StrataSQLite

/// Table, column and property names with quotes, spaces, keywords and `;` are quoted everywhere Strata writes SQL;
/// values are always bound.
final class HostileNamesTests: XCTestCase {
    static let table = #"order; DROP TABLE "victim" --"#
    static let schema = """
        CREATE TABLE victim (x INTEGER);
        CREATE TABLE "order; DROP TABLE ""victim"" --" ("select" TEXT PRIMARY KEY NOT NULL, "a b" INTEGER, "c""d" TEXT, "e;f" DOUBLE PRECISION);
        """

    struct Hostile: Codable, Equatable {
        var key: String
        var spaced: Int?
        var quoted: String?
        var semicolon: Double?
    }

    func testSeedsAndModelsWorkWithHostileNames() throws {
        try forEachBackend(needing: .seeds, .models) { backend in
            let project = try Project(self, backend: backend, files: [
                "sql/1.sql": Self.schema,
                "csv/h.csv": "select,a b,\"c\"\"d\",e;f\n\"x'); DROP TABLE victim; --\",1,\"q\"\"q\",2.5\n"])
            try project.file("manifest.xml", """
                <manifest version="1">\(backend.databaseElement(project.root))<migrations directory="sql"/>
                  <seeds><seed file="csv/h.csv" table="order; DROP TABLE &quot;victim&quot; --" mode="upsert" key="select"/></seeds>
                  <models>
                    <model type="Hostile" table="order; DROP TABLE &quot;victim&quot; --" primaryKey="select">
                      <property name="key" column="select"/>
                      <property name="spaced" column="a b"/>
                      <property name="quoted" column="c&quot;d"/>
                      <property name="semicolon" column="e;f"/>
                    </model>
                  </models>
                </manifest>
                """)
            let report = try project.migrator().migrate()
            XCTAssertNil(report.failure, "\(String(describing: report.failure))")
            let db = try project.connection()
            XCTAssertTrue(try db.tableExists("victim"))
            XCTAssertEqual(try db.rows("SELECT * FROM \(quoteIdentifier(Self.table))", .none).map(\.values),
                           [[.text("x'); DROP TABLE victim; --"), .integer(1), .text("q\"q"), .real(2.5)]])

            let store = ModelStore(database: db, manifest: try project.manifest())
            let value = Hostile(key: "'; DELETE FROM victim; --", spaced: 2, quoted: "\"", semicolon: nil)
            try store.insert(value)
            XCTAssertEqual(try store.find(Hostile.self, key: value.key), value)
            var changed = value
            changed.spaced = nil
            try store.save(changed)
            XCTAssertEqual(try store.fetchAll(Hostile.self, where: "\"a b\" IS NULL"), [changed])
            XCTAssertEqual(try store.count(Hostile.self), 2)
            XCTAssertEqual(try store.check(Hostile.self), [])
            XCTAssertTrue(try store.delete(changed))
            XCTAssertEqual(try checkModels(of: try project.manifest(), in: db), [])
            XCTAssertTrue(try db.tableExists("victim"))
            XCTAssertEqual(try db.columns(in: Self.table).map(\.name), ["select", "a b", "c\"d", "e;f"])
        }
    }

    func testHostileMigrationFileNamesAreBoundNotSpliced() throws {
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, files: ["sql/1_it's; DROP TABLE strata_history.sql": "CREATE TABLE a (x INTEGER);"])
            XCTAssertEqual(try project.migrator().migrate().applied.map(\.id), ["1_it's; DROP TABLE strata_history.sql"])
            XCTAssertEqual(try project.migrator().status().map(\.state), [.applied])
        }
    }
}
