import NIOCore
import NIOHTTP1
import Prometheus
import SmallHTTPServer

/// Decides what each request gets: `/metrics` in Prometheus text format, `/healthz` from the health closure,
/// 404 for other paths and 405 for methods other than `GET` and `HEAD`. It knows nothing of connections.
struct ObservabilityRouter: HTTPResponder {
    /// Version 0.0.4 of the text exposition format, which every Prometheus scraper understands.
    static let prometheusContentType = "text/plain; version=0.0.4; charset=utf-8"

    let registry: PrometheusCollectorRegistry
    /// Called on an event loop for every `/healthz` request, so it must be quick and must not block.
    let isServing: @Sendable () -> Bool

    /// Everything it serves is in memory: answered on the event loop.
    func respond(to request: HTTPRequestHead, on eventLoop: any EventLoop) -> EventLoopFuture<HTTPServerResponse> {
        eventLoop.makeSucceededFuture(response(to: request))
    }

    func response(to head: HTTPRequestHead) -> HTTPServerResponse {
        guard head.method == .GET || head.method == .HEAD else {
            return .methodNotAllowed
        }
        switch Self.path(of: head.uri) {
        case "/metrics":
            var text: [UInt8] = []
            registry.emit(into: &text)
            return HTTPServerResponse(
                status: .ok,
                contentType: Self.prometheusContentType,
                body: ByteBuffer(bytes: text)
            )
        case "/healthz":
            return isServing() ? .text(.ok, "ok") : .text(.serviceUnavailable, "unavailable")
        default:
            return .text(.notFound, "not found")
        }
    }

    /// The request target without its query: scrapers may add parameters this server has no use for.
    static func path(of uri: String) -> Substring {
        uri.prefix { $0 != "?" }
    }
}
