/// A send that may succeed later: the provider answered 408, 429 or 5xx, did not answer in time, or could
/// not be reached. The outbox keeps the job and retries it with backoff. Never carries a credential.
public struct RetryableSendError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The provider ("sendgrid", "nhn-cloud-sms", "fcm").
    public var provider: String
    /// The HTTP status, nil when there was no answer (timeout, connection failure).
    public var status: Int?
    /// The provider's error code, or what went wrong on the way ("timeout").
    public var code: String

    public init(provider: String, status: Int?, code: String) {
        self.provider = provider
        self.status = status
        self.code = String(code.prefix(200))
    }

    public var description: String {
        "\(provider) did not take the message (will retry): " + (status.map { "HTTP \($0) " } ?? "") + code
    }
}
