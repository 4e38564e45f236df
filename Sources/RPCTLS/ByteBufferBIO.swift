internal import COpenSSL
import NIOCore

/// An OpenSSL `BIO` whose two ends are NIO `ByteBuffer`s, so ciphertext is copied exactly once each way.
///
/// Inbound: OpenSSL reads straight out of the buffer NIO read from the socket (a memory BIO would add a
/// copy into the BIO first). Outbound: OpenSSL's records are appended to one reusable buffer that goes
/// to the channel as a single write per flush. The BIO never blocks: with no inbound bytes it reports
/// "retry read", which surfaces as `SSL_ERROR_WANT_READ`.
final class ByteBufferBIO {
    /// The `BIO *`; we own one reference, the `SSL` another (see ``SSLConnection``).
    let pointer: OpaquePointer
    /// Ciphertext received but not yet consumed by OpenSSL.
    private var inbound: ByteBuffer?
    /// Ciphertext produced by OpenSSL and not yet handed to the channel.
    private var outbound: ByteBuffer
    private let allocator: ByteBufferAllocator

    /// Past this capacity the outbound buffer is not kept for reuse (one huge burst shouldn't pin memory).
    private static let maximumRetainedOutboundCapacity = 1 << 20

    init(allocator: ByteBufferAllocator) {
        guard let bio = BIO_new(ByteBufferBIOMethod.shared.pointer) else {
            fatalError("BIO_new failed: out of memory")
        }
        self.pointer = bio
        self.allocator = allocator
        self.outbound = allocator.buffer(capacity: TLSCipherPolicy.maximumRecordPlaintext + 256)
        // Unretained: the SSLConnection owns both us and the SSL, and frees the SSL first.
        BIO_set_data(bio, Unmanaged.passUnretained(self).toOpaque())
        BIO_set_init(bio, 1)
    }

    deinit {
        BIO_set_data(self.pointer, nil)
        BIO_free(self.pointer)
    }

    // MARK: Network side

    /// Queues ciphertext read from the socket for OpenSSL.
    func receive(_ buffer: ByteBuffer) {
        if self.inbound == nil {
            self.inbound = buffer
        } else {
            var buffer = buffer
            self.inbound!.writeBuffer(&buffer)
        }
    }

    /// Hands over everything OpenSSL wrote since the last call, or `nil` if nothing.
    ///
    /// The returned buffer shares storage with ours; once the channel has written it and let go, the
    /// next OpenSSL write reuses the storage instead of allocating.
    func takeOutbound() -> ByteBuffer? {
        guard self.outbound.readableBytes > 0 else { return nil }
        let ciphertext = self.outbound
        self.outbound.moveReaderIndex(to: self.outbound.writerIndex)
        return ciphertext
    }

    var hasOutbound: Bool { self.outbound.readableBytes > 0 }

    // MARK: OpenSSL side

    fileprivate func opensslRead(into destination: UnsafeMutableRawBufferPointer) -> Int? {
        guard var inbound = self.inbound else { return nil }
        let count = min(destination.count, inbound.readableBytes)
        inbound.withUnsafeReadableBytes { source in
            destination.baseAddress!.copyMemory(from: source.baseAddress!, byteCount: count)
        }
        inbound.moveReaderIndex(forwardBy: count)
        // Drop the buffer once consumed, so NIO can recycle its receive buffer.
        self.inbound = inbound.readableBytes > 0 ? inbound : nil
        return count
    }

    fileprivate func opensslWrite(_ source: UnsafeRawBufferPointer) {
        if self.outbound.readableBytes == 0 && self.outbound.readerIndex > 0 {
            // Everything before was handed out: start over at the front (in place if the channel is done with it).
            if self.outbound.capacity > Self.maximumRetainedOutboundCapacity {
                self.outbound = self.allocator.buffer(capacity: max(source.count, 1 << 14))
            } else {
                self.outbound.clear()
            }
        }
        self.outbound.writeBytes(source)
    }
}

/// The process-wide `BIO_METHOD` for ``ByteBufferBIO``: created once, never freed (BIOs may outlive any scope).
private final class ByteBufferBIOMethod: @unchecked Sendable {
    // @unchecked: the BIO_METHOD is immutable once built and OpenSSL only reads it.
    static let shared = ByteBufferBIOMethod()

    let pointer: OpaquePointer

    private init() {
        guard let method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "Yedi ByteBuffer BIO") else {
            fatalError("BIO_meth_new failed: out of memory")
        }
        BIO_meth_set_read_ex(method, bioRead)
        BIO_meth_set_write_ex(method, bioWrite)
        BIO_meth_set_ctrl(method, bioControl)
        self.pointer = method
    }
}

private func swiftBIO(_ bio: OpaquePointer?) -> ByteBufferBIO? {
    guard let bio, let data = BIO_get_data(bio) else { return nil }
    return Unmanaged<ByteBufferBIO>.fromOpaque(data).takeUnretainedValue()
}

private func bioRead(
    _ bio: OpaquePointer?,
    _ buffer: UnsafeMutablePointer<CChar>?,
    _ length: Int,
    _ readBytes: UnsafeMutablePointer<Int>?
) -> CInt {
    yedi_BIO_clear_retry_flags(bio)
    guard let owner = swiftBIO(bio), let buffer, let readBytes else { return 0 }
    guard let count = owner.opensslRead(into: UnsafeMutableRawBufferPointer(start: buffer, count: length)),
        count > 0
    else {
        yedi_BIO_set_retry_read(bio)
        readBytes.pointee = 0
        return 0
    }
    readBytes.pointee = count
    return 1
}

private func bioWrite(
    _ bio: OpaquePointer?,
    _ buffer: UnsafePointer<CChar>?,
    _ length: Int,
    _ writtenBytes: UnsafeMutablePointer<Int>?
) -> CInt {
    yedi_BIO_clear_retry_flags(bio)
    guard let owner = swiftBIO(bio), let buffer, let writtenBytes else { return 0 }
    owner.opensslWrite(UnsafeRawBufferPointer(start: buffer, count: length))
    writtenBytes.pointee = length
    return 1
}

private func bioControl(_ bio: OpaquePointer?, _ command: CInt, _ larg: CLong, _ parg: UnsafeMutableRawPointer?)
    -> CLong
{
    switch command {
    case BIO_CTRL_FLUSH:
        return 1  // every write already landed in the outbound buffer
    case BIO_CTRL_GET_CLOSE:
        return CLong(BIO_get_shutdown(bio))
    case BIO_CTRL_SET_CLOSE:
        BIO_set_shutdown(bio, CInt(larg))
        return 1
    default:
        return 0  // includes EOF (never: EOF is the channel's business), PENDING, kTLS queries
    }
}
