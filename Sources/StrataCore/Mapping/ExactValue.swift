/// A database value compared as the database stores it: text by its UTF-8 bytes. `DatabaseValue`'s own equality
/// compares text as Swift's `String` does, by canonical equivalence, so `café` written precomposed and decomposed
/// would be one key, though the database keeps them as two rows. Relationships file rows under keys by this.
struct ExactValue: Hashable {
    let value: DatabaseValue

    init(_ value: DatabaseValue) { self.value = value }

    static func == (lhs: ExactValue, rhs: ExactValue) -> Bool {
        switch (lhs.value, rhs.value) {
        case (.text(let left), .text(let right)): left.utf8.elementsEqual(right.utf8)
        default: lhs.value == rhs.value
        }
    }

    func hash(into hasher: inout Hasher) {
        switch value {
        case .text(let text):
            hasher.combine(1 as UInt8)
            for byte in text.utf8 { hasher.combine(byte) }
        default:
            hasher.combine(value)
        }
    }
}
