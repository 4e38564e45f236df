import AccessTokens
import Foundation
import RPCAccess
import RPCCore
import RPCTestSupport
import XCTest
import YediProto

/// A service over real TLS accepts a token the issuer minted, through RPCCore's authentication
/// interceptor with `JWTVerifier`, using the token key `deploy/dev-pki.sh` made.
final class AuthenticatedCallTests: XCTestCase {
    /// The interceptor under test (Echo's access rule is USER: any signed-in user).
    private func authentication(_ verifier: JWTVerifier) -> AuthenticationInterceptor {
        AuthenticationInterceptor(verifier: verifier)
    }

    func testServiceAcceptsIssuedTokenOverTLS() async throws {
        let pki = try TestPKI.get()
        let keyFile = pki.devPKI.appendingPathComponent("token-signing.key").path
        let publicFile = pki.devPKI.appendingPathComponent("token-signing.pub.pem").path
        let signingKey = try TokenSigningKey.load(pemFile: keyFile)
        let verificationKey = try TokenVerificationKey.load(pemFile: publicFile)
        XCTAssertEqual(verificationKey.keyID, signingKey.keyID, "dev-pki.sh's two files are one key pair")

        let service = EchoTestService()
        let server = try await RunningServer.start(
            pki: pki,
            services: [service],
            interceptors: [authentication(JWTVerifier(keys: [verificationKey]))]
        )
        func call(_ text: String, authorization: String?) async -> RPCError? {
            do {
                var metadata: Metadata = [:]
                if let authorization { metadata["authorization"] = authorization }
                try await withRPCClient(
                    configuration: pki.rpcClientConfiguration(ports: [server.port], identity: nil)
                ) { client in
                    _ = try await YediEcho.Echo.Client(client).echo(
                        .init(text: text), options: .init(metadata: metadata))
                }
                return nil
            } catch {
                return (error as? RPCError) ?? RPCError(code: .unknown, message: "\(error)")
            }
        }

        let (token, _) = try AccessTokenIssuer(signingKey: signingKey)
            .issue(userID: "u-7", role: .designer, sessionID: "s-9")
        let accepted = await call("with token", authorization: "Bearer \(token)")
        XCTAssertNil(accepted)
        XCTAssertEqual(
            service.probe.context(of: "with token")?.caller,
            .user(AuthenticatedUser(id: "u-7", role: .designer, sessionID: "s-9"))
        )

        let otherKey = TokenSigningKey(privateKey: .generate())
        let (foreign, _) = try AccessTokenIssuer(signingKey: otherKey).issue(
            userID: "u-7", role: .designer, sessionID: nil)
        let rejected = await call("foreign token", authorization: "Bearer \(foreign)")
        XCTAssertEqual(rejected?.code, .unauthenticated)
        XCTAssertEqual(rejected?.message, "unknown signing key")
        let anonymous = await call("no token", authorization: nil)
        XCTAssertEqual(anonymous?.code, .unauthenticated)
        XCTAssertNil(service.probe.context(of: "foreign token"))
        await server.stop()
    }
}
