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

/// One row of `strata_history`.
public struct HistoryRecord: Sendable, Equatable {
    /// `applied` and `baseline` count as applied; `running` and `failed` are dirty; `deleted` is ignored.
    public enum State: String, Sendable, Equatable, Codable {
        /// The states a record can be in.
        case applied, baseline, running, failed, deleted
    }

    /// Whether the step is a migration or a seed.
    public let kind: StepKind
    /// The step's id: its file path as the manifest gives it.
    public let identity: String
    /// The checksum of the file's contents when it was applied.
    public let checksum: String
    /// Which version of the checksum rules computed `checksum`.
    public let checksumVersion: Int
    /// When the step was applied: ISO-8601 in UTC.
    public let appliedAt: String
    /// How long the step took, in milliseconds, where recorded.
    public let durationMs: Int?
    /// How many rows a seed loaded, where recorded.
    public let rowCount: Int?
    /// Whether the step is applied, baselined, running, failed or deleted.
    public let state: State
    /// The Strata version that wrote the record.
    public let toolVersion: String
    /// The SQL that ran, where it was recorded.
    public let appliedSQL: String?
    /// `host:pid` of the process applying (or that failed) a step outside a transaction, for a human to read.
    /// Whether it is still running is known from its step lock (`StepLocking`), never from this pid.
    public let runner: String?
    /// The error that left a step `failed`.
    public let error: String?
    /// The checksums the step was applied with before `checksum`, oldest first, each `version:hex`: a reapplied
    /// seed's earlier files. A file that matches one of them is older than what the database holds now.
    public let earlierChecksums: [String]
    /// How the backend tells that the process applying a `transaction="none"` step still runs when its claim is
    /// gone (PostgreSQL: the server session running the file, `pid N, connected T`); nil where the claim alone tells.
    public let runnerSession: String?

    /// Creates a record as the runner writes it.
    public init(kind: StepKind, identity: String, checksum: String, checksumVersion: Int, appliedAt: String,
                durationMs: Int?, rowCount: Int?, state: State, toolVersion: String, appliedSQL: String?,
                runner: String?, error: String?, earlierChecksums: [String] = [], runnerSession: String? = nil) {
        self.kind = kind
        self.identity = identity
        self.checksum = checksum
        self.checksumVersion = checksumVersion
        self.appliedAt = appliedAt
        self.durationMs = durationMs
        self.rowCount = rowCount
        self.state = state
        self.toolVersion = toolVersion
        self.appliedSQL = appliedSQL
        self.runner = runner
        self.error = error
        self.earlierChecksums = earlierChecksums
        self.runnerSession = runnerSession
    }

    /// The time a record is written, as `applied_at` holds it (ISO 8601, UTC).
    /// A record read from a row of `strata_history` (its columns by name), as every backend's storage reads it.
    package init(row: Row) throws {
        self.init(
            kind: StepKind(rawValue: try row.get("kind")) ?? .migration,
            identity: try row.get("identity"), checksum: try row.get("checksum"),
            checksumVersion: try row.get("checksum_version"), appliedAt: try row.get("applied_at"),
            durationMs: try row.get("duration_ms"), rowCount: try row.get("row_count"),
            state: HistoryRecord.State(rawValue: try row.get("state")) ?? .failed,
            toolVersion: try row.get("tool_version"), appliedSQL: try row.get("applied_sql"),
            runner: try row.get("runner"), error: try row.get("error"),
            earlierChecksums: Self.checksumList(row["earlier_checksums"]),
            runnerSession: row["runner_session"].flatMap { String.fromDatabaseValue($0) })
    }

    /// `earlierChecksums` as the `earlier_checksums` column stores them: space-separated, nil when there are none.
    /// A table written before the column existed reads as none.
    package var earlierChecksumsText: String? {
        earlierChecksums.isEmpty ? nil : earlierChecksums.joined(separator: " ")
    }

    private static func checksumList(_ value: DatabaseValue?) -> [String] {
        guard let text = value.flatMap({ String.fromDatabaseValue($0) }) else { return [] }
        return text.split(separator: " ").map(String.init)
    }

    /// This record's checksum as `earlierChecksums` lists it.
    package var versionedChecksum: String { "\(checksumVersion):\(checksum)" }

    static func now() -> String {
        ISO8601.format(Date())
    }

    /// Why a statement of a migration or seed that writes, alters or shadows the history table is refused: the same
    /// words from every backend's rules and lint.
    package static func refusal(verb: String, table: String) -> String {
        "this statement \(verb) \(table), Strata's record of what was applied; migrations and seeds may not change it ('strata repair', 'strata resolve' and 'strata baseline' do, after a human has checked)"
    }

    /// Whether the step counts as applied (`applied` or `baseline`).
    public var isApplied: Bool { state == .applied || state == .baseline }
    /// The kind of step the record is of: a `migration` record whose identity starts with `code:` is a code step's
    /// (`PlanStep.historyKind`); no migration's identity may start so.
    public var stepKind: StepKind {
        kind == .migration && identity.hasPrefix(CodeStep.identityPrefix) ? .code : kind
    }
    /// Whether the step was left running or failed, which `migrate` refuses until it is repaired or resolved.
    public var isDirty: Bool { state == .running || state == .failed }
}

/// Identifies this process as `host:pid` in the `runner` column and lock files; informative only.
package enum Runner {
    package static var current: String {
        "\(ProcessInfo.processInfo.hostName):\(getpid())"
    }
}
