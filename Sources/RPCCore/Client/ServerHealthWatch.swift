import NIOCore
import Synchronization
import YediSync

/// What one connection's server says of its health (`Health/Watch` for the whole server, made on that
/// connection): a replica whose database is gone, or that is draining, says NOT_SERVING before any call
/// fails there, and the pool sends new calls to the others meanwhile.
///
/// Only NOT_SERVING counts against a server: SERVING, an unknown status, or a watch that failed (an older
/// server without health, a refused call) leave it in the rotation, where ejection still judges its
/// answers. A watch that failed while its connection stays up is made again after `retryDelay`.
///
/// The watch is a call that never ends: it takes one of the connection's call slots, so a server that
/// runs fewer than `minimumCallSlots` calls per connection is not watched, and it keeps the server's
/// idle timeout from closing the connection (a replicated client's connections stay open).
final class ServerHealthWatch: Sendable {
    private struct Watch {
        /// Bumped by each connection's watch, so that a previous connection's ending watch changes nothing.
        var generation = 0
        var call: (OutgoingCall, NIOLoopBound<ClientConnectionHandler>)?
        var stopped = false
    }

    /// A server that runs fewer calls than this per connection is not watched.
    static let minimumCallSlots = 4

    /// Read by every call's pick (a relaxed load); written under `watch`'s lock.
    private let notServing = Atomic<Bool>(false)
    private let watch = TSanVisibleMutex(Watch())
    private let retryDelay: Duration

    init(retryDelay: Duration = .seconds(5)) {
        self.retryDelay = retryDelay
    }

    /// Whether the server last said NOT_SERVING on the current connection.
    var saysNotServing: Bool { notServing.load(ordering: .relaxed) }

    /// Starts watching on a connection that just became ready (the previous connection's status is
    /// forgotten); `onChange` runs whenever the answer of `saysNotServing` changes.
    func start(
        on connection: ClientConnection,
        handler: NIOLoopBound<ClientConnectionHandler>,
        callSlots: Int,
        onChange: @escaping @Sendable () -> Void
    ) {
        let generation = watch.withLock { watch -> Int? in
            watch.generation += 1
            watch.call = nil
            notServing.store(false, ordering: .relaxed)
            return watch.stopped || callSlots < Self.minimumCallSlots ? nil : watch.generation
        }
        guard let generation else { return }
        watch(generation, on: connection, handler: handler, onChange: onChange)
    }

    private func watch(
        _ generation: Int, on connection: ClientConnection, handler: NIOLoopBound<ClientConnectionHandler>,
        onChange: @escaping @Sendable () -> Void
    ) {
        var payload = ByteBuffer()
        // An empty service name: the whole server. Encoding an empty message cannot fail.
        _ = try? YediHealth.HealthCheckRequest(service: "").serialize(into: &payload)
        let header = RequestHeader(method: YediHealth.Health.Method.watch.descriptor.path, metadata: Metadata())
        // Statuses are a few bytes; a small window keeps a slow reader's buffer small.
        let stream = ResponseStreamState(windowBytes: 1 << 10)
        let outgoing = connection.startStream(
            header, payload: payload, deadline: nil, windowBytes: 1 << 10, into: stream, on: handler)
        let current = watch.withLock { watch in
            guard watch.generation == generation, !watch.stopped else { return false }
            watch.call = (outgoing, handler)
            return true
        }
        guard current else {
            return connection.cancel(outgoing, on: handler, error: RPCError(code: .cancelled, message: "replaced"))
        }
        Task {
            do {
                while let bytes = try await stream.next() {
                    let status = try YediHealth.HealthCheckResponse(serializedBytes: bytes).status
                    record(notServing: status == .notServing, generation: generation, onChange: onChange)
                }
            } catch {
                // The connection closed (a draining server ends its streams with UNAVAILABLE too), or the
                // server refused the watch: nothing against the server.
            }
            record(notServing: false, generation: generation, onChange: onChange)
            // Still this connection's watch: made again after a pause (a connection that closed meanwhile
            // has a new generation by then, or none).
            try? await Task.sleep(for: retryDelay)
            let again = watch.withLock { $0.generation == generation && !$0.stopped }
            if again, connection.readyHandler != nil {
                watch(generation, on: connection, handler: handler, onChange: onChange)
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

    /// Cancels the watch, and makes no other: a connection closing once idle does not wait for it.
    func stop(on connection: ClientConnection) {
        let call = watch.withLock { watch in
            watch.stopped = true
            defer { watch.call = nil }
            return watch.call
        }
        guard let (outgoing, handler) = call else { return }
        connection.cancel(outgoing, on: handler, error: RPCError(code: .cancelled, message: "the client shuts down"))
    }
}
