@testable import RPCCore

extension MetadataSize {
    /// `entries` entries of a one-byte key and a one-byte value.
    static func entries(_ count: Int) -> MetadataSize {
        var size = MetadataSize()
        for _ in 0..<count { size.add(keyBytes: 1, valueBytes: 1) }
        return size
    }
}
