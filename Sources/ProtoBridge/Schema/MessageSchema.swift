import CProtobufC

/// A message type as compiled by protoc-c: its name, its fields and the C descriptor the codec packs with.
///
/// Generated types hold theirs in `static let schema`; tools (the probe) look them up by name.
public final class MessageSchema: Sendable, Hashable, CustomStringConvertible {
    /// `yedi.account.User`
    public let fullName: String
    /// `User`
    public let name: String
    /// `yedi.account`
    public let packageName: String
    /// Every field, ordered by number.
    public let fields: [FieldSchema]

    let codecFields: [CodecField]
    /// The fields by number, in memory that is never freed (schemas live as long as the process), so
    /// the encoder and decoder look fields up without reference counting.
    @usableFromInline let table: CodecTable
    let sizeofMessage: Int
    nonisolated(unsafe) let descriptor: UnsafePointer<ProtobufCMessageDescriptor>

    init(descriptor: UnsafePointer<ProtobufCMessageDescriptor>) {
        let raw = descriptor.pointee
        precondition(raw.magic == PROTOBUF_C__MESSAGE_DESCRIPTOR_MAGIC, "not a protobuf-c message descriptor")
        self.descriptor = descriptor
        fullName = String(cString: raw.name)
        name = String(cString: raw.short_name)
        packageName = String(cString: raw.package_name)
        sizeofMessage = raw.sizeof_message
        let rawFields = UnsafeBufferPointer(start: raw.fields, count: Int(raw.n_fields))
        let codec = rawFields.map(CodecField.init).sorted { $0.number < $1.number }
        codecFields = codec

        // Members of a oneof share a quantifier offset (the `_case` member).
        var oneofIDs: [Int: Int] = [:]
        for field in codec where field.isOneof {
            oneofIDs[field.quantifierOffset] = min(oneofIDs[field.quantifierOffset] ?? .max, Int(field.number))
        }
        let fullName = self.fullName
        fields = zip(rawFields.sorted { $0.id < $1.id }, codec).map { raw, field in
            let name = String(cString: raw.name)
            return FieldSchema(
                name: name,
                jsonName: FieldSchema.jsonName(for: name),
                number: Int(field.number),
                type: field.type,
                isRepeated: field.isRepeated,
                containingType: fullName,
                oneofID: field.isOneof ? oneofIDs[field.quantifierOffset] : nil,
                codec: field
            )
        }

        table = CodecTable(fields: codec, messageName: fullName)
    }

    /// The schema generated code names; a missing one means the bindings and the C code are out of step.
    public static func named(_ fullName: String) -> MessageSchema {
        guard let schema = SchemaRegistry.shared.message(named: fullName) else {
            preconditionFailure("no protobuf-c descriptor for \(fullName): regenerate with proto/generate.sh")
        }
        return schema
    }

    /// The schema of a message type by its full name (`yedi.account.User`), if the build has it.
    public static func lookup(_ fullName: String) -> MessageSchema? {
        SchemaRegistry.shared.message(named: fullName)
    }

    /// Every message type of the build.
    public static var all: [MessageSchema] { SchemaRegistry.shared.messages }

    public func field(number: Int) -> FieldSchema? {
        guard let position = codecIndex(number) else { return nil }
        return fields[position]
    }

    /// A field by its proto name or its JSON name.
    public func field(named name: String) -> FieldSchema? {
        fields.first { $0.name == name || $0.jsonName == name }
    }

    /// The other members of `field`'s oneof, itself included.
    public func oneofMembers(of field: FieldSchema) -> [FieldSchema] {
        guard let id = field.oneofID else { return [field] }
        return fields.filter { $0.oneofID == id }
    }

    func codecIndex(_ number: Int) -> Int? {
        table.index(of: number)
    }

    public var description: String { fullName }

    public static func == (lhs: MessageSchema, rhs: MessageSchema) -> Bool { lhs === rhs }

    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// A message's fields for the codec: plain values behind raw pointers, looked up by field number in
/// constant time. Allocated once per schema and never freed.
@usableFromInline
struct CodecTable: @unchecked Sendable {
    private let fields: UnsafeMutablePointer<CodecField>
    private let indexByNumber: UnsafeMutablePointer<Int16>
    private let numberLimit: Int

    init(fields codec: [CodecField], messageName: String) {
        let highest = Int(codec.last?.number ?? 0)
        precondition(highest < Int(Int16.max), "\(messageName): field numbers this high are not supported")
        fields = .allocate(capacity: max(codec.count, 1))
        fields.initialize(from: codec, count: codec.count)
        numberLimit = highest + 1
        indexByNumber = .allocate(capacity: numberLimit)
        indexByNumber.initialize(repeating: -1, count: numberLimit)
        for (position, field) in codec.enumerated() { indexByNumber[Int(field.number)] = Int16(position) }
    }

    @inline(__always)
    func index(of number: Int) -> Int? {
        guard number >= 0, number < numberLimit else { return nil }
        let position = indexByNumber[number]
        return position < 0 ? nil : Int(position)
    }

    @inline(__always)
    func field(_ number: Int) -> CodecField? {
        index(of: number).map { fields[$0] }
    }

    @inline(__always)
    func field(at index: Int) -> CodecField { fields[index] }
}
