#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One column of the current row being read into a property, with strict conversion rules: every mismatch is a
/// `MappingError`. The key's name is asked for only when a read fails, so the success path never builds it.
@usableFromInline
package struct Field {
    /// Unretained: a field lives only inside a call on a container or decoder that holds the context, and
    /// retaining it again per field is a measurable share of decoding.
    @usableFromInline let unretainedContext: Unmanaged<DecodingContext>
    @usableFromInline var context: DecodingContext { unretainedContext.takeUnretainedValue() }
    @usableFromInline let column: Int32
    /// Read once, with one call into the backend: every conversion below branches on it.
    @usableFromInline let value: ColumnValue

    @inlinable @inline(__always)
    package init(context: DecodingContext, column: Int32, value: ColumnValue) {
        unretainedContext = .passUnretained(context)
        self.column = column
        self.value = value
    }

    /// A field read through the statement protocol, off the per-field fast path.
    init(context: DecodingContext, column: Int32) {
        self.init(context: context, column: column, value: context.statement.column(at: column))
    }

    @inlinable package var storage: StorageClass { value.storageClass }

    @inlinable @inline(__always)
    package func integer<T: FixedWidthInteger>(_ key: @autoclosure () -> String) throws -> T {
        switch value {
        case .integer(let integer):
            guard let fitted = T(exactly: integer) else {
                throw failure(key) { "does not fit \(T.self) (\(T.min)...\(T.max))" }
            }
            return fitted
        case .real(let real):
            guard let fitted = T(exactly: real) else { throw failure(key) { "is not a whole \(T.self)" } }
            return fitted
        case .null:
            throw nullFailure(key)
        default:
            throw failure(key) { "is not an integer for \(T.self)" }
        }
    }

    @inlinable @inline(__always)
    package func double(_ key: @autoclosure () -> String) throws -> Double {
        switch value {
        case .real(let real): return real
        case .integer(let integer):
            // Beyond 2^53 a Double cannot hold every integer: an error, not a rounded value.
            guard let exact = Double(exactly: integer) else {
                throw failure(key) { "is an integer a Double cannot hold exactly" }
            }
            return exact
        case .null: throw nullFailure(key)
        default: throw failure(key) { "is not a number" }
        }
    }

    /// A number as `Float`, rounded; a finite value beyond Float's range is an error, not infinity.
    @inlinable @inline(__always)
    package func float(_ key: @autoclosure () -> String) throws -> Float {
        let double = try double(key())
        let float = Float(double)
        guard float.isFinite || !double.isFinite else {
            throw failure(key) { "does not fit Float (±\(Float.greatestFiniteMagnitude))" }
        }
        return float
    }

    @inlinable @inline(__always)
    package func bool(_ key: @autoclosure () -> String) throws -> Bool {
        switch value {
        case .integer(let integer):
            switch integer {
            case 0: return false
            case 1: return true
            default: throw failure(key) { "is not a boolean (0 or 1)" }
            }
        case .null: throw nullFailure(key)
        default: throw failure(key) { "is not a boolean (0 or 1)" }
        }
    }

    @inlinable @inline(__always)
    package func string(_ key: @autoclosure () -> String) throws -> String {
        switch value {
        case .text(let bytes):
            // Invalid UTF-8 is an error, not U+FFFD: a value read, changed elsewhere and saved would write the
            // replaced text back over the stored bytes. Valid UTF-8 decodes to the very same bytes, so comparing
            // them is the check (`String(validating:)` costs a generic metadata lookup per call).
            let text = String(decoding: bytes, as: UTF8.self)
            guard Self.isExactly(text, bytes) else { throw failure(key) { "is not valid UTF-8 text" } }
            return text
        case .null: throw nullFailure(key)
        default: throw failure(key) { "is not text" }
        }
    }

    /// True when `text`'s UTF-8 is `bytes`, byte for byte. ASCII (the common case) needs no comparison: it is
    /// always valid, and is checked eight bytes at a time.
    @inlinable @inline(__always)
    static func isExactly(_ text: String, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return true }
        if isASCII(base, bytes.count) { return true }
        guard text.utf8.count == bytes.count else { return false }
        return text.utf8.withContiguousStorageIfAvailable { utf8 in
            utf8.baseAddress.map { memcmp($0, base, bytes.count) == 0 } ?? false
        } ?? text.utf8.elementsEqual(bytes)
    }

    /// True when no byte has its high bit set. Eight bytes per load, the tail read as one more load overlapping
    /// the last whole word (or two overlapping four-byte loads for short text): a handful of instructions for the
    /// short strings most columns hold.
    @inlinable @inline(__always)
    static func isASCII(_ base: UnsafePointer<UInt8>, _ count: Int) -> Bool {
        let raw = UnsafeRawPointer(base)
        var high: UInt64
        if count >= 8 {
            high = raw.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self)
            var offset = 0
            while offset &+ 8 <= count {
                high |= raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                offset &+= 8
            }
        } else if count >= 4 {
            high = UInt64(raw.loadUnaligned(as: UInt32.self) | raw.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self))
        } else {
            high = 0
            for offset in 0..<count { high |= UInt64(base[offset]) }
        }
        return high & 0x8080_8080_8080_8080 == 0
    }

    /// ISO-8601 text, or a number as the database's `DateStorage` counts it.
    @usableFromInline
    package func date(_ key: @autoclosure () -> String) throws -> Date {
        let number: Double
        switch value {
        case .text(let bytes):
            guard let instant = ISO8601.parse(bytes: bytes) else {
                throw failure(key) { "is not an ISO-8601 date" }
            }
            return instant.date
        case .integer(let integer):
            number = Double(integer)
        case .real(let real):
            number = real
        case .null:
            throw nullFailure(key)
        default:
            throw failure(key) { "is not a date (\(context.dateStorage(at: column).accepted))" }
        }
        let storage = context.dateStorage(at: column)
        guard let date = storage.date(fromNumber: number) else {
            throw failure(key) { "is not a date (\(storage.accepted))" }
        }
        return date
    }

    /// Any other `Decodable`: types adopting `DatabaseValueConvertible`, single values (raw-value enums), and
    /// anything else from JSON text.
    @usableFromInline
    package func value<T: Decodable>(_ type: T.Type, _ key: @autoclosure () -> String) throws -> T {
        if storage == .null { throw nullFailure(key) }
        if T.self == Date.self { return unsafeBitCast(try date(key()), to: T.self) }
        if let convertible = T.self as? any DatabaseValueConvertible.Type {
            // Read through `DatabaseValue`, whose text replaces invalid UTF-8: refused here first, as `string` does.
            if case .text(let bytes) = value, !Self.isExactly(String(decoding: bytes, as: UTF8.self), bytes) {
                throw failure(key) { "is not valid UTF-8 text" }
            }
            guard let converted = convertible.fromDatabaseValue(context.statement.value(at: column)) as? T else {
                throw failure(key) { "does not convert to \(T.self)" }
            }
            return converted
        }
        let name = key()
        do {
            return try T(from: ColumnDecoder(context: context, column: column, key: name))
        } catch is NeedsJSON {
            guard storage == .text else {
                throw context.error(name, column, "is not JSON text for \(T.self)")
            }
            do {
                guard case .text(let bytes) = value else { throw NeedsJSON() }
                return try context.json.decode(T.self, from: Data(bytes))
            } catch {
                throw context.error(name, column, "is not JSON for \(T.self): \(error)")
            }
        } catch is DecodingError {
            // e.g. a raw value that names no case of an enum
            throw context.error(name, column, "is not a valid \(T.self)")
        }
    }

    // Failures are built out of line so the conversions above stay small on their success paths.

    @usableFromInline @inline(never)
    func failure(_ key: () -> String, _ message: () -> String) -> MappingError {
        context.error(key(), column, message())
    }

    @usableFromInline @inline(never)
    func nullFailure(_ key: () -> String) -> MappingError {
        let name = key()
        return context.error(name, column, "is NULL but \(name) is not optional")
    }
}
