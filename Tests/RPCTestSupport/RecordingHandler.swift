import NIOCore
import RPCTLS

/// Everything that reached the top of one connection's pipeline, handed over when it closed.
public struct ConnectionOutcome: Sendable {
    public var handshake: TLSHandshakeInfo?
    public var errors: [any Error] = []
    /// All plaintext received, concatenated.
    public var received: ByteBuffer
    /// How many channelReads delivered it.
    public var readCount = 0

    public var tlsErrors: [TLSError] { self.errors.compactMap { $0 as? TLSError } }
}

public struct ConnectionClosedBeforeHandshake: Error {}

/// Sits above the TLS handler (or directly on a raw TCP channel), records what arrives, and
/// optionally echoes every read back (write per read, one flush per read-complete).
public final class RecordingHandler: ChannelInboundHandler {
    public typealias InboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    /// Promises the test thread waits on; all optional so each test asks only for what it needs.
    public struct Observers: Sendable {
        public var handshake: EventLoopPromise<TLSHandshakeInfo>?
        public var closed: EventLoopPromise<ConnectionOutcome>?
        /// Completed with everything received once at least `count` bytes arrived.
        public var received: (count: Int, promise: EventLoopPromise<ByteBuffer>)?

        public init(
            handshake: EventLoopPromise<TLSHandshakeInfo>? = nil,
            closed: EventLoopPromise<ConnectionOutcome>? = nil,
            received: (count: Int, promise: EventLoopPromise<ByteBuffer>)? = nil
        ) {
            self.handshake = handshake
            self.closed = closed
            self.received = received
        }
    }

    private let echo: Bool
    private var observers: Observers
    private var outcome = ConnectionOutcome(received: ByteBuffer())

    /// Everything received until now (read on the channel's event loop).
    public var receivedSoFar: ByteBuffer { self.outcome.received }

    public init(echo: Bool, observers: Observers) {
        self.echo = echo
        self.observers = observers
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted(let info) = event as? TLSEvent {
            self.outcome.handshake = info
            self.observers.handshake?.succeed(info)
        }
        context.fireUserInboundEventTriggered(event)
    }

    public func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.outcome.errors.append(error)
        self.observers.handshake?.fail(error)
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = self.unwrapInboundIn(data)
        self.outcome.readCount += 1
        if self.echo {
            context.write(self.wrapOutboundOut(buffer), promise: nil)
        }
        self.outcome.received.writeBuffer(&buffer)
        if let (count, promise) = self.observers.received, self.outcome.received.readableBytes >= count {
            promise.succeed(self.outcome.received)
            self.observers.received = nil
        }
    }

    public func channelReadComplete(context: ChannelHandlerContext) {
        if self.echo {
            context.flush()
        }
    }

    public func channelInactive(context: ChannelHandlerContext) {
        self.observers.handshake?.fail(ConnectionClosedBeforeHandshake())
        self.observers.received?.promise.fail(ChannelError.eof)
        self.observers.closed?.succeed(self.outcome)
        context.fireChannelInactive()
    }
}
