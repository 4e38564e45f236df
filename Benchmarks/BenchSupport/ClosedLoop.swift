import Histogram

/// A closed-loop load: `clients` tasks each calling `call(client, index)` one at a time for `seconds`.
/// Returns the seconds it took, the calls made and their latencies.
public func closedLoop(
    clients: Int, seconds: Double, _ call: @escaping @Sendable (_ client: Int, _ index: Int) async throws -> Void
) async throws -> (seconds: Double, calls: Int, latencies: Histogram<UInt64>) {
    let start = ContinuousClock.now
    let end = start + .milliseconds(Int(seconds * 1_000))
    var histogram = Figures.newHistogram()
    var count = 0
    try await withThrowingTaskGroup(of: [UInt64].self) { group in
        for client in 0..<clients {
            group.addTask {
                var latencies: [UInt64] = []
                while ContinuousClock.now < end {
                    let callStart = ContinuousClock.now
                    try await call(client, latencies.count)
                    latencies.append(Figures.nanoseconds(ContinuousClock.now - callStart))
                }
                return latencies
            }
        }
        for try await latencies in group {
            count += latencies.count
            for latency in latencies { histogram.record(latency) }
        }
    }
    return (Figures.seconds(ContinuousClock.now - start), count, histogram)
}
