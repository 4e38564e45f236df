import NIOConcurrencyHelpers
import RPCCore
import ServiceRuntime

/// An event of the hub tests: a key's numbered text.
struct HubTestEvent: PositionedEvent, Hashable {
    var position: Int64
    var streamKey: String
    var text: String
}

/// A service's event table and writer in memory, for `StreamHubTests`: `commit` gives the next position
/// and hands the event to the hub under one lock, as a store's single writer queue hands committed
/// events over in position order. One-shot hooks commit while a catch-up read is under way, so a test
/// can put a commit exactly between the read and the switch to live events.
final class HubTestLog: StreamEventLog, Sendable {
    typealias Event = HubTestEvent

    let hub: StreamHub<HubTestEvent>
    private let state = NIOLockedValueBox(State())

    private struct State {
        var events: [HubTestEvent] = []
        var highest: Int64 = 0
        var pruned: [String: Int64] = [:]
        var beforeNextRead: (@Sendable () -> Void)?
        var afterNextRead: (@Sendable () -> Void)?
        var readDelay: Duration?
        var reading = 0
        var mostReading = 0
    }

    init(hub: StreamHub<HubTestEvent>) {
        self.hub = hub
    }

    @discardableResult
    func commit(_ key: String, _ text: String) -> HubTestEvent {
        state.withLockedValue { state in
            state.highest += 1
            let event = HubTestEvent(position: state.highest, streamKey: key, text: text)
            state.events.append(event)
            hub.publish([event])
            return event
        }
    }

    /// Runs `before` just before the next read takes its snapshot and `after` just after.
    func duringNextRead(before: @escaping @Sendable () -> Void, after: @escaping @Sendable () -> Void) {
        state.withLockedValue {
            $0.beforeNextRead = before
            $0.afterNextRead = after
        }
    }

    /// Removes every event up to `position`, recording per key the highest removed (retention).
    func prune(through position: Int64) {
        state.withLockedValue { state in
            for event in state.events where event.position <= position {
                state.pruned[event.streamKey] = max(state.pruned[event.streamKey] ?? 0, event.position)
            }
            state.events.removeAll { $0.position <= position }
        }
    }

    /// Makes every read take `delay`, as a database under load does, so that reads overlap.
    func slowReads(_ delay: Duration) {
        state.withLockedValue { $0.readDelay = delay }
    }

    /// The most reads that were under way at once.
    var mostConcurrentReads: Int { state.withLockedValue { $0.mostReading } }

    func events(for key: String, after position: Int64, limit: Int) async throws -> [HubTestEvent] {
        let delay = state.withLockedValue { state in
            state.reading += 1
            state.mostReading = max(state.mostReading, state.reading)
            return state.readDelay
        }
        defer { state.withLockedValue { $0.reading -= 1 } }
        if let delay { try await Task.sleep(for: delay) }
        let before = state.withLockedValue { state in
            defer { state.beforeNextRead = nil }
            return state.beforeNextRead
        }
        before?()
        let (events, after) = state.withLockedValue { state in
            defer { state.afterNextRead = nil }
            let events = state.events.filter { $0.streamKey == key && $0.position > position }.prefix(limit)
            return (Array(events), state.afterNextRead)
        }
        after?()
        return events
    }

    func highestPosition(for key: String) async throws -> Int64 { state.withLockedValue { $0.highest } }

    func prunedThrough(_ key: String) async throws -> Int64 { state.withLockedValue { $0.pruned[key] ?? 0 } }
}

/// What one `ResumableStream.run` wrote: events and caught-up marks in order, as an async sequence the
/// test reads up to what it expects (no polling), and how the run ended.
final class HubTestStream: Sendable {
    enum Item: Hashable, Sendable {
        case event(HubTestEvent)
        case caughtUp(Int64)
    }

    let items: AsyncStream<Item>
    private let continuation: AsyncStream<Item>.Continuation
    private let task: NIOLockedValueBox<Task<RPCError?, Never>?> = NIOLockedValueBox(nil)

    init() {
        (items, continuation) = AsyncStream.makeStream()
    }

    /// Starts `stream.run` for `key` after `position` in a task.
    func start(_ stream: ResumableStream<HubTestEvent>, key: String, after position: Int64) {
        let continuation = continuation
        let task = Task { () -> RPCError? in
            defer { continuation.finish() }
            do {
                try await stream.run(
                    key: key, after: position, write: { continuation.yield(.event($0)) },
                    caughtUp: { continuation.yield(.caughtUp($0)) })
                return nil
            } catch {
                return error as? RPCError ?? RPCError(code: .cancelled, message: "\(error)")
            }
        }
        self.task.withLockedValue { $0 = task }
    }

    /// The next `count` items (fewer if the run ended first).
    func next(_ count: Int) async -> [Item] {
        var taken: [Item] = []
        for await item in items {
            taken.append(item)
            if taken.count == count { break }
        }
        return taken
    }

    /// Cancels the run (the client went away) and answers how it ended.
    func stop() async -> RPCError? {
        let task = task.withLockedValue { $0 }
        task?.cancel()
        return await task?.value
    }

    /// How the run ended, waiting for it to end by itself.
    func end() async -> RPCError? {
        await task.withLockedValue { $0 }?.value
    }
}
