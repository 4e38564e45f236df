import NIOCore
import ProtoBridge

/// Method paths (`/yedi.echo.Echo/Echo`) to the handlers that serve them.
public struct RPCRouter: Sendable {
    private(set) var routes: [String: RPCRoute] = [:]

    public init() {}

    /// Every registered method.
    public var methods: [MethodDescriptor] { routes.values.map(\.method).sorted { $0.path < $1.path } }

    public mutating func register(_ service: some RPCService) {
        service.registerMethods(with: &self)
    }

    /// Registers a unary handler; a later registration of the same method replaces it.
    public mutating func register<Request, Response>(
        _ method: RPCMethod<Request, Response>,
        unary handler: @escaping @Sendable (Request, ServerContext) async throws -> Response
    ) {
        precondition(method.descriptor.kind == .unary, "\(method.descriptor) is not unary")
        routes[method.descriptor.path] = RPCRoute(method: method.descriptor) { payload in
            let request: Request
            do throws(RPCError) { request = try Request.decodeRequest(payload) } catch {
                return RPCRoute.failing(error)
            }
            return { call, context in
                let response = try await handler(request, context)
                return try call.encodeResponse(response)
            }
        }
    }

    /// Registers a server-streaming handler: it writes any number of messages, then returns.
    public mutating func register<Request, Response>(
        _ method: RPCMethod<Request, Response>,
        serverStreaming handler: @escaping @Sendable (Request, RPCWriter<Response>, ServerContext) async throws -> Void
    ) {
        precondition(method.descriptor.kind == .serverStreaming, "\(method.descriptor) is not server-streaming")
        routes[method.descriptor.path] = RPCRoute(method: method.descriptor) { payload in
            let request: Request
            do throws(RPCError) { request = try Request.decodeRequest(payload) } catch {
                return RPCRoute.failing(error)
            }
            return { call, context in
                try await handler(request, RPCWriter(call: call), context)
                return ServerResponse(message: nil)
            }
        }
    }

    /// Serves `method` without its types: the handler gets the request's bytes and returns a unary call's
    /// response bytes (a streaming call ends, OK and empty, when it returns). Internal: for tests that host
    /// every method of the catalog with one handler.
    mutating func registerRaw(
        _ method: MethodDescriptor,
        handler: @escaping @Sendable (_ payload: [UInt8], _ context: ServerContext) async throws -> [UInt8]
    ) {
        routes[method.path] = RPCRoute(method: method) { payload in
            let request = Array(payload.readableBytesView)
            return { _, context in
                let response = try await handler(request, context)
                return ServerResponse(message: method.kind == .unary ? ByteBuffer(bytes: response) : nil)
            }
        }
    }

    /// Routes every method of `service` to `UNIMPLEMENTED`, saying so: for a service whose API is
    /// published before its handlers are written. Registering a handler later replaces the placeholder.
    public mutating func registerPlaceholder(for service: ServiceDescriptor) {
        for method in service.methods where routes[method.path] == nil {
            routes[method.path] = RPCRoute(method: method) { _ in
                RPCRoute.failing(RPCError(code: .unimplemented, message: "\(method.path) is not implemented yet"))
            }
        }
    }

    func route(for path: String) -> RPCRoute? { routes[path] }
}

/// One registered method, with its request and response types erased.
struct RPCRoute: Sendable {
    /// A call ready to run: the handler with its decoded request. Returns a unary call's encoded response.
    typealias PreparedCall =
        @Sendable (_ call: ServerCallHandle, _ context: ServerContext) async throws -> ServerResponse

    let method: MethodDescriptor
    /// Decodes the request from the received bytes, once, before the call's task starts, so no handler
    /// keeps the connection's receive buffer alive. A request that does not decode still becomes a call,
    /// one that fails with INVALID_ARGUMENT inside the interceptors: authentication answers first, and
    /// the failure is logged and counted like any other.
    let prepare: @Sendable (_ payload: ByteBuffer) -> PreparedCall
    /// How large this method's replies have been (for a unary call's share of the memory budget).
    let replySizes = ReplySizeEstimate()

    static func failing(_ error: RPCError) -> PreparedCall {
        { _, _ in throw error }
    }
}

extension ProtoMessage {
    /// An undecodable request is the caller's fault: `INVALID_ARGUMENT`, naming the message type, or
    /// the field and its limit when a value is over its declared size.
    static func decodeRequest(_ payload: ByteBuffer) throws(RPCError) -> Self {
        do {
            return try Self(buffer: payload)
        } catch {
            throw RPCError(code: .invalidArgument, message: error.sizeLimitText ?? error.description)
        }
    }
}
