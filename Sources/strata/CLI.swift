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
import CStrataBuild
import Strata

/// The command table and dispatch. Commands only parse, call the library, and render.
enum CLI {
    /// `--wait` belongs to every command that connects: they all take `--database`.
    static let manifestOptions: Set<String> = ["manifest", "database", "wait"]
    static let waitHelp = """
        The database: --database, else the manifest's <database>, else $STRATA_DATABASE, else $DATABASE_URL.
          --wait SECONDS  while the database does not answer (a PostgreSQL server not up yet or starting, a SQLite
                          file that cannot be opened yet), retry connecting with backoff for up to SECONDS; then,
                          or at once without --wait, exit 5. A server that answers and refuses the login or has no
                          such database is exit 5 at once.
        """

    /// What bounds each step's statements on a busy server (PostgreSQL; SQLite ignores them).
    static let stepOptions: Set<String> = ["lock-timeout", "lock-retries", "statement-timeout"]
    static let stepOptionsUsage = "[--lock-timeout SECONDS] [--lock-retries N] [--statement-timeout SECONDS]"
    static let stepOptionsHelp = """
        On PostgreSQL (SQLite ignores these):
          --lock-timeout SECONDS       how long a statement of a transactional step may wait for a lock before the
                                       step is rolled back and retried (default 5; 0: wait as long as it takes);
                                       transaction="none" steps wait without a limit and are never retried
          --lock-retries N             how many times such a step is retried, after 0.5 s, 1 s, 2 s, … (at most
                                       10 s) with no lock held (default 5; 0: fail at once); the failure names the
                                       session holding the lock, its query and how long its transaction has run
          --statement-timeout SECONDS  how long any statement of a step may run (default: the server's setting;
                                       0: no limit); a step that runs past it fails and is not retried
        """

    /// A backup taken before `migrate` or `seed` writes (SQLite).
    static let backupOptions: Set<String> = ["backup", "keep"]
    static let backupOptionsUsage = "[--backup DIR [--keep N] | --no-backup]"
    static let backupOptionsHelp = """
        Backups (SQLite; refused on PostgreSQL, exit 3: use pg_dump or point-in-time recovery):
          --backup DIR   before the first step, copy the database (SQLite's online backup API, consistent while
                         others write) into DIR as NAME.TIME.PLANID.backup, check it (PRAGMA integrity_check) and
                         sync it; nothing pending: no backup. DIR is created when missing. Replaces the manifest's
                         <database backup>. A backup that fails stops the run before any step (exit 1)
          --keep N       keep the newest N backups of this database in DIR, the new one included; older ones are
                         removed after it is in place (default: with the manifest's backup, its keep; else all)
          --no-backup    take no backup, whatever the manifest's <database backup> says
        Put one back with 'strata restore BACKUP --database D'.
        """

    static let newHistoryHelp = """
        --new-history  this database's history starts here (PostgreSQL): a Strata history in another schema is
                       another application's, even where it records files like these. Without it, a first run
                       refuses (exit 3, history-elsewhere) when another history records these steps or cannot be read.
        """

    static let commands: [CommandSpec] = [
        CommandSpec(name: "validate", summary: "check a manifest, the files it names and their SQL",
                    usage: "strata validate --manifest PATH [--database PATH]", valueOptions: ["manifest", "database"],
                    details: """
                        Checks the manifest, the files it names and their SQL, for each backend the manifest names: the
                        runner's rules (what migrate refuses), the other backend's syntax (AUTOINCREMENT in a PostgreSQL
                        file, SERIAL in a SQLite one), and then SQLite runs every migration in plan order on an empty
                        in-memory database, so SQL it cannot run is found with its file:line:column. PostgreSQL's syntax is
                        checked by a server only with --database postgres://… (each statement parsed, none run, in a
                        read-only transaction rolled back); without one, or when it cannot connect, validate says so.
                        --database D checks for D's backend only (a SQLite file is not opened). A manifest that names no
                        backend is read by both backends' rules and only what both find is a problem.
                        Exit 0 with a summary when valid; exit 3 listing every problem as path:line:column: message
                        (as migrate refuses an invalid manifest).
                        """),
        CommandSpec(name: "migrate", summary: "apply every pending migration and seed, in plan order",
                    usage: "strata migrate --manifest PATH [--database PATH] [--direct-database URL] [--wait SECONDS] [--context NAME]... [--to ID] [--strict-order] [--timeout SECONDS] [--plan-id ID] [--new-history] \(backupOptionsUsage) \(stepOptionsUsage)",
                    valueOptions: manifestOptions.union(["timeout", "plan-id", "to", "direct-database"]).union(stepOptions).union(backupOptions),
                    repeatableOptions: ["context"], flags: ["strict-order", "no-backup", "new-history"],
                    details: "--to ID applies the pending steps up to and including ID (plan order); later ones stay pending. An ID no step has is a usage error (exit 2) naming the nearest.\n"
                        + "--plan-id ID refuses (exit 3) unless the plan is still the one 'strata plan' printed with that id, and fails a step whose file changed after that check.\n"
                        + "--direct-database URL (PostgreSQL): when --database goes through a connection pooler (PgBouncer), a connection straight to the same database for the claims of transaction=\"none\" steps; without it such a plan is refused (exit 3, reason pooler).\n\n"
                        + newHistoryHelp + "\n\n" + backupOptionsHelp + "\n\n" + stepOptionsHelp),
        CommandSpec(name: "seed", summary: "apply pending seed sets only",
                    usage: "strata seed --manifest PATH [--database PATH] [--wait SECONDS] [--context NAME]... [--timeout SECONDS] [--new-history] \(backupOptionsUsage) \(stepOptionsUsage)",
                    valueOptions: manifestOptions.union(["timeout"]).union(stepOptions).union(backupOptions),
                    repeatableOptions: ["context"], flags: ["no-backup", "new-history"],
                    details: backupOptionsHelp + "\n\n" + stepOptionsHelp),
        CommandSpec(name: "rehearse", summary: "run the pending plan where nothing is kept and report what migrate would do",
                    usage: "strata rehearse --manifest PATH [--database PATH] [--wait SECONDS] [--context NAME]... [--to ID | --rollback-steps N | --rollback-to ID] [--strict-order] [--timeout SECONDS] [--lock-timeout SECONDS] [--statement-timeout SECONDS] [--new-history] \(backupOptionsUsage)",
                    valueOptions: manifestOptions.union(["timeout", "lock-timeout", "statement-timeout", "to", "rollback-steps", "rollback-to"]).union(backupOptions),
                    repeatableOptions: ["context"], flags: ["strict-order", "no-backup", "new-history"],
                    details: """
                        Applies the pending plan to a throwaway copy of a SQLite database (made with SQLite's online backup
                        API, in a temporary directory, removed afterwards), or on PostgreSQL inside one transaction that is
                        rolled back, and reports each step: its duration, the rows it inserts, updates and deletes per table,
                        the locks it takes (PostgreSQL), the failure with file:line:column, and the schema difference.
                        transaction="none" steps are not rehearsed on PostgreSQL. Writes nothing to the database.
                        --lock-timeout SECONDS (PostgreSQL): how long a step's statement may wait for a lock (default 5);
                        a step that gives up fails the rehearsal (migrate would retry it).
                        The backup migrate would take first (--backup DIR, --keep N, or the manifest's <database backup>;
                        --no-backup leaves it out) is not taken: whether it fits the free space where it goes is judged.
                        Exit 0 when the plan would succeed, 1 when a step or the backup would fail, 3 when refused, 4 when
                        that is not known (a step failed after one that was not rehearsed, ran unlike migrate, or the
                        backup's room cannot be judged; the message says why).
                        """),
        CommandSpec(name: "status", summary: "show every step: applied, pending, drifted, missing or dirty",
                    usage: "strata status --manifest PATH [--database PATH] [--context NAME]... [--exit-code] [--wait SECONDS] [--new-history]",
                    valueOptions: manifestOptions, repeatableOptions: ["context"], flags: ["new-history", "exit-code"],
                    details: "Exit 3 when a step is drifted, missing or dirty, or an index is INVALID.\n"
                        + "--exit-code  exit 6 when nothing is wrong but steps are pending (pending, a changed reapply seed, or one\n"
                        + "             being applied now): a CI gate's 'is the database up to date?'."),
        CommandSpec(name: "plan", summary: "show what migrate would do, writing nothing",
                    usage: "strata plan --manifest PATH [--database PATH] [--wait SECONDS] [--context NAME]... [--to ID] [--strict-order] [--sql] [--new-history]",
                    valueOptions: manifestOptions.union(["to"]), repeatableOptions: ["context"], flags: ["sql", "strict-order", "new-history"]),
        CommandSpec(name: "rollback", summary: "undo the last N applied migrations, or those after ID, newest first",
                    usage: "strata rollback --manifest PATH [--database PATH] [--wait SECONDS] (--steps N | --to ID) [--dry-run] [--timeout SECONDS] [--plan-id ID] \(backupOptionsUsage) \(stepOptionsUsage)",
                    valueOptions: manifestOptions.union(["timeout", "plan-id", "steps", "to"]).union(stepOptions).union(backupOptions),
                    flags: ["dry-run", "no-backup"],
                    details: """
                        Runs the downs of the applied migrations after ID (--to ID: ID stays applied), or of the last N
                        (--steps N), newest first, each in its own transaction with the removal of its history row (an audit
                        row records what was rolled back and when), under the deployers' lock. Refused before anything runs
                        (exit 3) when a migration in the range has no down (reason no-down), has changed since it was applied
                        (drift), is no longer in the manifest (missing), is a code step without a registered down, or when a
                        step is dirty. A rolled-back step reads pending again; the next migrate applies it as new. Seeds whose
                        tables a down drops read pending with it; repeatable migrations are never rolled back.
                        --dry-run prints the plan of downs (with its plan id for --plan-id) and runs nothing. A down that
                        fails leaves its step applied and the database as before it (exit 1).
                        """ + "\n\n" + backupOptionsHelp + "\n\n" + stepOptionsHelp),
        CommandSpec(name: "baseline", summary: "record steps as applied without running them: up to FILE, or as another tool's history says",
                    usage: "strata baseline (--through FILE|VERSION | --from TOOL) --manifest PATH [--database PATH] [--wait SECONDS] [--context NAME]...",
                    valueOptions: manifestOptions.union(["through", "from"]), repeatableOptions: ["context"],
                    details: """
                        --through FILE|VERSION records every step up to and including FILE (or the one migration whose file
                        name starts with VERSION: 3, 20240101120000, Flyway's 1.1).
                        --from TOOL (\(ForeignTool.allCases.map(\.rawValue).joined(separator: ", "))) reads that tool's own
                        history table on the database and records exactly the migrations it applied, matched to files by
                        the tool's version rules. Refused (exit 3, reason foreign-history, nothing recorded) when the table is
                        missing or not the tool's, marks a step dirty or failed, or names a version no file has.
                        """),
        CommandSpec(name: "repair", summary: "re-record checksums of drifted steps; mark removed ones deleted",
                    usage: "strata repair --manifest PATH [--database PATH] [--wait SECONDS]", valueOptions: manifestOptions),
        CommandSpec(name: "resolve", summary: "settle a dirty transaction=\"none\" step after checking it by hand",
                    usage: "strata resolve FILE --applied|--rolled-back --manifest PATH [--database PATH] [--wait SECONDS]",
                    valueOptions: manifestOptions, flags: ["applied", "rolled-back"], positionals: 1...1),
        CommandSpec(name: "restore", summary: "put a backup back: replace a SQLite database's contents with it",
                    usage: "strata restore BACKUP (--database PATH | --manifest PATH) [--timeout SECONDS] [--keep-current] [--other-database]",
                    valueOptions: ["manifest", "database", "timeout"], flags: ["keep-current", "other-database"],
                    positionals: 1...1,
                    details: """
                        Checks BACKUP (a SQLite file passing PRAGMA integrity_check), copies the database as it is beside it
                        as NAME.before-restore-TIME, then replaces its contents with BACKUP's in one transaction through
                        SQLite's backup API and checks the result; the copy is removed once the restore has succeeded
                        (--keep-current keeps it). A missing database is created. Refused while another connection writes
                        (waiting up to --timeout, default 60 s; exit 1), for a file that is not a usable backup or a stale
                        -wal/-journal beside a missing database (exit 3), for a backup named as another database's
                        (NAME.TIME.PLANID.backup with another NAME than the database's file name) over an existing
                        database unless --other-database is given (exit 3), and on PostgreSQL (exit 3: use pg_restore or
                        point-in-time recovery). Stop the programs that use the database, and any migrate, while restoring.
                        """),
        CommandSpec(name: "new", summary: "create the next migration file in the manifest's migrations directory",
                    usage: "strata new NAME --manifest PATH [--backend sqlite|postgresql]",
                    valueOptions: ["manifest", "backend"], positionals: 1...1,
                    details: "With --backend, the first directory marked backend=\"…\" for it, else the first unmarked one."),
        CommandSpec(name: "check", summary: "check that every <model>'s table and mapped columns exist",
                    usage: "strata check --manifest PATH [--database PATH] [--wait SECONDS]", valueOptions: manifestOptions,
                    details: "Exit 3 listing every problem as path:line: message."),
        CommandSpec(name: "schema", summary: "print the database's schema in a stable order, for diffing",
                    usage: "strata schema [--database PATH | --manifest PATH] [--wait SECONDS] [--format text|json|mermaid|dot]",
                    valueOptions: manifestOptions,
                    details: """
                        --format text (the default) prints one statement per object; json also the schema as a snapshot
                        'strata diff --schema' reads back; mermaid and dot print the tables, their columns (type, primary
                        key, foreign key, UNIQUE, NOT NULL) and foreign keys as an entity-relationship diagram: a Mermaid
                        erDiagram (Mermaid 10.5 or later), or a Graphviz digraph ('strata schema --format dot | dot -Tsvg').
                        Strata's history table is left out of every form.
                        """,
                    formats: ["text", "json", "mermaid", "dot"]),
        CommandSpec(name: "diff", summary: "compare two schemas: databases, or a database and a schema file",
                    usage: "strata diff --database A (--database B | --schema FILE) [--manifest PATH] [--wait SECONDS]",
                    valueOptions: ["manifest", "wait"], repeatableOptions: ["database", "schema"],
                    details: """
                        Compares two schemas, the first turned into the second: each given --database (in the order given),
                        then each --schema FILE (written by 'strata schema --format json'); with --manifest and no
                        --database, the manifest's database is the first. Lists every table, column, constraint, index,
                        view and trigger added, dropped or changed, and how.
                        Exit 0 when they are the same, 3 when they differ.
                        """),
        CommandSpec(name: "completion", summary: "print a bash completion script for strata's commands and options",
                    usage: "strata completion bash", positionals: 1...1,
                    details: "Load it with 'source <(strata completion bash)', or save it as\n/usr/share/bash-completion/completions/strata (the Debian package installs it there)."),
    ]

    static var usage: String {
        var text = """
            strata \(Strata.version) — describe a SQLite or PostgreSQL database in plain files and bring it up to date.

            Usage: strata <command> [options]

            Commands:

            """
        let width = commands.map(\.name.count).max() ?? 0
        for command in commands {
            text += "  " + command.name.padded(to: width + 2) + command.summary + "\n"
        }
        text += """

            Options for every command:
              --format text|json   output format (default text); JSON goes to stdout, logs to stderr
              --quiet              print nothing but errors
              --help               help for the command

            Exit codes:
              0        success or nothing to do
              1        a step failed
              2        usage error
              3        refused: drift, dirty state, an invalid manifest or migration; diff: the schemas differ
              4        rehearse: whether migrate would succeed is not known
              5        the database cannot be connected to or opened (after --wait, if given)
              6        status --exit-code: steps are pending
              130/143  stopped by SIGINT/SIGTERM between steps

            Run 'strata <command> --help' or 'strata help <command>' for a command's options.
            """
        return text
    }

    /// The version, then the commit the build was told it was made from (`.ci/package` tells it; a plain
    /// `swift build` does not).
    static var versionText: String {
        let commit = String(cString: strata_build_commit())
        return "strata \(Strata.version)\ncommit \(commit.isEmpty ? "unknown" : commit)"
    }

    /// One command's usage, summary and details.
    static func help(_ spec: CommandSpec) -> String {
        let wait = spec.valueOptions.contains("wait") ? "\n\n" + waitHelp : ""
        return "Usage: \(spec.usage)\n\n\(spec.summary)\(spec.details.isEmpty ? "" : "\n\n" + spec.details)" + wait
    }

    static func run(_ arguments: [String]) -> Int32 {
        guard let first = arguments.first else {
            printError("strata: missing command\n\n" + usage)
            return ExitCode.usage
        }
        switch first {
        case "--help", "-h", "help":
            // `strata help migrate` is `strata migrate --help`; a command that does not exist is a usage error.
            if first == "help", arguments.count >= 2 {
                guard arguments.count == 2, let spec = commands.first(where: { $0.name == arguments[1] }) else {
                    let named = arguments.count == 2 ? "no command '\(arguments[1])'" : "help takes one command"
                    printError("strata help: \(named)\nRun 'strata --help' for the list of commands.")
                    return ExitCode.usage
                }
                StandardOutput.print(help(spec))
            } else {
                StandardOutput.print(usage)
            }
            return ExitCode.success
        case "--version", "version":
            StandardOutput.print(versionText)
            return ExitCode.success
        default:
            break
        }
        guard let spec = commands.first(where: { $0.name == first }) else {
            printError("strata: unknown command '\(first)'\nRun 'strata --help' for the list of commands.")
            return ExitCode.usage
        }
        var output: Output?
        do {
            let invocation = try Invocation.parse(Array(arguments.dropFirst()), spec: spec)
            if invocation.has("help") {
                StandardOutput.print(help(spec))
                return ExitCode.success
            }
            let commandOutput = Output(invocation)
            output = commandOutput
            return try Commands(invocation: invocation, output: commandOutput).run()
        } catch {
            let failure = Failure.of(error, command: spec.name)
            // A command line that did not parse still asked for JSON when it says --format json.
            if output?.json ?? asksForJSON(arguments) { StandardOutput.print(failure.json(command: spec.name).rendered) }
            switch error {
            case let error as ManifestError:
                printError(error.description)
                if output?.quiet != true { for warning in error.warnings { printError("warning: \(warning)") } }
            case is ValidateProblems:
                printError(failure.message)
            case is UsageError, is DatabaseLocationError:
                printError("strata \(spec.name): \(failure.message)\nUsage: \(spec.usage)")
            default:
                printError("strata \(spec.name): \(failure.message)")
            }
            return failure.code
        }
    }

    /// Whether a command line asks for `--format json`, read without the parser (for a line the parser refused).
    static func asksForJSON(_ arguments: [String]) -> Bool {
        let options = arguments.prefix { $0 != "--" }
        return options.contains("--format=json") || zip(options, options.dropFirst()).contains { $0 == "--format" && $1 == "json" }
    }
}

extension CLI {
    /// Turns a failed write to stdout (closed pipe, full disk) into exit 1, reported after the command has run.
    static func finishOutput(_ code: Int32, command: String) -> Int32 {
        guard let error = StandardOutput.firstError else { return code }
        printError("strata \(command): could not write to standard output (\(String(cString: strerror(error)))); the command itself ran to its end")
        return code == ExitCode.success ? ExitCode.stepFailed : code
    }
}

/// Writes a line to stderr; a failed write (stderr closed or full) is dropped, as there is nowhere to report it.
func printError(_ text: String) {
    _ = StandardOutput.writeAll(text + "\n", to: STDERR_FILENO)
}

/// Everything the command prints goes through here, unbuffered, so a failed write is seen and remembered instead
/// of being lost in a stdio buffer at exit (or killing the process with SIGPIPE, which main ignores).
enum StandardOutput {
    private static let state = FirstError()

    /// The errno of the first failed write to stdout, if any.
    static var firstError: Int32? { state.value }

    /// Writes `text` to stdout.
    static func print(_ text: String, terminator: String = "\n") {
        if let error = writeAll(text + terminator, to: STDOUT_FILENO) { state.record(error) }
    }

    /// Writes all of `text` to `descriptor`; returns errno when a write fails.
    static func writeAll(_ text: String, to descriptor: Int32) -> Int32? {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                return errno
            }
            bytes = bytes.dropFirst(written)
        }
        return nil
    }

    private final class FirstError: @unchecked Sendable {
        private let lock = Lock()
        private var error: Int32?
        var value: Int32? { lock.withLock { error } }
        func record(_ code: Int32) { lock.withLock { if error == nil { error = code } } }
    }
}
