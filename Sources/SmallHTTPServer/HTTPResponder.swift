import NIOCore
import NIOHTTP1

/// What a `HTTPServer` serves: the response to each complete request (its head; bodies are only counted).
///
/// Called on the connection's event loop. A responder that can answer at once (from memory) returns a
/// succeeded future without leaving the loop; one that must read a file or a database completes the
/// future later, from anywhere. The connection reads no further request meanwhile (NIO's pipelining
/// handler holds them back), so each connection has at most one response in the making.
public protocol HTTPResponder: Sendable {
    func respond(to request: HTTPRequestHead, on eventLoop: any EventLoop) -> EventLoopFuture<HTTPServerResponse>
}
