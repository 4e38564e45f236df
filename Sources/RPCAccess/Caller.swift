import Foundation

/// Who a call acts for, as established by authentication (`AuthenticationInterceptor`).
public enum Caller: Sendable, Hashable, CustomStringConvertible {
    /// Nobody has been authenticated (public methods only).
    case anonymous
    /// An end user, from a verified access token.
    case user(AuthenticatedUser)
    /// Another Yedi service, from its verified service certificate (mutual TLS).
    case service(name: String)

    /// The user when the caller is a user.
    public var user: AuthenticatedUser? {
        if case .user(let user) = self { return user }
        return nil
    }

    /// The user's id when the caller is a user.
    public var userID: String? {
        if case .user(let user) = self { return user.id }
        return nil
    }

    public var description: String {
        switch self {
        case .anonymous: "anonymous"
        case .user(let user): "\(user)"
        case .service(let name): "service \(name)"
        }
    }
}

/// An end user proven by a verified access token: the token's claims a handler may rely on.
public struct AuthenticatedUser: Sendable, Hashable, CustomStringConvertible {
    public let id: String
    public let role: UserRole
    /// The sign-in session the token was issued for (sign-out and refresh act on it).
    public let sessionID: String?
    /// The app the token was issued for: the user belongs to it and to no other.
    public let app: AppID
    /// When the token was issued (whole seconds): a revocation refuses the tokens issued up to its instant
    /// and lets later ones through (a new password revokes the old sessions, not the new one). Nil for
    /// a caller made without a token (tests).
    public let issuedAt: Date?

    public init(id: String, role: UserRole, sessionID: String? = nil, app: AppID = .yedi, issuedAt: Date? = nil) {
        self.id = id
        self.role = role
        self.sessionID = sessionID
        self.app = app
        self.issuedAt = issuedAt
    }

    public var description: String { app == .yedi ? "user \(id) (\(role))" : "user \(id) (\(app) \(role))" }

    /// The same user, role, session and app: the same caller, whichever of the session's tokens it
    /// presented (`issuedAt` says which, and only revocation reads it).
    public static func == (lhs: AuthenticatedUser, rhs: AuthenticatedUser) -> Bool {
        lhs.id == rhs.id && lhs.role == rhs.role && lhs.sessionID == rhs.sessionID && lhs.app == rhs.app
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(role)
        hasher.combine(sessionID)
        hasher.combine(app)
    }
}

/// An end user's role: what kind of account they have.
///
/// A string-backed struct rather than an enum: roles are per app (YeDi's customer and designer; the other
/// apps' member, admin, operator), declared in each app's configuration and in the protos' rules.
public struct UserRole: RawRepresentable, Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    public init(stringLiteral value: String) {
        self.rawValue = value
    }

    /// Books designers, likes and reviews posts.
    public static let customer = UserRole(rawValue: "customer")
    /// Runs a shop: posts, schedule, reservations.
    public static let designer = UserRole(rawValue: "designer")

    public var description: String { rawValue }
}
