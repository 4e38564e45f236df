import NIOCore
import NIOPosix
import RPCTLS
import Synchronization

/// The in-process TLS echo server the soak connects to, counting its open connections and failures.
final class SoakServer: Sendable {
    private let channel: any Channel
    private let counters: Counters

    var port: Int { self.channel.localAddress!.port! }

    init(group: any EventLoopGroup, context: TLSContext) throws {
        let counters = Counters()
        self.channel = try ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 256)
            .childChannelInitializer { channel in
                counters.opened()
                channel.closeFuture.whenComplete { _ in counters.closed() }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(TLSHandler(serverContext: context))
                    try channel.pipeline.syncOperations.addHandler(EchoHandler(counters: counters))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .wait()
        self.counters = counters
    }

    var open: Int { self.counters.open.load(ordering: .relaxed) }
    var failureCount: Int { self.counters.failures.load(ordering: .relaxed) }

    func close() throws {
        try self.channel.close().wait()
    }

    /// Shared with the pipelines (which outlive nothing but need a Sendable handle).
    final class Counters: Sendable {
        let open = Atomic<Int>(0)
        let failures = Atomic<Int>(0)
        func opened() { self.open.add(1, ordering: .relaxed) }
        func closed() { self.open.subtract(1, ordering: .relaxed) }
        func failed() { self.failures.add(1, ordering: .relaxed) }
    }
}

/// Echoes each read back, one flush per read burst; counts TLS failures.
private final class EchoHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let counters: SoakServer.Counters

    init(counters: SoakServer.Counters) {
        self.counters = counters
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.write(data, promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.counters.failed()
        context.close(promise: nil)
    }
}
