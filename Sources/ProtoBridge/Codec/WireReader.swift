/// A cursor over one message's bytes that never reads past their end, with protobuf's wire rules: the
/// one varint and tag reader, shared by `WireValidator` (every decoded message) and RPCCore's
/// hand-written frame reader (every call), so both refuse the same bytes for the same reasons.
package struct WireReader {
    /// Why the bytes are refused, and where (field names, innermost first).
    package struct Failure: Error {
        package var reason: ProtoDecodingError.Reason
        package var path: [String] = []

        package init(reason: ProtoDecodingError.Reason, path: [String] = []) {
            self.reason = reason
            self.path = path
        }

        package func within(_ field: String) -> Failure {
            var failure = self
            failure.path.append(field)
            return failure
        }

        package func decodingError(in messageType: String) -> ProtoDecodingError {
            ProtoDecodingError(
                messageType: messageType,
                fieldPath: path.isEmpty ? nil : path.reversed().joined(separator: "."),
                reason: reason
            )
        }
    }

    package let bytes: UnsafeRawBufferPointer
    package private(set) var position = 0

    package init(bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    package var isAtEnd: Bool { position >= bytes.count }

    /// The next field's number and wire type.
    package mutating func tag() throws(Failure) -> (number: UInt64, wireType: UInt8) {
        let start = position
        let tag = try varint()
        guard position - start <= 5 else { throw Failure(reason: .tagTooLong) }
        let number = tag >> 3
        guard number > 0, number <= 0x1FFF_FFFF else { throw Failure(reason: .invalidFieldNumber(number)) }
        let wireType = UInt8(tag & 7)
        guard wireType == 0 || wireType == 1 || wireType == 2 || wireType == 5 else {
            throw Failure(reason: .invalidWireType(wireType))
        }
        return (number, wireType)
    }

    package mutating func uint64(_ wireType: UInt8) throws(Failure) -> UInt64 {
        guard wireType == 0 else { throw Failure(reason: .wrongWireType(expected: 0, found: wireType)) }
        return try varint()
    }

    package mutating func string(_ wireType: UInt8) throws(Failure) -> String {
        let value = try bytes(wireType)
        switch UTF8Validation.check(value) {
        case .valid: return String(decoding: value, as: UTF8.self)
        case .invalid: throw Failure(reason: .invalidUTF8)
        case .containsNUL: throw Failure(reason: .stringContainsNUL)
        }
    }

    /// A string field equal to `known` is answered with `known` itself, unchecked (it was checked when
    /// it was read) and without a new allocation: a connection's frames name the same few methods, and
    /// carry the same token. Compared in constant time (`SameBytes`): `known` may be another caller's.
    package mutating func string(_ wireType: UInt8, reusing known: String) throws(Failure) -> String {
        let value = try bytes(wireType)
        if !known.isEmpty, SameBytes.equal(known, value) { return known }
        switch UTF8Validation.check(value) {
        case .valid: return String(decoding: value, as: UTF8.self)
        case .invalid: throw Failure(reason: .invalidUTF8)
        case .containsNUL: throw Failure(reason: .stringContainsNUL)
        }
    }

    package mutating func bytes(_ wireType: UInt8) throws(Failure) -> UnsafeRawBufferPointer {
        let range = try bytesRange(wireType)
        return UnsafeRawBufferPointer(rebasing: bytes[range])
    }

    /// A length-delimited value's offsets within `bytes`.
    package mutating func bytesRange(_ wireType: UInt8) throws(Failure) -> Range<Int> {
        guard wireType == 2 else { throw Failure(reason: .wrongWireType(expected: 2, found: wireType)) }
        let length = try varint()
        let available = bytes.count - position
        guard length <= UInt64(available) else {
            throw Failure(reason: .lengthPastEnd(declared: length, available: available))
        }
        defer { position += Int(length) }
        return position..<position + Int(length)
    }

    /// Passes over a field this reader does not know.
    package mutating func skip(_ wireType: UInt8) throws(Failure) {
        switch wireType {
        case 0: _ = try varint()
        case 1: try advance(8)
        case 5: try advance(4)
        default: _ = try bytesRange(wireType)
        }
    }

    package mutating func advance(_ count: Int) throws(Failure) {
        guard bytes.count - position >= count else { throw Failure(reason: .truncated) }
        position += count
    }

    package mutating func varint() throws(Failure) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard position < bytes.count else { throw Failure(reason: .truncated) }
            let byte = bytes[position]
            position += 1
            if shift < 64 { result |= UInt64(byte & 0x7F) << shift }
            if byte & 0x80 == 0 { return result }
            shift += 7
            if shift >= 70 { throw Failure(reason: .varintTooLong) }
        }
    }
}
