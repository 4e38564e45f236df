import Histogram

/// What a share of the workers saw: latencies in an HDR histogram and a count per status. Shares
/// merge into the run's total.
public struct LoadTally: Sendable, Equatable {
    /// The status of a call that succeeded.
    public static let ok = "OK"

    /// Latencies in nanoseconds.
    public private(set) var latencies: Histogram<UInt64>
    /// Calls per status name: `OK`, or the gRPC code name of the call's failure.
    public private(set) var statuses: [String: UInt64] = [:]

    /// One hour: anything longer is recorded as an hour (a run that overloaded a server that long has
    /// said what it had to say).
    public static let highestLatency: UInt64 = 3_600_000_000_000

    public init() {
        // Three significant digits from a microsecond up: 0.1% resolution at any latency, in about 100 KB.
        latencies = Histogram(
            lowestDiscernibleValue: 1_000, highestTrackableValue: Self.highestLatency,
            numberOfSignificantValueDigits: .three)
    }

    /// Counts one call.
    public mutating func record(latency: Duration, status: String) {
        let (seconds, attoseconds) = latency.components
        let nanoseconds: UInt64 =
            switch seconds {
            case _ where latency <= .zero: 0
            case 3600...: Self.highestLatency
            default: min(UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000), Self.highestLatency)
            }
        latencies.record(nanoseconds)
        statuses[status, default: 0] += 1
    }

    /// Adds another share's calls to this one.
    public mutating func merge(_ other: LoadTally) {
        latencies.add(other.latencies)
        statuses.merge(other.statuses, uniquingKeysWith: +)
    }

    /// Calls counted.
    public var calls: UInt64 { latencies.totalCount }

    /// Calls that did not end `OK`.
    public var failures: UInt64 { calls - (statuses[Self.ok] ?? 0) }
}
