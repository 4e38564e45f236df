import DequeModule
import Synchronization

/// The messages of one server-streaming call, between the connection (producer, on its event loop)
/// and the caller iterating `RPCResponseStream` (consumer, on any task).
///
/// The buffer holds at most what the server may send ahead (the call's flow-control window plus one
/// message): the consumer grants more window only as it takes messages out.
final class ResponseStreamState: Sendable {
    private struct State {
        var buffer: Deque<[UInt8]> = []
        var waiter: CheckedContinuation<[UInt8]?, any Error>?
        /// Set when the call ended: nil error = ended OK.
        var end: (error: RPCError?, trailers: Metadata)?
        /// Bytes consumed since the last window grant.
        var consumedSinceGrant = 0
    }

    private let state = TSanVisibleMutex(State())
    private let windowBytes: Int
    /// Asks the connection to grant the server more window.
    private let grant: @Sendable (Int) -> Void

    init(windowBytes: Int, grant: @escaping @Sendable (Int) -> Void) {
        self.windowBytes = windowBytes
        self.grant = grant
    }

    // MARK: Producer (the connection's event loop)

    func deliver(_ payload: [UInt8]) {
        let waiter = state.withLock { state -> CheckedContinuation<[UInt8]?, any Error>? in
            guard state.end == nil else { return nil }
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
        let toGrant = state.withLock { state -> Int in
            state.consumedSinceGrant += bytes
            guard state.consumedSinceGrant >= max(1, windowBytes / 2) else { return 0 }
            defer { state.consumedSinceGrant = 0 }
            return state.consumedSinceGrant
        }
        if toGrant > 0 { grant(toGrant) }
    }
}
