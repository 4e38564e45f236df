import NIOCore
import ServiceLifecycle
import YediSync

/// An HTTP server's open connections (`HTTPServer`'s; BookingService's payment webhook, which reads POST
/// bodies with a pipeline of its own), so that shutdown can let them finish or cut them off. It admits at
/// most `limit` at once, and none once shutdown has begun.
public final class HTTPConnections: Sendable {
    private struct State {
        var open: [ObjectIdentifier: any Channel] = [:]
        var isShuttingDown = false
    }

    private let state = TSanVisibleMutex(State())
    private let limit: Int

    public init(limit: Int) {
        self.limit = limit
    }

    /// Keeps `channel` until it closes. Returns false once shutdown has begun or `limit` connections are
    /// open: the caller drops the connection.
    public func admit(_ channel: any Channel) -> Bool {
        let admitted = state.withLock { state in
            guard !state.isShuttingDown, state.open.count < limit else { return false }
            state.open[ObjectIdentifier(channel)] = channel
            return true
        }
        if admitted {
            channel.closeFuture.whenComplete { _ in
                self.state.withLock { state in
                    _ = state.open.removeValue(forKey: ObjectIdentifier(channel))
                }
            }
        }
        return admitted
    }

    /// Asks every open connection to finish the request in progress, if any, and close; returns once all are
    /// closed. A client that never completes its request holds this up until ``closeAll()``.
    public func drain() async {
        let open = beginShutdown()
        for channel in open {
            channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        }
        for channel in open {
            try? await channel.closeFuture.get()
        }
    }

    /// Closes every open connection now, mid-request or not.
    public func closeAll() {
        for channel in beginShutdown() {
            channel.close(promise: nil)
        }
    }

    /// Serves `listener` until graceful shutdown or cancellation closes it, then lets the connections finish
    /// the request in hand, unless cancellation says to cut them off: the end of every such server's `run()`.
    public func serve(_ listener: any Channel) async {
        await withTaskCancellationOrGracefulShutdownHandler {
            try? await listener.closeFuture.get()
        } onCancelOrGracefulShutdown: {
            listener.close(promise: nil)
        }
        await withTaskCancellationHandler {
            await drain()
        } onCancel: {
            closeAll()
        }
    }

    private func beginShutdown() -> [any Channel] {
        state.withLock { state in
            state.isShuttingDown = true
            return Array(state.open.values)
        }
    }
}
