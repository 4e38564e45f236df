import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle
import ServiceRuntime
import SmallHTTPServer

/// The payment provider's webhook: `POST /payments/webhook` on loopback by default (a proxy in front
/// terminates TLS), refusing anything whose signature does not check out (`WebhookSignature`). It only
/// records the event (`PaymentStore.recordEvent`, with its outbox job in the same transaction); the
/// payment worker processes it and asks the provider about the order rather than trusting the body.
///
/// Built like `SmallHTTPServer.HTTPServer` (whose responders see no request body): NIO's HTTP/1.1 server
/// pipeline with the same connection bookkeeping (`HTTPConnections`, at most `maxConnections`) and address
/// latch, drained on graceful shutdown.
final class PaymentWebhookServer: Service, Sendable {
    static let path = "/payments/webhook"
    static let maxBodyBytes = 64 * 1_024
    /// A provider sends a few deliveries at a time; more connections than this are refused.
    static let maxConnections = 64
    /// A connection that sends nothing for this long is closed (a silent client holds no slot).
    static let idleTimeout = TimeAmount.seconds(30)

    let host: String
    let port: Int
    private let signature: WebhookSignature
    private let store: any PaymentStore
    private let clock: any WallClock
    private let logger: Logger
    private let address = ListeningAddressLatch()

    init(
        host: String, port: Int, signature: WebhookSignature, store: any PaymentStore, clock: any WallClock,
        logger: Logger
    ) {
        self.host = host
        self.port = port
        self.signature = signature
        self.store = store
        self.clock = clock
        self.logger = logger
    }

    /// The bound port (for port 0), once `run()` has bound it.
    var boundPort: Int {
        get async throws { try await address.wait().port ?? 0 }
    }

    func run() async throws {
        let connections = HTTPConnections(limit: Self.maxConnections)
        let listener: any Channel
        do {
            listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { [self] channel in
                    channel.eventLoop.makeCompletedFuture {
                        guard connections.admit(channel) else { throw CancellationError() }
                        try channel.pipeline.syncOperations.addHandler(
                            IdleStateHandler(readTimeout: Self.idleTimeout))
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                        try channel.pipeline.syncOperations.addHandler(
                            PaymentWebhookHandler(maxBodyBytes: Self.maxBodyBytes) { head, body in
                                await self.receive(head, body)
                            })
                    }
                }
                .bind(host: host, port: port).get()
        } catch {
            address.resolve(.failure(error))
            throw error
        }
        address.resolve(.success(listener.localAddress!))
        logger.info("payment webhook listening", metadata: ["address": "\(listener.localAddress!)"])
        await connections.serve(listener)
    }

    /// Checks, parses and records one delivery; the answer tells the provider whether to send it again
    /// (anything but 2xx is retried by the provider).
    func receive(_ head: HTTPRequestHead, _ body: [UInt8]) async -> (HTTPResponseStatus, String) {
        guard head.uri.prefix(while: { $0 != "?" }) == Self.path else { return (.notFound, "not found") }
        guard head.method == .POST else { return (.methodNotAllowed, "POST only") }
        let now = clock.nowMilliseconds
        if let problem = signature.problem(
            body: body, signature: head.headers.first(name: WebhookSignature.signatureHeader),
            transmissionTime: head.headers.first(name: WebhookSignature.timeHeader), now: now)
        {
            logger.warning("payment webhook refused", metadata: ["problem": "\(problem)"])
            return (.unauthorized, "refused")
        }
        guard let event = WebhookEvent(body: body) else { return (.badRequest, "not a payment event") }
        do {
            let recorded = try await store.recordEvent(
                id: event.id, type: event.type, orderID: event.orderID, providerStatus: event.status, now: now)
            logger.info("payment webhook", metadata: ["event": "\(event.id)", "new": "\(recorded)"])
            return (.ok, "ok")
        } catch {
            logger.error("payment webhook: cannot record", metadata: ["error": "\(error)"])
            return (.serviceUnavailable, "try again")
        }
    }
}
