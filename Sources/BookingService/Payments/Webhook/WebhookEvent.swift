import Foundation
import YediCrypto

/// What the webhook keeps of a provider's event (Toss's `PAYMENT_STATUS_CHANGED`:
/// `{"eventType", "createdAt", "data": {"orderId", "status", …}}`): enough to find the payment; the
/// processing asks the provider for the truth. Its id is the body's SHA-256, so a redelivery of the same
/// event is recorded once.
struct WebhookEvent: Equatable, Sendable {
    var id: String
    var type: String
    var orderID: String
    var status: String

    init?(body: [UInt8]) {
        guard let json = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any],
            let type = json["eventType"] as? String, let data = json["data"] as? [String: Any],
            let orderID = data["orderId"] as? String, !orderID.isEmpty, orderID.utf8.count <= 128
        else { return nil }
        self.id = "event-" + SHA256.hex(SHA256.hash(body))
        self.type = String(type.prefix(64))
        self.orderID = orderID
        self.status = String((data["status"] as? String ?? "").prefix(32))
    }
}
