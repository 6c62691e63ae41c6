import Foundation
import XCTest
import Strata
@testable import StrataCore

/// goose's `ENVSUB ON` (issue 29): substituted as goose does when the manifest opts in (`envsub="true"`), the
/// values never in history or messages, the checksum over the file as written; refused without the opt-in.
final class EnvironmentSubstitutionTests: XCTestCase {
    static let file = """
        -- +goose Up
        CREATE TABLE kept (v TEXT);
        -- +goose ENVSUB ON
        INSERT INTO kept VALUES ('${STRATA_ENVSUB_SECRET}'), ('${STRATA_ENVSUB_UNSET:-fallback}'), ('${STRATA_ENVSUB_UNSET-plain}');
        -- +goose ENVSUB OFF
        INSERT INTO kept VALUES ('${NOT_SUBSTITUTED}');
        -- +goose Down
        DROP TABLE kept;

        """

    func testTheFormsGooseSubstitutesAndWhatIsRefused() throws {
        // The section reader notes the parts (ENVSUB ON before the up marker holds for the whole file, as in goose).
        let marked = "-- +goose ENVSUB ON\n-- +goose Up\nSELECT '${X}';\n-- +goose ENVSUB OFF\nSELECT 1;\n"
        let section = try MigrationFormat.goose.upSection(of: Array(marked.utf8))
        XCTAssertEqual(section.environmentLine, 1)
        XCTAssertEqual(section.environmentRanges, [33..<48])
        let text = Array("a ${A} ${B:-x} ${C-y} ${E:-z} ${E-w} $1 ${A}".utf8)
        let environment = ["A": "1", "E": ""]
        let out = try EnvironmentSubstitution.apply(text, ranges: [0..<(text.count - 5)], startLine: 1, environment: environment)
        XCTAssertEqual(String(decoding: out, as: UTF8.self), "a 1 x y z  $1 ${A}", "only inside the ON part")
        for (input, expected) in [("${MISSING}", "${MISSING} is not set"), ("$HOME", "'$H…'"), ("$$", "'$$…'"),
                                  ("${A:=x}", "is a form Strata does not substitute"), ("${1}", "is not ${NAME}"), ("${A", "without its '}'")] {
            let bytes = Array("x\n\(input)".utf8)
            XCTAssertThrowsError(try EnvironmentSubstitution.apply(bytes, ranges: [0..<bytes.count], startLine: 5, environment: environment)) { error in
                let failure = error as? EnvironmentSubstitution.Failure
                XCTAssertEqual(failure?.line, 6, input)
                XCTAssertTrue(failure?.message.contains(expected) ?? false, "\(input): \(String(describing: failure))")
            }
        }
    }

    func testSubstitutedWhenTheManifestOptsInAndTheValuesAreKeptOutOfHistory() throws {
        setenv("STRATA_ENVSUB_SECRET", "s3cret-value", 1)
        unsetenv("STRATA_ENVSUB_UNSET")
        defer { unsetenv("STRATA_ENVSUB_SECRET") }
        try forEachBackend { backend in
            let project = try Project(self, backend: backend, manifestBody: #"<migrations directory="sql" format="goose" envsub="true"/>"#,
                                      files: ["sql/001_kept.sql": Self.file])
            XCTAssertEqual(try project.migrator().lint(), [])
            XCTAssertNil(try project.migrator().migrate().failure)
            let db = try project.connection()
            let values = try db.rows("SELECT v FROM kept ORDER BY v", .none).map { $0.values.map(\.description).joined() }
            XCTAssertEqual(values.sorted(), ["'${NOT_SUBSTITUTED}'", "'fallback'", "'plain'", "'s3cret-value'"].sorted())
            let record = try XCTUnwrap(try db.history.all().first { $0.identity == "001_kept.sql" })
            XCTAssertFalse(record.appliedSQL?.contains("s3cret") ?? true, "history keeps the file as written")
            XCTAssertEqual(record.checksum, try Checksum.ofFile(atPath: project.root.appendingPathComponent("sql/001_kept.sql").path,
                                                                 content: .sql, version: record.checksumVersion))
            XCTAssertNil(try project.migrator().rollback(.steps(1)).failure)
        }
    }

    func testRefusedWithoutTheOptInAndAnUnsetVariableFailsTheStepNamingIt() throws {
        unsetenv("STRATA_ENVSUB_SECRET")
        let root = try makeTemporaryDirectory(self)
        try write(Self.file, to: root.appendingPathComponent("sql/001_kept.sql"))
        let xml = #"<manifest version="1"><migrations directory="sql" format="goose"/></manifest>"#
        guard let refused = assertThrows(ManifestError.self, { try Manifest.load(xml: xml, path: "m.xml", directory: root.path) }) else { return }
        XCTAssertEqual(refused.problems.map(\.location.line), [3])
        XCTAssertTrue(refused.problems[0].message.contains(#"add envsub="true" to its <migrations>"#), refused.description)

        try forEachBackend { backend in
            let project = try Project(self, backend: backend, manifestBody: #"<migrations directory="sql" format="goose" envsub="true"/>"#,
                                      files: ["sql/001_kept.sql": Self.file])
            let failure = try XCTUnwrap(try project.migrator().migrate().failure)
            XCTAssertEqual(failure.line, 4)
            XCTAssertTrue(failure.message.contains("${STRATA_ENVSUB_SECRET} is not set"), failure.message)
            XCTAssertEqual(try project.migrator().status().map(\.state), [.pending])
        }
    }

    /// The plan reviewed is the text the environment makes: another value is another plan id, so `--plan-id`
    /// refuses a run whose substituted SQL is not what was reviewed.
    func testThePlanIDCoversTheSubstitutedText() throws {
        let project = try Project(self, backend: .sqlite, manifestBody: #"<migrations directory="sql" format="goose" envsub="true"/>"#,
                                  files: ["sql/001_t.sql": "-- +goose ENVSUB ON\n-- +goose Up\nCREATE TABLE ${TBL} (id INTEGER);\n"])
        func planID(_ value: String) throws -> String {
            let plan = try runStrata(["plan", "--manifest", project.manifestPath, "--format", "json"], in: project.root, environment: ["TBL": value])
            XCTAssertEqual(plan.status, 0, plan.stderr)
            guard let range = plan.stdout.range(of: #""planId":""#) else { return "" }
            return String(plan.stdout[range.upperBound...].prefix(16))
        }
        let reviewed = try planID("reviewed")
        XCTAssertEqual(try planID("reviewed"), reviewed)
        XCTAssertNotEqual(try planID("other"), reviewed)
        let run = try runStrata(["migrate", "--manifest", project.manifestPath, "--plan-id", reviewed], in: project.root, environment: ["TBL": "other"])
        XCTAssertEqual(run.status, 3, run.stderr)
        XCTAssertFalse(try Database(path: project.databasePath).tableExists("other"))
    }

    /// A database message that quotes a substituted value names the variable instead: values never reach messages.
    func testAFailureQuotingASubstitutedValueNamesTheVariableNotTheValue() throws {
        let project = try Project(self, backend: .sqlite, manifestBody: #"<migrations directory="sql" format="goose" envsub="true"/>"#,
                                  files: ["sql/001_t.sql": "-- +goose ENVSUB ON\n-- +goose Up\nSELECT * FROM ${SECRET_TABLE};\n"])
        for format in ["text", "json"] {
            let run = try runStrata(["migrate", "--manifest", project.manifestPath, "--format", format], in: project.root,
                                    environment: ["SECRET_TABLE": "s3cr3t_value"])
            XCTAssertEqual(run.status, 1, run.stderr)
            XCTAssertFalse((run.stdout + run.stderr).contains("s3cr3t_value"), run.stdout + run.stderr)
            XCTAssertTrue((run.stdout + run.stderr).contains("${SECRET_TABLE}"), run.stdout + run.stderr)
        }
    }
}
