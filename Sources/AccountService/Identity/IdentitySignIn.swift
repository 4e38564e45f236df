import ServiceRuntime

/// What accounts without a password need beside `Credentials`: the verifier of every kind of
/// assertion, the SMS codes, and the limits on how often one number gets a code.
struct IdentitySignIn: Sendable {
    let verifier: any IdentityVerifier
    let codes: any VerificationCodeGenerator
    /// One code per number per 30 s: a resend cooldown, so nobody can buzz a phone.
    let numberCooldown: SharedRateLimiter<String>
    /// Five codes per number per hour, whatever the cooldown allows.
    let numberHourly: SharedRateLimiter<String>
    let apps: AppCatalog

    static let cooldown = RateLimit(burst: 1, period: .seconds(30))
    static let hourly = RateLimit(burst: 5, period: .seconds(3_600))
    /// How long a sign-up ticket works.
    static let ticketLifetime: Int64 = 10 * 60 * 1_000

    init(verifier: any IdentityVerifier, codes: any VerificationCodeGenerator, apps: AppCatalog) {
        self.verifier = verifier
        self.codes = codes
        self.apps = apps
        numberCooldown = SharedRateLimiter(limit: Self.cooldown)
        numberHourly = SharedRateLimiter(limit: Self.hourly)
    }
}
