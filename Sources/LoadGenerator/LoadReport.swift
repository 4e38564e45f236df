import Foundation

/// The outcome of a run as people and scripts read it: calls per second, statuses, latency
/// percentiles from the merged histogram.
public struct LoadReport: Sendable {
    /// `package.Service/Method`.
    public var method: String
    /// Where the calls went (`host:port`).
    public var target: String
    public var plan: LoadPlan
    public var connections: Int
    /// Every worker's calls.
    public var tally: LoadTally
    /// From the start until the last call returned.
    public var elapsed: Duration
    /// Ctrl-C ended the run before its limit.
    public var interrupted: Bool
    /// A scenario's calls by method, each latency measured from the call's actual start (the service
    /// time, without the wait for a worker); empty for a single method.
    public var operations: [String: LoadTally]
    /// A scenario's send→deliver latencies to live streams; nil when it had none.
    public var deliveries: DeliverySummary?

    public init(
        method: String, target: String, plan: LoadPlan, connections: Int, tally: LoadTally, elapsed: Duration,
        interrupted: Bool = false, operations: [String: LoadTally] = [:], deliveries: DeliverySummary? = nil
    ) {
        self.operations = operations
        self.deliveries = deliveries
        self.method = method
        self.target = target
        self.plan = plan
        self.connections = connections
        self.tally = tally
        self.elapsed = elapsed
        self.interrupted = interrupted
    }

    /// The percentiles reported, with their names.
    public static let percentiles: [(name: String, value: Double)] = [
        ("p50", 50), ("p90", 90), ("p99", 99), ("p99.9", 99.9),
    ]

    public var seconds: Double {
        Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    public var callsPerSecond: Double { seconds > 0 ? Double(tally.calls) / seconds : 0 }

    /// A latency in milliseconds, rounded to the microsecond.
    private static func milliseconds(_ nanoseconds: UInt64) -> Double {
        (Double(nanoseconds) / 1_000).rounded() / 1_000
    }

    /// Named latencies in milliseconds: the percentiles, `max` and `mean`; none without calls.
    public var latencyMilliseconds: [(name: String, value: Double)] { Self.latencyMilliseconds(tally) }

    static func latencyMilliseconds(_ tally: LoadTally) -> [(name: String, value: Double)] {
        guard tally.calls > 0 else { return [] }
        let histogram = tally.latencies
        return percentiles.map { ($0.name, milliseconds(histogram.valueAtPercentile($0.value))) } + [
            ("max", milliseconds(histogram.max)),
            ("mean", (histogram.mean / 1_000).rounded() / 1_000),
        ]
    }

    /// Status names, `OK` first, then by count (most first) and name.
    public var sortedStatuses: [(name: String, count: UInt64)] { Self.sortedStatuses(tally) }

    static func sortedStatuses(_ tally: LoadTally) -> [(name: String, count: UInt64)] {
        tally.statuses.map { ($0.key, $0.value) }.sorted { left, right in
            if (left.name == LoadTally.ok) != (right.name == LoadTally.ok) { return left.name == LoadTally.ok }
            return left.count != right.count ? left.count > right.count : left.name < right.name
        }
    }

    /// How the run was made, for the heading: `50 workers on 2 connections, 1000 calls/s for 10 s`.
    public var shape: String {
        let workers = plan.concurrency == 1 ? "1 worker" : "\(plan.concurrency) workers"
        let connections = connections == 1 ? "1 connection" : "\(connections) connections"
        let pace = plan.pacer.map { "\(Self.decimal($0.rate)) calls/s" } ?? "as fast as they return"
        let limit =
            switch plan.limit {
            case .duration(let duration): "for \(Self.decimal(Self.seconds(duration))) s"
            case .total(let total): "\(total) calls"
            }
        return "\(workers) on \(connections), \(pace), \(limit)"
    }

    // MARK: Renderings

    /// For people: a few aligned lines.
    public var text: String {
        var lines = ["\(method) at \(target): \(shape)\(interrupted ? " (interrupted)" : "")"]
        lines.append(
            "  calls     \(tally.calls) in \(String(format: "%.2f", seconds)) s = "
                + "\(String(format: "%.1f", callsPerSecond)) calls/s")
        let statuses = sortedStatuses.map { "\($0.name) \($0.count)" }.joined(separator: ", ")
        lines.append("  statuses  \(statuses.isEmpty ? "none" : statuses)")
        let latencies = latencyMilliseconds
        if latencies.isEmpty {
            lines.append("  latency   no calls")
        } else {
            let cells = latencies.map { "\($0.name) \(String(format: "%.3f", $0.value))" }
            lines.append("  latency   \(cells.joined(separator: "  ")) ms")
        }
        for (name, tally) in operations.sorted(by: { $0.key < $1.key }) {
            let statuses = Self.sortedStatuses(tally).map { "\($0.name) \($0.count)" }.joined(separator: ", ")
            let latencies = Self.latencyMilliseconds(tally).filter { ["p50", "p99", "max"].contains($0.name) }
                .map { "\($0.name) \(String(format: "%.3f", $0.value))" }.joined(separator: "  ")
            lines.append("  \(name): \(tally.calls) calls, \(statuses); \(latencies) ms")
        }
        if let deliveries { lines.append(Self.deliveryLine(deliveries)) }
        return lines.joined(separator: "\n")
    }

    /// `  send→deliver  p50 …  max … ms; 950 of 960 deliveries to 20 streams (10 undelivered), …`.
    static func deliveryLine(_ deliveries: DeliverySummary) -> String {
        let latencies = latencyMilliseconds(deliveries.latencies).filter { $0.name != "mean" }
        var line = "  send→deliver  "
        line +=
            latencies.isEmpty
            ? "no deliveries"
            : latencies.map { "\($0.name) \(String(format: "%.3f", $0.value))" }.joined(separator: "  ") + " ms"
        line += "; \(deliveries.delivered) of \(deliveries.expected) deliveries to \(deliveries.streams) streams"
        var notes: [String] = []
        if deliveries.undelivered > 0 { notes.append("\(deliveries.undelivered) undelivered") }
        if deliveries.unmatched > 0 { notes.append("\(deliveries.unmatched) unmatched") }
        let ends = deliveries.streamEnds.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
        if !ends.isEmpty { notes.append("streams ended early: " + ends.joined(separator: ", ")) }
        if !notes.isEmpty { line += " (" + notes.joined(separator: "; ") + ")" }
        return line
    }

    /// For machines: one JSON object. Latencies are in milliseconds (`p50`, `p90`, `p99`, `p99.9`, `max`,
    /// `mean`); `rate` is null in the closed model.
    public var json: String {
        var object: [String: Any] = [
            "method": method,
            "target": target,
            "calls": tally.calls,
            "errors": tally.failures,
            "seconds": (seconds * 1_000).rounded() / 1_000,
            "callsPerSecond": (callsPerSecond * 10).rounded() / 10,
            "statuses": Dictionary(uniqueKeysWithValues: sortedStatuses.map { ($0.name, $0.count) }),
            "concurrency": plan.concurrency,
            "connections": connections,
            "rate": plan.pacer.map { $0.rate as Any } ?? NSNull(),
            "interrupted": interrupted,
            "latencyUnit": "ms",
        ]
        for (name, value) in latencyMilliseconds { object[name] = value }
        if !operations.isEmpty {
            object["operations"] = operations.mapValues { tally -> [String: Any] in
                var entry: [String: Any] = [
                    "calls": tally.calls,
                    "statuses": Dictionary(
                        uniqueKeysWithValues: Self.sortedStatuses(tally).map { ($0.name, $0.count) }),
                ]
                for (name, value) in Self.latencyMilliseconds(tally) { entry[name] = value }
                return entry
            }
        }
        if let deliveries {
            var entry: [String: Any] = [
                "count": deliveries.delivered,
                "expected": deliveries.expected,
                "undelivered": deliveries.undelivered,
                "unmatched": deliveries.unmatched,
                "streams": deliveries.streams,
                "streamEnds": deliveries.streamEnds,
            ]
            for (name, _) in Self.percentiles + [("max", 0), ("mean", 0)] { entry[name] = NSNull() }
            for (name, value) in Self.latencyMilliseconds(deliveries.latencies) { entry[name] = value }
            object["sendToDeliver"] = entry
        }
        for (name, _) in Self.percentiles + [("max", 0), ("mean", 0)] where object[name] == nil {
            object[name] = NSNull()
        }
        let data =
            (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
            ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    public static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// `1000`, `2.5`: no trailing `.0`.
    public static func decimal(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
