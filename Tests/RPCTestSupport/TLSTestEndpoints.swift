import NIOCore
import NIOPosix
import RPCTLS

/// The outcomes of a test server's accepted connections, by accept order.
public final class ConnectionLog: Sendable {
    private let eventLoop: any EventLoop
    private let state = LockedValue<(accepted: Int, promises: [EventLoopPromise<ConnectionOutcome>])>((0, []))

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// What connection number `index` (0-based) saw, once it closed.
    public func outcome(_ index: Int) -> EventLoopFuture<ConnectionOutcome> {
        self.promise(index).futureResult
    }

    fileprivate func nextPromise() -> EventLoopPromise<ConnectionOutcome> {
        let index = self.state.withLock { state in
            defer { state.accepted += 1 }
            return state.accepted
        }
        return self.promise(index)
    }

    private func promise(_ index: Int) -> EventLoopPromise<ConnectionOutcome> {
        self.state.withLock { state in
            while state.promises.count <= index {
                state.promises.append(self.eventLoop.makePromise())
            }
            return state.promises[index]
        }
    }
}

/// A loopback TLS echo server on an ephemeral port.
public struct TLSTestServer {
    public let channel: any Channel
    public let connections: ConnectionLog

    public var port: Int { self.channel.localAddress!.port! }

    /// `context: nil` serves plain TCP (for the raw-socket tests' counterparts).
    public static func start(group: any EventLoopGroup, context: TLSContext, echo: Bool = true) throws -> TLSTestServer
    {
        // Accepted connections live on the log's own loop, so each outcome promise is completed
        // on its loop even while the group shuts down with a connection still closing (a promise
        // of another, already stopped loop could not be completed and would trap as leaked).
        let loop = group.next()
        let log = ConnectionLog(eventLoop: loop)
        let channel = try ServerBootstrap(group: group, childGroup: loop)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let recorder = RecordingHandler(echo: echo, observers: .init(closed: log.nextPromise()))
                    try channel.pipeline.syncOperations.addHandler(TLSHandler(serverContext: context))
                    try channel.pipeline.syncOperations.addHandler(recorder)
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .wait(timeout: .seconds(10), "server bind")
        return TLSTestServer(channel: channel, connections: log)
    }

    public func close() {
        try? self.channel.close().wait(timeout: .seconds(10), "server close")
    }
}

/// One loopback client connection: TLS when given a context, raw TCP otherwise.
public struct TestClient: Sendable {
    public let channel: any Channel
    public let handshake: EventLoopFuture<TLSHandshakeInfo>
    public let closed: EventLoopFuture<ConnectionOutcome>
    /// Set when `expecting` > 0: everything received once that many bytes arrived.
    public let received: EventLoopFuture<ByteBuffer>?

    public static func connect(
        group: any EventLoopGroup,
        port: Int,
        context: TLSContext?,
        serverName: String = "localhost",
        expecting byteCount: Int = 0
    ) throws -> TestClient {
        let loop = group.next()
        let observers = RecordingHandler.Observers(
            handshake: loop.makePromise(),
            closed: loop.makePromise(),
            received: byteCount > 0 ? (byteCount, loop.makePromise()) : nil
        )
        let channel = try ClientBootstrap(group: loop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let context {
                        try channel.pipeline.syncOperations.addHandler(
                            TLSHandler(clientContext: context, serverName: serverName)
                        )
                    }
                    try channel.pipeline.syncOperations.addHandler(RecordingHandler(echo: false, observers: observers))
                }
            }
            .connect(host: "127.0.0.1", port: port)
            .wait(timeout: .seconds(10), "connect")
        return TestClient(
            channel: channel,
            handshake: observers.handshake!.futureResult,
            closed: observers.closed!.futureResult,
            received: observers.received?.promise.futureResult
        )
    }

    /// Closes (TLS: close_notify first) and returns what the connection saw.
    public func close() throws -> ConnectionOutcome {
        self.channel.close(promise: nil)
        return try self.closed.wait(timeout: .seconds(10), "client close")
    }
}
