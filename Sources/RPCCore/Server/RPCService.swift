/// A service implementation a server can host. Generated `ServiceProtocol`s refine it, so implementing
/// one is writing the handler methods; the generated extension registers them.
public protocol RPCService: Sendable {
    var serviceDescriptor: ServiceDescriptor { get }
    func registerMethods(with router: inout RPCRouter)
}
