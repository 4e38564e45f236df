import Foundation

/// How many calls a key (a client address, a connection) may make: a token bucket of `burst` tokens
/// that refills `burst` tokens every `period`.
///
/// Stated as "N per period" because that is how an operator reads a limit; the bucket lets a client
/// that was quiet spend its whole allowance at once, then holds it to the average.
public struct RateLimit: Sendable, Hashable, CustomStringConvertible {
    /// The most calls at once, and the calls allowed per `period` on average.
    public var burst: Int
    public var period: Duration

    public init(burst: Int, period: Duration) {
        precondition(burst > 0 && period > .zero, "RateLimit: burst and period must be positive")
        self.burst = burst
        self.period = period
    }

    /// Seconds for one token to come back.
    var secondsPerToken: Double { period.seconds / Double(burst) }

    /// `factor` times as many calls in the same period.
    public func scaled(by factor: Int) -> RateLimit {
        RateLimit(burst: burst * factor, period: period)
    }

    /// `20/60`: 20 calls per 60 seconds.
    public var description: String { "\(burst)/\(Int(period.seconds.rounded()))" }

    /// Reads `N/SECONDS` (`20/60`); nil for anything else, so configuration can name the option.
    public init?(parsing text: String) {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let burst = Int(parts[0]), let seconds = Int(parts[1]),
            (1...1_000_000).contains(burst), (1...86_400).contains(seconds)
        else { return nil }
        self.init(burst: burst, period: .seconds(seconds))
    }
}

extension Duration {
    /// The duration in seconds, as a floating-point number.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
