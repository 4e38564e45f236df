import CProtobufC
import NIOCore

/// Encoding, step by step: a protoc-c struct for a schema in a pooled arena, filled through `encoder`,
/// then packed by `protobuf_c_message_pack`.
///
/// Not generic, so generic callers (`ProtoMessage.serializedBytes()`, inlined into the caller's
/// module) specialise around it without runtime type lookups. `release()` returns the arena.
@usableFromInline
struct MessageBuilder {
    @usableFromInline var encoder: MessageEncoder
    private let arena: Arena

    @usableFromInline
    init(schema: MessageSchema) {
        arena = ArenaPool.acquire()
        encoder = MessageEncoder(schema: schema, base: MessageEncoder.newMessage(schema, in: arena), arena: arena)
    }

    private var message: UnsafePointer<ProtobufCMessage> {
        UnsafePointer(encoder.base.assumingMemoryBound(to: ProtobufCMessage.self))
    }

    @usableFromInline
    var packedSize: Int { protobuf_c_message_get_packed_size(message) }

    @usableFromInline
    func bytes() -> [UInt8] {
        let size = packedSize
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            pack(into: UnsafeMutableRawBufferPointer(buffer))
            initialized = size
        }
    }

    /// Appends the packed message to `buffer`; returns its size.
    @usableFromInline
    func write(into buffer: inout ByteBuffer) -> Int {
        write(into: &buffer, size: packedSize)
    }

    /// Appends the packed message, whose `packedSize` the caller read already, to `buffer`.
    @usableFromInline
    @discardableResult
    func write(into buffer: inout ByteBuffer, size: Int) -> Int {
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { output in
            pack(into: UnsafeMutableRawBufferPointer(rebasing: output[..<size]))
            return size
        }
    }

    /// Packs into `output`, which holds exactly `packedSize` bytes.
    private func pack(into output: UnsafeMutableRawBufferPointer) {
        guard let start = output.baseAddress else { return }
        let written = protobuf_c_message_pack(message, start.assumingMemoryBound(to: UInt8.self))
        precondition(written == output.count, "protobuf-c packed \(written) bytes of \(output.count)")
    }

    @usableFromInline
    func release() {
        ArenaPool.release(arena)
    }
}
