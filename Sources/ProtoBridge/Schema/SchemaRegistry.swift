import CProtobufC

/// Every protobuf-c descriptor of the build (listed by the generated `registry.c`), wrapped once.
final class SchemaRegistry: Sendable {
    static let shared = SchemaRegistry()

    let messages: [MessageSchema]
    let enums: [EnumSchema]
    let services: [ServiceSchema]
    private let messagesByName: [String: MessageSchema]
    private let enumsByName: [String: EnumSchema]
    nonisolated(unsafe) private let messagesByDescriptor: [UnsafeRawPointer: MessageSchema]
    nonisolated(unsafe) private let enumsByDescriptor: [UnsafeRawPointer: EnumSchema]

    private init() {
        var messages: [MessageSchema] = []
        var byDescriptor: [UnsafeRawPointer: MessageSchema] = [:]
        for index in 0..<yedi_message_descriptor_count() {
            let descriptor = yedi_message_descriptor_at(index)!
            let schema = MessageSchema(descriptor: descriptor)
            messages.append(schema)
            byDescriptor[UnsafeRawPointer(descriptor)] = schema
        }
        var enums: [EnumSchema] = []
        var enumsByDescriptor: [UnsafeRawPointer: EnumSchema] = [:]
        for index in 0..<yedi_enum_descriptor_count() {
            let descriptor = yedi_enum_descriptor_at(index)!
            let schema = EnumSchema(descriptor: descriptor)
            enums.append(schema)
            enumsByDescriptor[UnsafeRawPointer(descriptor)] = schema
        }
        services = (0..<yedi_service_descriptor_count()).map { index in
            ServiceSchema(descriptor: yedi_service_descriptor_at(index)!) { byDescriptor[$0]! }
        }
        self.messages = messages
        self.enums = enums
        messagesByDescriptor = byDescriptor
        self.enumsByDescriptor = enumsByDescriptor
        messagesByName = Dictionary(uniqueKeysWithValues: messages.map { ($0.fullName, $0) })
        enumsByName = Dictionary(uniqueKeysWithValues: enums.map { ($0.fullName, $0) })
    }

    func message(named name: String) -> MessageSchema? { messagesByName[name] }

    func message(at descriptor: UnsafeRawPointer?) -> MessageSchema? {
        descriptor.flatMap { messagesByDescriptor[$0] }
    }

    func enumSchema(named name: String) -> EnumSchema? { enumsByName[name] }

    func enumSchema(at descriptor: UnsafeRawPointer?) -> EnumSchema? {
        descriptor.flatMap { enumsByDescriptor[$0] }
    }
}
