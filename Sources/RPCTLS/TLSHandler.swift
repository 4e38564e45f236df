import NIOCore

/// TLS for one connection: ciphertext below this handler, plaintext above. One class for both roles;
/// the role comes from the ``TLSContext``.
///
/// Shaped for a request/response hot path:
/// - **Reads are coalesced**: ciphertext is decrypted as it arrives, but the plaintext goes up as *one*
///   `channelRead` (then `channelReadComplete`) per read burst, when the channel's read completes.
/// - **Writes wait for flush**: plaintext is queued, and on `flush` encrypted together (small writes
///   coalesced into full records, see ``PendingWrites``) and sent as one channel write.
/// - Writes issued during the handshake are kept and sent right behind its last flight.
///
/// Closing sends `close_notify` and waits (bounded by ``TLSConfiguration/closeNotifyTimeout``) for the
/// peer's; a peer's `close_notify` is answered and the channel closed. A connection that ends without
/// one fires ``TLSError/Kind-swift.enum/uncleanShutdown`` through `errorCaught`: only the layer above
/// knows whether that truncated anything. Every failure closes the channel after firing a ``TLSError``.
///
/// Not thread-safe: like every handler, use it on its channel's event loop only.
public final class TLSHandler: ChannelDuplexHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = ByteBuffer
    public typealias OutboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    private enum State {
        /// In the pipeline, but the channel is not active yet.
        case idle
        case handshaking
        case active
        /// Our `close_notify` is out; waiting for the peer's.
        case closing
        case closed
    }

    private let connection: SSLConnection
    private let handshakeTimeout: TimeAmount
    private let closeNotifyTimeout: TimeAmount
    private var state = State.idle
    /// Decrypted bytes not yet passed up; reused across reads when the next handler lets go of it.
    private var plaintext: ByteBuffer
    private var pendingWrites: PendingWrites
    /// The handshake deadline while handshaking; the `close_notify` wait while closing.
    private var timer: Scheduled<Void>?
    private var closePromise: EventLoopPromise<Void>?
    /// Set once a half-closed input was reported, so channelInactive does not report it again.
    private var reportedUncleanShutdown = false

    /// What the handshake negotiated; `nil` until it completes.
    public private(set) var handshakeInfo: TLSHandshakeInfo?

    /// The peer's verified certificate identity; `nil` before the handshake or if it sent no certificate.
    public var peerIdentity: PeerIdentity? { self.handshakeInfo?.peerIdentity }

    /// A server-side handler for one accepted connection.
    public convenience init(serverContext: TLSContext) throws(TLSError) {
        guard serverContext.role == .server else {
            throw TLSError(kind: .configuration, reason: "TLSHandler(serverContext:) needs a server context")
        }
        try self.init(context: serverContext, serverName: nil)
    }

    /// A client-side handler; `serverName` (a DNS name or IP literal) must match the server certificate.
    public convenience init(clientContext: TLSContext, serverName: String) throws(TLSError) {
        guard clientContext.role == .client else {
            throw TLSError(kind: .configuration, reason: "TLSHandler(clientContext:) needs a client context")
        }
        try self.init(context: clientContext, serverName: serverName)
    }

    private init(context: TLSContext, serverName: String?) throws(TLSError) {
        self.connection = try SSLConnection(context: context, serverName: serverName)
        self.handshakeTimeout = context.configuration.handshakeTimeout
        self.closeNotifyTimeout = context.configuration.closeNotifyTimeout
        let allocator = ByteBufferAllocator()
        self.plaintext = allocator.buffer(capacity: TLSCipherPolicy.maximumRecordPlaintext)
        self.pendingWrites = PendingWrites(allocator: allocator)
    }

    // MARK: Lifecycle

    public func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive {
            self.startHandshake(context: context)
        }
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        self.cancelTimer()
        self.pendingWrites.failAll(ChannelError.ioOnClosedChannel)
    }

    public func channelActive(context: ChannelHandlerContext) {
        context.fireChannelActive()
        self.startHandshake(context: context)
    }

    public func channelInactive(context: ChannelHandlerContext) {
        self.cancelTimer()
        let previous = self.state
        self.state = .closed
        switch previous {
        case .handshaking:
            context.fireErrorCaught(
                TLSError(kind: .handshakeFailed, reason: "connection closed by the peer during the TLS handshake")
            )
        case .active:
            self.deliverPlaintext(context: context)
            if !self.reportedUncleanShutdown {
                context.fireErrorCaught(Self.uncleanShutdown)
            }
        case .closing:
            // The peer hung up instead of answering our close_notify: the close we were asked for is done.
            break
        case .idle, .closed:
            break
        }
        self.pendingWrites.failAll(ChannelError.ioOnClosedChannel)
        if let promise = self.closePromise {
            self.closePromise = nil
            promise.succeed(())
        }
        context.fireChannelInactive()
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            // Half-closure is enabled on this channel and the peer's FIN arrived.
            switch self.state {
            case .handshaking:
                self.fail(
                    context: context,
                    TLSError(kind: .handshakeFailed, reason: "connection closed by the peer during the TLS handshake")
                )
            case .active where !self.reportedUncleanShutdown:
                self.reportedUncleanShutdown = true
                self.deliverPlaintext(context: context)
                context.fireErrorCaught(Self.uncleanShutdown)
            case .closing:
                self.finishClose(context: context)
            case .idle, .active, .closed:
                break
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    private static let uncleanShutdown = TLSError(
        kind: .uncleanShutdown,
        reason: "connection closed without a TLS close_notify (possible truncation)"
    )

    // MARK: Handshake

    private func startHandshake(context: ChannelHandlerContext) {
        guard case .idle = self.state else { return }
        self.state = .handshaking
        self.timer = context.eventLoop.assumeIsolated().scheduleTask(in: self.handshakeTimeout) {
            self.handshakeTimedOut(context: context)
        }
        self.handshakeStep(context: context)
    }

    private func handshakeStep(context: ChannelHandlerContext) {
        switch self.connection.handshake() {
        case .wantMore:
            self.sendCiphertext(context: context, promise: nil)
        case .complete:
            self.handshakeCompleted(context: context)
        case .failed(let error):
            self.fail(context: context, error)
        }
    }

    private func handshakeCompleted(context: ChannelHandlerContext) {
        self.cancelTimer()
        self.state = .active
        let info = self.connection.handshakeInfo
        self.handshakeInfo = info
        context.fireUserInboundEventTriggered(TLSEvent.handshakeCompleted(info))
        guard case .active = self.state else { return }  // the event's observer may have closed us
        // Our last handshake flight (if any) and the writes held back during the handshake, in one write.
        self.encryptAndSend(context: context)
    }

    private func handshakeTimedOut(context: ChannelHandlerContext) {
        guard case .handshaking = self.state else { return }
        self.timer = nil
        let milliseconds = self.handshakeTimeout.nanoseconds / 1_000_000
        self.fail(
            context: context,
            TLSError(kind: .handshakeTimeout, reason: "TLS handshake did not complete within \(milliseconds) ms")
        )
    }

    // MARK: Reading

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.state {
        case .handshaking:
            self.connection.bio.receive(self.unwrapInboundIn(data))
            self.handshakeStep(context: context)
            if case .active = self.state {
                self.decrypt(context: context)  // application data that came with the final flight
            }
        case .active, .closing:
            self.connection.bio.receive(self.unwrapInboundIn(data))
            self.decrypt(context: context)
        case .idle, .closed:
            break  // after a failure or close: nothing left to interpret it
        }
    }

    public func channelReadComplete(context: ChannelHandlerContext) {
        self.deliverPlaintext(context: context)
    }

    /// Decrypts every complete record received so far into `plaintext` (delivered at read-complete).
    private func decrypt(context: ChannelHandlerContext) {
        readLoop: while true {
            switch self.connection.read(into: &self.plaintext) {
            case .readSome:
                continue
            case .wantMore:
                break readLoop
            case .closeNotify:
                self.peerSentCloseNotify(context: context)
                return
            case .failed(let error):
                self.fail(context: context, error)
                return
            }
        }
        // Reading may have produced records to send (a TLS 1.3 KeyUpdate answer) or unblocked writes.
        if self.pendingWrites.hasFlushedWrites || self.connection.bio.hasOutbound {
            self.encryptAndSend(context: context)
        }
    }

    /// Passes the plaintext gathered since the last delivery up as one read.
    private func deliverPlaintext(context: ChannelHandlerContext) {
        guard self.plaintext.readableBytes > 0 else {
            self.readAgainIfAutoReadIsOff(context: context)
            return
        }
        let delivered = self.plaintext
        // Rewind rather than clear(): if the next handler drops `delivered`, our next read reuses the storage.
        self.plaintext.moveReaderIndex(to: 0)
        self.plaintext.moveWriterIndex(to: 0)
        context.fireChannelRead(self.wrapInboundOut(delivered))
        context.fireChannelReadComplete()
    }

    /// A read that yielded only handshake or partial records produced nothing to deliver; without
    /// auto-read, whoever asked for that read would wait forever unless we ask for another.
    private func readAgainIfAutoReadIsOff(context: ChannelHandlerContext) {
        switch self.state {
        case .handshaking, .active, .closing:
            if let autoRead = try? context.channel.syncOptions?.getOption(ChannelOptions.autoRead), !autoRead {
                context.read()
            }
        case .idle, .closed:
            break
        }
    }

    private func peerSentCloseNotify(context: ChannelHandlerContext) {
        switch self.state {
        case .closing:
            self.finishClose(context: context)  // the answer to ours
        case .active:
            // The peer is done: pass up what it sent before, answer with our close_notify, close.
            self.deliverPlaintext(context: context)
            guard case .active = self.state else { return }
            self.pendingWrites.failUnflushed(ChannelError.ioOnClosedChannel)
            if self.pendingWrites.hasFlushedWrites {
                _ = self.pendingWrites.encryptFlushed(with: self.connection)
            }
            _ = self.connection.shutdown()
            self.sendCiphertext(
                context: context, promise: self.pendingWrites.takeEncryptedPromise(on: context.eventLoop))
            self.state = .closed
            self.pendingWrites.failAll(ChannelError.ioOnClosedChannel)
            context.close(promise: nil)
        case .idle, .handshaking, .closed:
            break
        }
    }

    // MARK: Writing

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch self.state {
        case .idle, .handshaking, .active:
            self.pendingWrites.append(self.unwrapOutboundIn(data), promise: promise)
        case .closing, .closed:
            promise?.fail(ChannelError.ioOnClosedChannel)
        }
    }

    public func flush(context: ChannelHandlerContext) {
        self.pendingWrites.markFlushed()
        if case .active = self.state {
            self.encryptAndSend(context: context)
        }
    }

    /// Encrypts all flushed writes and sends the resulting ciphertext (plus any handshake or alert records
    /// already waiting) as one channel write.
    private func encryptAndSend(context: ChannelHandlerContext) {
        if self.pendingWrites.hasFlushedWrites {
            if case .failed(let error) = self.pendingWrites.encryptFlushed(with: self.connection) {
                self.fail(context: context, error)
                return
            }
        }
        self.sendCiphertext(context: context, promise: self.pendingWrites.takeEncryptedPromise(on: context.eventLoop))
    }

    private func sendCiphertext(context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) {
        if let ciphertext = self.connection.bio.takeOutbound() {
            context.writeAndFlush(self.wrapOutboundOut(ciphertext), promise: promise)
        } else if let promise {
            // Only empty writes were flushed: still complete them in order behind earlier channel writes.
            context.writeAndFlush(self.wrapOutboundOut(context.channel.allocator.buffer(capacity: 0)), promise: promise)
        }
    }

    // MARK: Closing

    public func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        guard mode == .all else {
            // TLS half-closure is not supported (nothing in Yedi needs it).
            promise?.fail(ChannelError.operationUnsupported)
            return
        }
        switch self.state {
        case .idle, .handshaking:
            // OpenSSL cannot send close_notify mid-handshake; just drop the connection.
            self.cancelTimer()
            self.state = .closed
            self.pendingWrites.failAll(ChannelError.ioOnClosedChannel)
            context.close(mode: mode, promise: promise)
        case .active:
            self.startClosing(context: context, promise: promise)
        case .closing:
            if let promise {
                if let closePromise = self.closePromise {
                    closePromise.futureResult.cascade(to: promise)
                } else {
                    self.closePromise = promise
                }
            }
        case .closed:
            context.close(mode: mode, promise: promise)
        }
    }

    /// Sends what was flushed, then our close_notify, and waits (bounded) for the peer's.
    private func startClosing(context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) {
        self.state = .closing
        self.closePromise = promise
        self.pendingWrites.failUnflushed(ChannelError.ioOnClosedChannel)
        if self.pendingWrites.hasFlushedWrites {
            _ = self.pendingWrites.encryptFlushed(with: self.connection)
        }
        let outcome = self.connection.shutdown()
        self.sendCiphertext(context: context, promise: self.pendingWrites.takeEncryptedPromise(on: context.eventLoop))
        switch outcome {
        case .wantMore:
            self.timer = context.eventLoop.assumeIsolated().scheduleTask(in: self.closeNotifyTimeout) {
                self.timer = nil
                self.finishClose(context: context)
            }
        case .complete, .failed:
            self.finishClose(context: context)
        }
    }

    private func finishClose(context: ChannelHandlerContext) {
        guard case .closing = self.state else { return }
        self.cancelTimer()
        self.state = .closed
        self.pendingWrites.failAll(ChannelError.ioOnClosedChannel)
        let promise = self.closePromise
        self.closePromise = nil
        context.close(promise: promise)
    }

    /// Reports `error`, sends any alert OpenSSL queued for the peer, and closes.
    private func fail(context: ChannelHandlerContext, _ error: TLSError) {
        self.cancelTimer()
        self.sendCiphertext(context: context, promise: nil)
        self.state = .closed
        self.pendingWrites.failAll(error)
        context.fireErrorCaught(error)
        let promise = self.closePromise
        self.closePromise = nil
        context.close(promise: promise)
    }

    private func cancelTimer() {
        self.timer?.cancel()
        self.timer = nil
    }
}

@available(*, unavailable)
extension TLSHandler: Sendable {}
