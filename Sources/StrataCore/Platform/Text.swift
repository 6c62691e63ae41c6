#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The few string operations Strata took from Foundation, written against the standard library so the library
/// needs only FoundationEssentials (no ICU: a statically linked `strata` is about a quarter of the size).
extension String {
    /// Every occurrence of `target` replaced, compared byte by byte in UTF-8. Quoting depends on this: Foundation's
    /// `replacingOccurrences(of:with:)` and the standard library's `replacing(_:with:)` both compare characters,
    /// and leave the `"` of `"` + U+0301 (one character) in place, unescaped.
    package func replacingEvery(_ target: String, with replacement: String) -> String {
        let source = Array(utf8), needle = Array(target.utf8)
        guard !needle.isEmpty, source.count >= needle.count else { return self }
        var result: [UInt8] = []
        result.reserveCapacity(source.count)
        var index = 0
        while index < source.count {
            if source[index] == needle[0], index + needle.count <= source.count,
               source[index..<index + needle.count].elementsEqual(needle) {
                result.append(contentsOf: replacement.utf8)
                index += needle.count
            } else {
                result.append(source[index])
                index += 1
            }
        }
        return String(decoding: result, as: UTF8.self)
    }

    /// Without leading and trailing white space, as Foundation's `trimmingCharacters(in:)` trims `.whitespaces`
    /// or, with `newlines`, `.whitespacesAndNewlines` (Core Foundation's lists, which include U+200B).
    package func trimmingWhitespace(newlines: Bool = false) -> String {
        let scalars = unicodeScalars
        let isSpace: (Unicode.Scalar) -> Bool = { scalar in
            switch scalar.value {
            case 0x09, 0x20, 0xA0, 0x1680, 0x2000...0x200B, 0x202F, 0x205F, 0x3000: true
            case 0x0A...0x0D, 0x85, 0x2028, 0x2029: newlines
            default: false
            }
        }
        guard let first = scalars.firstIndex(where: { !isSpace($0) }),
              let last = scalars.lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(scalars[first...last])
    }

    /// Padded with spaces on the right to `width` characters; never cut.
    package func padded(to width: Int) -> String {
        let missing = width - count
        return missing > 0 ? self + String(repeating: " ", count: missing) : self
    }
}

extension Substring {
    /// See `String.trimmingWhitespace(newlines:)`.
    package func trimmingWhitespace(newlines: Bool = false) -> String {
        String(self).trimmingWhitespace(newlines: newlines)
    }
}

/// `format` filled as C's printf fills it (`"%.1f"`, `"%02X"`): what `String(format:)` gives for these formats.
package func printfFormat(_ format: String, _ arguments: any CVarArg...) -> String {
    let length = withVaList(arguments) { Int(vsnprintf(nil, 0, format, $0)) }
    guard length > 0 else { return "" }
    var buffer = [UInt8](repeating: 0, count: length + 1)
    _ = buffer.withUnsafeMutableBufferPointer { bytes in
        bytes.withMemoryRebound(to: CChar.self) { characters in
            withVaList(arguments) { vsnprintf(characters.baseAddress, characters.count, format, $0) }
        }
    }
    return String(decoding: buffer.dropLast(), as: UTF8.self)
}
