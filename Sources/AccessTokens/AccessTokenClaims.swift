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
    /// `app` (and `aud`): the app the token was issued for, the user's.
    public var app: AppID
    /// `iat`
    public var issuedAt: Date
    /// `exp`
    public var expiresAt: Date

    public init(
        userID: String,
        role: UserRole,
        sessionID: String?,
        app: AppID,
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
        AuthenticatedUser(id: userID, role: role, sessionID: sessionID, app: app, issuedAt: issuedAt)
    }

    /// `aud` of a token issued for `app`: a token minted for one app is refused by services not configured
    /// for it.
    public static func audience(app: AppID) -> String { app.rawValue }

    /// `iss` of every Yedi access token.
    public static let issuer = "yedi-account"
}
