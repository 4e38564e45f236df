import CProtobufC

/// A service as compiled by protoc-c: its methods with their request and response types.
///
/// protobuf-c does not record streaming kinds; RPCCore's generated `ServiceDescriptor` carries those.
public final class ServiceSchema: Sendable, Hashable, CustomStringConvertible {
    public struct Method: Sendable, Hashable {
        public let name: String
        public let input: MessageSchema
        public let output: MessageSchema
    }

    /// `yedi.account.AccountService`
    public let fullName: String
    public let name: String
    public let packageName: String
    public let methods: [Method]

    init(descriptor: UnsafePointer<ProtobufCServiceDescriptor>, messages: (UnsafeRawPointer) -> MessageSchema) {
        let raw = descriptor.pointee
        precondition(raw.magic == PROTOBUF_C__SERVICE_DESCRIPTOR_MAGIC, "not a protobuf-c service descriptor")
        fullName = String(cString: raw.name)
        name = String(cString: raw.short_name)
        packageName = String(cString: raw.package)
        methods = UnsafeBufferPointer(start: raw.methods, count: Int(raw.n_methods)).map {
            Method(name: String(cString: $0.name), input: messages($0.input), output: messages($0.output))
        }
    }

    public static func lookup(_ fullName: String) -> ServiceSchema? {
        SchemaRegistry.shared.services.first { $0.fullName == fullName }
    }

    public static var all: [ServiceSchema] { SchemaRegistry.shared.services }

    public var description: String { fullName }

    public static func == (lhs: ServiceSchema, rhs: ServiceSchema) -> Bool { lhs === rhs }

    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
