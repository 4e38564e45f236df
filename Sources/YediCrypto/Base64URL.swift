/// Base64url without padding (RFC 4648 section 5), as JWTs (RFC 7515) and the password hash format use.
///
/// Decoding is strict, so that every byte string has exactly one accepted encoding: no padding, no
/// whitespace, no characters outside the alphabet, and the unused trailing bits must be zero. A lenient
/// decoder would let an attacker produce many spellings of one token.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Each ASCII byte's 6-bit value, or 0xFF for bytes outside the alphabet.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, character) in alphabet.enumerated() { table[Int(character)] = UInt8(index) }
        return table
    }()

    public static func encode(_ data: [UInt8]) -> String {
        var output = [UInt8]()
        output.reserveCapacity((data.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= data.count {
            let chunk = UInt32(data[index]) << 16 | UInt32(data[index + 1]) << 8 | UInt32(data[index + 2])
            for shift in [18, 12, 6, 0] { output.append(alphabet[Int((chunk >> UInt32(shift)) & 0x3F)]) }
            index += 3
        }
        switch data.count - index {
        case 1:
            let chunk = UInt32(data[index]) << 16
            for shift in [18, 12] { output.append(alphabet[Int((chunk >> UInt32(shift)) & 0x3F)]) }
        case 2:
            let chunk = UInt32(data[index]) << 16 | UInt32(data[index + 1]) << 8
            for shift in [18, 12, 6] { output.append(alphabet[Int((chunk >> UInt32(shift)) & 0x3F)]) }
        default:
            break
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The bytes `text` encodes, or nil unless it is the canonical unpadded base64url of some bytes.
    public static func decode(_ text: String) -> [UInt8]? {
        let input = Array(text.utf8)
        // A final group of one character cannot hold a whole byte.
        guard input.count % 4 != 1 else { return nil }
        var output = [UInt8]()
        output.reserveCapacity(input.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in input {
            let value = values[Int(character)]
            guard value != 0xFF else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8((accumulator >> UInt32(bits)) & 0xFF))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        // Leftover bits (2 or 4) are padding inside the last character: canonical only when zero.
        guard accumulator == 0 else { return nil }
        return output
    }
}
