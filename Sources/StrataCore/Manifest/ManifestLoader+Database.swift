/// Reading `<database>`: which database the manifest names (a SQLite file or a PostgreSQL URI), its schema, and
/// where a SQLite file is backed up.
extension ManifestLoader {
    /// Exactly one of `path` (a SQLite file) and `url` (a PostgreSQL URI, checked here but filled from the
    /// environment only when used), and `schema` only with `url`.
    mutating func readDatabase(_ element: XMLElement, _ context: Context) {
        if let first = database.location {
            problem(element, "a second <database>; the first is at \(first)")
            return
        }
        database.location = element.location
        let url = element.attribute("url")
        switch (element.attribute("path"), url) {
        case (nil, nil):
            problem(element, "<database> names no database: give path=\"…\" for a SQLite file or url=\"postgresql://…\" for a PostgreSQL database")
        case (let path?, let url?):
            problem(element, "<database> has both path=\"\(DatabaseURL.redacted(path))\" and url=\"\(DatabaseURL.redacted(url))\"; give one: path= for a SQLite file, url= for a PostgreSQL database")
        case (let path?, nil):
            DatabaseURL.problems(inPath: path).forEach { problem(element, $0) }
            database.path = context.resolve(path)
        case (nil, let url?):
            DatabaseURL.problems(inTemplate: url).forEach { problem(element, $0) }
            database.url = url
        }
        readBackup(element, context, isSQLite: url == nil)
        guard let schema = element.attribute("schema") else { return }
        if url == nil {
            problem(element, "schema=\"\(schema)\": schema applies to PostgreSQL databases (url=); a SQLite file (path=) has none")
        } else if schema.utf8.count > 63 {
            problem(element, "schema=\"\(schema)\" is \(schema.utf8.count) bytes long; PostgreSQL keeps only the first 63 bytes of a name")
        }
        database.schema = schema
    }

    /// `backup` (a directory, resolved against the manifest's) and `keep`: SQLite only, and `keep` only with `backup`.
    private mutating func readBackup(_ element: XMLElement, _ context: Context, isSQLite: Bool) {
        let keep = element.attribute("keep")
        guard let backup = element.attribute("backup") else {
            if let keep {
                problem(element, "keep=\"\(keep)\" without backup=\"…\": keep says how many backups the backup directory holds; add backup=\"DIR\"")
            }
            return
        }
        guard isSQLite else {
            problem(element, "backup=\"\(backup)\": a backup copies a SQLite database file (path=); back up a PostgreSQL database (url=) with pg_dump or point-in-time recovery")
            return
        }
        database.backup = context.resolve(backup)
        // The schema allows 1 to 999999 digits-only; anything else was reported by it.
        database.keep = keep.flatMap { Int($0.trimmingWhitespace(newlines: true)) }
    }
}
