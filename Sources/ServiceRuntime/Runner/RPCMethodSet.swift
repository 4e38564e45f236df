import RPCCore

/// Some methods of a service, registered one by one: for a service whose other methods are still
/// placeholders (they answer UNIMPLEMENTED until their issue lands).
public struct RPCMethodSet: RPCService {
    public let serviceDescriptor: ServiceDescriptor
    private let registration: @Sendable (inout RPCRouter) -> Void

    public init(_ service: ServiceDescriptor, register: @escaping @Sendable (inout RPCRouter) -> Void) {
        self.serviceDescriptor = service
        self.registration = register
    }

    public func registerMethods(with router: inout RPCRouter) {
        registration(&router)
    }
}
