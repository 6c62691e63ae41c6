import CLibPQ
import StrataCore

/// A seed's table on PostgreSQL: its columns as the catalog declares them, how each column's fields are checked
/// before they are passed on, and whether rows may be copied straight into it.
final class PostgresSeedTarget: SeedTarget {
    let connection: PostgresConnection
    let step: SeedStep
    let columns: [ColumnInfo]
    /// The table as SQL names it, schema-qualified, so `search_path` cannot change which table a statement writes.
    let qualifiedName: String
    /// The table's own name, as the server's COPY error context writes it.
    let relationName: String
    let oid: Int64
    /// Each column's type with domains resolved to their base type, by column name.
    let types: [String: PostgresColumnType]
    /// A `COPY` straight into the table reports every refused row by its number, except what runs after the
    /// rows: foreign key checks and other AFTER triggers, deferred constraints, and whatever a view's or a
    /// partition's triggers do. Tables with any INSERT trigger (foreign keys are triggers) or INSERT rule (`COPY`
    /// runs no rules: rows a rule routes elsewhere would stay in the table), and anything but a plain table, load
    /// through a temporary table instead, applied with `INSERT … SELECT`, where a refusal can be traced to its row.
    let copiesDirectly: Bool

    init(connection: PostgresConnection, step: SeedStep) throws {
        self.connection = connection
        self.step = step
        guard let name = try connection.declaredTableName(step.table),
              let relation = try connection.rows("""
                  SELECT c.oid::int8 AS oid, c.relkind::text AS kind, c.relname::text AS name,
                         format('%I.%I', n.nspname, c.relname) AS qualified,
                         EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t WHERE t.tgrelid = c.oid AND (t.tgtype & 4) <> 0)
                         OR EXISTS (SELECT 1 FROM pg_catalog.pg_rewrite r WHERE r.ev_class = c.oid AND r.ev_type = '3') AS triggers
                  FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                  WHERE c.oid = to_regclass($1)
                  """, [quoteIdentifier(name)]).first else {
            // The seeder says the table does not exist.
            columns = []
            qualifiedName = quoteIdentifier(step.table)
            relationName = step.table
            oid = 0
            types = [:]
            copiesDirectly = false
            return
        }
        oid = try relation.get("oid")
        relationName = try relation.get("name")
        qualifiedName = try relation.get("qualified")
        let kind: String = try relation.get("kind")
        let triggers: Bool = try relation.get("triggers")
        copiesDirectly = kind == "r" && !triggers
        columns = try connection.columns(in: name)
        var types: [String: PostgresColumnType] = [:]
        // A domain's base type (through domains over domains) decides the conversion; its typmod is the
        // domain's, the column's own being -1.
        for row in try connection.rows("""
            WITH RECURSIVE chain (attnum, attname, type, typmod, depth) AS (
                SELECT a.attnum, a.attname, a.atttypid, a.atttypmod, 0
                FROM pg_catalog.pg_attribute a WHERE a.attrelid = $1::int8::oid AND a.attnum > 0 AND NOT a.attisdropped
              UNION ALL
                SELECT c.attnum, c.attname, t.typbasetype, t.typtypmod, c.depth + 1
                FROM chain c JOIN pg_catalog.pg_type t ON t.oid = c.type WHERE t.typtype = 'd'
            )
            SELECT DISTINCT ON (attnum) attname::text AS name, type::int8 AS type, typmod::int8 AS typmod,
                   pg_catalog.format_type(type, typmod) AS base
            FROM chain ORDER BY attnum, depth DESC
            """, [oid]) {
            let type = PostgresColumnType(oid: try row.get("type"), typmod: try row.get("typmod"), name: try row.get("base"))
            types[try row.get("name")] = type
        }
        self.types = types
    }

    var databaseName: String { "PostgreSQL" }

    func sink(columns: [ColumnInfo], keyIndexes: [Int]) throws -> any SeedSink {
        try PostgresSeedSink(target: self, columns: columns, keyIndexes: keyIndexes)
    }

    /// The column's base type decides: integers by their range, `numeric` exact and within its scale, floats,
    /// booleans, dates, timestamps (within their precision), `bytea`, length-limited text; every other type (text,
    /// uuid, json, enums, arrays, ranges, …) is passed on as written for the server to parse. A `<column type>` is
    /// honoured as on SQLite, except where the column would keep less than the value says.
    func conversion(of column: ColumnInfo, configured: SeedColumn?) throws -> SeedConversion {
        guard let type = types[column.name] else { return .standard(for: column, configured: configured) }
        if let configured, let wanted = configured.type {
            let refusal: String? = switch wanted {
            case .blob where type.oid != PostgresColumnType.bytea:
                "type=\"blob\" needs a bytea column, and '\(column.name)' is \(column.declaredType)"
            case .real where type.oid == PostgresColumnType.numeric:
                "type=\"real\" on '\(column.name)', a \(column.declaredType) column, would pass each value through a binary double and round it (12345678901234567.25 becomes 12345678901234568); leave the type out, and numeric values are kept exact and checked against the column's scale"
            case .datetime where type.oid == PostgresColumnType.date || type.oid == PostgresColumnType.time
                || type.oid == PostgresColumnType.timetz:
                "type=\"datetime\" on '\(column.name)', a \(column.declaredType) column, would drop part of each value (PostgreSQL keeps only the \(type.oid == PostgresColumnType.date ? "date" : "time of day")); use type=\"\(type.oid == PostgresColumnType.date ? "date" : "text")\""
            default:
                nil
            }
            if let refusal {
                throw SeedError(file: step.location.path, line: step.location.line, column: nil, message: refusal)
            }
            let standard = SeedConversion.standard(for: column, configured: configured)
            if standard.kind == .text, let limited = type.limitedText { return SeedConversion(kind: limited) }
            // Text for a numeric column is what the server parses: checked against the scale first, as without a type,
            // or the server would round it to the scale without a word.
            if standard.kind == .text, type.oid == PostgresColumnType.numeric { return type.conversion }
            return SeedConversion(kind: standard.kind, fractionDigits: type.fractionDigits)
        }
        return type.conversion
    }
}

/// A column's base type as the seed converts it: the type's OID (fixed in PostgreSQL's catalog), its modifier
/// (length, precision and scale) and its name for messages.
struct PostgresColumnType {
    static let bool: Int64 = 16, bytea: Int64 = 17, char: Int64 = 18, name: Int64 = 19, int8: Int64 = 20
    static let int2: Int64 = 21, int4: Int64 = 23, float4: Int64 = 700, float8: Int64 = 701, bpchar: Int64 = 1042
    static let varchar: Int64 = 1043, date: Int64 = 1082, time: Int64 = 1083, timestamp: Int64 = 1114
    static let timestamptz: Int64 = 1184, timetz: Int64 = 1266, numeric: Int64 = 1700

    let oid: Int64
    let typmod: Int64
    let name: String

    var conversion: SeedConversion {
        switch oid {
        case Self.int2: SeedConversion(kind: .integerText(minimum: Int64(Int16.min), maximum: Int64(Int16.max)))
        case Self.int4: SeedConversion(kind: .integerText(minimum: Int64(Int32.min), maximum: Int64(Int32.max)))
        case Self.int8: SeedConversion(kind: .integerText(minimum: .min, maximum: .max))
        case Self.float4: SeedConversion(kind: .realText(single: true))
        case Self.float8: SeedConversion(kind: .realText(single: false))
        case Self.numeric: SeedConversion(kind: .decimalText(scale: numericScale))
        case Self.bool: SeedConversion(kind: .boolean)
        case Self.date: SeedConversion(kind: .date(inputUnix: false, storage: .text))
        case Self.timestamp, Self.timestamptz:
            SeedConversion(kind: .datetime(inputUnix: false, storage: .text), fractionDigits: fractionDigits)
        case Self.bytea: SeedConversion(kind: .blob(.automatic))
        default: SeedConversion(kind: limitedText ?? .text)
        }
    }

    /// `numeric(p, s)`'s scale (negative from PostgreSQL 15), nil for a `numeric` without one. The modifier is
    /// `(p << 16 | s) + 4`, the scale in its low 11 bits, signed.
    var numericScale: Int? {
        guard typmod >= 4 else { return nil }
        let scale = Int((typmod - 4) & 0x7FF)
        return scale & 0x400 != 0 ? scale - 0x800 : scale
    }

    /// Digits of a second a timestamp keeps: its precision, else 6 (microseconds).
    var fractionDigits: Int {
        guard oid == Self.timestamp || oid == Self.timestamptz else { return 9 }
        return typmod >= 0 ? Int(min(typmod, 6)) : 6
    }

    /// The length limit of `varchar(n)` and `char(n)` (characters; their modifier is n + 4), of `name` (63 bytes)
    /// and `"char"` (one byte). The server would cut trailing spaces beyond `n` (and cut `name` and `"char"`
    /// anywhere) without an error, so the seed checks.
    var limitedText: ValueKind? {
        switch oid {
        case Self.varchar, Self.bpchar: typmod >= 4 ? .limitedText(maximum: Int(typmod - 4), bytes: false) : nil
        case Self.name: .limitedText(maximum: 63, bytes: true)
        case Self.char: .limitedText(maximum: 1, bytes: true)
        default: nil
        }
    }
}
