/// How a fuzz input that names a message type names it: its first two bytes, little-endian, modulo
/// the number of types (the message and JSON fuzzers). One byte reached only the catalogs' first 256
/// types, and there are more: the later apps' messages were never fuzzed.
public enum FuzzTypeIndex {
    public static let byteCount = 2

    /// The type an input picks among `count`, nil when it is too short to pick one.
    public static func pick(_ data: UnsafePointer<UInt8>, _ size: Int, count: Int) -> Int? {
        guard size >= byteCount, count > 0 else { return nil }
        return (Int(data[0]) | Int(data[1]) << 8) % count
    }

    /// The bytes a seed for type `index` starts with.
    public static func prefix(_ index: Int) -> [UInt8] {
        precondition(index < 1 << (8 * byteCount), "the type index no longer fits in \(byteCount) bytes")
        return [UInt8(truncatingIfNeeded: index), UInt8(truncatingIfNeeded: index >> 8)]
    }
}
