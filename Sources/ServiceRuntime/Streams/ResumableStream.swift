import RPCCore

/// One streaming call's events for a key: every stored event after the client's position, then a
/// "caught up" mark, then live events as they commit, with no gap and no duplicate between the two.
///
/// Why it holds: the subscription is registered with the hub **before** the log is read. Whatever
/// committed before the read is in the read; whatever commits after the registration is in the buffer
/// (the hub gets events after their commit, in position order); buffered events at or below the last
/// position sent are skipped. The catch-up reads the database, so this also holds across restarts.
///
/// With `liveFromLog` the hub's events are only wake-ups: a woken stream reads the log after its last
/// position, the same code as the catch-up. That is how several replicas share one database: events
/// committed through another replica arrive as notifications (a key and a position, no body), and even
/// this replica's own commits on several pool connections may reach the hub out of position order.
public struct ResumableStream<Event: PositionedEvent>: Sendable {
    public let hub: StreamHub<Event>
    public let log: any StreamEventLog<Event>
    /// Stored events read per query while catching up.
    public let batch: Int
    /// What a client whose position cannot be served should do, ending the OUT_OF_RANGE messages (ChatService:
    /// "reload with ListRooms and subscribe from its stream_position").
    public let restart: String
    /// Live events are read from the log when the hub wakes the stream (see above).
    public let liveFromLog: Bool
    /// Shared by the process's streams: how many read the log at once (`StreamReadLimit`); nil: no limit.
    public let reads: StreamReadLimit?

    public init(
        hub: StreamHub<Event>, log: any StreamEventLog<Event>, batch: Int = 500, restart: String,
        liveFromLog: Bool = false, reads: StreamReadLimit? = nil
    ) {
        precondition(batch >= 1)
        self.liveFromLog = liveFromLog
        self.reads = reads
        self.hub = hub
        self.log = log
        self.batch = batch
        self.restart = restart
    }

    /// Streams `key`'s events after `position` until the client goes away (cancellation), the hub ends the
    /// subscription (cut off as slow, `end(key:)`, shutdown: that status is thrown) or a write fails.
    ///
    /// - Throws: INVALID_ARGUMENT for a negative position; OUT_OF_RANGE for one beyond every position given
    ///   out (the stream would skip live events until positions caught up with it) or older than what
    ///   retention kept (it would silently miss events); the hub's refusals (RESOURCE_EXHAUSTED, UNAVAILABLE).
    public func run(
        key: Event.Key, after position: Int64, write: @escaping @Sendable (Event) async throws -> Void,
        caughtUp: @escaping @Sendable (Int64) async throws -> Void
    ) async throws {
        guard position >= 0 else {
            throw RPCError(code: .invalidArgument, message: "after_position cannot be negative")
        }
        let subscription = try hub.subscribe(key: key)
        defer { hub.unsubscribe(subscription) }
        // The first read, before anything is written or the subscription is watched: a position beyond
        // every one given out is refused as such (registered before the read: nothing committed since is
        // missed), and its first batch is the catch-up's.
        let first = try await read { [log, batch] in
            try await log.eventsWatermarkAndHead(for: key, after: position, limit: batch)
        }
        guard position <= first.highestPosition else {
            throw RPCError(
                code: .outOfRange, message: "after_position is beyond every position given out; \(restart)")
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await pump(
                    subscription, after: position, first: (first.events, first.prunedThrough), write: write,
                    caughtUp: caughtUp)
            }
            group.addTask {
                throw try await subscription.ended()
            }
            defer { group.cancelAll() }
            _ = try await group.next()
        }
    }

    /// Stored events after `position` (the `first` batch already read), then the mark, then live ones;
    /// returns only when cancelled.
    private func pump(
        _ subscription: StreamSubscription<Event>, after position: Int64, first: ([Event], Int64),
        write: @Sendable (Event) async throws -> Void, caughtUp: @Sendable (Int64) async throws -> Void
    ) async throws {
        var last = try await catchUp(subscription, after: position, write: write, first: first)
        try await caughtUp(last)
        while true {
            let woken = try await subscription.take()
            if liveFromLog {
                // A wake-up at or below what was sent (a late notification) needs no read.
                if woken.contains(where: { $0.position > last }) {
                    last = try await catchUp(subscription, after: last, write: write)
                }
                continue
            }
            for event in woken where event.position > last {
                try await write(event)
                last = event.position
                subscription.wrote(position: last)
            }
        }
    }

    /// Writes the stored events after `position`, in batches, starting with the `first` batch when one was
    /// read already; answers the last position written.
    private func catchUp(
        _ subscription: StreamSubscription<Event>, after position: Int64, write: @Sendable (Event) async throws -> Void,
        first: ([Event], Int64)? = nil
    ) async throws -> Int64 {
        var last = position
        var preloaded = first
        while true {
            let stored: [Event]
            let prunedThrough: Int64
            if let batchRead = preloaded {
                (stored, prunedThrough) = batchRead
                preloaded = nil
            } else {
                (stored, prunedThrough) = try await read { [log, batch, last] in
                    try await log.eventsAndWatermark(for: subscription.key, after: last, limit: batch)
                }
            }
            // Read after the events (or with them, in one snapshot): pruning commits its deletions with its
            // watermark, so a watermark at most `last` now means the read missed nothing; a later one means
            // it may have, and skipping silently would lose events.
            guard prunedThrough <= last else {
                throw RPCError(
                    code: .outOfRange,
                    message: "after_position \(last) is older than the events kept (older ones are pruned); \(restart)")
            }
            for event in stored {
                try await write(event)
                last = event.position
                subscription.wrote(position: last)
            }
            if stored.count < batch { return last }
        }
    }

    private func read<Result: Sendable>(_ body: () async throws -> Result) async throws -> Result {
        guard let reads else { return try await body() }
        return try await reads.run(body)
    }
}
