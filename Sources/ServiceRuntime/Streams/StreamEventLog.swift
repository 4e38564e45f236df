/// Where a service keeps its stream events durably: what a resuming stream reads before it goes live
/// (`ResumableStream`). A service's store conforms, or a small adapter over it does.
public protocol StreamEventLog<Event>: Sendable {
    associatedtype Event: PositionedEvent
    /// The key's events with a position after `position`, oldest first, at most `limit`.
    func events(for key: Event.Key, after position: Int64, limit: Int) async throws -> [Event]
    /// The highest position ever given out for `key` (also of events since removed): no client can have
    /// seen more. A log with one counter for every key may answer that counter.
    func highestPosition(for key: Event.Key) async throws -> Int64
    /// The highest position of the key's events that retention removed (0: none). A resume from before it
    /// would silently miss events.
    func prunedThrough(_ key: Event.Key) async throws -> Int64
    /// `events` and then `prunedThrough`, as a catch-up needs them (the watermark read after the events:
    /// see `ResumableStream`). A log that reads both in one statement (one snapshot, one round trip)
    /// answers this itself.
    func eventsAndWatermark(for key: Event.Key, after position: Int64, limit: Int) async throws -> (
        events: [Event], prunedThrough: Int64
    )
    /// What a stream reads when it (re)subscribes: `highestPosition`, then `eventsAndWatermark`. A log that
    /// reads all three in one statement answers this itself: a resubscription (thousands at once after a
    /// replica's death) then costs one read instead of two.
    func eventsWatermarkAndHead(for key: Event.Key, after position: Int64, limit: Int) async throws -> (
        events: [Event], prunedThrough: Int64, highestPosition: Int64
    )
}

extension StreamEventLog {
    public func eventsAndWatermark(for key: Event.Key, after position: Int64, limit: Int) async throws -> (
        events: [Event], prunedThrough: Int64
    ) {
        let events = try await events(for: key, after: position, limit: limit)
        return (events, try await prunedThrough(key))
    }

    public func eventsWatermarkAndHead(for key: Event.Key, after position: Int64, limit: Int) async throws -> (
        events: [Event], prunedThrough: Int64, highestPosition: Int64
    ) {
        let head = try await highestPosition(for: key)
        let (events, prunedThrough) = try await eventsAndWatermark(for: key, after: position, limit: limit)
        return (events, prunedThrough, head)
    }
}
