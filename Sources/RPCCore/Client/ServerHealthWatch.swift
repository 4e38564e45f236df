import NIOCore
import Synchronization
import YediSync

/// What one connection's server says of its health (`Health/Watch` for the whole server, made on that
/// connection): a replica whose database is gone, or that is draining, says NOT_SERVING before any call
/// fails there, and the pool sends new calls to the others meanwhile.
///
/// Only NOT_SERVING counts against a server: SERVING, an unknown status, or a watch that failed (an older
/// server without health, a refused call) leave it in the rotation, where ejection still judges its
/// answers.
final class ServerHealthWatch: Sendable {
    private struct Watch {
        /// Bumped by each connection's watch, so that a previous connection's ending watch changes nothing.
        var generation = 0
        var call: (OutgoingCall, NIOLoopBound<ClientConnectionHandler>)?
    }

    /// Read by every call's pick (a relaxed load); written under `watch`'s lock.
    private let notServing = Atomic<Bool>(false)
    private let watch = TSanVisibleMutex(Watch())

    /// Whether the server last said NOT_SERVING on the current connection.
    var saysNotServing: Bool { notServing.load(ordering: .relaxed) }

    /// Starts watching on a connection that just became ready (the previous connection's status is
    /// forgotten); `onChange` runs whenever the answer of `saysNotServing` changes.
    func start(
        on connection: ClientConnection,
        handler: NIOLoopBound<ClientConnectionHandler>,
        onChange: @escaping @Sendable () -> Void
    ) {
        var payload = ByteBuffer()
        // An empty service name: the whole server. Encoding an empty message cannot fail.
        _ = try? YediHealth.HealthCheckRequest(service: "").serialize(into: &payload)
        let frame = YediRPC.Frame(kind: .request, method: YediHealth.Health.Method.watch.descriptor.path, metadata: [])
        // Statuses are a few bytes; a small window keeps a slow reader's buffer small.
        let stream = ResponseStreamState(windowBytes: 1 << 10)
        let outgoing = connection.startStream(
            frame, payload: payload, deadline: nil, windowBytes: 1 << 10, into: stream, on: handler)
        let generation = watch.withLock { watch in
            watch.generation += 1
            watch.call = (outgoing, handler)
            notServing.store(false, ordering: .relaxed)
            return watch.generation
        }
        Task {
            do {
                while let bytes = try await stream.next() {
                    let status = try YediHealth.HealthCheckResponse(serializedBytes: bytes).status
                    self.record(notServing: status == .notServing, generation: generation, onChange: onChange)
                }
                // Ended by the server as it drains, after NOT_SERVING: the connection is going away.
            } catch {
                // The connection closed, or the server has no watch for us: nothing against it.
                self.record(notServing: false, generation: generation, onChange: onChange)
            }
        }
    }

    private func record(notServing down: Bool, generation: Int, onChange: @Sendable () -> Void) {
        let changed = watch.withLock { watch in
            guard watch.generation == generation else { return false }
            return notServing.exchange(down, ordering: .relaxed) != down
        }
        if changed { onChange() }
    }

    /// Cancels the watch, so that a connection closing once idle does not wait for it.
    func stop(on connection: ClientConnection) {
        guard let (outgoing, handler) = watch.withLock({ $0.call }) else { return }
        connection.cancel(outgoing, on: handler, error: RPCError(code: .cancelled, message: "the client shuts down"))
    }
}
