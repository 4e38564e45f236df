/// Base64 as proto3 JSON wants it: written in the standard alphabet with padding; read in the standard or
/// the URL-safe alphabet, padded or not (other implementations, and people, produce all four).
///
/// Foundation's `Data(base64Encoded:)` accepts only the padded standard form, hence this small codec.
enum Base64 {
    struct DecodingFailure: Error {
        let reason: String
    }

    private static let standardAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Character → 6-bit value, 0xFF for characters of neither alphabet. `-`/`_` are the URL-safe `+`/`/`.
    private static let decodingTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, character) in standardAlphabet.enumerated() { table[Int(character)] = UInt8(value) }
        table[Int(UInt8(ascii: "-"))] = 62
        table[Int(UInt8(ascii: "_"))] = 63
        return table
    }()

    /// Standard alphabet, with `=` padding.
    static func encode(_ bytes: [UInt8], into output: inout [UInt8]) {
        output.reserveCapacity(output.count + (bytes.count + 2) / 3 * 4)
        let alphabet = standardAlphabet
        var index = 0
        while index + 3 <= bytes.count {
            let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            output.append(alphabet[Int(chunk >> 18 & 0x3F)])
            output.append(alphabet[Int(chunk >> 12 & 0x3F)])
            output.append(alphabet[Int(chunk >> 6 & 0x3F)])
            output.append(alphabet[Int(chunk & 0x3F)])
            index += 3
        }
        let remaining = bytes.count - index
        guard remaining > 0 else { return }
        let chunk = UInt32(bytes[index]) << 16 | (remaining == 2 ? UInt32(bytes[index + 1]) << 8 : 0)
        output.append(alphabet[Int(chunk >> 18 & 0x3F)])
        output.append(alphabet[Int(chunk >> 12 & 0x3F)])
        output.append(remaining == 2 ? alphabet[Int(chunk >> 6 & 0x3F)] : UInt8(ascii: "="))
        output.append(UInt8(ascii: "="))
    }

    static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        encode(bytes, into: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes either alphabet (not both mixed), with or without padding. Whitespace is not accepted.
    static func decode(_ text: String) throws(DecodingFailure) -> [UInt8] {
        let input = Array(text.utf8)
        var end = input.count
        while end > 0, input[end - 1] == UInt8(ascii: "="), input.count - end < 2 { end -= 1 }
        let padding = input.count - end
        if padding > 0, input.count % 4 != 0 {
            throw DecodingFailure(reason: "padded base64 must have a length that is a multiple of 4")
        }
        if end % 4 == 1 {
            throw DecodingFailure(reason: "\(end) base64 characters cannot encode whole bytes")
        }
        if padding > 0, padding != (4 - end % 4) % 4 {
            throw DecodingFailure(reason: "wrong number of '=' padding characters")
        }

        let table = decodingTable
        var output: [UInt8] = []
        output.reserveCapacity(end / 4 * 3 + 2)
        var sawStandard = false
        var sawURLSafe = false
        var accumulator: UInt32 = 0
        var bits = 0
        for position in 0..<end {
            let character = input[position]
            let value = table[Int(character)]
            guard value != 0xFF else {
                let shown = character < 0x80 ? "'\(Character(Unicode.Scalar(character)))'" : "a non-ASCII character"
                throw DecodingFailure(reason: "\(shown) at index \(position) is not a base64 character")
            }
            if character == UInt8(ascii: "+") || character == UInt8(ascii: "/") { sawStandard = true }
            if character == UInt8(ascii: "-") || character == UInt8(ascii: "_") { sawURLSafe = true }
            accumulator = (accumulator << 6 | UInt32(value)) & 0xFFFF
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        if sawStandard, sawURLSafe {
            throw DecodingFailure(reason: "it mixes the standard (+/) and the URL-safe (-_) alphabets")
        }
        return output
    }
}
