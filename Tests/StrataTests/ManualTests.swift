import Foundation
import XCTest

/// The README is a front door and the manual is a DocC catalog of articles: these check the shape both promise, so
/// a README that grows back into the manual, an article that loses its abstract, a `<doc:>` link to no article or a
/// Layout line naming a file that moved fails here rather than in a reader's hands.
final class ManualTests: XCTestCase {
    static let articles = ["GettingStarted", "ManifestReference", "CommandReference", "HowMigrationsRun", "PostgreSQL",
                           "Seeds", "ModelsAndRelationships", "Pools", "BackupsAndRehearsal", "SchemaDiffAndDiagrams",
                           "Performance", "Reliability", "ImplementingABackend", "AdoptingOtherTools", "TheLibrary"]

    private func text(_ path: String) throws -> String {
        try String(contentsOf: repositoryRoot().appendingPathComponent(path), encoding: .utf8)
    }

    func testTheReadmeIsAFrontDoorOfAtMost350Lines() throws {
        let lines = try text("README.md").split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        XCTAssertLessThanOrEqual(lines.count, 350, "README.md is a front door; its reference belongs in the manual")
    }

    /// DocC takes the first paragraph after the title as the abstract, and the articles open with an Overview.
    func testEveryArticleHasATitleAnAbstractAndAnOverview() throws {
        for name in Self.articles {
            let path = "\(ReadmeExamples.manualDirectory)/\(name).md"
            let paragraphs = try text(path).components(separatedBy: "\n\n")
            XCTAssertTrue(paragraphs.first?.hasPrefix("# ") == true && paragraphs.first?.contains("\n") == false,
                          "\(path) does not start with a one-line title")
            let abstract = paragraphs.dropFirst().first ?? ""
            XCTAssertFalse(abstract.isEmpty || abstract.hasPrefix("#") || abstract.hasPrefix("```") || abstract.hasPrefix("|"),
                           "\(path) has no abstract paragraph after its title")
            XCTAssertTrue(paragraphs.contains("## Overview"), "\(path) has no ## Overview")
        }
    }

    /// A `<doc:Name>` names an article of the catalog (or its root page), never a section anchor left from the
    /// README; a `[text](#anchor)` link would point nowhere in DocC.
    func testEveryDocLinkNamesAnArticle() throws {
        let directory = repositoryRoot().appendingPathComponent(ReadmeExamples.manualDirectory)
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".md") }
        let known = Set(files.map { String($0.dropLast(3)) })
        for file in files {
            let article = try text("\(ReadmeExamples.manualDirectory)/\(file)")
            var rest = article[...]
            while let start = rest.range(of: "<doc:") {
                let tail = rest[start.upperBound...]
                let name = String(tail.prefix { $0 != ">" })
                XCTAssertTrue(known.contains(name), "\(file) links <doc:\(name)>, which is no article")
                rest = tail
            }
            XCTAssertNil(article.range(of: "](#"), "\(file) holds a [text](#anchor) link, which DocC cannot follow")
        }
    }

    /// The README's Layout names files and folders by path; each must exist, so a reader finds each job where it says.
    func testEveryPathTheReadmesLayoutNamesExists() throws {
        let readme = try text("README.md")
        let section = try XCTUnwrap(readme.range(of: "\n## Layout\n"), "README.md lost its Layout section")
        let open = try XCTUnwrap(readme.range(of: "```\n", range: section.upperBound..<readme.endIndex))
        let close = try XCTUnwrap(readme.range(of: "```", range: open.upperBound..<readme.endIndex))
        let root = repositoryRoot()
        var folder = ""
        var checked = 0
        for line in readme[open.upperBound..<close.lowerBound].split(separator: "\n") {
            let indent = line.prefix { $0 == " " }.count
            // Lines indented this far continue a description; the paths are in the left column, which ends at the
            // first run of two spaces.
            guard indent < 30 else { continue }
            let left = line.dropFirst(indent).components(separatedBy: "  ").first ?? ""
            // At the left margin, a bare name after the first path shares its directory (`Sources/CSQLite, CLibPQ`).
            var directory = ""
            for name in left.split(whereSeparator: { $0 == "," || $0 == " " }).map(String.init) {
                let path: String
                switch indent {
                case 0:
                    path = name.contains("/") || name.contains(".") ? name : directory + name
                    if directory.isEmpty, let slash = path.lastIndex(of: "/") { directory = String(path[...slash]) }
                    if path.hasPrefix("Sources/StrataCore") { folder = "Sources/StrataCore/" }
                case 2:
                    path = "Sources/StrataCore/" + name
                    folder = path
                default:
                    path = folder + name
                }
                checked += 1
                // `.ci/docs`, the manual's build script, is written beside this work.
                if path == ".ci/docs" { continue }
                XCTAssertTrue(FileManager.default.fileExists(atPath: root.appendingPathComponent(path).path),
                              "README.md's Layout names \(path), which does not exist")
            }
        }
        XCTAssertGreaterThan(checked, 50, "the Layout names files one by one")
    }

    /// The tour's model fetch prints Le Guin's books with their copies, in publication order.
    func testTheReadmeTourFetchesLeGuinsBooks() throws {
        let examples = try ReadmeExamples()
        let block = try XCTUnwrap(examples.blocks.first { $0.file == "README.md" && $0.code.contains("for book in try store.fetchAll") },
                                  "README.md's tour no longer holds the model fetch")
        if let output = try examples.build([block])[block.target] {
            return XCTFail("\(block) does not compile as written:\n\(output)")
        }
        let run = try examples.run(block, test: self)
        XCTAssertEqual(run.status, 0, run.output)
        XCTAssertEqual(run.output, "A Wizard of Earthsea 3\nThe Dispossessed 2\n")
    }
}
