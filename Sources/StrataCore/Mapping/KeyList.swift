/// Keys for one `IN (…)` list, with the placeholders that bind them. Relationships load, keep and delete rows by
/// key lists cut to `maximumCount`, well under what either backend binds in one statement.
struct KeyList {
    /// How many keys one query names.
    static let maximumCount = 10_000

    let values: [DatabaseValue]
    /// `values`' placeholders, numbered from the first one asked for, joined with ", ".
    let placeholders: String

    /// `keys` in lists of at most `maximumCount`, in order; none when `keys` is empty.
    static func lists(of keys: [DatabaseValue], dialect: any SQLDialect, firstPlaceholder: Int = 1) -> [KeyList] {
        stride(from: 0, to: keys.count, by: maximumCount).map { start in
            let values = Array(keys[start..<min(start + maximumCount, keys.count)])
            let placeholders = values.indices.map { dialect.placeholder(firstPlaceholder + $0) }.joined(separator: ", ")
            return KeyList(values: values, placeholders: placeholders)
        }
    }
}
