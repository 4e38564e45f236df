import CVips

/// Encodes pixels made in code as a JPEG, PNG or WebP file: the test images and the benchmark's photos
/// (a decodable file of any size, without fixtures on disk).
public enum PixelEncoder {
    public enum Format: Sendable {
        case jpeg(quality: Int)
        case png
        case webp

        var suffix: String {
            switch self {
            case .jpeg(let quality): ".jpg[Q=\(quality)]"
            case .png: ".png"
            case .webp: ".webp"
            }
        }
    }

    /// `pixels`: `width` × `height` × `bands` bytes, row by row, each pixel's bands together (1: grey,
    /// 2: grey and alpha, 3: RGB, 4: RGBA).
    public static func encode(
        _ pixels: [UInt8], width: Int, height: Int, bands: Int, as format: Format
    ) throws(ImagingError) -> [UInt8] {
        precondition((1...4).contains(bands) && pixels.count == width * height * bands, "pixels do not fit the size")
        try Vips.start()
        var output: UnsafeMutableRawPointer?
        var length = 0
        let failed = pixels.withUnsafeBytes {
            yedi_vips_encode_pixels(
                $0.baseAddress, $0.count, Int32(width), Int32(height), Int32(bands), format.suffix, &output, &length)
        }
        guard failed == 0 else {
            _ = Vips.take(output, count: 0)
            throw Vips.takeError("encoding failed")
        }
        return Vips.take(output, count: length)
    }
}
