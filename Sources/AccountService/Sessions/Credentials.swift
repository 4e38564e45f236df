import ServiceRuntime
import YediCrypto

/// What checks a password and issues a session, with the limits in front of it: the pieces of sign-in,
/// sign-up, refresh and deletion (docs/account.md, "Abuse resistance"), built once per process.
struct Credentials: Sendable {
    let passwords: PasswordHasher
    /// Checked against when the email is unknown, so both failures take the same time.
    let decoyHash: String
    let sessions: SessionIssuer
    let throttle: SignInThrottle
    /// Per client address and per connection, for the calls that cost a password hash.
    let signInLimits: ClientRateLimits
    /// RefreshSession's own allowance: it hashes no password, and every signed-in app refreshes every
    /// 15 minutes, so behind a shared address (a carrier's NAT) it needs far more than sign-in, and must
    /// not be spent by someone's sign-in flood.
    let refreshLimits: ClientRateLimits
}
