import Foundation
import Logging
import RPCAccess
import RPCCore
import RPCTestSupport

extension ServiceHarness {
    /// Stands in for peer service `name` (for example "booking") when a test needs only a few of its
    /// methods: a server on a free loopback port presenting `name`'s certificate, so a real peer client
    /// (which checks the server's service identity) accepts it. Access tokens and `yedi-on-behalf-of` are
    /// verified with the test signing key against the wall clock (the fixtures issue them at the real
    /// time). Callers are told apart by their
    /// certificates, as in the real services: `context.caller` is `.service(name:)` for a service client.
    ///
    /// Build `services` from `RPCMethodSet(descriptor) { router in router.register(method, unary: …) }`.
    public func startFakePeer(_ name: String, services: [any RPCService]) async throws -> RunningServer {
        var logger = Logger(label: "test.fake-\(name)")
        logger.logLevel = .warning
        return try await RunningServer.start(
            pki: pki,
            services: services,
            interceptors: [AuthenticationInterceptor(verifier: try pki.tokenVerifier(now: Date.init))],
            clientCertificates: .optional,
            logger: logger
        ) { configuration in
            configuration.tls = pki.serverConfiguration(name, clientCertificates: .optional)
        }
    }
}
