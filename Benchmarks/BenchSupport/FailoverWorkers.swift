import Histogram
import RPCCore
import Synchronization

/// What the workers of a failover run (senders, customers: each a loop of calls) saw around the kill of a
/// replica, from many tasks: per worker its first success after the kill, its first failure while the
/// replica was down and its first success after that failure; the failed calls by status.
///
/// With the client's balancing most workers never notice the kill: the time from the kill to each one's
/// first success says how long the service was out for them, the time from a failure to the next success
/// how long the few who hit the dying replica waited.
public final class FailoverWorkers: Sendable {
    private struct State {
        var killedAt: ContinuousClock.Instant?
        var restartedAt: ContinuousClock.Instant?
        var firstSuccess: [ContinuousClock.Instant?]
        var firstFailure: [ContinuousClock.Instant?]
        var recovered: [ContinuousClock.Instant?]
        var callsFailed = 0
        var failureCodes: [String: Int] = [:]
    }

    private let state: Mutex<State>
    private let stopped = Atomic<Bool>(false)

    public init(count: Int) {
        let none = [ContinuousClock.Instant?](repeating: nil, count: count)
        state = Mutex(State(firstSuccess: none, firstFailure: none, recovered: none))
    }

    /// The workers finish their call in flight and stop.
    public func stop() { stopped.store(true, ordering: .relaxed) }
    public var isStopped: Bool { stopped.load(ordering: .relaxed) }

    /// Call it before the kill: the first failures arrive while the kill waits for the exit.
    public func killed(at instant: ContinuousClock.Instant) { state.withLock { $0.killedAt = instant } }
    public var killedAt: ContinuousClock.Instant? { state.withLock { $0.killedAt } }
    /// The end of the down phase: later failures are not the kill's.
    public func restarted() { state.withLock { $0.restartedAt = .now } }

    public func succeeded(_ worker: Int) {
        state.withLock {
            guard $0.killedAt != nil else { return }
            if $0.firstSuccess[worker] == nil { $0.firstSuccess[worker] = .now }
            if $0.firstFailure[worker] != nil, $0.recovered[worker] == nil { $0.recovered[worker] = .now }
        }
    }

    public func failed(_ worker: Int, _ error: any Error) {
        state.withLock {
            $0.callsFailed += 1
            $0.failureCodes[(error as? RPCError).map { "\($0.code)" } ?? "\(type(of: error))", default: 0] += 1
            if $0.killedAt != nil, $0.restartedAt == nil, $0.firstFailure[worker] == nil {
                $0.firstFailure[worker] = .now
            }
        }
    }

    /// The figures as JSON fields (ending in a comma), the workers called `noun` ("senders",
    /// "customers"): `first_success_after_kill_ms`, `<noun>_failed`, `<noun>_not_recovered`,
    /// `recovery_after_failure_ms`, `calls_failed`, `failure_codes`.
    public func fields(noun: String) -> String {
        state.withLock { state in
            let killedAt = state.killedAt ?? .now
            var firstSuccess = Figures.newHistogram()
            for case let instant? in state.firstSuccess { firstSuccess.record(Figures.nanoseconds(instant - killedAt)) }
            var recovery = Figures.newHistogram()
            for case (let failed?, let recovered?) in zip(state.firstFailure, state.recovered) {
                recovery.record(Figures.nanoseconds(recovered - failed))
            }
            let notRecovered = zip(state.firstFailure, state.recovered).count { $0.0 != nil && $0.1 == nil }
            let codes = state.failureCodes.sorted { $0.key < $1.key }.map { #""\#($0.key)":\#($0.value)"# }
            return #""first_success_after_kill_ms":\#(Figures.medianAndMax(firstSuccess)),"#
                + #""\#(noun)_failed":\#(state.firstFailure.count { $0 != nil }),"#
                + #""\#(noun)_not_recovered":\#(notRecovered),"#
                + #""recovery_after_failure_ms":\#(Figures.medianAndMax(recovery)),"#
                + #""calls_failed":\#(state.callsFailed),"failure_codes":{\#(codes.joined(separator: ","))},"#
        }
    }
}
