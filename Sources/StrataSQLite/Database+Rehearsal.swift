import StrataCore

/// Rehearsals on SQLite run the plan on a copy of the database (`RehearsalCopy`), counting the rows each step
/// changes there (`RowChangeWatch`); the database itself is only read, once, by the backup.
extension Database: RehearsableDatabase {
    package func rehearsalStage(_ options: MigrationOptions) throws -> any RehearsalStage {
        try SQLiteRehearsalStage(source: self)
    }
}

final class SQLiteRehearsalStage: RehearsalStage {
    private let copy: RehearsalCopy
    private let watch: RowChangeWatch
    let summary: String
    /// The program's SQL functions (`createFunction`), by folded name: not defined on the copy.
    private let functionsLeftOut: Set<String>
    /// What the steps need of the database's filesystem, when the copy is on another one.
    private let roomWatch: RehearsalRoomWatch?
    /// Why the step `didRun` last measured may not have in `migrate` the room it had here.
    private var lastUnlikeMigrate: String?

    init(source: Database) throws {
        let copy = try RehearsalCopy(of: source)
        do {
            watch = try RowChangeWatch(copy.database)
            roomWatch = try RehearsalRoomWatch(source: source, copy: copy)
        } catch {
            try? copy.remove()
            throw error
        }
        self.copy = copy
        functionsLeftOut = Set(source.functions.values.map { $0.name.sqliteFolded })
        let holdsSomething = ((try? source.scalar("SELECT count(*) FROM sqlite_schema", as: Int.self)) ?? 0) > 0
        let elsewhere = roomWatch.map { ", \($0.place)" } ?? ""
        summary = source.path.map {
            "on a copy of \(displayPath($0)) (\(RehearsalCopy.size(copy.bytes))) in \(copy.directory)\(elsewhere), made with SQLite's online backup API and removed afterwards"
        } ?? (holdsSomething
            ? "on a copy of the in-memory database (\(RehearsalCopy.size(copy.bytes))) in \(copy.directory), made with SQLite's online backup API and removed afterwards"
            : "on a new, empty database in \(copy.directory) (the database has no file yet), removed afterwards")
    }

    var database: any MigrationDatabase { copy.database }

    func options(for options: MigrationOptions) -> MigrationOptions { options }

    /// A file that attaches another database (or writes one with `VACUUM INTO`) would reach outside the copy.
    /// Found ahead in files up to the lint's size; in larger ones the authorizer refuses the statement when it runs
    /// (`RehearsalRules`), and the step fails saying so, as one the rehearsal stopped (`stoppedByStage`).
    func reasonNotRehearsed(_ step: PlanStep) -> String? {
        guard case .migration(let migration) = step, let bytes = migration.bytesReadAhead,
              let section = try? migration.format.upSection(of: bytes) else { return nil }
        for statement in SQLLint.statements(in: Array(bytes[section.range])).statements {
            let words = statement.words
            if words.first == "ATTACH" || (words.first == "VACUUM" && words.contains("INTO")) {
                let line = statement.line + section.startLine - 1
                return "\(displayPath(migration.path)):\(line): \(words.first == "ATTACH" ? "ATTACH" : "VACUUM INTO") would open, and could create or change, a file outside the rehearsal's copy; the steps after it run without what it does"
            }
        }
        return nil
    }


    func willRun(_ step: PlanStep) throws {
        watch.begin()
        try roomWatch?.willRun()
    }

    func beforeCommit(_ step: PlanStep) throws {
        try roomWatch?.beforeCommit()
    }

    func didRun(_ step: PlanStep) throws -> (tables: [TableRowChanges], locks: [TableLock]) {
        let tables = try watch.finish()
        lastUnlikeMigrate = try roomWatch?.didRun(step, incrementalVacuum: watch.rules.incrementalVacuum)
        return (tables, [])
    }

    /// The copy is on another filesystem than the database's, and what the steps up to this one need of the
    /// database's is more than it has free, or cannot be measured (`RehearsalRoomWatch`).
    func unlikeMigrate(_ step: PlanStep) -> String? { lastUnlikeMigrate }

    var room: String? { roomWatch?.summary }

    /// The copy's authorizer refused an `ATTACH` or `VACUUM INTO` the step ran (one found ahead is not run at all),
    /// the step called a function of the program's that the copy does not define, or the copy's filesystem was
    /// full, which says nothing of the database's: the copy takes room of its own beside the database, or is on
    /// another filesystem.
    func stoppedByStage(_ failure: StepFailure) -> String? {
        if let refused = watch.rules.refused { return refused }
        if failure.databaseError?.kind == .diskFull {
            return roomWatch == nil
                ? "the rehearsal's copy ran out of room in \(copy.directory), where the copy itself takes \(RehearsalCopy.size(copy.bytes)) that migrate has free"
                : "the rehearsal's copy ran out of room in \(copy.directory), another filesystem than the database's"
        }
        let message = failure.message.lowercased()
        guard let missing = functionsLeftOut.first(where: { message.contains("no such function: \($0)") }) else { return nil }
        return "the program's SQL function \(missing) is not defined on the rehearsal's copy (its closure may read or write the connection it was defined on, the real database)"
    }

    /// SQLite has no sequences outside the copy: what the copy's `AUTOINCREMENT` counters did goes with it.
    func discard() throws -> [SequenceAdvance] {
        watch.uninstall()
        try copy.remove()
        return []
    }
}
