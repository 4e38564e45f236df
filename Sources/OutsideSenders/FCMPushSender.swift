import AsyncHTTPClient
import Foundation
import Logging
import ServiceRuntime
import YediProto

/// Push through Firebase Cloud Messaging's HTTP v1 API: `POST {url}/v1/projects/{project}/messages:send`
/// with `Authorization: Bearer <OAuth access token>` (https://firebase.google.com/docs/reference/fcm/rest/v1/projects.messages/send).
///
/// The access token is read from its file (or the environment) at each send; minting it from a service
/// account key (a signed JWT exchanged at Google's token endpoint) is not built yet, so an operator's job
/// refreshes the file before the hour-long token expires. FCM has no idempotency key: the outbox job id
/// goes in the message's `data` as `yedi_job_id`, so an app can drop a duplicate notification.
/// Dead tokens: FCM's `UNREGISTERED` (404) and `SENDER_ID_MISMATCH` (403, a token of another project)
/// throw `UndeliverableMessage(.deadDeviceToken)`, which a device registry reads (`isDeadDeviceToken`)
/// to forget the token; `INVALID_ARGUMENT` (400) and other 4xx `.rejected`; 401 and other 403
/// `.unauthorized`; `QUOTA_EXCEEDED` (429), `UNAVAILABLE` (503), `INTERNAL` (500) and timeouts
/// `RetryableSendError`.
public struct FCMPushSender: PushSender {
    public static let provider = "fcm"

    private let client: ProviderClient
    private let project: String
    private let accessToken: SecretSource
    private let logger: Logger

    public init(
        url: String, project: String, accessToken: SecretSource,
        settings: ProviderHTTPSettings = ProviderHTTPSettings(), http: HTTPClient = .shared, logger: Logger
    ) {
        self.client = ProviderClient(provider: Self.provider, baseURL: url, settings: settings, http: http)
        self.project = project
        self.accessToken = accessToken
        self.logger = logger
    }

    public func send(_ push: YediRuntime.PushMessage, jobID: String) async throws {
        var data = Dictionary(push.values.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last })
        data["yedi_job_id"] = jobID
        data["yedi_template"] = push.template
        let body: [String: Any] = [
            "message": [
                "token": push.deviceToken,
                "notification": ["title": push.title, "body": push.body],
                "data": data,
            ]
        ]
        let projectPath = project.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(["-"])) ?? ""
        let response = try await client.postJSON(
            path: "/v1/projects/\(projectPath)/messages:send",
            headers: [("authorization", "Bearer \(try accessToken.read().value)")],
            body: try [UInt8](JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])))
        guard response.isSuccess else {
            let failure = Self.failure(of: response)
            logger.warning(
                "push: the provider did not take a message", metadata: ["job": "\(jobID)", "error": "\(failure)"])
            throw failure
        }
    }

    /// FCM's error: `{"error": {"code": 404, "status": "NOT_FOUND", "details": [{"@type":
    /// "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "UNREGISTERED"}]}}`.
    static func failure(of response: ProviderResponse) -> any Error {
        let error = response.json?["error"] as? [String: Any]
        let fcmCode = (error?["details"] as? [[String: Any]])?.lazy.compactMap { $0["errorCode"] as? String }.first
        let code = fcmCode ?? (error?["status"] as? String) ?? ""
        if code == "UNREGISTERED" || code == "SENDER_ID_MISMATCH" {
            return UndeliverableMessage(
                reason: .deadDeviceToken, provider: provider, status: response.status, code: code)
        }
        return response.failure(provider: provider, code: code)
    }
}
