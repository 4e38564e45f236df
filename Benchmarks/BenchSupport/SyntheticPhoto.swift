/// Pixels that compress like a photo (not like noise, not like flat grey), for benches that upload
/// images: RGB gradients with a checker pattern and, optionally, a fine texture.
public enum SyntheticPhoto {
    /// `width`×`height` RGB pixels (3 bytes each); `seed` shifts the red gradient so photos differ.
    public static func pixels(width: Int, height: Int, seed: Int, texture: Bool = true) -> [UInt8] {
        var pixels = [UInt8](repeating: 0, count: width * height * 3)
        pixels.withUnsafeMutableBufferPointer { buffer in
            for y in 0..<height {
                for x in 0..<width {
                    let base = (y * width + x) * 3
                    buffer[base] = UInt8(truncatingIfNeeded: x * 255 / width + seed)
                    buffer[base + 1] = UInt8(truncatingIfNeeded: y * 255 / height)
                    buffer[base + 2] = UInt8(
                        truncatingIfNeeded: ((x / 48 + y / 48) % 2) * 120 + (texture ? (x ^ y) % 16 : 0))
                }
            }
        }
        return pixels
    }
}
