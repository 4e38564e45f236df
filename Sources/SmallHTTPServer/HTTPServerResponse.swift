import NIOCore
import NIOHTTP1

/// A complete response of a `HTTPServer`, before framing: the connection handler adds the length and the
/// connection headers, and leaves the body out for `HEAD` (so a responder answers `HEAD` as it would `GET`).
public struct HTTPServerResponse: Sendable {
    public var status: HTTPResponseStatus
    public var headers: HTTPHeaders
    public var body: ByteBuffer

    public init(status: HTTPResponseStatus, contentType: String, body: ByteBuffer) {
        self.init(status: status, headers: HTTPHeaders([("content-type", contentType)]), body: body)
    }

    public init(status: HTTPResponseStatus, headers: HTTPHeaders, body: ByteBuffer) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A short plain-text response such as `ok`.
    public static func text(_ status: HTTPResponseStatus, _ text: String) -> Self {
        Self(status: status, contentType: "text/plain; charset=utf-8", body: ByteBuffer(string: text + "\n"))
    }

    public static var methodNotAllowed: Self {
        var response = text(.methodNotAllowed, "method not allowed")
        response.headers.add(name: "allow", value: "GET, HEAD")
        return response
    }

    static var payloadTooLarge: Self {
        text(.payloadTooLarge, "request body too large")
    }
}
