import OutsideSenders
import RPCAccess
import RPCCore
import ServiceRuntime

/// A sign-in provider's token check (`OutsideSenders`: Apple and Google ID tokens, Kakao and Naver
/// access tokens) behind the `IdentityVerifier` seam: the audiences are the call's app's client ids at
/// that provider (`provider_client_ids` in its app file), and the provider's answer becomes a status.
struct ProviderIdentityVerifier: IdentityVerifier {
    let verifier: any ProviderTokenVerifier
    let apps: AppCatalog

    func verify(_ assertion: IdentityAssertion, app: AppID) async throws -> VerifiedIdentity {
        guard case .provider(let name, let token) = assertion, name == verifier.provider else {
            throw RPCError(code: .invalidArgument, message: "provider: not \(verifier.provider)")
        }
        let audiences = Set(apps[app]?.providerClientIDs[name] ?? [])
        guard !audiences.isEmpty else {
            throw RPCError(code: .failedPrecondition, message: "\(name): \(app) has no client id at \(name)")
        }
        do {
            let account = try await verifier.account(fromToken: token, audiences: audiences)
            return VerifiedIdentity(kind: name, subject: account.subject, email: account.email?.lowercased())
        } catch {
            switch error.kind {
            case .invalid: throw RPCError(code: .unauthenticated, message: "token: \(error)")
            case .unavailable:
                throw RPCError(
                    code: .unavailable, message: "\(name): could not check the token now (\(error.reason)); try again")
            }
        }
    }
}
