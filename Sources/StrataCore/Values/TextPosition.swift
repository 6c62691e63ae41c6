/// A 1-based line and column in a text, advanced over UTF-8 bytes; columns count characters, not bytes.
/// CRLF, LF and a lone CR each end one line. Shared by SQL scripts, the SQL lint and CSV errors, so every
/// position Strata reports counts the same way.
package struct TextPosition {
    package var line: Int
    package var column = 1
    private var lastWasCR = false

    package init(line: Int = 1) {
        self.line = line
    }

    @inline(__always)
    package mutating func advance(over byte: UInt8) {
        if byte == 0x0A {
            if !lastWasCR { line += 1 }
            column = 1
            lastWasCR = false
        } else if byte == 0x0D {
            line += 1
            column = 1
            lastWasCR = true
        } else {
            lastWasCR = false
            if byte & 0xC0 != 0x80 { column += 1 }
        }
    }

    package mutating func advance(over text: UnsafeBufferPointer<CChar>, from start: Int, to end: Int) {
        guard start < end else { return }
        for i in start..<end { advance(over: UInt8(bitPattern: text[i])) }
    }
}
