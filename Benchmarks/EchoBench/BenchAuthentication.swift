import AccessTokens
import ArgumentParser
import Foundation
import RPCAccess
import RPCCore
import YediCrypto
import YediProto

/// The services' authentication on the echo workload, to read what a signed-in call costs against the
/// same call made anonymously (issue 25: authenticated ≥ 85% of anonymous calls/s):
///
/// - `--auth anyone`: `AuthenticationInterceptor` runs, and Echo is open to anonymous callers.
/// - `--auth user`: the same, and Echo needs a user's token (`CachingTokenVerifier`: verified once, then
///   a digest, a lookup and an expiry check per call), which the server writes to `--token-file` for the
///   client to send.
enum BenchAuthentication: String, ExpressibleByArgument {
    case anyone
    case user

    /// The interceptor, the echo service with this mode's rule, and a token clients may send.
    func setUp(tokenFile: String, window: AllocationWindow? = nil) throws -> (
        interceptor: AuthenticationInterceptor, service: any RPCService
    ) {
        let key = TokenSigningKey(privateKey: Ed25519PrivateKey.generate())
        let token = try AccessTokenIssuer(signingKey: key, lifetime: .seconds(24 * 3_600))
            .issue(userID: "bench-user", role: .customer, sessionID: "bench").token
        try Data(token.utf8).write(to: URL(fileURLWithPath: tokenFile))
        let verifier = CachingTokenVerifier(verifier: JWTVerifier(keys: [key.verificationKey]))
        let rule: AccessRule = self == .user ? .yediUser : .anyone(apps: .any)
        return (AuthenticationInterceptor(verifier: verifier), RuledEchoService(rule: rule, window: window))
    }
}

/// `yedi.echo.Echo/Echo` under a chosen access rule (the generated one says USER).
struct RuledEchoService: RPCService {
    let method: RPCMethod<YediEcho.EchoRequest, YediEcho.EchoResponse>
    /// Counts the calls for `--count-allocations`.
    let window: AllocationWindow?

    init(rule: AccessRule, window: AllocationWindow? = nil) {
        self.window = window
        method = RPCMethod(
            service: "yedi.echo.Echo", method: "Echo", kind: .unary, idempotency: .idempotent, access: rule)
    }

    var serviceDescriptor: ServiceDescriptor {
        ServiceDescriptor(fullName: "yedi.echo.Echo", methods: [method.descriptor])
    }

    func registerMethods(with router: inout RPCRouter) {
        let window = window
        router.register(
            method,
            unary: { request, _ in
                window?.callAnswered()
                return YediEcho.EchoResponse(payload: request.payload)
            })
    }
}
