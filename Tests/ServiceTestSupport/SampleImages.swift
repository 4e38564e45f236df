/// Small valid images made in code: a PNG encoder with stored (uncompressed) deflate blocks, and a baseline
/// JPEG of flat grey 8×8 blocks with one-symbol Huffman tables. Both are well-formed files any decoder reads.
public enum SampleImages {
    /// An RGB PNG of `width`×`height`; `seed` varies the pixels so two images differ.
    public static func png(width: Int, height: Int, seed: UInt8 = 0) -> [UInt8] {
        var raw: [UInt8] = []
        raw.reserveCapacity((width * 3 + 1) * height)
        var value = seed
        for _ in 0..<height {
            raw.append(0)  // filter: none
            for _ in 0..<(width * 3) {
                value = value &* 31 &+ 17
                raw.append(value)
            }
        }
        var header: [UInt8] = []
        header += be32(UInt32(width)) + be32(UInt32(height)) + [8, 2, 0, 0, 0]
        return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", header) + chunk("IDAT", zlibStored(raw))
            + chunk("IEND", [])
    }

    /// A greyscale baseline JPEG of `width`×`height` (multiples of 8 look best; any size parses).
    public static func jpeg(width: Int, height: Int, comment: Int = 0) -> [UInt8] {
        var bytes: [UInt8] = [0xFF, 0xD8]
        // APP0 JFIF
        bytes += segment(0xE0, Array("JFIF".utf8) + [0, 1, 1, 0, 0, 1, 0, 1, 0, 0])
        // Optional padding comments (to reach a photo-like size).
        var remaining = comment
        while remaining > 0 {
            let size = min(remaining, 65_000)
            bytes += segment(0xFE, [UInt8](repeating: 0x20, count: size))
            remaining -= size
        }
        bytes += segment(0xDB, [0] + [UInt8](repeating: 1, count: 64))  // DQT: table 0, all ones
        bytes += segment(0xC0, [8] + be16(UInt16(height)) + be16(UInt16(width)) + [1, 1, 0x11, 0])  // SOF0
        // DHT: DC table 0 and AC table 0, each one symbol (0) with the one-bit code "0".
        bytes += segment(0xC4, [0x00, 1] + [UInt8](repeating: 0, count: 15) + [0])
        bytes += segment(0xC4, [0x10, 1] + [UInt8](repeating: 0, count: 15) + [0])
        bytes += segment(0xDA, [1, 1, 0x00, 0, 63, 0])  // SOS
        // Each block: DC difference 0 ("0"), end of block ("0"): two bits; pad the last byte with ones.
        let blocks = ((width + 7) / 8) * ((height + 7) / 8)
        var bits = blocks * 2
        while bits >= 8 {
            bytes.append(0x00)
            bits -= 8
        }
        if bits > 0 { bytes.append(UInt8(0xFF >> bits)) }
        return bytes + [0xFF, 0xD9]
    }

    /// A JPEG of exactly `totalBytes` bytes: comment segments, then 0xFF fill bytes before the next marker.
    public static func jpeg(width: Int, height: Int, totalBytes: Int) -> [UInt8] {
        let base = jpeg(width: width, height: height).count
        var comment = max(0, totalBytes - base)
        var bytes = jpeg(width: width, height: height, comment: comment)
        while bytes.count > totalBytes {
            comment -= bytes.count - totalBytes
            bytes = jpeg(width: width, height: height, comment: max(0, comment))
        }
        let dqt = bytes.indices.first { bytes[$0] == 0xFF && bytes[$0 + 1] == 0xDB }!
        bytes.insert(contentsOf: [UInt8](repeating: 0xFF, count: totalBytes - bytes.count), at: dqt)
        return bytes
    }

    /// A lossless WebP header (VP8L) of `width`×`height` with a few payload bytes.
    public static func webp(width: Int, height: Int) -> [UInt8] {
        let bits = UInt32(width - 1) | UInt32(height - 1) << 14
        let payload: [UInt8] = [0x2F] + le32(bits) + [0, 0, 0, 0, 0, 0, 0]
        let chunk = Array("VP8L".utf8) + le32(UInt32(payload.count)) + payload
        return Array("RIFF".utf8) + le32(UInt32(4 + chunk.count)) + Array("WEBP".utf8) + chunk
    }

    // MARK: Helpers

    private static func segment(_ marker: UInt8, _ data: [UInt8]) -> [UInt8] {
        [0xFF, marker] + be16(UInt16(data.count + 2)) + data
    }

    private static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let typed = Array(type.utf8) + data
        return be32(UInt32(data.count)) + typed + be32(crc32(typed))
    }

    private static func zlibStored(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let size = min(65_535, data.count - offset)
            let last: UInt8 = offset + size >= data.count ? 1 : 0
            out.append(last)
            out += [UInt8(size & 0xFF), UInt8(size >> 8), UInt8(~size & 0xFF), UInt8((~size >> 8) & 0xFF)]
            out += data[offset..<(offset + size)]
            offset += size
        } while offset < data.count
        var a: UInt32 = 1
        var b: UInt32 = 0
        for byte in data {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        return out + be32(b << 16 | a)
    }

    private static func crc32(_ data: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in data {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    private static func be32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }

    private static func be16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }

    private static func le32(_ value: UInt32) -> [UInt8] {
        [UInt8(value & 0xFF), UInt8((value >> 8) & 0xFF), UInt8((value >> 16) & 0xFF), UInt8(value >> 24)]
    }
}
