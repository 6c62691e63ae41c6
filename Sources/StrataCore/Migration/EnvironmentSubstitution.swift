/// goose's `-- +goose ENVSUB ON`: environment variables substituted into the SQL between it and `ENVSUB OFF`, for a
/// `<migrations envsub="true">`. Only what can be done exactly as goose does it is done, the rest refused:
/// `${NAME}` (the variable must be set), `${NAME:-default}` (the default when unset or empty) and `${NAME-default}`
/// (the default when unset). A bare `$NAME`, `$$` and any other `${…}` form, which goose would also change, are
/// refused, as is an unset variable without a default (goose would put nothing there). Messages name variables,
/// never their values; the checksum and the SQL history keeps are the file's as written.
enum EnvironmentSubstitution {
    struct Failure: Error, Equatable {
        /// 1-based line within the bytes given.
        let line: Int
        let message: String
    }

    /// `bytes` with each `ranges` part (offsets into `bytes`) substituted; the rest as it is. `startLine` is the
    /// line `bytes` starts on, for messages.
    static func apply(_ bytes: [UInt8], ranges: [Range<Int>], startLine: Int, environment: [String: String]) throws -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        var copied = 0
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) where range.lowerBound >= copied && range.upperBound <= bytes.count {
            result += bytes[copied..<range.lowerBound]
            var index = range.lowerBound
            while index < range.upperBound {
                let byte = bytes[index]
                guard byte == UInt8(ascii: "$"), index + 1 < range.upperBound else {
                    result.append(byte)
                    index += 1
                    continue
                }
                let line = startLine + bytes[..<index].reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
                let next = bytes[index + 1]
                if next == UInt8(ascii: "{") {
                    guard let close = bytes[(index + 2)..<range.upperBound].firstIndex(of: UInt8(ascii: "}")) else {
                        throw Failure(line: line, message: "'${' without its '}' in an ENVSUB ON part")
                    }
                    result += try value(of: bytes[(index + 2)..<close], line: line, environment: environment)
                    index = close + 1
                } else if next == UInt8(ascii: "$") || isNameStart(next) {
                    throw Failure(line: line, message: "'$\(String(decoding: [next], as: UTF8.self))…' in an ENVSUB ON part: goose would substitute it, and Strata substitutes only ${NAME}, ${NAME:-default} and ${NAME-default}; write one of those, or end the part with -- +goose ENVSUB OFF before it")
                } else {
                    result.append(byte)
                    index += 1
                }
            }
            copied = range.upperBound
        }
        result += bytes[copied...]
        return result
    }

    /// The text of `NAME`, `NAME:-default` or `NAME-default` inside `${…}`.
    private static func value(of inner: ArraySlice<UInt8>, line: Int, environment: [String: String]) throws -> [UInt8] {
        let nameEnd = inner.firstIndex { !isNameByte($0) } ?? inner.endIndex
        let name = String(decoding: inner[inner.startIndex..<nameEnd], as: UTF8.self)
        guard let first = inner.first, isNameStart(first) else {
            throw Failure(line: line, message: "'${\(String(decoding: inner, as: UTF8.self))}' is not ${NAME}, ${NAME:-default} or ${NAME-default}")
        }
        let rest = inner[nameEnd...]
        let set = environment[name]
        if rest.isEmpty {
            guard let set else {
                throw Failure(line: line, message: "${\(name)} is not set in the environment (goose would put nothing there); set it, or give a default: ${\(name):-default}")
            }
            return Array(set.utf8)
        }
        if rest.starts(with: Array(":-".utf8)) {
            return Array((set.flatMap { $0.isEmpty ? nil : $0 } ?? String(decoding: rest.dropFirst(2), as: UTF8.self)).utf8)
        }
        if rest.first == UInt8(ascii: "-") {
            return Array((set ?? String(decoding: rest.dropFirst(), as: UTF8.self)).utf8)
        }
        throw Failure(line: line, message: "'${\(name)\(String(decoding: rest.prefix(2), as: UTF8.self))…}' is a form Strata does not substitute; only ${NAME}, ${NAME:-default} and ${NAME-default}")
    }

    private static func isNameStart(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == UInt8(ascii: "_")
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        isNameStart(byte) || (0x30...0x39).contains(byte)
    }
}
