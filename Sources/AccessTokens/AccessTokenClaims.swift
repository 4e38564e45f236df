import Foundation
import RPCAccess
import RPCCore

/// What a verified access token says: whose it is, their role, and when it is valid.
public struct AccessTokenClaims: Sendable, Hashable {
    /// `sub`
    public var userID: String
    /// `role`
    public var role: UserRole
    /// `sid`: the sign-in session the token belongs to.
    public var sessionID: String?
    /// `app`: the sibling app the token was issued for; nil for Yedi itself.
    public var app: String?
    /// `iat`
    public var issuedAt: Date
    /// `exp`
    public var expiresAt: Date

    public init(
        userID: String,
        role: UserRole,
        sessionID: String?,
        app: String?,
        issuedAt: Date,
        expiresAt: Date
    ) {
        self.userID = userID
        self.role = role
        self.sessionID = sessionID
        self.app = app
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
    }

    /// The caller a handler sees.
    public var authenticatedUser: AuthenticatedUser {
        AuthenticatedUser(id: userID, role: role, sessionID: sessionID, app: app)
    }

    /// `aud` of a token issued for `app` (nil: YeDi itself): a token minted for one app is refused by the
    /// services of another.
    public static func audience(app: String?) -> String { app ?? "yedi" }

    /// `iss` of every Yedi access token.
    public static let issuer = "yedi-account"
}
