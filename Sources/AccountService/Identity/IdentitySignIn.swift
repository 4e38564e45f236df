import ServiceRuntime

/// What accounts without a password need beside `Credentials`: the verifier of every kind of
/// assertion, the SMS codes, and the limits on how often a number or an address gets a code.
struct IdentitySignIn: Sendable {
    let verifier: any IdentityVerifier
    let codes: any VerificationCodeGenerator
    /// How often a number and a client address get a code (stored: survives restarts).
    let sends: PhoneSendThrottle
    let apps: AppCatalog

    /// How long a sign-up ticket works when the app's file does not say (`limits.sign_up_ticket_minutes`).
    static let defaultTicketMinutes = 10

    /// How long a sign-up ticket of `app` works, in milliseconds: the app's `sign_up_ticket_minutes` (SLP
    /// says 15, as issue 28 asks), else 10 minutes.
    static func ticketLifetime(_ app: AppConfiguration?) -> Int64 {
        Int64(app?.limit("sign_up_ticket_minutes", default: defaultTicketMinutes) ?? defaultTicketMinutes) * 60_000
    }

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
