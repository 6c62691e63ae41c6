/// The name of a backup file: `<database file name>.<time>.<plan id>.backup`, e.g.
/// `library.sqlite.20260301T120000.123Z.3f9a0c1d2e4b5a69.backup`. The time is UTC to the millisecond in fixed width,
/// so one database's backups sort by time; retention reads names back with `parse`, which takes only names of this
/// exact shape for this database's file name, so it never counts (or removes) another file.
package struct BackupName: Equatable {
    package static let suffix = ".backup"

    /// The database's file name.
    package let database: String
    /// `20260301T120000.123Z`.
    package let stamp: String
    /// 16 lower-case hex digits.
    package let planID: String

    package var fileName: String { "\(database).\(stamp).\(planID)\(Self.suffix)" }

    package init(database: String, stamp: String, planID: String) {
        self.database = database
        self.stamp = stamp
        self.planID = planID
    }

    /// The backup named `fileName` of the database file named `database`, or nil for any other name.
    package static func parse(_ fileName: String, database: String) -> BackupName? {
        parse(fileName).flatMap { $0.database == database ? $0 : nil }
    }

    /// The backup `fileName` names, whichever database's it is: nil unless the name ends in exactly
    /// `.<time>.<plan id>.backup` after a non-empty database file name. `restore` reads the database a backup was
    /// taken of from it.
    package static func parse(_ fileName: String) -> BackupName? {
        let bytes = Array(fileName.utf8)
        // . 20260301T120000.123Z . 16 hex .backup
        let tail = 1 + 20 + 1 + 16 + suffix.utf8.count
        guard bytes.count > tail, fileName.hasSuffix(suffix) else { return nil }
        let start = bytes.count - tail
        let stamp = bytes[(start + 1)..<(start + 21)], planID = bytes[(start + 22)..<(start + 38)]
        func digits(_ range: Range<Int>) -> Bool {
            stamp[(stamp.startIndex + range.lowerBound)..<(stamp.startIndex + range.upperBound)]
                .allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
        }
        func byte(_ offset: Int) -> UInt8 { stamp[stamp.startIndex + offset] }
        guard bytes[start] == UInt8(ascii: "."), digits(0..<8), byte(8) == UInt8(ascii: "T"), digits(9..<15),
              byte(15) == UInt8(ascii: "."), digits(16..<19), byte(19) == UInt8(ascii: "Z"),
              bytes[start + 21] == UInt8(ascii: "."), planID.allSatisfy(isLowerHex) else { return nil }
        return BackupName(database: String(decoding: bytes[..<start], as: UTF8.self),
                          stamp: String(decoding: stamp, as: UTF8.self), planID: String(decoding: planID, as: UTF8.self))
    }

    /// Whether `text` is a plan id as names carry it.
    package static func isPlanID(_ text: String) -> Bool {
        text.utf8.count == 16 && text.utf8.allSatisfy(isLowerHex)
    }

    private static func isLowerHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }
}
