import ServiceRuntime

/// What accounts without a password need beside `Credentials`: the verifier of every kind of
/// assertion, the SMS codes, and the limits on how often a number or an address gets a code.
struct IdentitySignIn: Sendable {
    let verifier: any IdentityVerifier
    let codes: any VerificationCodeGenerator
    /// How often a number and a client address get a code (stored: survives restarts).
    let sends: PhoneSendThrottle
    let apps: AppCatalog

    /// How long a sign-up ticket works.
    static let ticketLifetime: Int64 = 10 * 60 * 1_000

    init(
        verifier: any IdentityVerifier, codes: any VerificationCodeGenerator, apps: AppCatalog,
        sends: PhoneSendThrottle = PhoneSendThrottle()
    ) {
        self.verifier = verifier
        self.codes = codes
        self.apps = apps
        self.sends = sends
    }
}
