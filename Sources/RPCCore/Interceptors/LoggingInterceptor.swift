import Logging

/// Logs one line per call: method, status, duration, request id and caller (a user as a keyed tag,
/// `ServerContext.userTag`) — never metadata values such as tokens, nor messages (which may hold
/// passwords).
///
/// Gives calls without a `request-id` one, so every line of a call can be found.
public struct ServerLoggingInterceptor: ServerInterceptor {
    private let level: Logger.Level
    private let requestIDs: @Sendable () -> String

    /// - Parameter requestIDs: makes ids for calls that come without one (injected for tests).
    public init(level: Logger.Level = .info, requestIDs: @escaping @Sendable () -> String) {
        self.level = level
        self.requestIDs = requestIDs
    }

    public func intercept(
        context: ServerContext,
        next: @Sendable (ServerContext) async throws -> ServerResponse
    ) async throws -> ServerResponse {
        var context = context
        if context.metadata["request-id"] == nil {
            // Known absent: append, instead of the setter's scan to remove earlier values.
            context.metadata.add("request-id", requestIDs())
        }
        let start = ContinuousClock.now
        do {
            let response = try await next(context)
            log(context, start: start, code: .ok, message: nil)
            return response
        } catch let error as RPCError {
            log(context, start: start, code: error.code, message: error.message)
            throw error
        } catch is CancellationError {
            log(context, start: start, code: .cancelled, message: nil)
            throw CancellationError()
        } catch {
            log(context, start: start, code: .internalError, message: nil)
            throw error
        }
    }

    public func callRefused(_ method: MethodDescriptor, error: RPCError, logger: Logger) {
        var metadata: Logger.Metadata = ["rpc.status": "\(error.code.name)", "rpc.duration_ms": "0.000"]
        if !error.message.isEmpty { metadata["rpc.message"] = "\(error.message)" }
        logger.log(level: level, "rpc", metadata: metadata)
    }

    private func log(_ context: ServerContext, start: ContinuousClock.Instant, code: StatusCode, message: String?) {
        // What the client received, when the connection ended the call before the handler returned.
        let sent = context.statusSentEarly
        let code = sent?.code ?? code
        let message = sent?.message ?? message
        var metadata: Logger.Metadata = [
            "rpc.status": "\(code.name)",
            "rpc.duration_ms": "\(Self.milliseconds(ContinuousClock.now - start))",
            "rpc.caller": "\(context.authenticatedIdentity?.logName(userTag: context.userTag) ?? "anonymous")",
        ]
        if let message, !message.isEmpty { metadata["rpc.message"] = "\(message)" }
        // Server errors stand out; a client's mistakes do not.
        let level: Logger.Level = [.internalError, .unknown, .dataLoss].contains(code) ? .error : level
        context.logger.log(level: level, "rpc", metadata: metadata)
    }

    /// `12.345`
    static func milliseconds(_ duration: Duration) -> String {
        let micros = duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
        return "\(micros / 1_000).\(String(micros % 1_000 + 1_000).dropFirst())"
    }
}

/// Logs each call a client makes at `debug` (failures at `notice`): method, status, duration.
public struct ClientLoggingInterceptor: ClientInterceptor {
    private let logger: Logger

    public init(logger: Logger) {
        self.logger = logger
    }

    public func intercept<Result: Sendable>(
        _ call: ClientCall,
        next: (ClientCall) async throws -> Result
    ) async throws -> Result {
        let start = ContinuousClock.now
        var metadata: Logger.Metadata = ["rpc.method": "\(call.method.path)"]
        if let requestID = call.options.metadata["request-id"] { metadata["request-id"] = "\(requestID)" }
        do {
            let result = try await next(call)
            metadata["rpc.status"] = "OK"
            metadata["rpc.duration_ms"] = "\(ServerLoggingInterceptor.milliseconds(ContinuousClock.now - start))"
            logger.debug("rpc call", metadata: metadata)
            return result
        } catch {
            let code = (error as? RPCError)?.code ?? .unknown
            metadata["rpc.status"] = "\(code.name)"
            metadata["rpc.duration_ms"] = "\(ServerLoggingInterceptor.milliseconds(ContinuousClock.now - start))"
            logger.notice("rpc call failed", metadata: metadata)
            throw error
        }
    }
}
