import NIOCore
import ProtoBridge

/// Method paths (`/yedi.echo.Echo/Echo`) to the handlers that serve them.
public struct RPCRouter: Sendable {
    @usableFromInline var routes: [String: RPCRoute] = [:]

    public init() {}

    /// Every registered method.
    public var methods: [MethodDescriptor] { routes.values.map(\.method).sorted { $0.path < $1.path } }

    public mutating func register(_ service: some RPCService) {
        service.registerMethods(with: &self)
    }

    /// Registers a unary handler; a later registration of the same method replaces it.
    ///
    /// Inlinable, so that the per-call code (decoding, the task's closure, the handler call) is
    /// specialized for the method's types where the service registers it: unspecialized, a call pays
    /// generic metadata lookups and a heap buffer for the request of unknown size.
    @inlinable
    public mutating func register<Request, Response>(
        _ method: RPCMethod<Request, Response>,
        unary handler: @escaping @Sendable (Request, ServerContext) async throws -> Response
    ) {
        precondition(method.descriptor.kind == .unary, "\(method.descriptor) is not unary")
        // The call's task awaits the service's handler itself: a closure around it would cost every call
        // one more executor switch when it returns (the runtime reads the task's executor preference
        // under its lock at each).
        let respond: RPCRoute.Respond<Response> = { response, call in try call.encodeResponse(response) }
        routes[method.descriptor.path] = RPCRoute(method: method.descriptor) { payload, runner, call, context in
            let request: Request
            do throws(RPCError) { request = try Request.decodeRequest(payload) } catch {
                return runner.start(failing: error, handle: consume call, context: consume context)
            }
            return runner.start(
                request, handle: consume call, context: consume context, handler: handler, respond: respond)
        }
    }

    /// Registers a server-streaming handler: it writes any number of messages, then returns. Inlinable
    /// for the unary case's reason.
    @inlinable
    public mutating func register<Request, Response>(
        _ method: RPCMethod<Request, Response>,
        serverStreaming handler: @escaping @Sendable (Request, RPCWriter<Response>, ServerContext) async throws -> Void
    ) {
        precondition(method.descriptor.kind == .serverStreaming, "\(method.descriptor) is not server-streaming")
        let run: @Sendable ((Request, RPCWriter<Response>), ServerContext) async throws -> Void = {
            arguments, context in
            try await handler(arguments.0, arguments.1, context)
        }
        let respond: RPCRoute.Respond<Void> = { _, _ in ServerResponse(message: nil) }
        routes[method.descriptor.path] = RPCRoute(method: method.descriptor) { payload, runner, call, context in
            let request: Request
            do throws(RPCError) { request = try Request.decodeRequest(payload) } catch {
                return runner.start(failing: error, handle: consume call, context: consume context)
            }
            return runner.start(
                (request, RPCWriter(call: call)), handle: consume call, context: consume context, handler: run,
                respond: respond)
        }
    }

    /// Serves `method` without its types: the handler gets the request's bytes and returns a unary call's
    /// response bytes (a streaming call ends, OK and empty, when it returns). Internal: for tests that host
    /// every method of the catalog with one handler.
    mutating func registerRaw(
        _ method: MethodDescriptor,
        handler: @escaping @Sendable (_ payload: [UInt8], _ context: ServerContext) async throws -> [UInt8]
    ) {
        let respond: RPCRoute.Respond<[UInt8]> = { response, _ in
            ServerResponse(message: method.kind == .unary ? ByteBuffer(bytes: response) : nil)
        }
        routes[method.path] = RPCRoute(method: method) { payload, runner, call, context in
            runner.start(
                Array(payload.readableBytesView), handle: consume call, context: consume context, handler: handler,
                respond: respond)
        }
    }

    /// Routes every method of `service` to `UNIMPLEMENTED`, saying so: for a service whose API is
    /// published before its handlers are written. Registering a handler later replaces the placeholder.
    public mutating func registerPlaceholder(for service: ServiceDescriptor) {
        for method in service.methods where routes[method.path] == nil {
            routes[method.path] = RPCRoute(method: method) { _, runner, call, context in
                runner.start(
                    failing: RPCError(code: .unimplemented, message: "\(method.path) is not implemented yet"),
                    handle: consume call, context: consume context)
            }
        }
    }

    func route(for path: String) -> RPCRoute? { routes[path] }
}

/// One registered method, with its request and response types erased. An object, so that looking it up
/// and handing it on for every call copies one reference rather than each of its parts.
@usableFromInline
final class RPCRoute: Sendable {
    /// Starts a call of this method: decodes its request and runs the handler with it (`ServerCallRunner`).
    /// The call's handle and context are the connection's to give: consumed, they move into the task's
    /// closure instead of being copied there (a retain per reference) and let go of after.
    @usableFromInline typealias Start =
        @Sendable (
            _ payload: ByteBuffer, _ runner: ServerCallRunner, _ call: consuming ServerCallHandle,
            _ context: consuming ServerContext
        )
        -> Task<Void, Never>

    /// Makes a call's response of what its handler returned (a unary call's message, encoded); made once
    /// per method. Synchronous, so calling it costs no executor switch.
    @usableFromInline typealias Respond<Output> =
        @Sendable (_ output: Output, _ call: ServerCallHandle) throws -> ServerResponse

    @usableFromInline let method: MethodDescriptor
    /// Decodes the request from the received bytes, once, before the call's task starts, so no handler
    /// keeps the connection's receive buffer alive; the typed request then rides in the closure of the
    /// call's task, the one closure made per call (this one and the handler's are made once per method). A request that does not decode still
    /// becomes a call, one that fails with INVALID_ARGUMENT inside the interceptors: authentication
    /// answers first, and the failure is logged and counted like any other.
    @usableFromInline let start: Start
    /// How large this method's replies have been (for a unary call's share of the memory budget).
    @usableFromInline let replySizes = ReplySizeEstimate()

    @usableFromInline
    init(method: MethodDescriptor, start: @escaping Start) {
        self.method = method
        self.start = start
    }
}

extension ProtoMessage {
    /// An undecodable request is the caller's fault: `INVALID_ARGUMENT`, naming the message type, or
    /// the field and its limit when a value is over its declared size.
    @inlinable
    static func decodeRequest(_ payload: ByteBuffer) throws(RPCError) -> Self {
        do {
            return try Self(buffer: payload)
        } catch {
            throw RPCError(code: .invalidArgument, message: error.sizeLimitText ?? error.description)
        }
    }
}
