/// A small valid PNG for the designers' post photos: RGB, 8 bits, the pixels in stored (uncompressed)
/// deflate blocks, with real CRCs and Adler-32, so ContentService's checks (signature, IHDR, IDAT, IEND,
/// sides and megapixels) pass and any decoder reads it.
enum TinyPNG {
    /// `width`×`height` pixels (at most 64×64: one stored block); `seed` varies them, so two photos differ.
    static func make(width: Int = 8, height: Int = 8, seed: UInt8 = 0) -> [UInt8] {
        precondition((1...64).contains(width) && (1...64).contains(height), "one stored block holds 64×64")
        var raw: [UInt8] = []
        var value = seed
        for _ in 0..<height {
            raw.append(0)  // filter: none
            for _ in 0..<(width * 3) {
                value = value &* 31 &+ 17
                raw.append(value)
            }
        }
        let size = raw.count
        var zlib: [UInt8] = [0x78, 0x01, 1]  // header; one final stored block
        zlib += [UInt8(size & 0xFF), UInt8(size >> 8), UInt8(~size & 0xFF), UInt8((~size >> 8) & 0xFF)]
        zlib += raw + bigEndian(adler32(raw))
        let header = bigEndian(UInt32(width)) + bigEndian(UInt32(height)) + [8, 2, 0, 0, 0]
        return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", header) + chunk("IDAT", zlib)
            + chunk("IEND", [])
    }

    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let typed = Array(type.utf8) + data
        return bigEndian(UInt32(data.count)) + typed + bigEndian(crc32(typed))
    }

    static func crc32(_ data: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in data {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    static func adler32(_ data: [UInt8]) -> UInt32 {
        var a: UInt32 = 1
        var b: UInt32 = 0
        for byte in data {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        return b << 16 | a
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }
}
