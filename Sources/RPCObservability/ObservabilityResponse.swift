import NIOCore
import NIOHTTP1

/// A complete response of the observability server, before framing: the connection handler adds the length and
/// the connection headers, and leaves the body out for `HEAD`.
struct ObservabilityResponse {
    var status: HTTPResponseStatus
    var headers: HTTPHeaders
    var body: ByteBuffer

    init(status: HTTPResponseStatus, contentType: String, body: ByteBuffer) {
        self.status = status
        self.headers = HTTPHeaders([("content-type", contentType)])
        self.body = body
    }

    /// A short plain-text response such as `ok`.
    static func text(_ status: HTTPResponseStatus, _ text: String) -> Self {
        Self(status: status, contentType: "text/plain; charset=utf-8", body: ByteBuffer(string: text + "\n"))
    }

    static var methodNotAllowed: Self {
        var response = text(.methodNotAllowed, "method not allowed")
        response.headers.add(name: "allow", value: "GET, HEAD")
        return response
    }

    static var payloadTooLarge: Self {
        text(.payloadTooLarge, "request body too large")
    }
}
