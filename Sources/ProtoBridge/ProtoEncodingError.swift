/// Why a message could not be encoded.
public struct ProtoEncodingError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Reason: Hashable, Sendable {
        /// protobuf-c packs strings with `strlen`, so a NUL byte would silently cut the string short.
        case stringContainsNUL
        /// The generated or dynamic code wrote a value whose type is not the field's.
        case schemaMismatch(String)
    }

    /// The full name of the message type being encoded.
    public let messageType: String
    /// The field's name, if the error belongs to one.
    public let fieldPath: String?
    public let reason: Reason

    public init(messageType: String, fieldPath: String? = nil, reason: Reason) {
        self.messageType = messageType
        self.fieldPath = fieldPath
        self.reason = reason
    }

    public var description: String {
        let location = fieldPath.map { " at field '\($0)'" } ?? ""
        switch reason {
        case .stringContainsNUL:
            return "cannot encode \(messageType)\(location): strings must not contain NUL bytes"
        case .schemaMismatch(let detail):
            return "cannot encode \(messageType)\(location): schema mismatch: \(detail)"
        }
    }
}
