import CSQLite
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataCore

/// `strata validate`'s check of SQLite migrations by SQLite itself: every file of the plan runs, in plan order, on
/// an empty in-memory database made for the check, so a statement SQLite cannot compile (`SELEC 1`, `CREATE TABL`,
/// an unclosed parenthesis) or that names an object no earlier file made is found with its file, line and column
/// before any real database is touched. Nothing outside the scratch database is opened: `ATTACH` of a file and
/// `VACUUM INTO` are refused (the rehearsal's rules), and foreign keys are off, as a migration runs them.
public enum SQLiteScratchCheck {
    /// What the check found: problems (the file would fail), and warnings saying what was not checked and why.
    public struct Result: Sendable, Equatable {
        /// SQL SQLite refused, at its file, line and column: a migrate would fail there.
        public var problems: [ManifestProblem] = []
        /// What was not checked, and why (a code step, a function the program registers, a failed file before).
        public var warnings: [ManifestProblem] = []
    }

    /// Runs `plan`'s migrations in order on a scratch database. The check stops at the first file that fails, at a
    /// file in `skipping` (the lint found problems in it already), at a code step, and at a file too large to read
    /// ahead: a later file may need what those do, and would fail for that alone. Seeds are left out (they add rows).
    public static func check(_ plan: [PlanStep], skipping: Set<String> = []) -> Result {
        var result = Result()
        let scratch: Database
        do {
            scratch = try Database(.inMemory, configuration: Database.Configuration(foreignKeys: false))
        } catch {
            result.warnings.append(ManifestProblem(SourceLocation(path: "", line: 1),
                                                   "SQL not checked: no scratch database could be opened (\(error))"))
            return result
        }
        scratch.authorizer.rehearsal = RehearsalRules()
        let migrations = plan.compactMap { step -> MigrationStep? in
            if case .migration(let migration) = step { return migration }
            return nil
        }
        func stop(after step: PlanStep, _ why: String) {
            let later = migrations.drop { $0.id != step.id }.dropFirst().map(\.id)
            guard !later.isEmpty else { return }
            result.warnings.append(ManifestProblem(step.location, "\(counted(later.count, "later migration")) not checked by SQLite: \(why)"))
        }
        for step in plan {
            let migration: MigrationStep
            switch step {
            case .seed: continue
            case .code(let code):
                stop(after: step, "they may need what the Swift code step \(code.name) does, which validate cannot run")
                return result
            case .migration(let found): migration = found
            }
            let file = displayPath(migration.path)
            if skipping.contains(migration.id) {
                result.warnings.append(ManifestProblem(SourceLocation(path: file, line: 1),
                                                       "not run on a scratch database by SQLite: fix the problems above first"))
                stop(after: step, "they may need what \(migration.id) makes")
                return result
            }
            guard let bytes = migration.bytesReadAhead, let section = try? migration.format.upSection(of: bytes) else {
                result.warnings.append(ManifestProblem(SourceLocation(path: file, line: 1), "not run on a scratch database by SQLite: too large to read ahead, or unreadable"))
                stop(after: step, "they may need what \(migration.id) makes")
                return result
            }
            do {
                try scratch.executeScript(String(decoding: bytes[section.range], as: UTF8.self))
            } catch let error as DatabaseError {
                let line = (error.line ?? 1) + section.startLine - 1
                let location = SourceLocation(path: file, line: line, column: error.column)
                if let missing = Self.notInThisSQLite(error.message) {
                    // A function, collation or module the program registers: not the file's fault.
                    result.warnings.append(ManifestProblem(location, "not checked past here: it uses \(missing), which plain SQLite lacks (one your program registers?) (\(migration.location))"))
                    stop(after: step, "they may need what \(migration.id) makes")
                } else {
                    result.problems.append(ManifestProblem(location, "SQLite refuses it: \(error.message) (run after the files before it, on an empty database) (\(migration.location))"))
                    stop(after: step, "they may need what \(migration.id) makes, and it fails")
                }
                return result
            } catch {
                result.warnings.append(ManifestProblem(SourceLocation(path: file, line: 1), "not run on a scratch database by SQLite: \(error)"))
                return result
            }
        }
        return result
    }

    /// What an error says SQLite lacks that a program may register on its connections, or nil.
    static func notInThisSQLite(_ message: String) -> String? {
        for (prefix, what) in [("no such function: ", "the SQL function"), ("no such collation sequence: ", "the collation"),
                               ("no such module: ", "the virtual table module")] {
            if let range = message.firstRange(of: prefix) {
                return "\(what) \(message[range.upperBound...])"
            }
        }
        return nil
    }

    private static func counted(_ count: Int, _ noun: String) -> String {
        "\(count) \(noun)\(count == 1 ? "" : "s")"
    }
}
