import Foundation

/// When verified claims stop being accepted: their expiry plus the allowed clock skew, against the
/// injected clock. Apart from `JWTVerifier` so that a cache can check a hit without the verifier's keys
/// (which change, under a lock) and without copying them.
public struct TokenExpiry: Sendable {
    let allowedClockSkew: TimeInterval
    let now: @Sendable () -> Date

    /// Whether `claims` have expired by now.
    public func hasExpired(_ claims: AccessTokenClaims) -> Bool {
        hasExpired(at: claims.expiresAt)
    }

    /// Whether claims expiring at `expiresAt` have expired by now.
    public func hasExpired(at expiresAt: Date) -> Bool {
        Self.isExpired(
            at: expiresAt.timeIntervalSince1970, now: now().timeIntervalSince1970, allowedClockSkew: allowedClockSkew)
    }

    static func isExpired(at expiry: TimeInterval, now: TimeInterval, allowedClockSkew: TimeInterval) -> Bool {
        now > expiry + allowedClockSkew
    }
}
