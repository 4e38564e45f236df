/// Why bytes did not decode as a message. Thrown instead of crashing, whatever the input.
public struct ProtoDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Reason: Hashable, Sendable {
        /// The input ends inside a tag, a varint or a fixed-size value.
        case truncated
        /// A length-delimited field claims more bytes than the input has left.
        case lengthPastEnd(declared: UInt64, available: Int)
        /// A tag carries a wire type that does not exist (6, 7) or that protobuf-c rejects (groups).
        case invalidWireType(UInt8)
        /// A known field arrived with a wire type its declared type cannot have.
        case wrongWireType(expected: UInt8, found: UInt8)
        /// Field number 0 or above 2^29 - 1.
        case invalidFieldNumber(UInt64)
        /// A varint longer than 10 bytes.
        case varintTooLong
        /// A field's tag longer than 5 bytes: protobuf-c reads a tag in at most 5, even when the extra
        /// bytes only pad it with zero bits.
        case tagTooLong
        /// A string field holds bytes that are not UTF-8.
        case invalidUTF8
        /// A string field holds a NUL byte, which protobuf-c's C strings cannot carry.
        case stringContainsNUL
        /// protobuf-c's unpack refused the input (it gives no reason).
        case unpackFailed
        /// The generated or dynamic code read a field with a type other than its schema's.
        case schemaMismatch(String)
        /// A string or bytes value (or one element of a repeated one) longer than its declared
        /// `max_bytes` (proto/access.proto).
        case tooManyBytes(limit: Int, actual: Int)
        /// A repeated field with more elements than its declared `max_items`.
        case tooManyItems(limit: Int, actual: Int)
        /// A value that decodes but that a hand-written reader cannot accept where it is (an RPC
        /// frame's metadata entry repeating one the connection does not have).
        case invalidValue(String)
    }

    /// The full name of the message type being decoded.
    public let messageType: String
    /// Where in the message: a dotted path of field names (`designer.shop.name`), if known.
    public let fieldPath: String?
    public let reason: Reason

    public init(messageType: String, fieldPath: String? = nil, reason: Reason) {
        self.messageType = messageType
        self.fieldPath = fieldPath
        self.reason = reason
    }

    public var description: String {
        let location = fieldPath.map { " at field '\($0)'" } ?? ""
        return "cannot decode \(messageType)\(location): \(reasonText)"
    }

    /// A field over its declared size, as a caller reads it: `designer.shop.name: at most 200 bytes of
    /// UTF-8 (got 3500000)`; nil for every other reason.
    public var sizeLimitText: String? {
        switch reason {
        case .tooManyBytes, .tooManyItems: "\(fieldPath ?? messageType): \(reasonText)"
        default: nil
        }
    }

    private var reasonText: String {
        switch reason {
        case .truncated: "the input is truncated"
        case .lengthPastEnd(let declared, let available):
            "a length of \(declared) bytes runs past the end of the input (\(available) left)"
        case .invalidWireType(let type): "invalid wire type \(type)"
        case .wrongWireType(let expected, let found): "wire type \(found) where the schema expects \(expected)"
        case .invalidFieldNumber(let number): "invalid field number \(number)"
        case .varintTooLong: "a varint is longer than 10 bytes"
        case .tagTooLong: "a field's tag is longer than 5 bytes"
        case .invalidUTF8: "a string is not valid UTF-8"
        case .stringContainsNUL: "a string contains a NUL byte"
        case .unpackFailed: "protobuf-c could not unpack the input"
        case .schemaMismatch(let detail): "schema mismatch: \(detail)"
        case .tooManyBytes(let limit, let actual): "at most \(limit) bytes of UTF-8 (got \(actual))"
        case .tooManyItems(let limit, let actual): "at most \(limit) items (got \(actual))"
        case .invalidValue(let detail): detail
        }
    }
}
