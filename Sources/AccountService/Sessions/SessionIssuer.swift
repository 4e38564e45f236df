import AccessTokens
import Foundation
import RPCCore
import ServiceRuntime
import YediCrypto
import YediProto

/// Makes sign-in sessions: a 15-minute access token (JWT) and a refresh token that rotates on each use.
///
/// A refresh token is 32 random bytes (base64url); the database keeps only its SHA-256, so a copy of the
/// database cannot be used to sign in.
struct SessionIssuer: Sendable {
    let tokens: AccessTokenIssuer
    let clock: any WallClock
    let ids: any IDGenerator
    var refreshLifetimeMilliseconds: Int64 = 30 * 24 * 3_600 * 1_000

    /// A new refresh token and its row (a new family unless `familyID` is given).
    func newRefreshToken(userID: String, familyID: String? = nil) -> (token: String, record: SessionRecord) {
        let token = Base64URL.encode(SecureRandom.bytes(32))
        let now = clock.nowMilliseconds
        let id = ids.next()
        let record = SessionRecord(
            id: id, familyID: familyID ?? id, userID: userID, refreshHash: Self.hash(token),
            createdAtMilliseconds: now, expiresAtMilliseconds: now + refreshLifetimeMilliseconds)
        return (token, record)
    }

    /// The session a client receives: an access token for `user` in session family `familyID`.
    func session(for user: UserRecord, familyID: String, refreshToken: String, refreshExpiresAt: Int64) throws
        -> YediAccount.Session
    {
        let (token, claims) = try tokens.issue(userID: user.id, role: user.role, sessionID: familyID, app: user.app)
        return YediAccount.Session(
            accessToken: token, refreshToken: refreshToken,
            accessExpiresAtMs: Int64(claims.expiresAt.timeIntervalSince1970 * 1_000),
            refreshExpiresAtMs: refreshExpiresAt)
    }

    /// The session of a new family (sign-in, sign-up): `refresh` is its first refresh token.
    func session(for user: UserRecord, refresh: (token: String, record: SessionRecord)) throws -> YediAccount.Session {
        try session(
            for: user, familyID: refresh.record.familyID, refreshToken: refresh.token,
            refreshExpiresAt: refresh.record.expiresAtMilliseconds)
    }

    static func hash(_ refreshToken: String) -> [UInt8] { SHA256.hash(refreshToken) }
}
