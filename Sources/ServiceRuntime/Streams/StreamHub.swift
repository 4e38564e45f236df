import Metrics
import RPCCore
import YediSync

/// The in-memory fan-out of a service's committed events to the open streams of this process, per key
/// (a recipient, a promise, a member).
///
/// The store hands it each transaction's events after the commit (`publish`, in position order: GRDB's
/// `afterNextTransaction` on the one writer queue does that); it puts each event in the bounded buffer of
/// every subscription of the event's key and never waits. A subscription whose buffer is full (its client
/// reads too slowly and flow control holds the writer back) is ended with RESOURCE_EXHAUSTED, so memory
/// stays at most `capacity` events per stream and nobody else waits; the client resumes from its last
/// position and the rest comes from the database (`ResumableStream`).
public final class StreamHub<Event: PositionedEvent>: Sendable {
    public typealias Key = Event.Key

    /// Events buffered per subscription before it is cut off.
    public let capacity: Int
    /// Open subscriptions per key (a user's devices); one more is refused with RESOURCE_EXHAUSTED.
    public let maxPerKey: Int
    private let state = TSanVisibleMutex(HubState())
    /// `yedi_<name>_streams_open` and `yedi_<name>_stream_cutoffs_total{reason="slow"}` for dashboards.
    private let openStreams: Gauge
    private let slowCutOffs: Counter

    private struct HubState {
        var nextID: UInt64 = 0
        var byKey: [Key: [UInt64: StreamSubscription<Event>]] = [:]
        var open = 0
        var closed = false
        /// Set while live events cannot be promised (the database's notifications are lost): new
        /// subscriptions are refused with it.
        var suspended: RPCError?
        /// Told when a key gains its first stream or loses its last (`observeKeys`).
        var keysObserver: (@Sendable () -> Void)?

        /// Forgets one subscription (and its key once it has none), keeping the count; answers whether the
        /// key went away with it.
        @discardableResult
        mutating func remove(_ subscription: StreamSubscription<Event>) -> Bool {
            guard byKey[subscription.key]?.removeValue(forKey: subscription.id) != nil else { return false }
            open -= 1
            guard byKey[subscription.key]?.isEmpty == true else { return false }
            byKey[subscription.key] = nil
            return true
        }
    }

    /// - Parameters:
    ///   - name: the metrics' prefix, the service's short name (`chat` → `yedi_chat_streams_open`).
    ///   - capacity: events buffered per stream before a slow one is cut off.
    ///   - maxPerKey: streams open at once per key.
    public init(name: String, capacity: Int = 1_024, maxPerKey: Int = 16) {
        precondition(capacity >= 1 && maxPerKey >= 1)
        self.capacity = capacity
        self.maxPerKey = maxPerKey
        openStreams = Gauge(label: "yedi_\(name)_streams_open")
        slowCutOffs = Counter(label: "yedi_\(name)_stream_cutoffs_total", dimensions: [("reason", "slow")])
    }

    /// Registers a subscription for `key`; events published from now on are buffered for it. Call it
    /// before reading stored events, and `unsubscribe` when the stream ends.
    public func subscribe(key: Key) throws(RPCError) -> StreamSubscription<Event> {
        let (subscription, observer) = try state.withLock { state throws(RPCError) in
            if state.closed {
                throw RPCError(
                    code: .unavailable,
                    message: "the server is shutting down; subscribe again (elsewhere) from your last position")
            }
            if let suspended = state.suspended { throw suspended }
            if state.byKey[key, default: [:]].count >= maxPerKey {
                throw RPCError(
                    code: .resourceExhausted, message: "too many open streams for this user (at most \(maxPerKey))")
            }
            state.nextID += 1
            let subscription = StreamSubscription<Event>(id: state.nextID, key: key, capacity: capacity)
            let newKey = state.byKey[key] == nil
            state.byKey[key, default: [:]][subscription.id] = subscription
            state.open += 1
            openStreams.record(state.open)
            return (subscription, newKey ? state.keysObserver : nil)
        }
        observer?()
        return subscription
    }

    /// Calls `observer` (outside the hub's lock, so it must not wait) whenever a key gains its first open
    /// stream or loses its last: ChatService on PostgreSQL tells the other replicas who is here.
    public func observeKeys(_ observer: @escaping @Sendable () -> Void) {
        state.withLock { $0.keysObserver = observer }
    }

    /// The keys with a stream open now.
    public var openKeys: Set<Key> { state.withLock { Set($0.byKey.keys) } }

    /// Whether `key` has a stream open now (ChatService pushes to a member without one).
    public func isOpen(key: Key) -> Bool { state.withLock { !($0.byKey[key]?.isEmpty ?? true) } }

    /// Forgets the subscription and drops what it still buffered.
    public func unsubscribe(_ subscription: StreamSubscription<Event>) {
        let observer = state.withLock { state in
            let keyGone = state.remove(subscription)
            openStreams.record(state.open)
            return keyGone ? state.keysObserver : nil
        }
        observer?()
        subscription.end(RPCError(code: .cancelled, message: "the stream was closed"))
    }

    /// Called with each committed transaction's events, in position order.
    public func publish(_ events: [Event]) {
        var overflowed: [StreamSubscription<Event>] = []
        let observer = state.withLock { state in
            for event in events {
                guard let subscriptions = state.byKey[event.streamKey] else { continue }
                for subscription in subscriptions.values where !subscription.offer(event) {
                    overflowed.append(subscription)
                }
            }
            var keyGone = false
            for subscription in overflowed where state.remove(subscription) { keyGone = true }
            if !overflowed.isEmpty { openStreams.record(state.open) }
            return keyGone ? state.keysObserver : nil
        }
        observer?()
        if !overflowed.isEmpty { slowCutOffs.increment(by: overflowed.count) }
    }

    /// Ends `key`'s open streams with `error` (say, UNAUTHENTICATED: the account was deleted).
    public func end(key: Key, _ error: RPCError) {
        let (subscriptions, observer) = state.withLock { state in
            let subscriptions = state.byKey.removeValue(forKey: key).map { Array($0.values) } ?? []
            state.open -= subscriptions.count
            openStreams.record(state.open)
            return (subscriptions, subscriptions.isEmpty ? nil : state.keysObserver)
        }
        observer?()
        for subscription in subscriptions { subscription.end(error) }
    }

    /// Offers `make(key)` to every open subscription: a wake-up for all (the database's notifications
    /// were lost for a while, so any stream may have missed some).
    public func publishToEveryKey(_ make: (Key) -> Event) {
        let keys = state.withLock { Array($0.byKey.keys) }
        publish(keys.map(make))
    }

    /// Ends every open stream with `error` and refuses new ones with it until `resume()`: live delivery
    /// cannot be promised for now, and clients should go to another replica.
    public func suspend(_ error: RPCError) {
        for subscription in removeAll({ $0.suspended = error }) { subscription.end(error) }
    }

    /// Takes subscriptions again after `suspend`.
    public func resume() {
        state.withLock { $0.suspended = nil }
    }

    /// Ends every open stream with UNAVAILABLE and refuses new ones: the process is going away.
    public func shutDown() {
        for subscription in removeAll({ $0.closed = true }) {
            subscription.end(
                RPCError(
                    code: .unavailable,
                    message:
                        "the server is shutting down; subscribe again (elsewhere) with after_position = your last position"
                ))
        }
    }

    /// Forgets every subscription after `mark` (under the same lock, so none can be added in between);
    /// answers them, to be ended outside the lock.
    private func removeAll(_ mark: (inout HubState) -> Void) -> [StreamSubscription<Event>] {
        let (all, observer) = state.withLock { state in
            mark(&state)
            let all = state.byKey.values.flatMap(\.values)
            state.byKey = [:]
            state.open = 0
            openStreams.record(0)
            return (all, all.isEmpty ? nil : state.keysObserver)
        }
        observer?()
        return all
    }

    /// Open subscriptions.
    public var subscriptionCount: Int { state.withLock { $0.open } }

    /// Keys with at least one open subscription (an empty key is forgotten, not kept).
    public var keyCount: Int { state.withLock { $0.byKey.count } }

    /// Events waiting in all buffers: what slow subscribers make the server hold.
    public var bufferedEventCount: Int {
        let all = state.withLock { $0.byKey.values.flatMap(\.values) }
        return all.reduce(0) { $0 + $1.bufferedCount }
    }
}
