import AsyncHTTPClient
import Foundation
import Logging
import ServiceRuntime
import YediProto

/// SMS through NHN Cloud's SMS API v3.0: `POST {url}/sms/v3.0/appKeys/{appKey}/sender/sms` with the
/// `X-Secret-Key` header (https://docs.nhncloud.com/en/Notification/SMS/en/api-guide/).
///
/// NHN Cloud answers HTTP 200 for most refusals too, with `header.isSuccessful: false` and a negative
/// `resultCode`; those, and a recipient whose own `resultCode` is not 0, are refused for good
/// (`UndeliverableMessage(.rejected)`, the job is dropped). It has no idempotency key: the outbox job id
/// goes in `senderGroupingKey` (searchable in NHN Cloud's console and result API), so a duplicate, possible
/// only when an answer is lost after NHN Cloud took the message, can be traced, not prevented. Other
/// answers as every adapter maps them (`ProviderResponse.failure`). Numbers: E.164 `+82…` goes as the
/// domestic `0…` number; any other country as `internationalRecipientNo`.
public struct NHNCloudSmsSender: SmsSender {
    public static let provider = "nhn-cloud-sms"

    private let client: ProviderClient
    private let appKey: String
    private let secretKey: SecretSource
    private let senderNumber: String
    private let logger: Logger

    public init(
        url: String, appKey: String, secretKey: SecretSource, senderNumber: String,
        settings: ProviderHTTPSettings = ProviderHTTPSettings(), http: HTTPClient = .shared, logger: Logger
    ) {
        self.client = ProviderClient(provider: Self.provider, baseURL: url, settings: settings, http: http)
        self.appKey = appKey
        self.secretKey = secretKey
        self.senderNumber = senderNumber
        self.logger = logger
    }

    public func send(_ sms: YediRuntime.SmsMessage, jobID: String) async throws {
        let body: [String: Any] = [
            "body": sms.text,
            "sendNo": senderNumber,
            "recipientList": [Self.recipient(sms.to)],
            "senderGroupingKey": jobID,
        ]
        let appKeyPath = appKey.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        let response = try await client.postJSON(
            path: "/sms/v3.0/appKeys/\(appKeyPath)/sender/sms",
            headers: [("x-secret-key", try secretKey.read().value)],
            body: try [UInt8](JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])))
        if let failure = Self.failure(of: response) {
            logger.warning(
                "sms: the provider did not take a message", metadata: ["job": "\(jobID)", "error": "\(failure)"])
            throw failure
        }
    }

    /// `+821012345678` → `recipientNo: 01012345678, countryCode: 82`; other countries in international form.
    public static func recipient(_ e164: String) -> [String: String] {
        let digits = String(e164.filter(\.isASCII).filter(\.isNumber))
        if e164.hasPrefix("+82") {
            return ["recipientNo": "0" + digits.dropFirst(2), "countryCode": "82"]
        }
        return ["internationalRecipientNo": digits]
    }

    private static func failure(of response: ProviderResponse) -> (any Error)? {
        let json = response.json
        let header = json?["header"] as? [String: Any]
        let code = (header?["resultCode"] as? Int).map(String.init) ?? ""
        guard response.isSuccess else { return response.failure(provider: provider, code: code) }
        guard header?["isSuccessful"] as? Bool == true else {
            return UndeliverableMessage(reason: .rejected, provider: provider, status: response.status, code: code)
        }
        let results = ((json?["body"] as? [String: Any])?["data"] as? [String: Any])?["sendResultList"]
        if let refused = (results as? [[String: Any]])?.first(where: { ($0["resultCode"] as? Int ?? 0) != 0 }) {
            return UndeliverableMessage(
                reason: .rejected, provider: provider, status: response.status,
                code: "recipient \(refused["resultCode"] as? Int ?? 0)")
        }
        return nil
    }
}
