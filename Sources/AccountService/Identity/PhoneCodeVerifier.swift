import RPCAccess
import RPCCore
import ServiceRuntime
import YediCrypto

/// Proves a number with the code `StartPhoneVerification` sent to it: right, within 5 minutes, within 5
/// tries, once. Every refusal is the same `UNAUTHENTICATED`, so an answer says nothing about a number.
struct PhoneCodeVerifier: IdentityVerifier {
    let store: any AccountStore
    let clock: any WallClock

    /// How long a sent code works.
    static let codeLifetime: Int64 = 5 * 60 * 1_000
    /// Wrong codes a verification survives; then the number must be verified again.
    static let attempts = 5

    static let refused = RPCError(
        code: .unauthenticated, message: "code: wrong, expired or already used; ask for a new code")

    func verify(_ assertion: IdentityAssertion, app: AppID) async throws -> VerifiedIdentity {
        guard case .phoneCode(let id, let code) = assertion, !id.isEmpty, id.utf8.count <= FieldRule.maxIDBytes,
            code.utf8.count == 6, code.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else { throw Self.refused }
        guard
            let verification = try await store.checkPhoneCode(
                id: id, app: app, codeHash: Self.codeHash(code, id: id), now: clock.nowMilliseconds,
                maximumAttempts: Self.attempts)
        else { throw Self.refused }
        return .phone(verification.phone)
    }

    /// What the database keeps of a code: keyed by the verification, like a sign-up's code.
    static func codeHash(_ code: String, id: String) -> [UInt8] {
        AccountHandlers.signUpCodeHash(code, id: id)
    }
}
