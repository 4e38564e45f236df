/// An outbox job its sender refused for good, as `Outbox.onUndeliverable` handlers see it: the job was
/// deleted, and `payload` is its message (decode it by `destination`: a `PushMessage` for `push`).
public struct UndeliverableJob: Sendable {
    public var id: String
    /// The outside kind's destination (`mail`, `sms`, `push`).
    public var destination: String
    public var payload: [UInt8]
    public var error: UndeliverableMessage
}
