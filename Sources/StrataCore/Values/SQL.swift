#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A piece of SQL whose interpolated values are bound as arguments, never spliced into the text, written once for
/// every backend.
///
/// ```swift
/// let name = "O'Brien'; DROP TABLE authors; --"
/// try db.execute("INSERT INTO authors (name, born) VALUES (\(name), \(1950))")   // two bound values
/// let rows = try db.rows("SELECT * FROM \(identifier: table) WHERE born > \(year)")
/// ```
///
/// Rendered for a database (`rendered(for:)`), each interpolated value becomes that dialect's next placeholder
/// (`?` on SQLite, `$1`, `$2`, … on PostgreSQL), numbered in the order the values appear, nested fragments
/// included. The literal text is sent as written and never scanned, so PostgreSQL's `?`, `?|` and `?&` jsonb
/// operators stay operators. A fragment binds its interpolations and nothing else: do not write placeholders into its
/// text. On SQLite such a `?` is one parameter more than the arguments, and the statement is refused before it runs;
/// on PostgreSQL a `$n` in the text names the n-th interpolated value. SQL held in a `String`, with its own
/// placeholders, runs through the `String` overloads, which take the backend's native arguments.
public struct SQL: Sendable, ExpressibleByStringInterpolation {
    /// Text and bound values, in order; nested fragments are flattened into their parent as they are interpolated.
    private var pieces: [Piece]

    fileprivate enum Piece: Sendable {
        case text(String)
        /// A value, or why the database cannot hold it unchanged: an interpolation cannot throw, so binding the
        /// rendered arguments throws instead and the statement never runs.
        case value(Result<DatabaseValue, DatabaseError>)
        /// A date, kept whole until the fragment is rendered for a database, which says how finely to write it
        /// (`SQLDialect.datePrecision`).
        case date(Date)
    }

    /// A fragment without values: the text exactly as written.
    public init(stringLiteral text: String) {
        pieces = [.text(text)]
    }

    /// Creates SQL from an interpolated literal: interpolated values become arguments, not text.
    public init(stringInterpolation: Interpolation) {
        pieces = stringInterpolation.pieces
    }

    /// A fragment of SQL text built at run time, used as written: for text the program owns (a keyword, a clause),
    /// never for a value, which belongs in an interpolation.
    public init(verbatim text: String) {
        pieces = [.text(text)]
    }

    /// The text with `dialect`'s placeholders, and the values they bind, in order.
    public func rendered(for dialect: any SQLDialect) -> (text: String, arguments: StatementArguments) {
        var text = ""
        var values: [DatabaseValue] = []
        var failure: DatabaseError?
        for piece in pieces {
            switch piece {
            case .text(let literal):
                text += literal
            case .value(.success(let value)):
                values.append(value)
                text += dialect.placeholder(values.count)
            case .date(let date):
                values.append(dialect.databaseValue(of: date))
                text += dialect.placeholder(values.count)
            case .value(.failure(let error)):
                values.append(.null)
                text += dialect.placeholder(values.count)
                if failure == nil { failure = error.with(message: "argument \(values.count): \(error.message)") }
            }
        }
        return (text, failure.map(StatementArguments.unrepresentable) ?? .positional(values))
    }

    /// Builds a fragment from a literal with interpolations; what each `appendInterpolation` accepts is what a
    /// fragment may interpolate.
    public struct Interpolation: StringInterpolationProtocol, Sendable {
        fileprivate var pieces: [Piece] = []

        /// Creates an empty interpolation, as the compiler does for a literal.
        public init(literalCapacity: Int, interpolationCount: Int) {
            pieces.reserveCapacity(2 * interpolationCount + 1)
        }

        /// Appends literal SQL text.
        public mutating func appendLiteral(_ literal: String) {
            pieces.append(.text(literal))
        }

        /// A bound value; `nil` binds NULL. (Taking an optional lets `\(optional)` compile without the compiler's
        /// warning about interpolating optionals, and a plain value is promoted.)
        public mutating func appendInterpolation<Value: DatabaseValueConvertible>(_ value: Value?) {
            if let date = value as? Date {
                pieces.append(.date(date))
            } else {
                pieces.append(.value(value.map(checkedDatabaseValue) ?? .success(.null)))
            }
        }

        /// Another fragment, its values bound in place (placeholders numbered across both).
        public mutating func appendInterpolation(sql fragment: SQL) {
            pieces += fragment.pieces
        }

        /// A name (table, column) quoted as an identifier, which every backend reads as a name and never as SQL.
        public mutating func appendInterpolation(identifier name: String) {
            pieces.append(.text(quoteIdentifier(name)))
        }
    }
}

extension Sequence where Element == SQL {
    /// The fragments with `separator` between them, as one fragment: `conditions.joined(separator: " AND ")`.
    public func joined(separator: String) -> SQL {
        var joined = SQL.Interpolation(literalCapacity: 0, interpolationCount: 0)
        for (offset, fragment) in enumerated() {
            if offset > 0 { joined.appendLiteral(separator) }
            joined.appendInterpolation(sql: fragment)
        }
        return SQL(stringInterpolation: joined)
    }
}
