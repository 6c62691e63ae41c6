/// Which entries of a `<migrations directory>` are migrations, and which file undoes each, as the tool of the
/// directory's format reads it. Names only: the loader checks that the files can be read.
///
/// A migration's identity in history is the relative name of its up file (`000001_users.up.sql`,
/// `2020-01-01-000000_create/up.sql`, `V1.1__users.sql`), so it never changes while the files do not move, and two
/// layouts of one tool give the same identities. Strata orders migrations by the natural order of their identities;
/// where a tool orders two of them otherwise (Flyway's `V1__a.sql` before `V1.1__b.sql`, whose names sort the other
/// way), the directory is refused rather than run in another order than the tool's.
struct MigrationLayout {
    /// One migration found: paths relative to the directory.
    struct Entry: Equatable {
        let id: String
        let up: String
        let down: String?
        let repeatable: Bool
        /// The tool's version, for ordering and duplicate checks; nil for files without one (Strata's own, `R__`).
        let version: Version?
    }

    /// A version as its tool compares it: numeric parts, most significant first, each decimal digits without leading
    /// zeros (Flyway's trailing zero parts dropped too, so `1.0` is `1`).
    struct Version: Hashable, Comparable {
        let parts: [[UInt8]]

        static func < (lhs: Version, rhs: Version) -> Bool {
            for index in 0..<max(lhs.parts.count, rhs.parts.count) {
                let left = index < lhs.parts.count ? lhs.parts[index] : [UInt8(ascii: "0")]
                let right = index < rhs.parts.count ? rhs.parts[index] : [UInt8(ascii: "0")]
                if left.count != right.count { return left.count < right.count }
                if left != right { return left.lexicographicallyPrecedes(right) }
            }
            return false
        }

        /// Digits only, at least one; nil otherwise.
        init?(parts text: [Substring], droppingTrailingZeros: Bool = false) {
            var parts: [[UInt8]] = []
            for part in text {
                guard !part.isEmpty, part.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
                let significant = Array(part.utf8.drop { $0 == UInt8(ascii: "0") })
                parts.append(significant.isEmpty ? [UInt8(ascii: "0")] : significant)
            }
            if droppingTrailingZeros {
                while parts.count > 1, parts.last == [UInt8(ascii: "0")] { parts.removeLast() }
            }
            guard !parts.isEmpty else { return nil }
            self.parts = parts
        }

        /// Whether the single part fits in `digits` decimal digits' worth of a signed or unsigned 64-bit integer.
        func fits(maximum: String) -> Bool {
            guard parts.count == 1 else { return false }
            let limit = Array(maximum.utf8)
            return parts[0].count < limit.count || (parts[0].count == limit.count && !limit.lexicographicallyPrecedes(parts[0]))
        }

        var shown: String { parts.map { String(decoding: $0, as: UTF8.self) }.joined(separator: ".") }
    }

    /// A name in the directory that cannot be taken as its tool would take it.
    struct Problem: Equatable {
        let message: String
    }

    /// What the directory holds: its entries' names, and for each subdirectory the names in it.
    struct Listing {
        var files: [String] = []
        var subdirectories: [String: [String]] = [:]
        /// Paths relative to the directory that the element's `<migration file>`s name: a subdirectory whose
        /// `up.sql` is listed so is taken as the manifest says, its `down.sql` its down.
        var listed: Set<String> = []
    }

    let format: MigrationFormat
    /// The directory as the manifest names it, for messages.
    let relative: String

    /// The migrations of `listing`, with the problems that stop the directory from being read as its tool reads it.
    func entries(of listing: Listing) -> (entries: [Entry], problems: [Problem]) {
        var problems: [Problem] = []
        var entries: [Entry]
        switch format {
        case .golangMigrate, .sqlx: entries = pairs(listing.files, plainAllowed: format == .sqlx, &problems)
        case .flyway: entries = flyway(listing.files, &problems)
        case .diesel: entries = diesel(listing, &problems)
        case .plain, .goose, .sqlMigrate, .dbmate: entries = strata(listing, &problems)
        }
        entries.sort { left, right in
            switch (left.version, right.version) {
            case let (l?, r?) where l != r: l < r
            default: NaturalOrder.areInIncreasingOrder(left.id, right.id)
            }
        }
        // Strata runs migrations in the natural order of their identities: refuse what the tool would run otherwise.
        let versioned = entries.filter { $0.version != nil }
        for (earlier, later) in zip(versioned, versioned.dropFirst()) where !NaturalOrder.areInIncreasingOrder(earlier.id, later.id) {
            problems.append(Problem(message: "\(format.toolName) runs '\(earlier.up)' (version \(earlier.version?.shown ?? "")) before '\(later.up)' (version \(later.version?.shown ?? "")), but Strata orders migrations by name and would run them the other way; write the versions with the same number of parts (or digits) so both orders agree"))
            break
        }
        return (entries, problems)
    }

    private func named(_ file: String) -> String { "'\(file)' in migrations directory '\(relative)'" }

    // MARK: golang-migrate and sqlx

    /// `{version}_{title}.up.sql` with an optional `.down.sql` of the same version; for sqlx also
    /// `{version}_{description}.sql` without a down. Versions are integers (golang-migrate's unsigned, sqlx's signed
    /// 64-bit), paired and compared by value, so `1_a.up.sql` and `001_a.down.sql` are one migration.
    private func pairs(_ files: [String], plainAllowed: Bool, _ problems: inout [Problem]) -> [Entry] {
        var ups: [Version: String] = [:]
        var downs: [Version: String] = [:]
        let expected = plainAllowed ? "{version}_{description}.sql, .up.sql or .down.sql" : "{version}_{title}.up.sql or .down.sql"
        for file in files.sorted() where file.hasSuffix(".sql") {
            let isUp = file.hasSuffix(".up.sql"), isDown = file.hasSuffix(".down.sql")
            guard isUp || isDown || plainAllowed else {
                problems.append(Problem(message: "\(named(file)) is not a \(format.toolName) migration (\(expected)); \(format.toolName) would skip it, so Strata refuses to guess: rename or move it"))
                continue
            }
            let stem = file.dropLast(isUp ? 7 : isDown ? 9 : 4)
            let versionText = stem.prefix { $0 != "_" }
            guard let version = Version(parts: [versionText]),
                  version.fits(maximum: format == .sqlx ? "9223372036854775807" : "18446744073709551615") else {
                problems.append(Problem(message: "\(named(file)): '\(versionText)' is not a \(format.toolName) version (\(expected), the version a \(format == .sqlx ? "signed" : "unsigned") 64-bit integer)"))
                continue
            }
            if isDown {
                if let other = downs[version] {
                    problems.append(Problem(message: "\(named(file)) and '\(other)' are two downs of version \(version.shown); a version has one"))
                }
                downs[version] = file
            } else {
                if let other = ups[version] {
                    problems.append(Problem(message: "\(named(file)) and '\(other)' are two migrations of version \(version.shown); a version is one migration"))
                    continue
                }
                ups[version] = file
            }
        }
        for (version, down) in downs where ups[version] == nil {
            problems.append(Problem(message: "\(named(down)) is a down without its up: no \(version.shown)_….up.sql beside it; add the up or remove the down"))
        }
        for (version, up) in ups where !up.hasSuffix(".up.sql") {
            if let down = downs[version] {
                problems.append(Problem(message: "\(named(down)) undoes '\(up)', which is not reversible in sqlx's layout (its up would be \(version.shown)_….up.sql); rename the up to .up.sql"))
            }
        }
        return ups.map { version, up in
            Entry(id: up, up: up, down: up.hasSuffix(".up.sql") ? downs[version] : nil, repeatable: false, version: version)
        }
    }

    // MARK: Flyway

    /// `V{version}__{description}.sql`, `U{version}__{description}.sql` (the undo of that version) and
    /// `R__{description}.sql` (repeatable). Version parts are separated by `.` or `_` and compared as numbers.
    private func flyway(_ files: [String], _ problems: inout [Problem]) -> [Entry] {
        var versioned: [Version: String] = [:]
        var undos: [Version: String] = [:]
        var entries: [Entry] = []
        for file in files.sorted() where file.hasSuffix(".sql") {
            if file.hasPrefix("R__") {
                entries.append(Entry(id: file, up: file, down: nil, repeatable: true, version: nil))
                continue
            }
            guard let prefix = file.first, prefix == "V" || prefix == "U", let separator = file.firstRange(of: "__") else {
                problems.append(Problem(message: "\(named(file)) is not a Flyway migration name (V{version}__{description}.sql, U{version}__{description}.sql or R__{description}.sql); rename or move it"))
                continue
            }
            let versionText = file[file.index(after: file.startIndex)..<separator.lowerBound]
            guard let version = Version(parts: versionText.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "." || $0 == "_" }),
                                        droppingTrailingZeros: true) else {
                problems.append(Problem(message: "\(named(file)): '\(versionText)' is not a Flyway version (numbers separated by '.' or '_', as in V1.2__name.sql)"))
                continue
            }
            if prefix == "U" {
                if let other = undos[version] {
                    problems.append(Problem(message: "\(named(file)) and '\(other)' are two undos of version \(version.shown); a version has one"))
                }
                undos[version] = file
            } else if let other = versioned[version] {
                problems.append(Problem(message: "\(named(file)) and '\(other)' are two migrations of version \(version.shown) (Flyway compares versions by their numbers); a version is one migration"))
            } else {
                versioned[version] = file
            }
        }
        for (version, undo) in undos where versioned[version] == nil {
            problems.append(Problem(message: "\(named(undo)) is an undo without its migration: no V\(version.shown)__….sql beside it; add it or remove the undo"))
        }
        entries += versioned.map { version, file in Entry(id: file, up: file, down: undos[version], repeatable: false, version: version) }
        return entries
    }

    // MARK: diesel

    /// One directory per migration, `{version}_{name}/up.sql` with an optional `down.sql`; the version is the
    /// directory name before its first `_`, dashes left out (`2020-01-01-000000` is 20200101000000).
    private func diesel(_ listing: Listing, _ problems: inout [Problem]) -> [Entry] {
        for file in listing.files.sorted() where file.hasSuffix(".sql") {
            problems.append(Problem(message: "\(named(file)) is not a diesel migration: diesel reads one directory per migration, {version}_{name}/up.sql and down.sql; move it into one"))
        }
        var byVersion: [Version: String] = [:]
        var entries: [Entry] = []
        for (directory, names) in listing.subdirectories.sorted(by: { $0.key < $1.key }) {
            let versionText = directory.prefix { $0 != "_" }
            guard let version = Version(parts: [Substring(versionText.filter { $0 != "-" })]), versionText.first != "-" else {
                problems.append(Problem(message: "\(named(directory + "/")): '\(versionText)' is not a diesel version (digits and dashes before the first '_', as in 2020-01-01-000000_create_users)"))
                continue
            }
            guard names.contains("up.sql") else {
                problems.append(Problem(message: "\(named(directory + "/")) holds no up.sql; a diesel migration is {version}_{name}/up.sql (and down.sql)"))
                continue
            }
            if let other = byVersion[version] {
                problems.append(Problem(message: "\(named(directory + "/")) and '\(other)/' are two migrations of version \(version.shown); a version is one migration"))
                continue
            }
            byVersion[version] = directory
            entries.append(Entry(id: directory + "/up.sql", up: directory + "/up.sql",
                                 down: names.contains("down.sql") ? directory + "/down.sql" : nil, repeatable: false, version: version))
        }
        return entries
    }

    // MARK: Strata's own

    /// Every `*.sql` directly in the directory is a migration, but `NAME.down.sql` beside `NAME.sql`, which is its
    /// down. Files named as another tool's downs or undos are refused, naming them and the format that fits.
    private func strata(_ listing: Listing, _ problems: inout [Problem]) -> [Entry] {
        let files = Set(listing.files.filter { $0.hasSuffix(".sql") })
        var entries: [Entry] = []
        var foreign: [String: [String]] = [:]
        var orphans: [String] = []
        for file in files.sorted() {
            // A goose, sql-migrate or dbmate file holds its own down: a file named so is a migration of its own.
            if !format.hasSections, file.hasSuffix(".down.sql") {
                if files.contains(String(file.dropLast(9)) + ".sql") { continue }
                if files.contains(String(file.dropLast(9)) + ".up.sql") {
                    foreign["golang-migrate", default: []].append(file)
                    continue
                } else {
                    orphans.append(file)
                    continue
                }
            }
            // `X.Down.sql`: named as a down in another letter case; run as a migration it would undo its up.
            if !format.hasSections, !file.hasSuffix(".down.sql"), file.lowercased().hasSuffix(".down.sql") {
                problems.append(Problem(message: "\(named(file)) is named as a down in another letter case: Strata's downs are 'NAME.down.sql' (lower case), and taken as a migration it would run as an up; rename it to '\(file.dropLast(9)).down.sql' to make it a down, or to a name without '.down' if it is a migration"))
                continue
            }
            if !format.hasSections, Self.isFlywayUndo(file) {
                foreign["flyway", default: []].append(file)
                continue
            }
            let down = String(file.dropLast(4)) + ".down.sql"
            entries.append(Entry(id: file, up: file, down: files.contains(down) && !format.hasSections ? down : nil,
                                 repeatable: false, version: nil))
        }
        if !format.hasSections {
            for (directory, names) in listing.subdirectories.sorted(by: { $0.key < $1.key }) where names.contains("down.sql") && !listing.listed.contains(directory + "/up.sql") {
                foreign["diesel", default: []].append(directory + "/down.sql")
            }
        }
        let declared = format == .plain ? "without a format" : "declared format=\"\(format.toolName)\""
        for (tool, names) in foreign.sorted(by: { $0.key < $1.key }) {
            let what = tool == "flyway" ? "Flyway's undo files" : "\(tool)'s down files"
            let fits = tool == "golang-migrate" ? "format=\"golang-migrate\" (or \"sqlx\")" : "format=\"\(tool)\""
            problems.append(Problem(message: "migrations directory '\(relative)' holds \(what) (\(Self.listed(names))), which \(declared) Strata would run as migrations; declare \(fits) on its <migrations> so they are read as downs"))
        }
        for orphan in orphans {
            problems.append(Problem(message: "\(named(orphan)) is a down without its up: no '\(orphan.dropLast(9)).sql' beside it; add the up, remove the down, or pair it with <migration file=\"…\" down=\"\(orphan)\">"))
        }
        return entries
    }

    /// `U{digits…}__….sql`: Flyway's undo naming, which no one writes for a migration of its own by chance.
    static func isFlywayUndo(_ file: String) -> Bool {
        guard file.hasPrefix("U"), let separator = file.firstRange(of: "__") else { return false }
        let version = file[file.index(after: file.startIndex)..<separator.lowerBound]
        guard let first = version.first, first.isASCII, first.isNumber else { return false }
        return version.allSatisfy { $0.isASCII && ($0.isNumber || $0 == "." || $0 == "_") }
    }

    /// Up to five names, then how many more.
    static func listed(_ names: [String]) -> String {
        let shown = names.prefix(5).map { "'\($0)'" }.joined(separator: ", ")
        return names.count > 5 ? "\(shown) and \(names.count - 5) more" : shown
    }
}
