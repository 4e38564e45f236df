import DequeModule
import Synchronization
import YediSync

/// The messages of one server-streaming call, between the connection (producer, on its event loop)
/// and the caller iterating `RPCResponseStream` (consumer, on any task).
///
/// The buffer holds at most what the server may send ahead (the call's flow-control window plus one
/// message): the consumer grants more window only as it takes messages out.
///
/// One state outlives the call's attempts: a call the server never saw is sent again (`restart`) and
/// its consumer, still waiting on the same state, reads the new attempt's messages.
final class ResponseStreamState: Sendable {
    private struct State {
        var buffer: Deque<[UInt8]> = []
        var waiter: CheckedContinuation<[UInt8]?, any Error>?
        /// Set when the call ended: nil error = ended OK.
        var end: (error: RPCError?, trailers: Metadata)?
        /// Bytes consumed since the last window grant.
        var consumedSinceGrant = 0
        /// Asks the current attempt's connection to grant the server more window.
        var grant: (@Sendable (Int) -> Void)?
        /// Whether any message arrived (then the call cannot be sent again).
        var delivered = false
        /// Sends the call again after an attempt the server never saw, at most `restartsLeft` times.
        var restart: (@Sendable () -> Void)?
        var restartsLeft = 0
    }

    private let state = TSanVisibleMutex(State())
    private let windowBytes: Int

    init(windowBytes: Int) {
        self.windowBytes = windowBytes
    }

    /// The attempt now carrying the call: window grants go to it.
    func attach(grant: @escaping @Sendable (Int) -> Void) {
        state.withLock { $0.grant = grant }
    }

    /// Lets an attempt the server never saw be replaced by `restart` (which attaches the new one),
    /// up to `times` times.
    func restartWhenUnsent(times: Int, _ restart: @escaping @Sendable () -> Void) {
        state.withLock { state in
            state.restart = restart
            state.restartsLeft = times
        }
    }

    // MARK: Producer (the connection's event loop)

    /// The attempt never reached a server: it is sent again if it may be, or the call ends with `error`.
    func finishUnsent(_ error: RPCError) {
        let restart = state.withLock { state -> (@Sendable () -> Void)? in
            guard state.end == nil, !state.delivered, state.restartsLeft > 0, let restart = state.restart else {
                return nil
            }
            state.restartsLeft -= 1
            return restart
        }
        if let restart { restart() } else { finish(error, trailers: [:]) }
    }

    func deliver(_ payload: [UInt8]) {
        let waiter = state.withLock { state -> CheckedContinuation<[UInt8]?, any Error>? in
            guard state.end == nil else { return nil }
            state.delivered = true
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.buffer.append(payload)
            return nil
        }
        if let waiter {
            consumed(payload.count)
            waiter.resume(returning: payload)
        }
    }

    func finish(_ error: RPCError?, trailers: Metadata) {
        let waiter = state.withLock { state -> CheckedContinuation<[UInt8]?, any Error>? in
            guard state.end == nil else { return nil }
            state.end = (error, trailers)
            defer { state.waiter = nil }
            return state.buffer.isEmpty ? state.waiter : nil
        }
        if let waiter {
            if let error { waiter.resume(throwing: error) } else { waiter.resume(returning: nil) }
        }
    }

    // MARK: Consumer

    /// The next message's bytes; nil at the end of a successful stream; throws the call's error.
    func next() async throws -> [UInt8]? {
        try await withCheckedThrowingContinuation { continuation in
            enum Outcome {
                case message([UInt8])
                case end(RPCError?)
                case wait
                case refused
            }
            let outcome = state.withLock { state -> Outcome in
                if let payload = state.buffer.popFirst() { return .message(payload) }
                if let end = state.end { return .end(end.error) }
                // Taking the waiting reader's place would leave it waiting forever.
                guard state.waiter == nil else { return .refused }
                state.waiter = continuation
                return .wait
            }
            switch outcome {
            case .message(let payload):
                consumed(payload.count)
                continuation.resume(returning: payload)
            case .end(let error?): continuation.resume(throwing: error)
            case .end(nil): continuation.resume(returning: nil)
            case .wait: break
            case .refused:
                continuation.resume(
                    throwing: RPCError(
                        code: .failedPrecondition,
                        message: "the response stream is already being read by another task"
                    )
                )
            }
        }
    }

    /// Whether the call ended (so leaving early needs no CANCEL).
    var isFinished: Bool { state.withLock { $0.end != nil } }

    var trailers: Metadata? { state.withLock { $0.end?.trailers } }

    /// Returns window to the server in chunks of half the window, so grants stay infrequent.
    private func consumed(_ bytes: Int) {
        let (toGrant, grant) = state.withLock { state -> (Int, (@Sendable (Int) -> Void)?) in
            state.consumedSinceGrant += bytes
            guard state.consumedSinceGrant >= max(1, windowBytes / 2) else { return (0, nil) }
            defer { state.consumedSinceGrant = 0 }
            return (state.consumedSinceGrant, state.grant)
        }
        if toGrant > 0, let grant { grant(toGrant) }
    }
}
