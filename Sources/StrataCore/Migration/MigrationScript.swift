#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Runs one migration file under the backend's rules for migrations, and tells what ran: the checksum and (for
/// files up to `recordedTextLimit`) the text of exactly the bytes that ran, read once. A plain file streams from
/// disk; a file in another tool's format is read whole once, and only its up section runs (or, for its down, its
/// down section), at the file's own line numbers.
struct MigrationScript {
    let migration: MigrationStep
    let database: any MigrationDatabase
    /// Which of the migration's SQL runs: what applies it, or what undoes it.
    var part = Part.up

    enum Part: Equatable {
        case up
        case down(MigrationDown)
    }

    /// The file the part's SQL is in.
    var path: String {
        if case .down(let down) = part, case .file(let path) = down.source { return path }
        return migration.path
    }

    /// How that file is laid out: a down file of its own runs whole.
    private var format: MigrationFormat {
        if case .down(let down) = part, case .file = down.source { return .plain }
        return migration.format
    }

    /// Whether the part runs inside a transaction.
    var runsInTransaction: Bool {
        switch part {
        case .up: migration.runsInTransaction
        case .down(let down): down.runsInTransaction
        }
    }

    /// Whether a file's own outer `BEGIN; … COMMIT;` may be taken as the step's transaction (`OuterTransaction`):
    /// under a declared format, in a transaction, and for files the lint reads ahead (larger ones stream as written).
    private var unwrapsOuterTransaction: Bool {
        Self.unwrapsOuterTransaction(migration, runsInTransaction: runsInTransaction, path: path)
    }

    static func unwrapsOuterTransaction(_ migration: MigrationStep, runsInTransaction: Bool, path: String) -> Bool {
        guard migration.format != .plain, runsInTransaction, let size = try? RegularFile(path: path).size else { return false }
        return size <= MigrationLint.sizeLimit
    }

    /// `bytes` (a section's) with its `ENVSUB ON` parts substituted from the environment (`EnvironmentSubstitution`).
    /// - Throws: `EnvironmentSubstitution.Failure`, also when the manifest no longer opts in.
    static func substituted(_ bytes: [UInt8], _ section: MigrationSection, _ migration: MigrationStep,
                            environment: [String: String] = ProcessInfo.processInfo.environment) throws -> [UInt8] {
        guard !section.environmentRanges.isEmpty else { return bytes }
        guard migration.substitutesEnvironment else {
            throw EnvironmentSubstitution.Failure(line: section.environmentLine ?? section.startLine,
                message: "'-- +goose ENVSUB ON' asks for environment variables, and the manifest does not opt in (envsub=\"true\" on its <migrations>)")
        }
        let ranges = section.environmentRanges.map { ($0.lowerBound - section.range.lowerBound)..<($0.upperBound - section.range.lowerBound) }
        return try EnvironmentSubstitution.apply(bytes, ranges: ranges, startLine: section.startLine, environment: environment)
    }

    /// The part's section of the whole file's bytes.
    func section(of bytes: [UInt8]) throws -> MigrationSection {
        guard case .down = part else { return try format.upSection(of: bytes) }
        guard format.hasSections else { return try format.upSection(of: bytes) }
        guard let down = try format.downSection(of: bytes) else {
            throw MigrationFormatError(line: 1, message: "the file has no down section any more (\(format.toolName)); its down cannot run")
        }
        return down
    }

    /// History keeps the applied SQL of files up to 1 MiB (for drift diffs); larger files, typically data loads,
    /// are recorded by checksum only so memory never grows with a file's size.
    static let recordedTextLimit = 1 << 20

    /// A migration file's text as history keeps it, line endings normalised by checksum `version`'s rules.
    static func recordedText(of path: String, version: Int) -> String? {
        fileBytes(path, atMost: recordedTextLimit).map { Checksum.normalizedText($0, version: version) }
    }

    /// The checksum version this file's record gets: the one that reads SQL by the database's rules.
    var checksumVersion: Int { database.dialect.checksumVersion }

    /// The file's bytes when it is no larger than `limit`; nil for a larger or unreadable file.
    static func fileBytes(_ path: String, atMost limit: Int) -> [UInt8]? {
        guard let file = try? RegularFile(path: path), file.size <= limit,
              let bytes = try? file.read(upTo: limit + 1), bytes.count <= limit else { return nil }
        return bytes
    }

    private func failure(_ message: String, line: Int? = nil, column: Int? = nil) -> StepFailure {
        StepFailure(kind: .migration, id: migration.id, file: displayPath(path), line: line, column: column, message: message)
    }

    /// The file's checksum and, for files up to `recordedTextLimit`, its text, read once: what a
    /// `transaction="none"` step's claim records before it runs.
    func read() throws -> (text: String?, checksum: String) {
        let version = checksumVersion
        do {
            if let bytes = Self.fileBytes(path, atMost: Self.recordedTextLimit) {
                return (Checksum.normalizedText(bytes, version: version), try Checksum.of(bytes, version: version))
            }
            return (nil, try Checksum.ofFile(atPath: path, content: .sql, version: version))
        } catch {
            throw failure("cannot read the migration file: \(error)")
        }
    }

    /// Runs the file; `statementFinished` runs after each statement.
    func run(_ progress: ((MigrationEvent) -> Void)?,
             statementFinished: (() -> Void)? = nil) throws -> (checksum: String, text: String?) {
        let version = checksumVersion
        let hasher: NormalizingHasher
        do { hasher = try NormalizingHasher(content: .sql, version: version) } catch { throw failure("\(error)") }
        var kept: [UInt8]? = []
        func observe(_ chunk: UnsafeBufferPointer<UInt8>) {
            hasher.update(chunk)
            if let count = kept?.count {
                if count + chunk.count <= Self.recordedTextLimit { kept?.append(contentsOf: chunk) } else { kept = nil }
            }
        }
        // The environment's values substituted into what runs, by name: the database's message may quote one
        // (`invalid input syntax for type integer: "…"`), and a message says `${NAME}` where it would.
        var substitutedValues: [(name: String, value: String)] = []
        // Statement n of m for a progress line: m counted by the dialect's lexer where the text is read ahead.
        let started = ContinuousClock.now
        var finished = 0
        var total: Int?
        let afterEach: (() -> Void)? = progress == nil ? statementFinished : {
            finished += 1
            statementFinished?()
            progress?(.statementProgress(id: migration.id, finished: finished, total: total, elapsed: ContinuousClock.now - started))
        }
        do {
            if !format.hasSections && !unwrapsOuterTransaction {
                if progress != nil, let bytes = Self.fileBytes(path, atMost: MigrationLint.sizeLimit) {
                    total = OuterTransaction.statements(bytes, backend: database.dialect.backend)?.count
                }
                try database.runScript(contentsOfFile: path, insideTransaction: runsInTransaction,
                                       progress: { read, total in
                    progress?(.scriptProgress(id: migration.id, bytesRead: read, totalBytes: total))
                }, observe: observe, afterEach: afterEach)
            } else {
                let bytes: [UInt8]
                do { bytes = try RegularFile(path: path).readToEnd() } catch {
                    throw DatabaseError(kind: .cannotOpen, message: "\(error)")
                }
                bytes.withUnsafeBufferPointer(observe)
                let section: MigrationSection
                do { section = try self.section(of: bytes) } catch let error as MigrationFormatError {
                    throw failure(error.message, line: error.line)
                }
                guard section.runsInTransaction || !runsInTransaction, part != .up || section.runsInTransaction == runsInTransaction else {
                    throw failure("the file's own transaction option changed since the manifest was read; run again")
                }
                var runnable = Array(bytes[section.range])
                if !section.environmentRanges.isEmpty { substitutedValues = Self.namedValues(in: runnable) }
                do { runnable = try Self.substituted(runnable, section, migration) } catch let error as EnvironmentSubstitution.Failure {
                    throw failure(error.message, line: error.line)
                }
                if unwrapsOuterTransaction, let unwrapped = OuterTransaction.unwrapped(runnable, backend: database.dialect.backend) {
                    runnable = unwrapped
                }
                if progress != nil { total = OuterTransaction.statements(runnable, backend: database.dialect.backend)?.count }
                try database.runScript(runnable, startLine: section.startLine,
                                       insideTransaction: runsInTransaction, afterEach: afterEach)
            }
        } catch let error as DatabaseError {
            var message = error.line == nil && error.kind == .cannotOpen
                ? "cannot read the migration file (\(error.message))" : error.message
            for (name, value) in substitutedValues where !value.isEmpty {
                message = message.replacingEvery(value, with: "${\(name)}")
            }
            var failed = failure(message, line: error.line, column: error.column)
            failed.databaseError = error
            throw failed
        }
        do {
            return (try hasher.finish(), kept.map { Checksum.normalizedText($0, version: version) })
        } catch {
            throw failure("\(error)")
        }
    }

    /// Fails the step for foreign key violations it made (those in `baseline` were there before the run), naming
    /// the rows; a schema the database cannot check (a foreign key to a column that is not unique) fails it too.
    func checkForeignKeys(_ baseline: any ForeignKeyBaseline) throws {
        let violations: [ForeignKeyViolation]
        do {
            violations = try baseline.newViolations()
        } catch let error as DatabaseError where error.kind != .busy {
            var failed = failure("foreign key check could not run: \(error.message) (a REFERENCES clause must name the parent's primary key or a UNIQUE column)")
            failed.databaseError = error
            throw failed
        }
        guard !violations.isEmpty else { return }
        let shown = violations.prefix(10).map(\.description).joined(separator: "; ")
        let more = violations.count > 10 ? " (and \(violations.count - 10) more)" : ""
        let withoutRowid = violations.contains { $0.rowid == nil }
            ? " (rows of tables without rowid cannot be told apart from rows that were already wrong before the run)" : ""
        throw failure("foreign key check failed: \(shown)\(more)\(withoutRowid)")
    }
}
