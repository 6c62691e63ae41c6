/// Natural ordering of file names: runs of digits compare as numbers (`2_x.sql` before `10_x.sql`),
/// everything else byte by byte, and names equal under that rule (`01_a` and `1_a`) fall back to plain bytes.
public enum NaturalOrder {
    /// Whether `lhs` sorts before `rhs` in natural order; usable as `sorted(by:)`'s predicate.
    public static func areInIncreasingOrder(_ lhs: String, _ rhs: String) -> Bool {
        let a = Array(lhs.utf8)
        let b = Array(rhs.utf8)
        var i = 0
        var j = 0
        while i < a.count && j < b.count {
            if isDigit(a[i]) && isDigit(b[j]) {
                let startA = i, startB = j
                while i < a.count && isDigit(a[i]) { i += 1 }
                while j < b.count && isDigit(b[j]) { j += 1 }
                let digitsA = a[startA..<i].drop { $0 == UInt8(ascii: "0") }
                let digitsB = b[startB..<j].drop { $0 == UInt8(ascii: "0") }
                // Compare by magnitude without converting, so arbitrarily long numbers work.
                if digitsA.count != digitsB.count { return digitsA.count < digitsB.count }
                if !digitsA.elementsEqual(digitsB) { return digitsA.lexicographicallyPrecedes(digitsB) }
            } else {
                if a[i] != b[j] { return a[i] < b[j] }
                i += 1
                j += 1
            }
        }
        if (a.count - i) != (b.count - j) { return (a.count - i) < (b.count - j) }
        return a.lexicographicallyPrecedes(b)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 48 && byte <= 57 }
}
