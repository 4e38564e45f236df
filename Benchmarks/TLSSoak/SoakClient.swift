import NIOCore
import NIOPosix
import RPCTLS

/// One soak cycle: connect, handshake, echo a small message, close (with close_notify), and wait
/// until the client channel is fully closed.
enum SoakClient {
    static func cycle(group: any EventLoopGroup, port: Int, context: TLSContext, payload: ByteBuffer) throws {
        let loop = group.next()
        let done = loop.makePromise(of: Void.self)
        let channel = try ClientBootstrap(group: loop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        TLSHandler(clientContext: context, serverName: "localhost")
                    )
                    try channel.pipeline.syncOperations.addHandler(CycleHandler(payload: payload, done: done))
                }
            }
            .connect(host: "127.0.0.1", port: port)
            .wait()
        try done.futureResult.wait()
        try channel.closeFuture.wait()
    }
}

struct SoakCycleFailed: Error, CustomStringConvertible {
    var description: String
}

/// Sends the payload once the handshake completes and closes once it came back.
private final class CycleHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let payload: ByteBuffer
    private let done: EventLoopPromise<Void>
    private var received = 0

    init(payload: ByteBuffer, done: EventLoopPromise<Void>) {
        self.payload = payload
        self.done = done
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted = event as? TLSEvent {
            context.writeAndFlush(self.wrapOutboundOut(self.payload), promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.received += self.unwrapInboundIn(data).readableBytes
        if self.received >= self.payload.readableBytes {
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.done.fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if self.received >= self.payload.readableBytes {
            self.done.succeed(())
        } else {
            self.done.fail(SoakCycleFailed(description: "closed after \(self.received) bytes"))
        }
    }
}
