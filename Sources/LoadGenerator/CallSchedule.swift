import NIOConcurrencyHelpers

/// Hands the calls of a run out to its workers, one ticket per call, and says when the run is over.
///
/// Time comes in as an argument (`now`), so the schedule's decisions can be tested with made-up
/// instants; the runner passes the clock's.
public final class CallSchedule<Instant: InstantProtocol<Duration>>: Sendable {
    /// One call to make: its sequence number and when it is due. Latency is measured from `due`.
    public struct Ticket: Sendable, Equatable {
        public var sequence: UInt64
        public var due: Instant
    }

    public let plan: LoadPlan
    public let start: Instant
    private let state = NIOLockedValueBox(State())

    private struct State {
        var issued: UInt64 = 0
        var stopped = false
    }

    public init(plan: LoadPlan, start: Instant) {
        self.plan = plan
        self.start = start
    }

    /// The next call, or nil when the run is over. Closed model: due `now`. Open model: due at its
    /// place in the timetable, possibly in the past (the worker is behind) or the future (it waits).
    public func next(now: Instant) -> Ticket? {
        state.withLockedValue { state in
            guard !state.stopped else { return nil }
            let sequence = state.issued
            let due = plan.pacer.map { $0.dueTime(ofCall: sequence, start: start) } ?? now
            switch plan.limit {
            case .total(let total):
                guard sequence < total else { return nil }
            case .duration(let duration):
                guard due < start.advanced(by: duration) else { return nil }
            }
            state.issued += 1
            return Ticket(sequence: sequence, due: due)
        }
    }

    /// Ends the run early (Ctrl-C): no more tickets.
    public func stop() {
        state.withLockedValue { $0.stopped = true }
    }

    /// Tickets handed out so far.
    public var issued: UInt64 { state.withLockedValue { $0.issued } }
}
