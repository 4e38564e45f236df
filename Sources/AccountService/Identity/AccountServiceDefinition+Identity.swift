import OutsideSenders
import ServiceRuntime

/// How the AccountService process reaches the sign-in providers (docs/platform.md, "Verified identities").
extension AccountServiceDefinition {
    /// The sign-in providers at their real addresses (docs/platform.md, "Verified identities"): each
    /// checks tokens against the client ids of the call's app (`provider_client_ids`); an app without
    /// ids for a provider cannot use it.
    static func providerVerifiers(_ env: ServiceEnvironment) -> [String: any IdentityVerifier] {
        let clock = env.clock
        let now: @Sendable () -> Double = { clock.now.timeIntervalSince1970 }
        let verifiers: [any ProviderTokenVerifier] = [
            IDTokenVerifier.apple(now: now), IDTokenVerifier.google(now: now), KakaoTokenVerifier(),
            NaverTokenVerifier(),
        ]
        return Dictionary(
            uniqueKeysWithValues: verifiers.map {
                ($0.provider, ProviderIdentityVerifier(verifier: $0, apps: env.apps))
            })
    }
}
