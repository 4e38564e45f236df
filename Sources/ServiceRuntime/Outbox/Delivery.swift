import RPCAccess
import RPCCore

/// One delivery of a peer's outbox job, as the receiving store needs it: a plain value a handler makes
/// from its call, so stores never see a `ServerContext`. The store applies it with the effect, in the
/// same transaction (`ReceiptLedger.isFirstDelivery`): a redelivery changes nothing, and no crash can
/// fall between recording the receipt and applying the effect.
public struct Delivery: Sendable, Hashable {
    /// `<sender>/<job id>`; nil for a call that did not come from an outbox (always applied).
    public let key: String?
    /// The method delivered (`package.Service/Method`), kept with the receipt.
    public let method: String

    public init(key: String?, method: String) {
        self.key = key
        self.method = method
    }

    /// The delivery a call is: keyed when it carries an outbox `idempotency-key`.
    public init(_ context: ServerContext) {
        let sender: String
        switch context.caller {
        case .service(let name): sender = name
        case .user(let user): sender = "user:\(user.id)"
        case .anonymous: sender = "anonymous"
        }
        self.init(
            key: context.metadata[Outbox.idempotencyKeyMetadata].map { "\(sender)/\($0)" },
            method: context.method.fullName)
    }
}
