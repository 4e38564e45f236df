import CVips

/// A re-encoded, resized copy of an image: always a baseline JPEG in sRGB, upright, without metadata.
public struct JPEGVariant: Sendable, Equatable {
    public var bytes: [UInt8]
    public var width: Int
    public var height: Int

    /// Makes the variant of `bytes` (a JPEG, PNG or WebP whose header the caller has checked against its
    /// pixel limit) whose longest side is at most `maxSide`: smaller images keep their size (never
    /// enlarged), EXIF orientation is applied, alpha is flattened on white, and EXIF (with any GPS
    /// position), XMP and ICC data are dropped. Blocks the calling thread while libvips works: call it off
    /// the event loops and the cooperative pool.
    public static func make(from bytes: [UInt8], maxSide: Int, quality: Int) throws(ImagingError) -> JPEGVariant {
        precondition((1...100).contains(quality) && maxSide >= 1, "a JPEG quality is 1...100, a side at least 1")
        try Vips.start()
        var output: UnsafeMutableRawPointer?
        var length = 0
        var width: Int32 = 0
        var height: Int32 = 0
        let failed = bytes.withUnsafeBytes {
            yedi_vips_jpeg_variant(
                $0.baseAddress, $0.count, Int32(maxSide), Int32(quality), &output, &length, &width, &height)
        }
        guard failed == 0 else {
            _ = Vips.take(output, count: 0)
            throw Vips.takeError("the image does not decode")
        }
        return JPEGVariant(bytes: Vips.take(output, count: length), width: Int(width), height: Int(height))
    }
}
