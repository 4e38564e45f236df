import Foundation
import Histogram

/// Turning measurements into the figures the benches print (JSON lines).
public enum Figures {
    /// Latencies in nanoseconds, up to a minute, three significant digits.
    public static func newHistogram() -> Histogram<UInt64> {
        Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
    }

    public static func nanoseconds(_ duration: Duration) -> UInt64 {
        UInt64(max(0, duration.components.seconds)) * 1_000_000_000
            + UInt64(duration.components.attoseconds / 1_000_000_000)
    }

    public static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    public static func milliseconds(_ nanoseconds: UInt64) -> String { format(Double(nanoseconds) / 1e6) }

    public static func format(_ value: Double) -> String { String(format: "%.2f", value) }

    /// `{"p50":…,"max":…}` in milliseconds.
    public static func medianAndMax(_ histogram: Histogram<UInt64>) -> String {
        #"{"p50":\#(milliseconds(histogram.valueAtPercentile(50))),"max":\#(milliseconds(histogram.max))}"#
    }
}

/// A small deterministic random generator, so every run seeds the same data and asks the same queries.
public struct SplitMix64 {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
