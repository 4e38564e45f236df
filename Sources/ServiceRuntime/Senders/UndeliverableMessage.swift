/// What a sender throws when the provider refused a message for good (a 4xx that no retry changes), as
/// opposed to any other error, which leaves the job to be retried with backoff.
///
/// Why a type of its own: the outbox must not retry such a job for ever (it would hold back every later
/// job of its kind), and whoever owns the recipient must be able to see why: "this device token is dead"
/// (`reason == .deadDeviceToken`) is how a device registry learns to forget a token. It never carries a
/// secret: only the provider's name, status and error code.
public struct UndeliverableMessage: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Reason: String, Sendable, Hashable {
        /// The provider refused this message (bad address or number, malformed request): it never succeeds.
        case rejected
        /// Push only: the device token is unknown or no longer registered: forget it.
        case deadDeviceToken
        /// The provider refused our credentials (401/403): no message succeeds until an operator fixes the
        /// key, so the outbox keeps such a job and retries it (with backoff) rather than losing it.
        case unauthorized
    }

    public var reason: Reason
    /// The provider ("sendgrid", "nhn-cloud-sms", "fcm").
    public var provider: String
    /// The HTTP status the provider answered with.
    public var status: Int
    /// The provider's own error code or message, shortened ("UNREGISTERED", "-1000").
    public var code: String

    public init(reason: Reason, provider: String, status: Int, code: String) {
        self.reason = reason
        self.provider = provider
        self.status = status
        self.code = String(code.prefix(200))
    }

    /// Whether the push provider said the message's device token is dead.
    public var isDeadDeviceToken: Bool { reason == .deadDeviceToken }

    /// Whether the outbox drops the job instead of retrying it.
    public var dropsJob: Bool { reason != .unauthorized }

    public var description: String {
        "\(provider) refused the message (\(reason.rawValue)): HTTP \(status) \(code)"
    }
}
