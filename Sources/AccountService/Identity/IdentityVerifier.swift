import RPCAccess

/// What a caller shows to prove an identity: a phone code it received, or a provider's token.
enum IdentityAssertion: Sendable, Hashable {
    /// The code of a `StartPhoneVerification`, typed back.
    case phoneCode(verificationID: String, code: String)
    /// An ID token (Apple, Google) or access token (Kakao, Naver) the app got from the provider's SDK.
    case provider(name: String, token: String)

    /// The app file's `sign_in` method this assertion is: `phone`, or the provider's name.
    var method: String {
        switch self {
        case .phoneCode: "phone"
        case .provider(let name, _): name
        }
    }
}

/// The one seam every way of proving an identity goes through (docs/platform.md, "Verified identities"):
/// an assertion in, a verified identity out. Sign-in, sign-up tickets and re-authentication do not care
/// which kind it was.
protocol IdentityVerifier: Sendable {
    /// The identity `assertion` proves for a caller of `app`. Throws `RPCError`: `UNAUTHENTICATED` when it
    /// proves nothing (wrong, expired, issued to another app), `UNAVAILABLE` when whoever must vouch for it
    /// cannot be asked now.
    func verify(_ assertion: IdentityAssertion, app: AppID) async throws -> VerifiedIdentity
}
