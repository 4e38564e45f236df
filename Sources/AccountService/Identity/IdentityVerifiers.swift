import RPCAccess
import RPCCore
import ServiceRuntime

/// The verifier of each kind of assertion, behind the one `IdentityVerifier` seam: phone codes to
/// `PhoneCodeVerifier`, provider tokens to `provider` (the development verifier in front of the
/// providers' own). A method the call's app does not list in its `sign_in` (the app file) is refused
/// before anyone is asked.
struct IdentityVerifiers: IdentityVerifier {
    let apps: AppCatalog
    let phone: any IdentityVerifier
    let provider: any IdentityVerifier

    func verify(_ assertion: IdentityAssertion, app: AppID) async throws -> VerifiedIdentity {
        guard apps[app]?.signIn.contains(assertion.method) == true else {
            throw RPCError(
                code: .failedPrecondition, message: "\(assertion.method): not a way to sign in to \(app)")
        }
        switch assertion {
        case .phoneCode: return try await phone.verify(assertion, app: app)
        case .provider: return try await provider.verify(assertion, app: app)
        }
    }
}

/// Each provider's verifier by name (`apple`, `google`, `kakao`, `naver`); a provider without one is not
/// configured in this process (`UNAVAILABLE`).
struct ProviderVerifiers: IdentityVerifier {
    let verifiers: [String: any IdentityVerifier]

    func verify(_ assertion: IdentityAssertion, app: AppID) async throws -> VerifiedIdentity {
        guard case .provider(let name, _) = assertion, let verifier = verifiers[name] else {
            throw RPCError(code: .unavailable, message: "provider: \(assertion.method) sign-in is not configured")
        }
        return try await verifier.verify(assertion, app: app)
    }
}
