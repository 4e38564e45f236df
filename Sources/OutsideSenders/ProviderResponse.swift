import Foundation
import ServiceRuntime

/// A provider's answer: its status and at most `ProviderHTTPSettings.maxResponseBytes` of its body.
struct ProviderResponse: Sendable {
    var status: Int
    var body: [UInt8]

    var isSuccess: Bool { (200..<300).contains(status) }

    /// The body as a JSON object, nil when it is not one (cut short, HTML from a proxy, empty).
    var json: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
    }

    /// The usual mapping of a status that is not a success: 408, 429 and 5xx may succeed later; 401 and
    /// 403 are the credentials (`.unauthorized`); any other 4xx refuses this message for good. A provider
    /// with codes of its own (FCM's dead tokens) looks at the body first.
    func failure(provider: String, code: String) -> any Error {
        switch status {
        case 401, 403:
            return UndeliverableMessage(reason: .unauthorized, provider: provider, status: status, code: code)
        case 408, 429, 500...:
            return RetryableSendError(provider: provider, status: status, code: code)
        case 400..<500:
            return UndeliverableMessage(reason: .rejected, provider: provider, status: status, code: code)
        default:
            // 1xx/3xx (redirects are followed): nothing says the message was taken, so try again.
            return RetryableSendError(provider: provider, status: status, code: code)
        }
    }
}
