/// Who an assertion proved the caller to be: a phone number the caller received a code on, or an
/// account at a sign-in provider. It becomes a session for the account linked to it in the call's app,
/// or a sign-up ticket when none is (docs/platform.md, "Verified identities").
struct VerifiedIdentity: Sendable, Hashable, CustomStringConvertible {
    /// `phone`, or the provider: `apple`, `google`, `kakao`, `naver` (the app file's `sign_in` names).
    var kind: String
    /// The E.164 number (`+821012345678`) or the provider's stable id of the account (`sub`, Kakao's id).
    var subject: String
    /// The address the provider vouches for, if it gave one. Shown to the sign-up, never used to find an
    /// account: an address can change hands at a provider, a subject cannot.
    var email: String? = nil

    /// `phone:+821012345678`, `google:1234567890`.
    var description: String { "\(kind):\(subject)" }

    static func phone(_ number: String) -> VerifiedIdentity { VerifiedIdentity(kind: "phone", subject: number) }
}
