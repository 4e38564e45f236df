/// The image types ContentService accepts, recognised from the bytes themselves (magic number and a header
/// that parses), never from what the client claims: a text file named `.jpg` is not a JPEG.
enum ImageType: String, Sendable, CaseIterable {
    case jpeg = "image/jpeg"
    case png = "image/png"
    case webp = "image/webp"

    var contentType: String { rawValue }
}

/// What the header says: the type and the pixel size.
struct ImageInfo: Sendable, Equatable {
    var type: ImageType
    var width: Int
    var height: Int
}

/// Reads just enough of an image to know its type and size, without decoding pixels.
///
/// A header that does not parse (truncated, inconsistent, zero or absurd sizes) is refused with a reason,
/// so nothing that only starts like an image is stored.
enum ImageFormat {
    /// Larger sides than this are not photos a phone app shows. A few bytes of header can claim any size,
    /// and whoever decodes the image later (a thumbnailer, the app) allocates width × height × 4 bytes:
    /// the limits keep that under about 160 MB, whatever the file's own size.
    static let maximumSide = 8_192
    /// 40 megapixels: above any phone camera's photo, and 8,192 × 8,192 (67 Mpx) is refused by this one.
    static let maximumPixels = 40_000_000

    static func inspect(_ bytes: [UInt8]) -> Result<ImageInfo, ImageFormatError> {
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return png(bytes) }
        if bytes.starts(with: [0xFF, 0xD8, 0xFF]) { return jpeg(bytes) }
        if bytes.count >= 12, bytes.starts(with: Array("RIFF".utf8)), Array(bytes[8..<12]) == Array("WEBP".utf8) {
            return webp(bytes)
        }
        return .failure(ImageFormatError("not a JPEG, PNG or WebP image"))
    }

    // MARK: PNG

    /// The signature, then an IHDR chunk of 13 bytes (width, height, bit depth, colour type...), then at
    /// least one IDAT and an IEND: a PNG cut short loses its IEND, so truncation is caught.
    private static func png(_ bytes: [UInt8]) -> Result<ImageInfo, ImageFormatError> {
        var offset = 8
        var width = 0
        var height = 0
        var sawData = false
        var first = true
        while true {
            guard offset + 12 <= bytes.count else { return .failure(ImageFormatError("PNG: truncated")) }
            let length = Int(be32(bytes, offset))
            let type = String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self)
            guard length <= bytes.count - offset - 12 else { return .failure(ImageFormatError("PNG: truncated")) }
            let data = offset + 8
            if first {
                guard type == "IHDR", length == 13 else {
                    return .failure(ImageFormatError("PNG: the first chunk is not a valid IHDR"))
                }
                width = Int(be32(bytes, data))
                height = Int(be32(bytes, data + 4))
                // Refused at the header, before walking the rest of the file.
                if case .failure(let refusal) = sized(.png, width, height) { return .failure(refusal) }
                let depth = bytes[data + 8]
                let colour = bytes[data + 9]
                guard [1, 2, 4, 8, 16].contains(depth), [0, 2, 3, 4, 6].contains(colour) else {
                    return .failure(ImageFormatError("PNG: unknown bit depth or colour type"))
                }
                first = false
            } else if type == "IDAT" {
                sawData = true
            } else if type == "IEND" {
                guard sawData else { return .failure(ImageFormatError("PNG: no image data")) }
                return sized(.png, width, height)
            }
            offset = data + length + 4  // data and CRC
        }
    }

    // MARK: JPEG

    /// Walks the marker segments after SOI up to a baseline or progressive frame header (SOF0/SOF1/SOF2)
    /// and reads its height and width; a file ending before one is truncated or not a JPEG.
    private static func jpeg(_ bytes: [UInt8]) -> Result<ImageInfo, ImageFormatError> {
        var offset = 2
        while offset + 4 <= bytes.count {
            guard bytes[offset] == 0xFF else { return .failure(ImageFormatError("JPEG: broken marker sequence")) }
            let marker = bytes[offset + 1]
            if marker == 0xFF {  // fill byte
                offset += 1
                continue
            }
            if marker == 0x01 || (0xD0...0xD7).contains(marker) {  // markers without a length
                offset += 2
                continue
            }
            if marker == 0xD9 || marker == 0xDA {
                return .failure(ImageFormatError("JPEG: no frame header before the image data"))
            }
            let length = Int(be16(bytes, offset + 2))
            guard length >= 2, offset + 2 + length <= bytes.count else {
                return .failure(ImageFormatError("JPEG: truncated"))
            }
            if marker == 0xC0 || marker == 0xC1 || marker == 0xC2 {
                guard length >= 8 else { return .failure(ImageFormatError("JPEG: frame header too short")) }
                let height = Int(be16(bytes, offset + 5))
                let width = Int(be16(bytes, offset + 7))
                guard bytes.suffix(2).elementsEqual([0xFF, 0xD9]) else {
                    return .failure(ImageFormatError("JPEG: truncated (no end-of-image marker)"))
                }
                return sized(.jpeg, width, height)
            }
            offset += 2 + length
        }
        return .failure(ImageFormatError("JPEG: truncated"))
    }

    // MARK: WebP

    /// RIFF size consistent with the data, then a VP8 (lossy), VP8L (lossless) or VP8X (extended) chunk.
    private static func webp(_ bytes: [UInt8]) -> Result<ImageInfo, ImageFormatError> {
        let riffSize = Int(le32(bytes, 4))
        guard riffSize + 8 <= bytes.count, bytes.count >= 30 else {
            return .failure(ImageFormatError("WebP: truncated"))
        }
        let chunk = String(decoding: bytes[12..<16], as: UTF8.self)
        let data = 20
        switch chunk {
        case "VP8 ":
            guard bytes[data + 3] == 0x9D, bytes[data + 4] == 0x01, bytes[data + 5] == 0x2A else {
                return .failure(ImageFormatError("WebP: bad VP8 start code"))
            }
            return sized(.webp, Int(le16(bytes, data + 6) & 0x3FFF), Int(le16(bytes, data + 8) & 0x3FFF))
        case "VP8L":
            guard bytes[data] == 0x2F else { return .failure(ImageFormatError("WebP: bad VP8L signature")) }
            let bits = le32(bytes, data + 1)
            return sized(.webp, Int(bits & 0x3FFF) + 1, Int((bits >> 14) & 0x3FFF) + 1)
        case "VP8X":
            let width = Int(le24(bytes, data + 4)) + 1
            let height = Int(le24(bytes, data + 7)) + 1
            return sized(.webp, width, height)
        default:
            return .failure(ImageFormatError("WebP: unknown chunk \"\(chunk)\""))
        }
    }

    // MARK: Helpers

    private static func sized(_ type: ImageType, _ width: Int, _ height: Int) -> Result<ImageInfo, ImageFormatError> {
        guard width >= 1, height >= 1 else {
            return .failure(ImageFormatError("\(type.contentType): size \(width)×\(height) is out of range"))
        }
        guard width <= maximumSide, height <= maximumSide, width * height <= maximumPixels else {
            return .failure(
                ImageFormatError(
                    "\(type.contentType): \(width)×\(height) px is over the limit of \(maximumSide) px per side "
                        + "and \(maximumPixels / 1_000_000) megapixels"))
        }
        return .success(ImageInfo(type: type, width: width, height: height))
    }

    private static func be32(_ b: [UInt8], _ i: Int) -> UInt32 {
        UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3])
    }

    private static func be16(_ b: [UInt8], _ i: Int) -> UInt16 { UInt16(b[i]) << 8 | UInt16(b[i + 1]) }

    private static func le16(_ b: [UInt8], _ i: Int) -> UInt16 { UInt16(b[i]) | UInt16(b[i + 1]) << 8 }

    private static func le24(_ b: [UInt8], _ i: Int) -> UInt32 {
        UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16
    }

    private static func le32(_ b: [UInt8], _ i: Int) -> UInt32 { le24(b, i) | UInt32(b[i + 3]) << 24 }
}

struct ImageFormatError: Error, Equatable, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
