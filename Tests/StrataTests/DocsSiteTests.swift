import Foundation
import XCTest

/// The manual's static site, as a reader's browser shows it: `.ci/docs` builds it into `.build/docs` (run here when
/// the site is missing), a local HTTP server serves it (DocC's pages load their content with JavaScript, which
/// `file://` does not allow), and headless Chromium renders the root page and the Getting Started article. Each must
/// show its title and a sentence of its text, both read from the article's `.md` file, not DocC's empty shell.
/// Skips, saying so, where Chromium or DocC is not installed.
final class DocsSiteTests: XCTestCase {
    private var catalog: URL { repositoryRoot().appendingPathComponent("Sources/Strata/Strata.docc") }

    func testTheBuiltSiteShowsTheRootPageAndAnArticle() throws {
        let chromium = try Self.chromium()
        let site = try builtSite()
        let server = try SiteServer(serving: site)
        defer { server.stop() }

        for (page, file) in [("documentation/strata", "Strata.md"), ("documentation/strata/gettingstarted", "GettingStarted.md")] {
            let expected = try ArticleText(catalog.appendingPathComponent(file))
            // The body only: the shell's <head> gets the title and abstract as metadata too.
            let body = try render(try server.url(page), with: chromium).components(separatedBy: "<body").dropFirst().joined()
            let heading = try NSRegularExpression(pattern: ">\\s*" + NSRegularExpression.escapedPattern(for: expected.title) + "\\s*</")
            XCTAssertNotNil(heading.firstMatch(in: body, range: NSRange(body.startIndex..., in: body)),
                            "\(page): the rendered page has no element reading \"\(expected.title)\": \(body.prefix(2000))")
            XCTAssertTrue(body.contains(expected.sentence),
                          "\(page): the rendered page does not show \"\(expected.sentence)\" from \(file): \(body.prefix(2000))")
        }

        // The checks tell a page from a blank one: a page the site does not have shows neither.
        let article = try ArticleText(catalog.appendingPathComponent("GettingStarted.md"))
        let missing = try render(try server.url("documentation/strata/no-such-article"), with: chromium)
        XCTAssertFalse(missing.contains(article.sentence), "a missing page showed the article's text")
    }

    /// The manual shows the example database's schema diagram: `.ci/docs` migrates `manifests/example.xml` into a
    /// temporary database, draws it with `strata schema --format dot` and Graphviz, and the article that shows it
    /// (the one whose Markdown names `example-schema`) renders with the image, which holds every table.
    func testTheManualShowsTheExampleDatabasesDiagram() throws {
        let chromium = try Self.chromium()
        let site = try builtSite()
        let articles = try FileManager.default.contentsOfDirectory(at: catalog, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "md" }
        let showing = try articles.filter { try String(contentsOf: $0, encoding: .utf8).contains("](example-schema") }
        guard let article = showing.first else { return XCTFail("no article of \(catalog.path) shows ![…](example-schema)") }

        let images = site.appendingPathComponent("images")
        let svg = FileManager.default.enumerator(at: images, includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL }.first { $0.lastPathComponent == "example-schema.svg" }
        guard let svg else { return XCTFail("the site has no images/…/example-schema.svg") }
        let drawing = try String(contentsOf: svg, encoding: .utf8)
        for table in ["authors", "books", "members", "loans"] {
            XCTAssertTrue(drawing.contains("<title>\(table)</title>"), "the diagram has no \(table) table")
        }

        let server = try SiteServer(serving: site)
        defer { server.stop() }
        let page = "documentation/strata/" + article.deletingPathExtension().lastPathComponent.lowercased()
        let body = try render(try server.url(page), with: chromium).components(separatedBy: "<body").dropFirst().joined()
        XCTAssertTrue(body.contains("example-schema.svg"), "\(page) shows no example-schema.svg: \(body.prefix(2000))")
    }

    /// The site `.ci/docs` built; built now when it is missing, skipped where DocC is absent.
    private func builtSite() throws -> URL {
        let site = repositoryRoot().appendingPathComponent(".build/docs")
        let page = site.appendingPathComponent("documentation/strata/gettingstarted/index.html")
        if FileManager.default.fileExists(atPath: page.path) { return site }
        // SwiftPM keeps a scratch path locked while `swift test` runs from it: .ci/docs would wait for this run.
        if CommandLine.arguments.first?.contains("/.build/docs-build/") == true {
            throw XCTSkip("SKIPPED: \(site.path) is not built and these tests run from .ci/docs's own build; run .ci/docs first")
        }
        guard Self.docc() != nil else {
            throw XCTSkip("SKIPPED: no docc next to swift or on PATH, and \(site.path) is not built; \(name) did not run")
        }
        let script = Process()
        script.executableURL = URL(fileURLWithPath: "/bin/bash")
        script.arguments = [repositoryRoot().appendingPathComponent(".ci/docs").path]
        script.currentDirectoryURL = repositoryRoot()
        // The caller may already hold the build lock (this test runs inside `swift test`); the script takes none.
        var environment = ProcessInfo.processInfo.environment
        environment["STRATA_BUILD_LOCK"] = nil
        script.environment = environment
        let log = try makeTemporaryDirectory(self).appendingPathComponent("docs.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        script.standardOutput = handle
        script.standardError = handle
        try script.run()
        script.waitUntilExit()
        try handle.close()
        guard script.terminationStatus == 0 else {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            throw DocsSiteError(".ci/docs failed (exit \(script.terminationStatus)):\n\(text.suffix(4000))")
        }
        return site
    }

    /// The DOM Chromium builds for `url` once its scripts have run (`--virtual-time-budget` lets the page's
    /// requests finish before the DOM is printed), with runs of whitespace made one space.
    private func render(_ url: URL, with chromium: URL) throws -> String {
        let profile = try makeTemporaryDirectory(self)
        let browser = Process()
        browser.executableURL = chromium
        browser.arguments = ["--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-extensions",
                             "--user-data-dir=\(profile.path)", "--virtual-time-budget=20000", "--dump-dom", url.absoluteString]
        let out = Pipe()
        browser.standardOutput = out
        // Chromium logs freely; a file, so a full pipe cannot stall it.
        let log = profile.appendingPathComponent("chromium.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let logHandle = try FileHandle(forWritingTo: log)
        browser.standardError = logHandle
        try browser.run()
        // A guard against a browser that never exits, not a timing assumption: a normal render takes seconds.
        let pid = browser.processIdentifier
        let hangGuard = DispatchWorkItem { kill(pid, SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + 300, execute: hangGuard)
        let dom = out.fileHandleForReading.readDataToEndOfFile()
        browser.waitUntilExit()
        hangGuard.cancel()
        try logHandle.close()
        XCTAssertEqual(browser.terminationStatus, 0, "chromium failed on \(url): \((try? String(contentsOf: log, encoding: .utf8))?.suffix(2000) ?? "")")
        return ArticleText.collapsingWhitespace(String(decoding: dom, as: UTF8.self))
    }

    private static func chromium() throws -> URL {
        for name in ["chromium", "chromium-browser"] {
            if let url = onPath(name) { return url }
        }
        throw XCTSkip("SKIPPED: Chromium is not installed (Debian package chromium; .ci/run installs it); the docs site was not rendered")
    }

    private static func docc() -> URL? {
        if let swift = onPath("swift") {
            let beside = swift.resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("docc")
            if FileManager.default.isExecutableFile(atPath: beside.path) { return beside }
        }
        return onPath("docc")
    }

    private static func onPath(_ name: String) -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let url = URL(fileURLWithPath: String(directory)).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        return nil
    }
}

/// An article's title (its `# ` line, symbol-link backticks removed) and a sentence of its first paragraph: the
/// longest run of it without Markdown markup or characters the DOM escapes, so it appears verbatim in the page.
private struct ArticleText {
    let title: String
    let sentence: String

    init(_ file: URL) throws {
        let lines = try String(contentsOf: file, encoding: .utf8).components(separatedBy: "\n")
        guard let heading = lines.firstIndex(where: { $0.hasPrefix("# ") }) else {
            throw DocsSiteError("\(file.path) has no '# ' title line")
        }
        title = lines[heading].dropFirst(2).replacingOccurrences(of: "`", with: "").trimmingCharacters(in: .whitespaces)
        // The first paragraph of prose: DocC shows it as the page's abstract.
        var paragraph: [String] = []
        for line in lines[(heading + 1)...] {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.isEmpty {
                if paragraph.isEmpty { continue } else { break }
            }
            if paragraph.isEmpty, let first = text.first, "@#`-*|>!<}0123456789".contains(first) { continue }
            paragraph.append(text)
        }
        // DocC typesets `--` and `...` as dashes and ellipses: a run stops there too.
        let runs = paragraph.joined(separator: " ")
            .replacingOccurrences(of: "--", with: "|").replacingOccurrences(of: "...", with: "|")
            .split(whereSeparator: { "`*_[]()<>&\"'\\|{}#~".contains($0) })
            .map { Self.collapsingWhitespace(String($0)).trimmingCharacters(in: .whitespaces) }
        guard let longest = runs.max(by: { $0.count < $1.count }), longest.split(separator: " ").count >= 3 else {
            throw DocsSiteError("\(file.path) has no first paragraph with a plain run of three words or more")
        }
        sentence = longest
    }

    static func collapsingWhitespace(_ text: String) -> String {
        text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }
}

private struct DocsSiteError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// `python3 -m http.server` serving a directory on loopback, on a port the system picks (port 0, read back from
/// the server's first line), until `stop()`.
private final class SiteServer {
    let port: Int
    private let server: Process

    init(serving directory: URL) throws {
        guard let python = ["/usr/bin/python3", "/usr/local/bin/python3"]
            .first(where: { FileManager.default.isExecutableFile(atPath: $0) }) ?? Self.pythonOnPath() else {
            throw XCTSkip("SKIPPED: python3 is not installed; the docs site was not served")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", directory.path]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        // "Serving HTTP on 127.0.0.1 port 41237 (http://127.0.0.1:41237/) ..."; read until it appears or the
        // server exits (availableData is empty at end of file).
        var printed = ""
        var found: Int?
        while found == nil {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            printed += String(decoding: chunk, as: UTF8.self)
            if let range = printed.range(of: #"port (\d+)"#, options: .regularExpression) {
                found = Int(printed[range].dropFirst(5))
            }
        }
        guard let found else {
            process.terminate()
            throw DocsSiteError("python3 -m http.server did not start: \(printed)")
        }
        port = found
        server = process
    }

    func stop() {
        server.terminate()
        server.waitUntilExit()
    }

    func url(_ path: String) throws -> URL {
        // A trailing slash: the static site keeps each page as PATH/index.html.
        guard let url = URL(string: "http://127.0.0.1:\(port)/\(path)/") else { throw DocsSiteError("no URL for \(path)") }
        return url
    }

    private static func pythonOnPath() -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        return path.split(separator: ":").map { "\($0)/python3" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
