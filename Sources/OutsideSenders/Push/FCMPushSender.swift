import AsyncHTTPClient
import Foundation
import Logging
import ServiceRuntime
import YediProto

/// Push through Firebase Cloud Messaging's HTTP v1 API: `POST {url}/v1/projects/{project}/messages:send`
/// with `Authorization: Bearer <OAuth access token>` (https://firebase.google.com/docs/reference/fcm/rest/v1/projects.messages/send).
///
/// The OAuth access token is minted from a service-account key (`GoogleServiceAccountTokens`, kept until
/// shortly before it expires, dropped when FCM answers 401), or read from a file an operator refreshes
/// (`FCMCredential.accessToken`). FCM has no idempotency key: the outbox job id
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
    private let credential: FCMCredential
    private let logger: Logger

    public init(
        url: String, project: String, credential: FCMCredential,
        settings: ProviderHTTPSettings = ProviderHTTPSettings(), http: HTTPClient = .shared, logger: Logger
    ) {
        self.client = ProviderClient(provider: Self.provider, baseURL: url, settings: settings, http: http)
        self.project = project
        self.credential = credential
        self.logger = logger
    }

    /// With an access token an operator keeps fresh.
    public init(
        url: String, project: String, accessToken: SecretSource,
        settings: ProviderHTTPSettings = ProviderHTTPSettings(), http: HTTPClient = .shared, logger: Logger
    ) {
        self.init(
            url: url, project: project, credential: .accessToken(accessToken), settings: settings, http: http,
            logger: logger)
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
            headers: [("authorization", "Bearer \(try await credential.token())")],
            body: try [UInt8](JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])))
        guard response.isSuccess else {
            if response.status == 401, case .serviceAccount(let tokens) = credential { await tokens.discard() }
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

/// Where FCM's bearer token comes from.
public enum FCMCredential: Sendable {
    /// A token an operator's job keeps fresh in a file (or the environment), read at each send.
    case accessToken(SecretSource)
    /// Minted from a service-account key and kept until shortly before it expires.
    case serviceAccount(GoogleServiceAccountTokens)

    func token() async throws -> String {
        switch self {
        case .accessToken(let source): try source.read().value
        case .serviceAccount(let tokens): try await tokens.accessToken()
        }
    }
}
