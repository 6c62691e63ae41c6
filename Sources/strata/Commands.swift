#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Strata

/// One command's run: load what it needs through the library, call it, render the result.
struct Commands {
    let invocation: Invocation
    let output: Output

    func run() throws -> Int32 {
        switch invocation.spec.name {
        case "validate": return try validate()
        case "migrate": return try migrate(seedsOnly: false)
        case "seed": return try migrate(seedsOnly: true)
        case "status": return try status()
        case "plan": return try plan()
        case "rollback": return try rollback()
        case "baseline": return try baseline()
        case "repair": return try repair()
        case "resolve": return try resolve()
        case "restore": return try restore()
        case "new": return try newMigration()
        case "schema": return try schema()
        case "diff": return try diff()
        case "rehearse": return try rehearse()
        case "check": return try check()
        case "completion": return try completion()
        default: throw UsageError("unknown command '\(invocation.spec.name)'")
        }
    }

    // MARK: Loading

    func manifest() throws -> Manifest {
        guard let path = invocation.value("manifest") else { throw UsageError("--manifest PATH is required") }
        let manifest = try Manifest.load(path: path)
        for warning in manifest.warnings { output.log("warning: \(warning)") }
        return manifest
    }

    /// The database `--database` or the manifest names, checked by its backend (exit 2 for a name at which no
    /// durable database would be kept).
    func target(_ manifest: Manifest?) throws -> any DatabaseTarget {
        try DatabaseTargets.target(option: invocation.value("database"), manifest: manifest, direct: invocation.value("direct-database"),
                                   environment: ProcessInfo.processInfo.environment)
    }

    /// `open`, retried while the database does not answer for up to `--wait SECONDS` (none: not retried); a
    /// database that cannot be connected to or opened is `DatabaseUnreachable` (exit 5).
    func connect<T>(_ target: any DatabaseTarget, cancellation: MigrationCancellation? = nil,
                    _ open: () throws -> T) throws -> T {
        try DatabaseWait.opening(target, waitingUpTo: try seconds("wait"), cancellation: cancellation,
                                 waiting: { output.log($0) }, open)
    }

    var timeout: Duration {
        get throws {
            guard let text = invocation.value("timeout") else { return .seconds(60) }
            guard let seconds = Double(text), seconds >= 0, seconds < 86_400 * 7 else {
                throw UsageError("--timeout must be a number of seconds, not '\(text)'")
            }
            return .milliseconds(Int64(seconds * 1000))
        }
    }

    var options: MigrationOptions {
        get throws {
            var options = MigrationOptions(contexts: Set(invocation.all("context")), strictOrder: invocation.has("strict-order"),
                                           waitTimeout: try timeout, expectedPlanID: invocation.value("plan-id"))
            if let lockTimeout = try seconds("lock-timeout") { options.lockTimeout = lockTimeout }
            if let text = invocation.value("lock-retries") {
                guard let retries = Int(text), (0...1000).contains(retries) else {
                    throw UsageError("--lock-retries must be a whole number from 0 to 1000, not '\(text)'")
                }
                options.lockRetries = retries
            }
            options.statementTimeout = try seconds("statement-timeout")
            options.newHistory = invocation.has("new-history")
            if invocation.spec.name == "rollback" {
                options.rollback = try rollbackTarget(steps: "steps", to: "to", required: true)
            } else {
                options.target = invocation.value("to")
                options.rollback = try rollbackTarget(steps: "rollback-steps", to: "rollback-to", required: false)
                if options.rollback != nil && options.target != nil {
                    throw UsageError("--to applies steps and --rollback-steps/--rollback-to undoes them: give one")
                }
            }
            return options
        }
    }

    /// What a rollback undoes: `--steps N` or `--to ID` (exactly one when `required`).
    private func rollbackTarget(steps: String, to: String, required: Bool) throws -> RollbackTarget? {
        switch (invocation.value(steps), invocation.value(to)) {
        case (nil, nil):
            guard !required else { throw UsageError("give --\(steps) N (the last N applied migrations) or --\(to) ID (those after ID)") }
            return nil
        case (let count?, nil):
            guard let number = Int(count), number >= 1, number <= 1_000_000 else {
                throw UsageError("--\(steps) must be a whole number from 1, not '\(count)'")
            }
            return .steps(number)
        case (nil, let id?):
            return .to(id)
        case (_?, _?):
            throw UsageError("--\(steps) and --\(to) both say what to roll back: give one")
        }
    }

    /// The target opened for a command that writes; one that cannot be written is a refusal (exit 3), the same on
    /// every backend.
    func openForWriting(_ target: any DatabaseTarget, cancellation: MigrationCancellation? = nil) throws -> any MigrationDatabase {
        let timeout = try timeout
        do {
            return try connect(target, cancellation: cancellation) { try target.openForWriting(timeout: timeout) }
        } catch let error as DatabaseError where error.kind == .readOnly {
            throw MigrationError.refused([Refusal(reason: .readOnly, id: "", message: error.message)])
        }
    }

    /// The value of a `--NAME SECONDS` option as a duration (nil when not given): a number of seconds from 0 to a
    /// week, fractions allowed.
    func seconds(_ name: String) throws -> Duration? {
        guard let text = invocation.value(name) else { return nil }
        guard let seconds = Double(text), seconds.isFinite, seconds >= 0, seconds <= 86_400 * 7 else {
            throw UsageError("--\(name) must be a number of seconds from 0 to 604800, not '\(text)'")
        }
        return .milliseconds(Int64((seconds * 1000).rounded(.up)))
    }

    /// The backup `--backup DIR` (or the manifest's `<database backup>`) asks for, `--keep N` applied; nil with
    /// `--no-backup` or when neither asks for one.
    func backupOptions(_ manifest: Manifest) throws -> BackupOptions? {
        if invocation.has("no-backup") {
            guard invocation.value("backup") == nil && invocation.value("keep") == nil else {
                throw UsageError("--no-backup takes no backup; it cannot go with --backup or --keep")
            }
            return nil
        }
        // --backup DIR replaces the manifest's backup, its keep included: that keep counted another directory.
        var backup = manifest.databaseBackup
        if let directory = invocation.value("backup") {
            guard !directory.isEmpty else { throw UsageError("--backup needs a directory, not ''") }
            backup = BackupOptions(directory: directory)
        }
        if let text = invocation.value("keep") {
            guard backup != nil else {
                throw UsageError("--keep N says how many backups to keep; it needs --backup DIR (or <database backup> in the manifest)")
            }
            guard let keep = Int(text), (1...999_999).contains(keep) else {
                throw UsageError("--keep must be a whole number from 1 to 999999, not '\(text)'")
            }
            backup?.keep = keep
        }
        return backup
    }
}
