import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ServiceRuntime

/// One provider's HTTP endpoint as the three adapters use it: a JSON `POST` under a deadline, the answer's
/// body read up to a bound, and every way of getting no answer turned into a `RetryableSendError`. The
/// credential goes only into the request's headers; nothing here logs a header, a URL or a body.
struct ProviderClient: Sendable {
    /// The provider's name in errors and logs ("sendgrid").
    let provider: String
    /// Without a trailing slash.
    let baseURL: String
    let settings: ProviderHTTPSettings
    let http: HTTPClient

    init(provider: String, baseURL: String, settings: ProviderHTTPSettings, http: HTTPClient) {
        self.provider = provider
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.settings = settings
        self.http = http
    }

    /// POSTs `body` (JSON) to `baseURL + path`; throws `RetryableSendError` when no answer came in time.
    func postJSON(path: String, headers: [(String, String)], body: [UInt8]) async throws -> ProviderResponse {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = .POST
        request.headers = HTTPHeaders(headers + [("content-type", "application/json; charset=utf-8")])
        request.body = .bytes(ByteBuffer(bytes: body))
        return try await execute(request)
    }

    /// POSTs `fields` form-encoded (`application/x-www-form-urlencoded`: an OAuth token exchange).
    func postForm(path: String, fields: [(String, String)]) async throws -> ProviderResponse {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let body = fields.map { name, value in
            "\(name.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")="
                + (value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")
        }.joined(separator: "&")
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = .POST
        request.headers = HTTPHeaders([("content-type", "application/x-www-form-urlencoded")])
        request.body = .bytes(ByteBuffer(bytes: Array(body.utf8)))
        return try await execute(request)
    }

    /// GETs `baseURL + path` (a key set, a token's information); the same deadline, bound and errors.
    func get(path: String, headers: [(String, String)]) async throws -> ProviderResponse {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = .GET
        request.headers = HTTPHeaders(headers)
        return try await execute(request)
    }

    private func execute(_ request: HTTPClientRequest) async throws -> ProviderResponse {
        let deadline =
            NIODeadline.now()
            + .nanoseconds(
                Int64(settings.timeout.components.seconds) * 1_000_000_000
                    + settings.timeout.components.attoseconds / 1_000_000_000)
        do {
            let response = try await http.execute(request, deadline: deadline)
            var received: [UInt8] = []
            for try await chunk in response.body {
                received += chunk.readableBytesView.prefix(settings.maxResponseBytes - received.count)
                if received.count >= settings.maxResponseBytes { break }
            }
            return ProviderResponse(status: Int(response.status.code), body: received)
        } catch let error as HTTPClientError
            where error == .deadlineExceeded || error == .readTimeout
            || error == .connectTimeout
        {
            throw RetryableSendError(provider: provider, status: nil, code: "timeout")
        } catch {
            // Connection refused, reset, TLS: the type and the cause, which name no header or path.
            throw RetryableSendError(provider: provider, status: nil, code: "no answer: \(error)")
        }
    }
}
