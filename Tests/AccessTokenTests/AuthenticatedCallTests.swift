import AccessTokens
import CountLimitedCache
import Foundation
import RPCAccess
import RPCCore
import RPCTestSupport
import Synchronization
import XCTest
import YediCrypto
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

    /// The interceptor with the services' caching verifier: a new token is looked up and verified once
    /// (one miss, not one for the synchronous path and one for the async one), its next call is a hit and
    /// the ones after it are answered by the connection's memo; a revoked user's remembered token is
    /// refused `UNAUTHENTICATED` on the synchronous path.
    func testTheCachingVerifierCountsOneMissPerTokenAndRefusesARevokedHit() async throws {
        let pki = try TestPKI.get()
        let signingKey = TokenSigningKey(privateKey: .generate())
        let cache = LRUCache<SHA256.Digest, AccessTokenClaims>(name: "test-interceptor-tokens", capacity: 8)
        let revoked = RevokedUsers()
        let verifier = CachingTokenVerifier(
            verifier: JWTVerifier(keys: [signingKey.verificationKey]), revocations: revoked, cache: cache)
        let service = EchoTestService()
        let server = try await RunningServer.start(
            pki: pki, services: [service],
            interceptors: [AuthenticationInterceptor(verifier: verifier)])
        let (token, _) = try AccessTokenIssuer(signingKey: signingKey)
            .issue(userID: "u-8", role: .customer, sessionID: "s-1")
        let options = CallOptions(metadata: ["authorization": "Bearer \(token)"], retry: false)
        try await withRPCClient(configuration: pki.rpcClientConfiguration(ports: [server.port], identity: nil)) {
            client in
            let echo = YediEcho.Echo.Client(client)
            for index in 0..<3 { _ = try await echo.echo(.init(text: "call \(index)"), options: options) }
            XCTAssertEqual(cache.statistics.misses, 1, "one miss for the new token")
            XCTAssertEqual(cache.statistics.hits, 1, "the third call was answered by the connection's memo")

            revoked.revoke("u-8")
            do {
                _ = try await echo.echo(.init(text: "revoked"), options: options)
                XCTFail("a revoked user's cached token was accepted")
            } catch let error as RPCError {
                XCTAssertEqual(error.code, .unauthenticated)
                XCTAssertTrue(error.message.contains("revoked"), error.message)
            }
            XCTAssertEqual(cache.statistics.hits, 1, "refused on the memo's answer, not verified again")
            XCTAssertEqual(cache.statistics.misses, 1)
        }
        XCTAssertNil(service.probe.context(of: "revoked"))
        await server.stop()
    }
}

/// Revocations a test sets by hand: every token of a revoked user, whenever issued.
private final class RevokedUsers: AccessTokenRevocations {
    private let users = Mutex<Set<String>>([])

    func revoke(_ user: String) { users.withLock { _ = $0.insert(user) } }

    func isRevoked(userID: String, issuedAt: Date) -> Bool { users.withLock { $0.contains(userID) } }
}
