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
        routes[method.descriptor.path] = RPCRoute(method: method.descriptor) { payload, call, context in
            let request = try Request.decodeRequest(payload)
            let response = try await handler(request, context)
            return ServerResponse(message: try call.encode(response))
        }
    }

    /// Registers a server-streaming handler: it writes any number of messages, then returns.
    public mutating func register<Request, Response>(
        _ method: RPCMethod<Request, Response>,
        serverStreaming handler: @escaping @Sendable (Request, RPCWriter<Response>, ServerContext) async throws -> Void
    ) {
        precondition(method.descriptor.kind == .serverStreaming, "\(method.descriptor) is not server-streaming")
        routes[method.descriptor.path] = RPCRoute(method: method.descriptor) { payload, call, context in
            let request = try Request.decodeRequest(payload)
            try await handler(request, RPCWriter(call: call), context)
            return ServerResponse(message: nil)
        }
    }

    /// Serves `method` without its types: the handler gets the request's bytes and returns a unary call's
    /// response bytes (a streaming call ends, OK and empty, when it returns). Internal: for tests that host
    /// every method of the catalog with one handler.
    mutating func registerRaw(
        _ method: MethodDescriptor,
        handler: @escaping @Sendable (_ payload: [UInt8], _ context: ServerContext) async throws -> [UInt8]
    ) {
        routes[method.path] = RPCRoute(method: method) { payload, call, context in
            let response = try await handler(payload, context)
            return ServerResponse(message: method.kind == .unary ? ByteBuffer(bytes: response) : nil)
        }
    }

    /// Routes every method of `service` to `UNIMPLEMENTED`, saying so: for a service whose API is
    /// published before its handlers are written. Registering a handler later replaces the placeholder.
    public mutating func registerPlaceholder(for service: ServiceDescriptor) {
        for method in service.methods where routes[method.path] == nil {
            routes[method.path] = RPCRoute(method: method) { _, _, _ in
                throw RPCError(code: .unimplemented, message: "\(method.path) is not implemented yet")
            }
        }
    }

    func route(for path: String) -> RPCRoute? { routes[path] }
}

/// One registered method, with its request and response types erased.
struct RPCRoute: Sendable {
    let method: MethodDescriptor
    /// Decodes the request and runs the handler; returns a unary call's encoded response.
    let run:
        @Sendable (_ payload: [UInt8], _ call: ServerCallHandle, _ context: ServerContext) async throws ->
            ServerResponse
}

extension ProtoMessage {
    /// An undecodable request is the caller's fault: `INVALID_ARGUMENT`, naming the message type.
    static func decodeRequest(_ payload: [UInt8]) throws(RPCError) -> Self {
        do {
            return try Self(serializedBytes: payload)
        } catch {
            throw RPCError(code: .invalidArgument, message: error.description)
        }
    }
}
