/// Copies of bytes kept together until they are no longer needed, then let go at once: no malloc and free per
/// value (a seed row's rewritten fields; a batch's text that SQLite binds without copying).
package struct BindArena: ~Copyable {
    private let base: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    private var used = 0
    /// Values that did not fit, freed at the next reset.
    private var overflow: [UnsafeMutablePointer<UInt8>] = []

    package init(capacity: Int = 1 << 16) {
        self.capacity = capacity
        base = .allocate(capacity: capacity)
    }

    deinit {
        base.deallocate()
        overflow.forEach { $0.deallocate() }
    }

    @inline(__always)
    package mutating func store(_ bytes: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return bytes }
        if used + bytes.count <= capacity {
            let target = base + used
            target.update(from: source, count: bytes.count)
            used += bytes.count
            return UnsafeBufferPointer(start: target, count: bytes.count)
        }
        let target = UnsafeMutablePointer<UInt8>.allocate(capacity: bytes.count)
        target.update(from: source, count: bytes.count)
        overflow.append(target)
        return UnsafeBufferPointer(start: target, count: bytes.count)
    }

    /// Lets every stored copy go.
    package mutating func reset() {
        used = 0
        if !overflow.isEmpty {
            overflow.forEach { $0.deallocate() }
            overflow.removeAll(keepingCapacity: true)
        }
    }
}

