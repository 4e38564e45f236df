/// How an adapter talks to its provider, the same for the three kinds.
public struct ProviderHTTPSettings: Sendable {
    /// The whole request, from connecting to the last byte of the answer. Past it the send throws a
    /// `RetryableSendError` and the outbox tries again later; 10 s is well above a provider's usual
    /// answer time (well under a second) and short enough that one hung provider does not hold its
    /// kind's queue for long.
    public var timeout: Duration = .seconds(10)
    /// The most of an answer's body that is read (an error's JSON is a few hundred bytes); the rest is
    /// not read, so a provider (or something pretending to be one) cannot make the process buffer more.
    public var maxResponseBytes = 64 * 1_024

    public init(timeout: Duration = .seconds(10), maxResponseBytes: Int = 64 * 1_024) {
        self.timeout = timeout
        self.maxResponseBytes = maxResponseBytes
    }
}
