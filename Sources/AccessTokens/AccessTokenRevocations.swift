import Foundation

/// Users whose access tokens no longer count although their signatures and times are valid: deleted or
/// suspended accounts. Consulted on every authenticated call, cache hit or not, so a revocation takes
/// effect at once.
public protocol AccessTokenRevocations: Sendable {
    /// Whether a token of `userID` issued at `issuedAt` was revoked.
    func isRevoked(userID: String, issuedAt: Date) -> Bool
}
