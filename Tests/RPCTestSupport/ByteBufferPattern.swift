import NIOCore

extension ByteBuffer {
    /// Deterministic non-repeating-looking bytes, so misordered or duplicated data can't compare equal.
    public static func pattern(count: Int, seed: UInt32 = 1) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { bytes in
            var state = seed
            let words = count / 4
            let output = bytes.bindMemory(to: UInt32.self)
            for index in 0..<words {
                state = state &* 1_664_525 &+ 1_013_904_223  // LCG
                output[index] = state
            }
            for index in (words * 4)..<count {
                bytes[index] = UInt8(truncatingIfNeeded: index)
            }
            return count
        }
        return buffer
    }
}
