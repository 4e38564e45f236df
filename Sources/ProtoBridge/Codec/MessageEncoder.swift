import CProtobufC

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writes a message's fields into the protoc-c struct that `protobuf_c_message_pack` will serialize.
///
/// Generated `encode(to:)` methods call `write(_:at:)` once per field; everything they write lives in
/// the encode's arena. Unset proto3 fields are left as protoc-c's `message_init` set them. An encoder
/// is valid only during the `encode(to:)` it is passed to.
public struct MessageEncoder {
    @usableFromInline let schema: MessageSchema
    @usableFromInline let table: CodecTable
    @usableFromInline let base: UnsafeMutableRawPointer
    @usableFromInline unowned(unsafe) let arena: Arena

    @usableFromInline
    init(schema: MessageSchema, base: UnsafeMutableRawPointer, arena: Arena) {
        self.schema = schema
        self.table = schema.table
        self.base = base
        self.arena = arena
    }

    /// A new protoc-c struct for `schema`, initialised with its defaults, owned by `arena`.
    static func newMessage(_ schema: MessageSchema, in arena: Arena) -> UnsafeMutableRawPointer {
        let message = arena.allocate(byteCount: schema.sizeofMessage)
        schema.descriptor.pointee.message_init(message.assumingMemoryBound(to: ProtobufCMessage.self))
        return message
    }

    // MARK: Singular fields

    public mutating func write(_ value: Int32, at number: Int) throws(ProtoEncodingError) {
        try store(value, at: number, as: .int32)
    }

    public mutating func write(_ value: Int64, at number: Int) throws(ProtoEncodingError) {
        try store(value, at: number, as: .int64)
    }

    public mutating func write(_ value: UInt32, at number: Int) throws(ProtoEncodingError) {
        try store(value, at: number, as: .uint32)
    }

    public mutating func write(_ value: UInt64, at number: Int) throws(ProtoEncodingError) {
        try store(value, at: number, as: .uint64)
    }

    public mutating func write(_ value: Float, at number: Int) throws(ProtoEncodingError) {
        try store(value, at: number, as: .float)
    }

    public mutating func write(_ value: Double, at number: Int) throws(ProtoEncodingError) {
        try store(value, at: number, as: .double)
    }

    public mutating func write(_ value: Bool, at number: Int) throws(ProtoEncodingError) {
        try store(Int32(value ? 1 : 0), at: number, as: .bool)
    }

    @inlinable
    public mutating func write<E: ProtoEnum>(_ value: E, at number: Int) throws(ProtoEncodingError) {
        try writeEnum(value.rawValue, at: number)
    }

    @usableFromInline
    mutating func writeEnum(_ value: Int32, at number: Int) throws(ProtoEncodingError) {
        try store(value, at: number, as: .enum)
    }

    public mutating func write(_ value: String, at number: Int) throws(ProtoEncodingError) {
        let field = try slot(number, .string, repeated: false)
        guard !value.isEmpty || field.isOneof else { return }
        let copy = try cString(value, field: field)
        (base + field.offset).storeBytes(of: copy, as: UnsafeMutablePointer<CChar>.self)
        markPresent(field)
    }

    public mutating func write(_ value: [UInt8], at number: Int) throws(ProtoEncodingError) {
        let field = try slot(number, .bytes, repeated: false)
        guard !value.isEmpty || field.isOneof else { return }
        (base + field.offset).storeBytes(of: binaryData(value), as: ProtobufCBinaryData.self)
        markPresent(field)
    }

    @inlinable
    public mutating func write<M: ProtoMessage>(_ value: M?, at number: Int) throws(ProtoEncodingError) {
        guard let value else { return }
        var nested = try beginNested(at: number, schema: M.schema)
        do throws(ProtoEncodingError) {
            try value.encode(to: &nested)
        } catch {
            throw nestedError(error, at: number)
        }
    }

    /// A new nested message in field `number`, for the caller to fill.
    @usableFromInline
    func beginNested(at number: Int, schema nestedSchema: MessageSchema) throws(ProtoEncodingError) -> MessageEncoder {
        let field = try slot(number, .message, repeated: false)
        guard UnsafeRawPointer(nestedSchema.descriptor) == field.nested else {
            throw mismatch(number, "a \(nestedSchema.fullName) message")
        }
        let nested = Self.newMessage(nestedSchema, in: arena)
        (base + field.offset).storeBytes(of: nested, as: UnsafeMutableRawPointer.self)
        markPresent(field)
        return MessageEncoder(schema: nestedSchema, base: nested, arena: arena)
    }

    /// The same error, reported from this message (`shop.name` in `Designer`).
    @usableFromInline
    func nestedError(_ error: ProtoEncodingError, at number: Int) -> ProtoEncodingError {
        error.nested(in: schema, field: name(of: number))
    }

    // MARK: Repeated fields

    public mutating func write(_ values: [Int32], at number: Int) throws(ProtoEncodingError) {
        try storeArray(values, at: number, as: .int32)
    }

    public mutating func write(_ values: [Int64], at number: Int) throws(ProtoEncodingError) {
        try storeArray(values, at: number, as: .int64)
    }

    public mutating func write(_ values: [UInt32], at number: Int) throws(ProtoEncodingError) {
        try storeArray(values, at: number, as: .uint32)
    }

    public mutating func write(_ values: [UInt64], at number: Int) throws(ProtoEncodingError) {
        try storeArray(values, at: number, as: .uint64)
    }

    public mutating func write(_ values: [Float], at number: Int) throws(ProtoEncodingError) {
        try storeArray(values, at: number, as: .float)
    }

    public mutating func write(_ values: [Double], at number: Int) throws(ProtoEncodingError) {
        try storeArray(values, at: number, as: .double)
    }

    public mutating func write(_ values: [Bool], at number: Int) throws(ProtoEncodingError) {
        try storeArray(values.map { Int32($0 ? 1 : 0) }, at: number, as: .bool)
    }

    @inlinable
    public mutating func write<E: ProtoEnum>(_ values: [E], at number: Int) throws(ProtoEncodingError) {
        try writeEnums(values.map(\.rawValue), at: number)
    }

    @usableFromInline
    mutating func writeEnums(_ values: [Int32], at number: Int) throws(ProtoEncodingError) {
        try storeArray(values, at: number, as: .enum)
    }

    public mutating func write(_ values: [String], at number: Int) throws(ProtoEncodingError) {
        let field = try slot(number, .string, repeated: true)
        guard !values.isEmpty else { return }
        let array = arena.allocateArray(of: UnsafeMutablePointer<CChar>?.self, count: values.count)
        for index in values.indices { array[index] = try cString(values[index], field: field) }
        setArray(array, count: values.count, field: field)
    }

    public mutating func write(_ values: [[UInt8]], at number: Int) throws(ProtoEncodingError) {
        let field = try slot(number, .bytes, repeated: true)
        guard !values.isEmpty else { return }
        let array = arena.allocateArray(of: ProtobufCBinaryData.self, count: values.count)
        for index in values.indices { array[index] = binaryData(values[index]) }
        setArray(array, count: values.count, field: field)
    }

    @inlinable
    public mutating func write<M: ProtoMessage>(_ values: [M], at number: Int) throws(ProtoEncodingError) {
        let list = try beginNestedList(at: number, count: values.count, schema: M.schema)
        for index in values.indices {
            var nested = list.element(index)
            do throws(ProtoEncodingError) {
                try values[index].encode(to: &nested)
            } catch {
                throw nestedError(error, at: number)
            }
        }
    }

    /// Room for `count` nested messages in repeated field `number`.
    @usableFromInline
    func beginNestedList(at number: Int, count: Int, schema nestedSchema: MessageSchema) throws(ProtoEncodingError)
        -> NestedMessageList
    {
        let field = try slot(number, .message, repeated: true)
        guard UnsafeRawPointer(nestedSchema.descriptor) == field.nested else {
            throw mismatch(number, "a \(nestedSchema.fullName) message")
        }
        guard count > 0 else { return NestedMessageList(schema: nestedSchema, array: nil, arena: arena) }
        let array = arena.allocateArray(of: UnsafeMutableRawPointer?.self, count: count)
        setArray(array, count: count, field: field)
        return NestedMessageList(schema: nestedSchema, array: array, arena: arena)
    }

    // MARK: Dynamic values

    /// Writes a descriptor-driven value (the probe's JSON, tests); checks it against the field's type.
    mutating func write(_ value: DynamicValue, field number: Int) throws(ProtoEncodingError) {
        guard let field = table.field(number) else { throw mismatch(number, "no such field") }
        if field.isRepeated {
            guard case .list(let items) = value else { throw mismatch(number, "a repeated field needs a list") }
            try writeDynamicList(items, field: field)
            return
        }
        switch (field.storage, value) {
        case (.int32, .int32(let v)): try write(v, at: number)
        case (.int64, .int64(let v)): try write(v, at: number)
        case (.uint32, .uint32(let v)): try write(v, at: number)
        case (.uint64, .uint64(let v)): try write(v, at: number)
        case (.float, .float(let v)): try write(v, at: number)
        case (.double, .double(let v)): try write(v, at: number)
        case (.bool, .bool(let v)): try write(v, at: number)
        case (.enum, .enumValue(let v)): try store(v, at: number, as: .enum)
        case (.string, .string(let v)): try write(v, at: number)
        case (.bytes, .bytes(let v)): try write(v, at: number)
        case (.message, .message(let v)):
            guard v.schema.descriptor == field.nested?.assumingMemoryBound(to: ProtobufCMessageDescriptor.self)
            else { throw mismatch(number, "a \(v.schema.fullName) message") }
            let nested = try encodeNested(dynamic: v, field: number)
            (base + field.offset).storeBytes(of: nested, as: UnsafeMutableRawPointer.self)
            markPresent(field)
        default: throw mismatch(number, "a value of another type")
        }
    }

    private mutating func writeDynamicList(_ items: [DynamicValue], field: CodecField) throws(ProtoEncodingError) {
        let number = Int(field.number)
        func all<T>(_ extract: (DynamicValue) -> T?) throws(ProtoEncodingError) -> [T] {
            var result: [T] = []
            result.reserveCapacity(items.count)
            for item in items {
                guard let value = extract(item) else { throw mismatch(number, "a list item of another type") }
                result.append(value)
            }
            return result
        }
        switch field.storage {
        case .int32: try write(all { if case .int32(let v) = $0 { v } else { nil } }, at: number)
        case .int64: try write(all { if case .int64(let v) = $0 { v } else { nil } }, at: number)
        case .uint32: try write(all { if case .uint32(let v) = $0 { v } else { nil } }, at: number)
        case .uint64: try write(all { if case .uint64(let v) = $0 { v } else { nil } }, at: number)
        case .float: try write(all { if case .float(let v) = $0 { v } else { nil } }, at: number)
        case .double: try write(all { if case .double(let v) = $0 { v } else { nil } }, at: number)
        case .bool: try write(all { if case .bool(let v) = $0 { v } else { nil } }, at: number)
        case .enum:
            try storeArray(all { if case .enumValue(let v) = $0 { v } else { nil } }, at: number, as: .enum)
        case .string: try write(all { if case .string(let v) = $0 { v } else { nil } }, at: number)
        case .bytes: try write(all { if case .bytes(let v) = $0 { v } else { nil } }, at: number)
        case .message:
            let messages = try all { if case .message(let v) = $0 { v } else { nil } }
            guard !messages.isEmpty else { return }
            let array = arena.allocateArray(of: UnsafeMutableRawPointer?.self, count: messages.count)
            for (index, message) in messages.enumerated() {
                guard
                    message.schema.descriptor == field.nested?.assumingMemoryBound(to: ProtobufCMessageDescriptor.self)
                else { throw mismatch(number, "a \(message.schema.fullName) message") }
                array[index] = try encodeNested(dynamic: message, field: number)
            }
            setArray(array, count: messages.count, field: field)
        }
    }

    // MARK: Storage

    @inline(__always)
    private func slot(_ number: Int, _ storage: FieldStorage, repeated: Bool) throws(ProtoEncodingError) -> CodecField {
        guard let field = table.field(number) else { throw mismatch(number, "no such field") }
        guard field.storage == storage, field.isRepeated == repeated else {
            throw mismatch(number, "written as \(repeated ? "repeated " : "")\(storage)")
        }
        return field
    }

    @inline(__always)
    private func store<T: BitwiseCopyable>(_ value: T, at number: Int, as storage: FieldStorage)
        throws(ProtoEncodingError)
    {
        let field = try slot(number, storage, repeated: false)
        (base + field.offset).storeBytes(of: value, as: T.self)
        markPresent(field)
    }

    private func storeArray<T: BitwiseCopyable>(_ values: [T], at number: Int, as storage: FieldStorage)
        throws(ProtoEncodingError)
    {
        let field = try slot(number, storage, repeated: true)
        guard !values.isEmpty else { return }
        let array = arena.allocateArray(of: T.self, count: values.count)
        values.withUnsafeBufferPointer { source in
            array.update(from: source.baseAddress!, count: values.count)
        }
        setArray(array, count: values.count, field: field)
    }

    private func setArray<T>(_ array: UnsafeMutablePointer<T>, count: Int, field: CodecField) {
        (base + field.quantifierOffset).storeBytes(of: count, as: Int.self)
        (base + field.offset).storeBytes(of: UnsafeMutableRawPointer(array), as: UnsafeMutableRawPointer.self)
    }

    /// Oneof members record which member is set in the shared `_case` (the member's field number).
    @inline(__always)
    private func markPresent(_ field: CodecField) {
        if field.isOneof {
            (base + field.quantifierOffset).storeBytes(of: UInt32(bitPattern: field.number), as: UInt32.self)
        }
    }

    private func cString(_ value: String, field: CodecField) throws(ProtoEncodingError) -> UnsafeMutablePointer<CChar> {
        var value = value
        let copy: UnsafeMutablePointer<CChar>? = value.withUTF8 { utf8 in
            if utf8.count > 0, memchr(utf8.baseAddress!, 0, utf8.count) != nil { return nil }
            let copy = arena.allocate(byteCount: utf8.count + 1)
            if utf8.count > 0 { copy.copyMemory(from: utf8.baseAddress!, byteCount: utf8.count) }
            copy.storeBytes(of: 0, toByteOffset: utf8.count, as: UInt8.self)
            return copy.assumingMemoryBound(to: CChar.self)
        }
        guard let copy else {
            throw ProtoEncodingError(
                messageType: schema.fullName,
                fieldPath: name(of: Int(field.number)),
                reason: .stringContainsNUL
            )
        }
        return copy
    }

    private func binaryData(_ value: [UInt8]) -> ProtobufCBinaryData {
        let copy = arena.allocate(byteCount: value.count)
        value.withUnsafeBytes { source in
            if source.count > 0 { copy.copyMemory(from: source.baseAddress!, byteCount: source.count) }
        }
        return ProtobufCBinaryData(len: value.count, data: copy.assumingMemoryBound(to: UInt8.self))
    }

    private func encodeNested(dynamic value: DynamicMessage, field number: Int) throws(ProtoEncodingError)
        -> UnsafeMutableRawPointer
    {
        let nested = Self.newMessage(value.schema, in: arena)
        var encoder = MessageEncoder(schema: value.schema, base: nested, arena: arena)
        do throws(ProtoEncodingError) {
            try value.encodeFields(to: &encoder)
        } catch {
            throw nestedError(error, at: number)
        }
        return nested
    }

    private func name(of number: Int) -> String {
        schema.field(number: number)?.name ?? "#\(number)"
    }

    private func mismatch(_ number: Int, _ detail: String) -> ProtoEncodingError {
        ProtoEncodingError(messageType: schema.fullName, fieldPath: name(of: number), reason: .schemaMismatch(detail))
    }
}

extension ProtoEncodingError {
    /// The same error, reported from the enclosing message (`shop.name` in `Designer`).
    func nested(in schema: MessageSchema, field: String) -> ProtoEncodingError {
        ProtoEncodingError(
            messageType: schema.fullName,
            fieldPath: fieldPath.map { "\(field).\($0)" } ?? field,
            reason: reason
        )
    }
}

/// The elements of a repeated message field being encoded: each is a new struct in the arena.
@usableFromInline
struct NestedMessageList {
    let schema: MessageSchema
    /// nil when the list is empty.
    let array: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
    unowned(unsafe) let arena: Arena

    @usableFromInline
    func element(_ index: Int) -> MessageEncoder {
        let nested = MessageEncoder.newMessage(schema, in: arena)
        array![index] = nested
        return MessageEncoder(schema: schema, base: nested, arena: arena)
    }
}
