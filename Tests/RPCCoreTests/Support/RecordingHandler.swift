import NIOCore
import RPCCore

/// Everything that reached the top of one connection's pipeline, handed over when it closed.
struct ConnectionOutcome: Sendable {
    var handshake: TLSHandshakeInfo?
    var errors: [any Error] = []
    /// All plaintext received, concatenated.
    var received: ByteBuffer
    /// How many channelReads delivered it.
    var readCount = 0

    var tlsErrors: [TLSError] { self.errors.compactMap { $0 as? TLSError } }
}

struct ConnectionClosedBeforeHandshake: Error {}

/// Sits above the TLS handler (or directly on a raw TCP channel), records what arrives, and
/// optionally echoes every read back (write per read, one flush per read-complete).
final class RecordingHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Promises the test thread waits on; all optional so each test asks only for what it needs.
    struct Observers: Sendable {
        var handshake: EventLoopPromise<TLSHandshakeInfo>?
        var closed: EventLoopPromise<ConnectionOutcome>?
        /// Completed with everything received once at least `count` bytes arrived.
        var received: (count: Int, promise: EventLoopPromise<ByteBuffer>)?
    }

    private let echo: Bool
    private var observers: Observers
    private var outcome = ConnectionOutcome(received: ByteBuffer())

    /// Everything received until now (read on the channel's event loop).
    var receivedSoFar: ByteBuffer { self.outcome.received }

    init(echo: Bool, observers: Observers) {
        self.echo = echo
        self.observers = observers
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted(let info) = event as? TLSEvent {
            self.outcome.handshake = info
            self.observers.handshake?.succeed(info)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.outcome.errors.append(error)
        self.observers.handshake?.fail(error)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
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

    func channelReadComplete(context: ChannelHandlerContext) {
        if self.echo {
            context.flush()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.observers.handshake?.fail(ConnectionClosedBeforeHandshake())
        self.observers.received?.promise.fail(ChannelError.eof)
        self.observers.closed?.succeed(self.outcome)
        context.fireChannelInactive()
    }
}
