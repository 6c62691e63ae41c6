/// Reading `<seed>`: a CSV file loaded into a table, its mode and key, its delimiter, how its columns convert, and
/// what happens when the file changes.
extension ManifestLoader {
    mutating func readSeed(_ element: XMLElement, _ context: Context) {
        guard let file = element.attribute("file"), let table = element.attribute("table") else { return }
        let resolved = context.resolve(file)
        if let reason = FileCheck.problem(at: resolved) {
            problem(element, "seed file '\(file)' cannot be read (\(reason))")
        }
        let mode = element.attribute("mode").flatMap(SeedMode.init(rawValue:)) ?? .insert
        var key: [String] = []
        if let keyText = element.attribute("key") {
            key = Self.list(keyText)
            if key.isEmpty { problem(element, "key is empty; name one or more columns, separated by commas") }
        } else if mode == .upsert || mode == .sync {
            problem(element, "mode=\"\(mode.rawValue)\" needs key=\"…\" naming the columns that identify a row")
        }
        if Set(key.map(\.sqliteFolded)).count != key.count { problem(element, "key names a column twice") }

        var delimiter = UInt8(ascii: ",")
        if let text = element.attribute("delimiter") {
            switch text {
            case ",": delimiter = UInt8(ascii: ",")
            case ";": delimiter = UInt8(ascii: ";")
            case "|": delimiter = UInt8(ascii: "|")
            case "\t", "tab", "\\t": delimiter = UInt8(ascii: "\t")
            default: problem(element, "delimiter '\(text)' is not one of ',' ';' '|' or 'tab'")
            }
        }

        var columns: [SeedColumn] = []
        var columnNames = Set<String>()
        for child in element.children where child.name == "column" {
            guard let name = child.attribute("name") else { continue }
            if !columnNames.insert(name.sqliteFolded).inserted { problem(child, "column '\(name)' is configured twice") }
            let type = child.attribute("type").flatMap(SeedColumn.ValueType.init(rawValue:))
            let storage = child.attribute("storage").flatMap(SeedColumn.DateStorage.init(rawValue:))
            if storage != nil && type != .date && type != .datetime {
                problem(child, "storage applies only to type=\"date\" or type=\"datetime\"")
            }
            let format = child.attribute("format")
            if let format {
                switch type {
                case .blob where format == "hex" || format == "base64": break
                case .date?, .datetime?:
                    if format != "iso8601" && format != "unix" { fallthrough }
                default:
                    problem(child, "format '\(format)' does not apply to type \(type?.rawValue ?? "(none)"); "
                            + "use hex or base64 for blob, iso8601 or unix for date and datetime")
                }
            }
            columns.append(SeedColumn(name: name, type: type, format: format, storage: storage ?? .text))
        }

        // Reloading an insert-mode file adds every row a second time; only modes that match rows may reapply.
        let onChange = element.attribute("onChange").flatMap(SeedChangePolicy.init(rawValue:)) ?? .fail
        if onChange == .reapply && mode == .insert {
            problem(element, "onChange=\"reapply\" with mode=\"insert\" would insert every row again each time the file "
                    + "changes; use mode=\"upsert\" or \"sync\" (with key), or \"replace\" or \"ignore\" on a table with a unique key")
        }

        let contexts = element.attribute("context").map(Self.list) ?? []
        seeds.append(SeedStep(
            id: element.attribute("id") ?? PathComponents.last(resolved), path: resolved, table: table,
            after: element.attribute("after"), mode: mode, key: key,
            onChange: onChange,
            contexts: contexts, delimiter: delimiter, nullToken: element.attribute("null"), columns: columns,
            location: element.location))
    }
}
