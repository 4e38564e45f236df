import CProtobufC

/// The two calls into protobuf-c: pack a struct built by `MessageEncoder`, unpack bytes for `MessageDecoder`.
enum ProtobufCCodec {
    /// Builds the protoc-c struct for a message, then hands it to `body` with its packed size.
    ///
    /// The struct lives in an arena that is released when this returns.
    static func withPackedMessage<R>(
        schema: MessageSchema,
        arenaCapacity: Int = 1024,
        fill: (inout MessageEncoder) throws(ProtoEncodingError) -> Void,
        _ body: (UnsafePointer<ProtobufCMessage>, Int) -> R
    ) throws(ProtoEncodingError) -> R {
        let arena = Arena(capacity: arenaCapacity)
        return try withExtendedLifetime(arena) { () throws(ProtoEncodingError) -> R in
            let message = MessageEncoder.newMessage(schema, in: arena)
            var encoder = MessageEncoder(schema: schema, base: message, arena: arena)
            try fill(&encoder)
            let cMessage = UnsafePointer(message.assumingMemoryBound(to: ProtobufCMessage.self))
            return body(cMessage, protobuf_c_message_get_packed_size(cMessage))
        }
    }

    /// Packs into `output`, which must hold exactly the packed size.
    static func pack(_ message: UnsafePointer<ProtobufCMessage>, into output: UnsafeMutableRawBufferPointer) {
        guard let start = output.baseAddress else { return }
        let written = protobuf_c_message_pack(message, start.assumingMemoryBound(to: UInt8.self))
        precondition(written == output.count, "protobuf-c packed \(written) bytes of \(output.count)")
    }

    /// Validates and unpacks `bytes`, then lets `body` read the result before the arena is released.
    static func unpack<R>(
        schema: MessageSchema,
        bytes: UnsafeRawBufferPointer,
        _ body: (MessageDecoder) throws(ProtoDecodingError) -> R
    ) throws(ProtoDecodingError) -> R {
        try WireValidator.validate(bytes, as: schema)
        // Unpacking copies strings and bytes, and adds the struct and per-field arrays.
        let arena = Arena(capacity: bytes.count + schema.sizeofMessage + 256)
        let unpacked = arena.withAllocator { allocator in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 1) { empty in
                let data = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? UnsafePointer(empty.baseAddress!)
                return protobuf_c_message_unpack(schema.descriptor, allocator, bytes.count, data)
            }
        }
        guard let unpacked else {
            throw ProtoDecodingError(messageType: schema.fullName, reason: .unpackFailed)
        }
        return try withExtendedLifetime(arena) { () throws(ProtoDecodingError) -> R in
            try body(MessageDecoder(schema: schema, base: UnsafeRawPointer(unpacked)))
        }
    }
}
