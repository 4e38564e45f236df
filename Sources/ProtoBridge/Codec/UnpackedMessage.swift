import CProtobufC
import NIOCore

/// Decoding, step by step: validate the wire bytes (`WireValidator`), unpack them with protobuf-c into
/// a pooled arena, and let `decoder` read the fields out.
///
/// Not generic, for the same reason as `MessageBuilder`. `release()` returns the arena, after which
/// `decoder` must not be used.
@usableFromInline
struct UnpackedMessage {
    @usableFromInline let decoder: MessageDecoder
    private let arena: Arena

    @usableFromInline
    init(schema: MessageSchema, bytes: [UInt8]) throws(ProtoDecodingError) {
        var result: Result<UnpackedMessage, ProtoDecodingError>!
        bytes.withUnsafeBytes { raw in
            do throws(ProtoDecodingError) {
                result = .success(try UnpackedMessage(schema: schema, raw: raw))
            } catch {
                result = .failure(error)
            }
        }
        self = try result.get()
    }

    @usableFromInline
    init(schema: MessageSchema, buffer: ByteBuffer) throws(ProtoDecodingError) {
        var result: Result<UnpackedMessage, ProtoDecodingError>!
        buffer.withUnsafeReadableBytes { raw in
            do throws(ProtoDecodingError) {
                result = .success(try UnpackedMessage(schema: schema, raw: raw))
            } catch {
                result = .failure(error)
            }
        }
        self = try result.get()
    }

    init(schema: MessageSchema, raw bytes: UnsafeRawBufferPointer) throws(ProtoDecodingError) {
        try WireValidator.validate(bytes, as: schema)
        let arena = ArenaPool.acquire()
        let unpacked = arena.withAllocator { allocator in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 1) { empty in
                // protobuf-c reads nothing for an empty message but wants a non-NULL pointer.
                let data = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? UnsafePointer(empty.baseAddress!)
                return protobuf_c_message_unpack(schema.descriptor, allocator, bytes.count, data)
            }
        }
        guard let unpacked else {
            ArenaPool.release(arena)
            throw ProtoDecodingError(messageType: schema.fullName, reason: .unpackFailed)
        }
        self.arena = arena
        decoder = MessageDecoder(schema: schema, base: UnsafeRawPointer(unpacked))
    }

    @usableFromInline
    func release() {
        ArenaPool.release(arena)
    }
}
