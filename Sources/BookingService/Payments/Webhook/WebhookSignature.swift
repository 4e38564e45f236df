import Foundation
import ServiceRuntime
import YediCrypto

/// The webhook's proof of origin, modelled on Toss Payments' signed webhooks: the header
/// `tosspayments-webhook-signature: v1:<base64 HMAC-SHA256(secret, "<body>:<transmission time>")>` (several
/// `v1:` values, comma-separated, during a key rotation) and `tosspayments-webhook-transmission-time` in
/// Unix seconds, within five minutes of now so that a captured request cannot be replayed later.
struct WebhookSignature: Sendable {
    static let signatureHeader = "tosspayments-webhook-signature"
    static let timeHeader = "tosspayments-webhook-transmission-time"
    static let toleranceMilliseconds: Int64 = 5 * 60_000

    let secret: SecretSource

    /// Why a request is refused (nil: genuine). Compares in constant time.
    func problem(body: [UInt8], signature: String?, transmissionTime: String?, now: Int64) -> String? {
        guard let signature, let transmissionTime, let seconds = Int64(transmissionTime) else {
            return "missing signature or transmission time"
        }
        // In whole seconds, so no header value can overflow the arithmetic (a trap would stop the service).
        let nowSeconds = now / 1_000
        guard seconds >= nowSeconds - Self.toleranceMilliseconds / 1_000,
            seconds <= nowSeconds + Self.toleranceMilliseconds / 1_000
        else { return "stale transmission time" }
        guard let key = try? secret.read() else { return "no webhook secret" }
        let expected = Self.sign(body: body, time: transmissionTime, key: key)
        let offered = signature.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard offered.contains(where: { ConstantTime.equals(Array($0.utf8), Array(expected.utf8)) }) else {
            return "bad signature"
        }
        return nil
    }

    /// `v1:<base64>` of the body and time (the provider's side; tests sign with it).
    static func sign(body: [UInt8], time: String, key: Secret) -> String {
        "v1:" + Data(HMACSHA256.mac(key: Array(key.value.utf8), body + Array(":\(time)".utf8))).base64EncodedString()
    }
}
