import NIOCore
import NIOPosix
import RPCTLS
import RPCTestSupport

@testable import RPCCore

/// A TLS server whose connections are a frame decoder and a handler of the test's, with no RPC layer:
/// a peer for clients tested against one that misbehaves, or that records what it is sent.
final class FrameServer: Sendable {
    let channel: any Channel

    var port: Int { channel.localAddress!.port! }

    private init(channel: any Channel) {
        self.channel = channel
    }

    /// `handler` makes each connection's handler; it gets every frame's bytes (`FrameDecoder`).
    static func start(
        pki: TestPKI, group: any EventLoopGroup, handler: @escaping @Sendable () -> any ChannelHandler
    ) throws -> FrameServer {
        let context = try TLSContext(configuration: pki.serverConfiguration())
        let channel = try ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers(
                        try TLSHandler(serverContext: context),
                        ByteToMessageHandler(FrameDecoder(maxFrameBytes: 1 << 20)),
                        handler()
                    )
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .wait(timeout: .seconds(10))
        return FrameServer(channel: channel)
    }
}
