import NIOConcurrencyHelpers

/// Send→deliver latency: a sender says which message it is about to send (a key the receivers will
/// see, such as the client message id), when it started and how many live receivers should get it;
/// each receiver reports the key when the message arrives. The latency of a delivery runs from the
/// send's start to that arrival, one value per receiver.
///
/// Time comes in as an argument, so the matching can be tested with made-up instants.
public final class DeliveryMatcher<Instant: InstantProtocol<Duration>>: Sendable {
    private struct Pending {
        var start: Instant
        var remaining: Int
    }

    private struct State {
        var pending: [String: Pending] = [:]
        var tally = LoadTally()
        var expected: UInt64 = 0
        var unmatched: UInt64 = 0
    }

    private let state = NIOLockedValueBox(State())

    public init() {}

    /// A message `key` is being sent from `start`, and `receivers` live receivers should each get it once.
    /// Call it before the send, so that a delivery that beats the send's answer is matched. A key
    /// already pending is replaced (its outstanding deliveries are no longer expected).
    public func expect(_ key: String, from start: Instant, receivers: Int) {
        guard receivers > 0 else { return }
        state.withLockedValue { state in
            if let old = state.pending[key] { state.expected -= UInt64(old.remaining) }
            state.pending[key] = Pending(start: start, remaining: receivers)
            state.expected += UInt64(receivers)
        }
    }

    /// The send of `key` failed: its deliveries are no longer expected (any that still arrive count as
    /// unmatched).
    public func withdraw(_ key: String) {
        state.withLockedValue { state in
            guard let old = state.pending.removeValue(forKey: key) else { return }
            state.expected -= UInt64(old.remaining)
        }
    }

    /// A receiver got `key` at `now`. Returns false when no delivery of it was expected (an old message,
    /// one not sent by the run, a withdrawn send or one more copy than there were receivers); those are
    /// counted as unmatched.
    @discardableResult
    public func delivered(_ key: String, at now: Instant) -> Bool {
        state.withLockedValue { state in
            guard var pending = state.pending[key] else {
                state.unmatched += 1
                return false
            }
            state.tally.record(latency: pending.start.duration(to: now), status: LoadTally.ok)
            pending.remaining -= 1
            state.pending[key] = pending.remaining > 0 ? pending : nil
            return true
        }
    }

    /// Deliveries expected and not yet made.
    public var outstanding: Int {
        state.withLockedValue { state in state.pending.values.reduce(0) { $0 + $1.remaining } }
    }

    /// What was matched so far; `streams` and `streamEnds` are the caller's (how many receivers were
    /// open, and why those that ended early ended).
    public func summary(streams: Int, streamEnds: [String: UInt64] = [:]) -> DeliverySummary {
        state.withLockedValue { state in
            DeliverySummary(
                latencies: state.tally, expected: state.expected, unmatched: state.unmatched, streams: streams,
                streamEnds: streamEnds)
        }
    }
}

/// Send→deliver figures of a run: one latency per delivery to a live receiver.
public struct DeliverySummary: Sendable, Equatable {
    /// A latency per delivery, from the send's start to the arrival.
    public var latencies: LoadTally
    /// Deliveries expected: for each send that did not fail, the receivers that were live when it started.
    public var expected: UInt64
    /// Arrivals that matched no expected delivery.
    public var unmatched: UInt64
    /// Receivers (streams) open when the timed part started.
    public var streams: Int
    /// Streams that ended before the run closed them, by status name.
    public var streamEnds: [String: UInt64]

    public init(
        latencies: LoadTally, expected: UInt64, unmatched: UInt64, streams: Int, streamEnds: [String: UInt64]
    ) {
        self.latencies = latencies
        self.expected = expected
        self.unmatched = unmatched
        self.streams = streams
        self.streamEnds = streamEnds
    }

    /// Deliveries matched.
    public var delivered: UInt64 { latencies.calls }

    /// Expected deliveries that never arrived (before the run stopped waiting).
    public var undelivered: UInt64 { expected > delivered ? expected - delivered : 0 }
}
