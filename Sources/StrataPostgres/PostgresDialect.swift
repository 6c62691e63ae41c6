import StrataCore

/// How PostgreSQL spells SQL: `$n` placeholders (`?` is a `jsonb` operator there), up to 65,535 parameters a
/// statement, and its type names classified for seeds and `check`.
public struct PostgresDialect: SQLDialect {
    /// Creates the dialect.
    public init() {}

    /// "PostgreSQL".
    public var name: String { "PostgreSQL" }

    /// PostgreSQL.
    public var backend: DatabaseBackend { .postgresql }

    /// `$1`, `$2`, ….
    public func placeholder(_ index: Int) -> String { "$\(index)" }

    /// The protocol's limit: a Bind message counts parameters in 16 bits.
    public var maximumParameters: Int { 65_535 }

    /// `numeric` is exact: a `Decimal` reads and writes it digit for digit (as text, never through a `Double`).
    public var numericIsExact: Bool { true }

    /// `timestamp` and `timestamptz` keep microseconds: a `Date` is written to the nearest one, so a value read
    /// (a key `now()` wrote, say) is written back as the same instant and `save`, `update` and `delete` find its row.
    public var datePrecision: DatePrecision { .microseconds }

    /// A Swift array (JSON text) into an array column goes as PostgreSQL's array text (`PostgresArrays`).
    /// A value the column would change without an error is refused: more fraction digits than a `numeric(p, s)`
    /// keeps (the server rounds), a string longer than a `varchar(n)` or `char(n)` only by trailing spaces (the
    /// server cuts them) or shorter than a `char(n)` (the server pads it), a `Double` a `real` cannot hold exactly,
    /// a `Date` with a time of day into a `date`.
    public func parameter(_ value: DatabaseValue, forColumnOfType declaredType: String) throws -> DatabaseValue {
        if case .null = value { return value }
        switch value {
        case _ where declaredType.hasSuffix("[]") && Self.changesElements(declaredType):
            throw DatabaseError(kind: .conversion, code: nil,
                                message: "a \(declaredType) column can change an element without an error (rounding, padding or dropping part of it), and Strata checks the values of plain columns, not each element of an array; use \(Self.exactElementType(declaredType))[]")
        case .text(let json) where declaredType.hasSuffix("[]") && json.first == "[":
            do {
                return .text(try PostgresArrays.arrayText(fromJSON: json))
            } catch {
                throw DatabaseError(kind: .conversion, code: nil, message: "a \(declaredType) column cannot hold \(error)")
            }
        case .text(let text) where declaredType.hasPrefix("numeric("):
            try Self.checkScale(text, declaredType)
        case .real(let real) where declaredType.hasPrefix("numeric("):
            try Self.checkScale(PostgresParameters.text(of: real), declaredType)
        case .integer(let integer) where declaredType.hasPrefix("numeric("):
            try Self.checkScale(String(integer), declaredType)
        case .integer(let integer) where declaredType == "real" && Float(exactly: integer) == nil:
            throw DatabaseError(kind: .conversion, code: nil,
                                message: "\(integer) needs more digits than real (single precision) keeps; PostgreSQL would round it to \(Int64(Float(integer))); use bigint or double precision")
        case .integer(let integer) where declaredType == "double precision" && Double(exactly: integer) == nil:
            throw DatabaseError(kind: .conversion, code: nil,
                                message: "\(integer) is beyond 2^53, past which double precision does not hold every integer; PostgreSQL would round it; use bigint or numeric")
        case .real(let real) where real.isNaN && !["real", "double precision", "numeric"].contains(declaredType)
                                   && !declaredType.hasPrefix("numeric("):
            // What a NaN or infinite `Date` converts to (`Date.unstorableValue`); a text column would keep 'NaN'.
            throw DatabaseError(kind: .conversion, code: nil,
                                message: "NaN (a Date that is NaN or infinite has no stored form) cannot go into a \(declaredType) column")
        case _ where declaredType == "money":
            throw DatabaseError(kind: .conversion, code: nil,
                                message: "a money column rounds to the fraction digits of the server's lc_monetary without an error, which Strata cannot check; use numeric(p, s)")
        case .text(let text) where declaredType.hasPrefix("character varying(") || declaredType.hasPrefix("character("):
            if let length = Self.typeModifiers(declaredType).first, text.unicodeScalars.count > length {
                throw DatabaseError(kind: .conversion, code: nil,
                                    message: "is \(text.unicodeScalars.count) characters, longer than \(declaredType) holds (PostgreSQL would cut trailing spaces without an error)")
            }
            if declaredType.hasPrefix("character("), let length = Self.typeModifiers(declaredType).first,
               text.unicodeScalars.count < length {
                throw DatabaseError(kind: .conversion, code: nil,
                                    message: "is \(text.unicodeScalars.count) characters, and \(declaredType) pads it with spaces to \(length), so it would read back other than written; use varchar(\(length)) or text")
            }
        case .real(let real) where declaredType == "real" && !real.isNaN && Double(Float(real)) != real:
            throw DatabaseError(kind: .conversion, code: nil,
                                message: "\(real) needs more precision than real (single precision) keeps; PostgreSQL would round it to \(Float(real)); use double precision, or a Float property")
        case .text(let text) where declaredType == "date" && Self.hasTimeOfDay(text):
            throw DatabaseError(kind: .conversion, code: nil,
                                message: "\(text) has a time of day, which a date column does not keep; PostgreSQL would drop it; use timestamptz, or a date at midnight UTC")
        default:
            break
        }
        return value
    }

    /// Whether ISO-8601 text (`2024-01-01T10:00:00.5Z`) has a time of day other than midnight.
    private static func hasTimeOfDay(_ text: String) -> Bool {
        let characters = Array(text)
        guard characters.count > 11, characters[10] == "T" || characters[10] == " " else { return false }
        var time = characters[11...]
        if let zone = time.firstIndex(where: { $0 == "Z" || $0 == "+" || $0 == "-" }) { time = time[..<zone] }
        return time.contains { ("1"..."9").contains($0) }
    }

    /// `numeric(10,2)` → [10, 2]; `character varying(8)` → [8].
    private static func typeModifiers(_ declaredType: String) -> [Int] {
        guard let open = declaredType.firstIndex(of: "("), let close = declaredType.firstIndex(of: ")"), open < close else { return [] }
        return declaredType[declaredType.index(after: open)..<close].split(separator: ",")
            .compactMap { Int($0.trimmingWhitespace()) }
    }

    /// Refuses decimal text the column's scale cannot hold exactly: more significant fraction digits than the scale,
    /// or (a negative scale) an integer that is not a multiple of the power of ten it rounds to.
    private static func checkScale(_ text: String, _ declaredType: String) throws {
        let modifier = typeModifiers(declaredType)
        guard modifier.count == 2 else { return }
        let scale = modifier[1]
        var mantissa = Substring(text)
        var exponent = 0
        if let marker = mantissa.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            exponent = Int(mantissa[mantissa.index(after: marker)...]) ?? 0
            mantissa = mantissa[..<marker]
        }
        // The value is digits × 10^power once trailing zeros are moved into the power.
        var digits = mantissa.filter(\.isNumber)
        if let point = mantissa.firstIndex(of: ".") {
            exponent -= mantissa[mantissa.index(after: point)...].filter(\.isNumber).count
        }
        while digits.last == "0" {
            digits.removeLast()
            exponent += 1
        }
        if !digits.isEmpty, exponent < -scale { throw scaleError(text, declaredType, scale) }
    }

    /// Array element types whose column changes a value without an error (as `parameter` refuses for plain columns).
    private static func changesElements(_ declaredType: String) -> Bool {
        let element = String(declaredType.dropLast(2))
        return element == "real" || element == "date" || element == "money" || element.hasPrefix("character(")
            || (element.hasPrefix("numeric(") && typeModifiers(element).count == 2)
    }

    private static func exactElementType(_ declaredType: String) -> String {
        let element = String(declaredType.dropLast(2))
        if element == "real" { return "double precision" }
        if element == "date" { return "timestamptz" }
        if element.hasPrefix("character(") { return "text" }
        return "numeric"
    }

    private static func scaleError(_ text: String, _ declaredType: String, _ scale: Int) -> DatabaseError {
        DatabaseError(kind: .conversion, code: nil,
                      message: scale >= 0 ? "\(text) has more than \(scale) decimal places, which \(declaredType) keeps; PostgreSQL would round it"
                          : "\(text) is not a multiple of \(Self.powerOfTen(-scale)), which \(declaredType) rounds to; PostgreSQL would round it")
    }

    private static func powerOfTen(_ exponent: Int) -> String { "1" + String(repeating: "0", count: max(exponent, 0)) }

    /// Integers (and `boolean`, read as 0 and 1) are integer, floating types real, `numeric` numeric (exact),
    /// `bytea` blob, and everything else (text, dates and times, uuid, json, enums) text for the server to parse.
    public func affinity(ofDeclaredType declaredType: String) -> Affinity {
        var type = declaredType.lowercased()
        if let parenthesis = type.firstIndex(of: "(") { type = String(type[..<parenthesis]) }
        type = type.trimmingWhitespace()
        if type.hasSuffix("[]") { return .text }
        switch type {
        case "smallint", "integer", "bigint", "int", "int2", "int4", "int8", "smallserial", "serial", "bigserial",
             "serial2", "serial4", "serial8", "boolean", "bool", "oid":
            return .integer
        case "real", "double precision", "float", "float4", "float8":
            return .real
        case "numeric", "decimal":
            return .numeric
        case "bytea":
            return .blob
        default:
            return .text
        }
    }

    /// Problems in a PostgreSQL migration that would fail or lock more than it says, found before it runs.
    public func lint(_ bytes: [UInt8], insideTransaction: Bool) -> [LintFinding] {
        PostgresLint.findings(in: bytes, insideTransaction: insideTransaction)
    }

    /// Version 3: line endings inside literals as `PostgresScript` reads them (dollar quotes, `E'…'` escapes, COPY
    /// data followed to its end) are data.
    public var checksumVersion: Int { 3 }

    /// `replace` overwrites whichever row a file row conflicts with — on any PRIMARY KEY or UNIQUE constraint when
    /// no key is given — and gives the columns the file lacks their defaults (SQLite's `ON CONFLICT DO UPDATE`
    /// without a target). PostgreSQL's `ON CONFLICT DO UPDATE` must name one conflict target, and Strata does not
    /// load a seed by other rules than its mode says; so the seed is refused before anything runs.
    public func seedRefusal(_ seed: SeedStep) -> String? {
        guard seed.mode == .replace else { return nil }
        return "seed \(seed.id): mode=\"replace\" cannot be loaded into PostgreSQL: replace overwrites whichever row a file row conflicts with on any PRIMARY KEY or UNIQUE constraint and resets the columns the file lacks to their defaults, as SQLite's ON CONFLICT DO UPDATE does; PostgreSQL's ON CONFLICT DO UPDATE must name one key, so no statement there does the same. Use mode=\"upsert\" with key=\"…\" (columns the file lacks keep their values) or mode=\"sync\""
    }
}
