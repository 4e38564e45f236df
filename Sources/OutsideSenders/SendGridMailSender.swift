import AsyncHTTPClient
import Foundation
import Logging
import ServiceRuntime
import YediProto

/// Mail through SendGrid's v3 Web API: `POST {url}/v3/mail/send` with `Authorization: Bearer <key>` and
/// a JSON body (https://www.twilio.com/docs/sendgrid/api-reference/mail-send/mail-send).
///
/// SendGrid answers 202 when it has taken the message. It has no idempotency key: the outbox job id goes
/// in `custom_args.yedi_job_id` (shown in its event webhooks and activity feed), so a duplicate, possible
/// only when an answer is lost after SendGrid took the message, can be traced, not prevented.
/// Answers: 2xx sent; 401/403 `UndeliverableMessage(.unauthorized)` (kept and retried: the key is wrong);
/// other 4xx `UndeliverableMessage(.rejected)` (the job is dropped); 408, 429, 5xx and timeouts
/// `RetryableSendError`.
public struct SendGridMailSender: MailSender {
    public static let provider = "sendgrid"

    private let client: ProviderClient
    private let apiKey: SecretSource
    private let from: String
    private let logger: Logger

    /// - Parameters:
    ///   - url: The API's base URL (`https://api.sendgrid.com`).
    ///   - apiKey: Read at each send, so rewriting its file rotates the key.
    ///   - from: The sender's address (a verified sender of the SendGrid account).
    public init(
        url: String, apiKey: SecretSource, from: String, settings: ProviderHTTPSettings = ProviderHTTPSettings(),
        http: HTTPClient = .shared, logger: Logger
    ) {
        self.client = ProviderClient(provider: Self.provider, baseURL: url, settings: settings, http: http)
        self.apiKey = apiKey
        self.from = from
        self.logger = logger
    }

    public func send(_ mail: YediRuntime.MailMessage, jobID: String) async throws {
        let body: [String: Any] = [
            "personalizations": [["to": [["email": mail.to]]]],
            "from": ["email": from],
            "subject": mail.subject,
            "content": [["type": "text/plain", "value": mail.text]],
            "custom_args": ["yedi_job_id": jobID, "yedi_template": mail.template],
        ]
        let response = try await client.postJSON(
            path: "/v3/mail/send",
            headers: [("authorization", "Bearer \(try apiKey.read().value)")],
            body: try [UInt8](JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])))
        guard response.isSuccess else {
            // {"errors":[{"message":"…","field":"…"}]}
            let message = ((response.json?["errors"] as? [[String: Any]])?.first?["message"] as? String) ?? ""
            let failure = response.failure(provider: Self.provider, code: message)
            logger.warning(
                "mail: the provider did not take a message", metadata: ["job": "\(jobID)", "error": "\(failure)"])
            throw failure
        }
    }
}
