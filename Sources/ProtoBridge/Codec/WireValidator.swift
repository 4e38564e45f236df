/// Checks serialized bytes against a message schema before protobuf-c unpacks them.
///
/// protobuf-c does not validate UTF-8, and a NUL inside a string would be cut off silently by its
/// C strings; it also reports every failure as a bare NULL. This scan rejects both string problems
/// and names the field and the reason for every structural problem (truncation, a length past the end,
/// a wrong wire type). It reads the input once and allocates nothing unless it fails.
enum WireValidator {
    private typealias Failure = WireReader.Failure

    static func validate(_ bytes: UnsafeRawBufferPointer, as schema: MessageSchema) throws(ProtoDecodingError) {
        do throws(Failure) {
            try scan(bytes, schema)
        } catch {
            throw error.decodingError(in: schema.fullName)
        }
    }

    private static func scan(_ bytes: UnsafeRawBufferPointer, _ schema: MessageSchema) throws(Failure) {
        var reader = WireReader(bytes: bytes)
        while !reader.isAtEnd {
            let (number, rawWireType) = try reader.tag()
            let wireType = WireType(rawValue: rawWireType)!

            let index = schema.table.index(of: Int(number))
            let field = index.map { schema.table.field(at: $0) }
            do throws(Failure) {
                if let field {
                    let expected = field.type.wireType
                    let packed = field.isRepeated && expected != .lengthDelimited && wireType == .lengthDelimited
                    guard wireType == expected || packed else {
                        throw Failure(reason: .wrongWireType(expected: expected.rawValue, found: wireType.rawValue))
                    }
                }
                if wireType == .lengthDelimited {
                    let value = try reader.bytes(rawWireType)
                    switch field?.type {
                    case .string?: try checkString(value)
                    case .message?: try scan(value, SchemaRegistry.shared.message(at: field!.nested)!)
                    default: break
                    }
                } else {
                    try reader.skip(rawWireType)
                }
            } catch {
                var failure = error
                failure.path.append(index.map { schema.fields[$0].name } ?? "#\(number)")
                throw failure
            }
        }
    }

    private static func checkString(_ bytes: UnsafeRawBufferPointer) throws(Failure) {
        switch UTF8Validation.check(bytes) {
        case .valid: return
        case .invalid: throw Failure(reason: .invalidUTF8)
        case .containsNUL: throw Failure(reason: .stringContainsNUL)
        }
    }
}

/// UTF-8 validation that also reports NUL bytes (valid UTF-8, but not representable in a C string).
package enum UTF8Validation {
    package enum Result { case valid, invalid, containsNUL }

    package static func check(_ bytes: UnsafeRawBufferPointer) -> Result {
        var index = 0
        let count = bytes.count
        var sawNUL = false
        while index < count {
            // ASCII fast path, eight bytes at a time.
            while index + 8 <= count {
                let word = bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                if word & 0x8080_8080_8080_8080 != 0 { break }
                if (word &- 0x0101_0101_0101_0101) & ~word & 0x8080_8080_8080_8080 != 0 { sawNUL = true }
                index += 8
            }
            guard index < count else { break }
            let lead = bytes[index]
            if lead < 0x80 {
                if lead == 0 { sawNUL = true }
                index += 1
                continue
            }
            let length: Int
            var lower: UInt8 = 0x80
            var upper: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0:
                length = 3
                lower = 0xA0  // no overlongs
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED:
                length = 3
                upper = 0x9F  // no surrogates
            case 0xF0:
                length = 4
                lower = 0x90  // no overlongs
            case 0xF1...0xF3: length = 4
            case 0xF4:
                length = 4
                upper = 0x8F  // nothing above U+10FFFF
            default: return .invalid
            }
            guard index + length <= count else { return .invalid }
            let second = bytes[index + 1]
            guard second >= lower, second <= upper else { return .invalid }
            for offset in 2..<length where bytes[index + offset] & 0xC0 != 0x80 { return .invalid }
            index += length
        }
        return sawNUL ? .containsNUL : .valid
    }
}
