/// The open model's timetable: call `i` of a run at `rate` calls per second is due `i / rate` seconds
/// after the start, whatever happened to the calls before it.
///
/// Due times are computed from the index, never by adding intervals, so they do not drift, and a
/// worker that falls behind finds its next calls already due instead of spreading them out: a slow
/// server shows up as latency (measured from the due time), not as fewer calls. This is the correction
/// for coordinated omission that wrk2 and ghz's `--rps` make.
public struct RatePacer: Sendable, Equatable {
    /// Calls per second, above zero.
    public let rate: Double

    public init(rate: Double) {
        precondition(rate > 0 && rate.isFinite, "a rate is a finite number of calls per second above 0")
        self.rate = rate
    }

    /// How long after the start call `index` is due.
    public func offset(ofCall index: UInt64) -> Duration {
        let seconds = Double(index) / rate
        let whole = seconds.rounded(.down)
        return .seconds(Int64(whole)) + .nanoseconds(Int64(((seconds - whole) * 1e9).rounded()))
    }

    /// When call `index` is due in a run that started at `start`.
    public func dueTime<Instant: InstantProtocol<Duration>>(ofCall index: UInt64, start: Instant) -> Instant {
        start.advanced(by: offset(ofCall: index))
    }
}
