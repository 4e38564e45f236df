import CProtobufC

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads a message's fields out of the protoc-c struct that `protobuf_c_message_unpack` produced.
///
/// Generated `init(from:)` initialisers call `read(at:)` once per field. The struct and everything it
/// points to belong to the decode's arena, so values are copied into Swift before the decode returns.
/// Strings were checked (UTF-8, no NUL) by `WireValidator` before unpacking. A decoder is valid only
/// during the `init(from:)` it is passed to: it points into memory released right after.
public struct MessageDecoder {
    @usableFromInline let schema: MessageSchema
    @usableFromInline let table: CodecTable
    @usableFromInline let base: UnsafeRawPointer

    @usableFromInline
    init(schema: MessageSchema, base: UnsafeRawPointer) {
        self.schema = schema
        self.table = schema.table
        self.base = base
    }

    // MARK: Singular fields

    public func read(at number: Int) throws(ProtoDecodingError) -> Int32 { try load(number, .int32) }

    public func read(at number: Int) throws(ProtoDecodingError) -> Int64 { try load(number, .int64) }

    public func read(at number: Int) throws(ProtoDecodingError) -> UInt32 { try load(number, .uint32) }

    public func read(at number: Int) throws(ProtoDecodingError) -> UInt64 { try load(number, .uint64) }

    public func read(at number: Int) throws(ProtoDecodingError) -> Float { try load(number, .float) }

    public func read(at number: Int) throws(ProtoDecodingError) -> Double { try load(number, .double) }

    public func read(at number: Int) throws(ProtoDecodingError) -> Bool {
        try load(number, .bool) as Int32 != 0
    }

    @inlinable
    public func read<E: ProtoEnum>(at number: Int) throws(ProtoDecodingError) -> E {
        E(rawValue: try readEnum(at: number))
    }

    @usableFromInline
    func readEnum(at number: Int) throws(ProtoDecodingError) -> Int32 {
        try load(number, .enum)
    }

    public func read(at number: Int) throws(ProtoDecodingError) -> String {
        let field = try slot(number, .string, repeated: false)
        return Self.string(base.load(fromByteOffset: field.offset, as: UnsafePointer<CChar>?.self))
    }

    public func read(at number: Int) throws(ProtoDecodingError) -> [UInt8] {
        let field = try slot(number, .bytes, repeated: false)
        return Self.bytes(base.load(fromByteOffset: field.offset, as: ProtobufCBinaryData.self))
    }

    @inlinable
    public func read<M: ProtoMessage>(at number: Int) throws(ProtoDecodingError) -> M? {
        guard let nested = try nestedDecoder(at: number, schema: M.schema) else { return nil }
        do throws(ProtoDecodingError) {
            return try M(from: nested)
        } catch {
            throw nestedError(error, at: number)
        }
    }

    /// The decoder of the message in field `number`, nil when unset.
    @usableFromInline
    func nestedDecoder(at number: Int, schema nestedSchema: MessageSchema) throws(ProtoDecodingError) -> MessageDecoder?
    {
        let field = try slot(number, .message, repeated: false)
        guard UnsafeRawPointer(nestedSchema.descriptor) == field.nested else {
            throw mismatch(number, "read as a \(nestedSchema.fullName) message")
        }
        return base.load(fromByteOffset: field.offset, as: UnsafeRawPointer?.self).map {
            MessageDecoder(schema: nestedSchema, base: $0)
        }
    }

    /// The same error, reported from this message.
    @usableFromInline
    func nestedError(_ error: ProtoDecodingError, at number: Int) -> ProtoDecodingError {
        error.nested(in: schema, field: name(of: number))
    }

    /// The member number set in the oneof that contains field `number`, or 0 when none is.
    public func oneofCase(at number: Int) -> Int {
        guard let field = table.field(number), field.isOneof else { return 0 }
        return Int(base.load(fromByteOffset: field.quantifierOffset, as: UInt32.self))
    }

    /// A message-typed oneof member that `oneofCase(at:)` reported as set.
    @inlinable
    public func oneofMessage<M: ProtoMessage>(at number: Int) throws(ProtoDecodingError) -> M {
        guard let message: M = try read(at: number) else {
            throw oneofWithoutMessage(at: number)
        }
        return message
    }

    // MARK: Declared sizes

    /// Refuses field `number` when it holds more than `maxItems` elements, or a string or bytes value
    /// (each element, when repeated) of more than `maxBytes` bytes. Generated `init(from:)`s call it
    /// before `read(at:)`, with the field's `max_items` and `max_bytes`: it reads the C struct only, so
    /// an oversized value is refused before anything is copied into Swift.
    public func limit(at number: Int, maxItems: Int = .max, maxBytes: Int = .max) throws(ProtoDecodingError) {
        guard let field = table.field(number) else { throw mismatch(number, "no such field") }
        if field.isOneof, oneofCase(at: number) != number { return }
        // The largest value's size, without an array: this runs for every limited field of every request.
        var largest = 0
        if field.isRepeated {
            let count = base.load(fromByteOffset: field.quantifierOffset, as: Int.self)
            guard count <= maxItems else { throw sizeError(number, .tooManyItems(limit: maxItems, actual: count)) }
            guard maxBytes < .max else { return }
            switch field.storage {
            case .string:
                let (pointer, count) = try array(number, .string, of: UnsafePointer<CChar>?.self)
                for index in 0..<count { largest = max(largest, pointer[index].map { strlen($0) } ?? 0) }
            case .bytes:
                let (pointer, count) = try array(number, .bytes, of: ProtobufCBinaryData.self)
                for index in 0..<count { largest = max(largest, pointer[index].len) }
            default: return
            }
        } else {
            switch field.storage {
            case .string:
                largest =
                    base.load(fromByteOffset: field.offset, as: UnsafePointer<CChar>?.self).map { strlen($0) } ?? 0
            case .bytes:
                largest = base.load(fromByteOffset: field.offset, as: ProtobufCBinaryData.self).len
            default: return
            }
        }
        if largest > maxBytes {
            throw sizeError(number, .tooManyBytes(limit: maxBytes, actual: largest))
        }
    }

    private func sizeError(_ number: Int, _ reason: ProtoDecodingError.Reason) -> ProtoDecodingError {
        ProtoDecodingError(messageType: schema.fullName, fieldPath: name(of: number), reason: reason)
    }

    // MARK: Repeated fields

    public func read(at number: Int) throws(ProtoDecodingError) -> [Int32] { try loadArray(number, .int32) }

    public func read(at number: Int) throws(ProtoDecodingError) -> [Int64] { try loadArray(number, .int64) }

    public func read(at number: Int) throws(ProtoDecodingError) -> [UInt32] { try loadArray(number, .uint32) }

    public func read(at number: Int) throws(ProtoDecodingError) -> [UInt64] { try loadArray(number, .uint64) }

    public func read(at number: Int) throws(ProtoDecodingError) -> [Float] { try loadArray(number, .float) }

    public func read(at number: Int) throws(ProtoDecodingError) -> [Double] { try loadArray(number, .double) }

    public func read(at number: Int) throws(ProtoDecodingError) -> [Bool] {
        (try loadArray(number, .bool) as [Int32]).map { $0 != 0 }
    }

    @inlinable
    public func read<E: ProtoEnum>(at number: Int) throws(ProtoDecodingError) -> [E] {
        try readEnums(at: number).map(E.init(rawValue:))
    }

    @usableFromInline
    func readEnums(at number: Int) throws(ProtoDecodingError) -> [Int32] {
        try loadArray(number, .enum)
    }

    public func read(at number: Int) throws(ProtoDecodingError) -> [String] {
        let (pointer, count) = try array(number, .string, of: UnsafePointer<CChar>?.self)
        return (0..<count).map { Self.string(pointer[$0]) }
    }

    public func read(at number: Int) throws(ProtoDecodingError) -> [[UInt8]] {
        let (pointer, count) = try array(number, .bytes, of: ProtobufCBinaryData.self)
        return (0..<count).map { Self.bytes(pointer[$0]) }
    }

    @inlinable
    public func read<M: ProtoMessage>(at number: Int) throws(ProtoDecodingError) -> [M] {
        let list = try nestedList(at: number, schema: M.schema)
        guard list.count > 0 else { return [] }
        var result: [M] = []
        result.reserveCapacity(list.count)
        for index in 0..<list.count {
            do throws(ProtoDecodingError) {
                result.append(try M(from: try list.element(index)))
            } catch {
                throw nestedError(error, at: number)
            }
        }
        return result
    }

    /// The messages of repeated field `number`.
    @usableFromInline
    func nestedList(at number: Int, schema nestedSchema: MessageSchema) throws(ProtoDecodingError) -> NestedMessages {
        guard let field = table.field(number) else { throw mismatch(number, "no such field") }
        guard UnsafeRawPointer(nestedSchema.descriptor) == field.nested else {
            throw mismatch(number, "read as a \(nestedSchema.fullName) message")
        }
        let (pointer, count) = try array(number, .message, of: UnsafeRawPointer?.self)
        return NestedMessages(schema: nestedSchema, pointer: pointer, count: count)
    }

    @usableFromInline
    func oneofWithoutMessage(at number: Int) -> ProtoDecodingError {
        mismatch(number, "the oneof member is set but holds no message")
    }

    // MARK: Dynamic values

    /// The value of a field as a descriptor-driven value; nil when unset (proto3 defaults count as unset).
    func dynamicValue(of field: CodecField) throws(ProtoDecodingError) -> DynamicValue? {
        let number = Int(field.number)
        if field.isOneof, oneofCase(at: number) != number { return nil }
        if field.isRepeated {
            let items: [DynamicValue]
            switch field.storage {
            case .int32: items = (try read(at: number) as [Int32]).map(DynamicValue.int32)
            case .int64: items = (try read(at: number) as [Int64]).map(DynamicValue.int64)
            case .uint32: items = (try read(at: number) as [UInt32]).map(DynamicValue.uint32)
            case .uint64: items = (try read(at: number) as [UInt64]).map(DynamicValue.uint64)
            case .float: items = (try read(at: number) as [Float]).map(DynamicValue.float)
            case .double: items = (try read(at: number) as [Double]).map(DynamicValue.double)
            case .bool: items = (try read(at: number) as [Bool]).map(DynamicValue.bool)
            case .enum: items = (try loadArray(number, .enum) as [Int32]).map(DynamicValue.enumValue)
            case .string: items = (try read(at: number) as [String]).map(DynamicValue.string)
            case .bytes: items = (try read(at: number) as [[UInt8]]).map(DynamicValue.bytes)
            case .message:
                let (pointer, count) = try array(number, .message, of: UnsafeRawPointer?.self)
                var messages: [DynamicValue] = []
                for index in 0..<count {
                    guard let nested = pointer[index] else { throw mismatch(number, "a NULL list item") }
                    messages.append(.message(try decodeNested(dynamic: nested, field: field)))
                }
                items = messages
            }
            return items.isEmpty ? nil : .list(items)
        }
        let value: DynamicValue
        switch field.storage {
        case .int32: value = .int32(try read(at: number))
        case .int64: value = .int64(try read(at: number))
        case .uint32: value = .uint32(try read(at: number))
        case .uint64: value = .uint64(try read(at: number))
        case .float: value = .float(try read(at: number))
        case .double: value = .double(try read(at: number))
        case .bool: value = .bool(try read(at: number))
        case .enum: value = .enumValue(try load(number, .enum))
        case .string: value = .string(try read(at: number))
        case .bytes: value = .bytes(try read(at: number))
        case .message:
            guard let nested = base.load(fromByteOffset: field.offset, as: UnsafeRawPointer?.self) else { return nil }
            value = .message(try decodeNested(dynamic: nested, field: field))
        }
        return field.isOneof || !value.isProto3Default ? value : nil
    }

    // MARK: Storage

    @inline(__always)
    private func slot(_ number: Int, _ storage: FieldStorage, repeated: Bool) throws(ProtoDecodingError) -> CodecField {
        guard let field = table.field(number) else { throw mismatch(number, "no such field") }
        guard field.storage == storage, field.isRepeated == repeated else {
            throw mismatch(number, "read as \(repeated ? "repeated " : "")\(storage)")
        }
        return field
    }

    @inline(__always)
    private func load<T: BitwiseCopyable>(_ number: Int, _ storage: FieldStorage) throws(ProtoDecodingError) -> T {
        let field = try slot(number, storage, repeated: false)
        return base.load(fromByteOffset: field.offset, as: T.self)
    }

    private func array<T>(_ number: Int, _ storage: FieldStorage, of _: T.Type) throws(ProtoDecodingError)
        -> (UnsafePointer<T>, Int)
    {
        let field = try slot(number, storage, repeated: true)
        let count = base.load(fromByteOffset: field.quantifierOffset, as: Int.self)
        guard count > 0, let pointer = base.load(fromByteOffset: field.offset, as: UnsafePointer<T>?.self) else {
            return (UnsafePointer(bitPattern: MemoryLayout<T>.alignment)!, 0)
        }
        return (pointer, count)
    }

    private func loadArray<T: BitwiseCopyable>(_ number: Int, _ storage: FieldStorage) throws(ProtoDecodingError) -> [T]
    {
        let (pointer, count) = try array(number, storage, of: T.self)
        return Array(UnsafeBufferPointer(start: pointer, count: count))
    }

    private func decodeNested(dynamic nested: UnsafeRawPointer, field: CodecField) throws(ProtoDecodingError)
        -> DynamicMessage
    {
        guard let nestedSchema = SchemaRegistry.shared.message(at: field.nested) else {
            throw mismatch(Int(field.number), "unknown message type")
        }
        do throws(ProtoDecodingError) {
            return try DynamicMessage(decoding: MessageDecoder(schema: nestedSchema, base: nested))
        } catch {
            throw error.nested(in: schema, field: name(of: Int(field.number)))
        }
    }

    private static func string(_ pointer: UnsafePointer<CChar>?) -> String {
        guard let pointer else { return "" }
        return String(cString: pointer)
    }

    private static func bytes(_ data: ProtobufCBinaryData) -> [UInt8] {
        guard data.len > 0, let start = data.data else { return [] }
        return Array(UnsafeBufferPointer(start: start, count: data.len))
    }

    private func name(of number: Int) -> String {
        schema.field(number: number)?.name ?? "#\(number)"
    }

    private func mismatch(_ number: Int, _ detail: String) -> ProtoDecodingError {
        ProtoDecodingError(messageType: schema.fullName, fieldPath: name(of: number), reason: .schemaMismatch(detail))
    }
}

extension ProtoDecodingError {
    /// The same error, reported from the enclosing message.
    func nested(in schema: MessageSchema, field: String) -> ProtoDecodingError {
        ProtoDecodingError(
            messageType: schema.fullName,
            fieldPath: fieldPath.map { "\(field).\($0)" } ?? field,
            reason: reason
        )
    }
}

/// The elements of a repeated message field being decoded.
@usableFromInline
struct NestedMessages {
    let schema: MessageSchema
    let pointer: UnsafePointer<UnsafeRawPointer?>
    @usableFromInline let count: Int

    @usableFromInline
    func element(_ index: Int) throws(ProtoDecodingError) -> MessageDecoder {
        guard let nested = pointer[index] else {
            throw ProtoDecodingError(messageType: schema.fullName, reason: .schemaMismatch("a NULL list item"))
        }
        return MessageDecoder(schema: schema, base: nested)
    }
}
