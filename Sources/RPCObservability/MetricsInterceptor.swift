import CoreMetrics
import Logging
import NIOCore
import RPCCore
import YediSync

/// The metrics of one side (server or client), per method: calls, latency, and errors by code.
///
/// Metric objects are made once per method (and code) and kept: looking them up in the factory on
/// every call would take the factory's lock each time.
final class RPCMetrics: Sendable {
    private struct Method {
        let calls: Counter
        let duration: Timer
    }

    private let prefix: String
    private let factory: any MetricsFactory
    private let methods = TSanVisibleMutex<[String: Method]>([:])
    private let errors = TSanVisibleMutex<[String: Counter]>([:])

    /// - Parameter side: "server" or "client", part of every label (`yedi_rpc_server_calls_total`).
    init(side: String, factory: any MetricsFactory) {
        prefix = "yedi_rpc_\(side)"
        self.factory = factory
    }

    /// `nanoseconds` nil: a call refused before it started counts, but has no duration to record.
    func record(_ method: MethodDescriptor, code: StatusCode, nanoseconds: Int64?) {
        let metrics = methods.withLock { methods in
            if let existing = methods[method.path] { return existing }
            let dimensions = [("method", method.path)]
            let made = Method(
                calls: Counter(label: "\(prefix)_calls_total", dimensions: dimensions, factory: factory),
                duration: Timer(label: "\(prefix)_duration_seconds", dimensions: dimensions, factory: factory)
            )
            methods[method.path] = made
            return made
        }
        metrics.calls.increment()
        if let nanoseconds { metrics.duration.recordNanoseconds(nanoseconds) }
        guard code != .ok else { return }
        let key = "\(method.path) \(code.name)"
        let counter = errors.withLock { errors in
            if let existing = errors[key] { return existing }
            let made = Counter(
                label: "\(prefix)_errors_total",
                dimensions: [("method", method.path), ("code", code.name)],
                factory: factory
            )
            errors[key] = made
            return made
        }
        counter.increment()
    }
}

/// Server metrics through swift-metrics (exported in Prometheus text by `ObservabilityServer`):
/// `yedi_rpc_server_calls_total` and `yedi_rpc_server_duration_seconds` per method, and
/// `yedi_rpc_server_errors_total` per method and status code.
public struct ServerMetricsInterceptor: ServerInterceptor {
    private let metrics: RPCMetrics

    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        metrics = RPCMetrics(side: "server", factory: factory)
    }

    public func intercept(
        context: ServerContext,
        next: @Sendable (ServerContext) async throws -> ServerResponse
    ) async throws -> ServerResponse {
        let start = NIODeadline.now()
        do {
            let response = try await next(context)
            // What the client received, when the connection ended the call before the handler returned.
            let code = context.statusSentEarly?.code ?? .ok
            metrics.record(context.method, code: code, nanoseconds: (NIODeadline.now() - start).nanoseconds)
            return response
        } catch {
            let code =
                context.statusSentEarly?.code
                ?? (error as? RPCError)?.code ?? (error is CancellationError ? .cancelled : .internalError)
            metrics.record(context.method, code: code, nanoseconds: (NIODeadline.now() - start).nanoseconds)
            throw error
        }
    }

    public func callRefused(_ method: MethodDescriptor, error: RPCError, logger: Logger) {
        metrics.record(method, code: error.code, nanoseconds: nil)
    }
}

/// Client metrics, as the server's: `yedi_rpc_client_calls_total`, `_duration_seconds`, `_errors_total`.
public struct ClientMetricsInterceptor: ClientInterceptor {
    private let metrics: RPCMetrics

    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        metrics = RPCMetrics(side: "client", factory: factory)
    }

    public func intercept<Result: Sendable>(
        _ call: ClientCall,
        next: (ClientCall) async throws -> Result
    ) async throws -> Result {
        let start = NIODeadline.now()
        do {
            let result = try await next(call)
            metrics.record(call.method, code: .ok, nanoseconds: (NIODeadline.now() - start).nanoseconds)
            return result
        } catch {
            let code = (error as? RPCError)?.code ?? .unknown
            metrics.record(call.method, code: code, nanoseconds: (NIODeadline.now() - start).nanoseconds)
            throw error
        }
    }
}
