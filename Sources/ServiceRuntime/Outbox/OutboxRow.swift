import Foundation

/// A job as `Outbox` writes it into `runtime_outbox`, on either engine: made in one place, so that its
/// id, its creation time (the injected clock) and its payload's encoding are the same whichever
/// transaction it goes into.
struct OutboxRow: Sendable {
    var id: String
    /// A peer service, or an in-process destination (`mail`, `sms`, `push`, a service's own).
    var destination: String
    /// The method (`package.Service/Method`), or the message's full name, the payload is for.
    var kind: String
    /// The serialized request or message.
    var payload: Data
    var createdAtMilliseconds: Int64
}
