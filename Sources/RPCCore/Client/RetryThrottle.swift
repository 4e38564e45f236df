import Synchronization
import YediSync

/// gRPC's retry throttling: a token bucket shared by all calls of a client, so that retries stop when
/// many calls fail and a struggling server is not hit by a retry storm.
///
/// Each failed attempt takes one token, each success gives back `tokenRatio`; retries are allowed only
/// while more than half of `maxTokens` remain.
public final class RetryThrottle: Sendable {
    public let maxTokens: Double
    public let tokenRatio: Double
    private let tokens: TSanVisibleMutex<Double>

    public init(maxTokens: Double = 10, tokenRatio: Double = 0.1) {
        precondition(maxTokens > 0 && tokenRatio > 0, "retry throttling needs positive tokens and ratio")
        self.maxTokens = maxTokens
        self.tokenRatio = tokenRatio
        tokens = TSanVisibleMutex(maxTokens)
    }

    public var availableTokens: Double { tokens.withLock { $0 } }

    public func recordSuccess() {
        tokens.withLock { $0 = min(maxTokens, $0 + tokenRatio) }
    }

    /// Records a failed attempt; returns whether a retry is allowed.
    public func recordFailure() -> Bool {
        tokens.withLock { tokens in
            tokens = max(0, tokens - 1)
            return tokens > maxTokens / 2
        }
    }
}
